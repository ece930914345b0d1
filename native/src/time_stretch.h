// Time-stretching without pitch change for the agent's audio_speed (0.5 to 2.0): WSOLA, waveform-similarity
// overlap-add (Verhelst & Roelands, "An overlap-add technique based on waveform similarity (WSOLA) for high
// quality time-scale modification of speech", ICASSP 1993).
//
// Segments of kWindowMs are overlap-added with a periodic Hann window at a fixed synthesis hop (half a window);
// the analysis hop is speed x the synthesis hop, and each segment's start is moved within +-kToleranceMs to the
// position whose first half best continues the previous segment (normalized cross-correlation), so periods line
// up and pitch is kept. The search is coarse then fine: every k-th offset on a ~4 kHz grid (every k-th sample),
// then every offset around the best. Streaming: input is held until a segment and its search range are complete.
// Speed 1 while idle is an exact pass-through.
//
// Create allocates every buffer (held input for maxInput-sample chunks, window, overlap tail, search scratch);
// Process, Flush, SetSpeed and Reset allocate nothing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "handle.h"

namespace parley {

constexpr double kTimeStretchSpeedMin = 0.5;
constexpr double kTimeStretchSpeedMax = 2.0;

class TimeStretch : public Module {
 public:
  static bool ValidSpeed(double speed) { return speed >= kTimeStretchSpeedMin && speed <= kTimeStretchSpeedMax; }
  static bool ValidRate(int rateHz) { return rateHz >= 4000 && rateHz <= 192000; }

  // Returns null if the rate, maxInput or speed is out of range.
  static TimeStretch* Create(int rateHz, size_t maxInput, double speed);

  void SetSpeed(double speed) { speed_ = speed; }
  double speed() const { return speed_; }
  size_t max_input() const { return max_input_; }

  // The most samples Process can write for n input samples in the current state (the size to give `out`).
  size_t MaxOutput(size_t n) const;
  // What Process(n) writes at most right now (<= MaxOutput(n)): the output check at the boundary.
  size_t ProcessBound(size_t n) const;
  // What Flush writes at most right now.
  size_t FlushBound() const;

  // Stretches n <= max_input() samples into out (at least ProcessBound(n) long); *written = samples written.
  // False (nothing done) if the held input would overflow, which the sizes of Create rule out.
  bool Process(const int16_t* in, size_t n, int16_t* out, size_t* written);
  // Completes the held input with silence and writes the last segments and the overlap tail into out (at least
  // FlushBound() long), then starts over as after Reset. False as for Process.
  bool Flush(int16_t* out, size_t* written);
  void Reset();

 private:
  TimeStretch(int rateHz, size_t maxInput, double speed);

  // Speed 1 with nothing held: Process passes audio through.
  bool Idle() const;
  // Makes room for n more held samples; false if there is none.
  bool Reserve(size_t n);
  bool CanStep() const;
  // Steps while CanStep and the ideal start is before `until` (absolute); returns the new `written`.
  size_t Run(int16_t* out, size_t written, int64_t until);
  size_t StepOnce(int16_t* out, size_t written);
  void Compact();
  // The steps Run takes at most with held input ending at `end` (absolute), stopping at `until`.
  int64_t StepsBound(int64_t end, int64_t until) const;
  int64_t BestAlignment(int64_t ideal, int64_t natural);
  int64_t BestOnGrid(int64_t from, int64_t to, int stride, int64_t natural, int64_t fallback);

  const int n_;    // window length (even)
  const int hs_;   // synthesis hop, n / 2
  const int tol_;  // search range, each side
  const int step_;  // coarse search stride
  const size_t max_input_;
  double speed_;

  std::vector<float> window_;
  std::vector<float> tail_;  // windowed second half of the previous segment
  std::vector<float> in_;    // held input; in_[0] is absolute sample in_start_
  int64_t in_start_ = 0;
  int64_t in_len_ = 0;
  double ideal_ = 0;   // ideal (unadjusted) absolute start of the next analysis segment
  int64_t prev_ = -1;  // absolute start of the previous chosen segment, -1 before the first

  // Search scratch: the natural continuation and the candidates' samples gathered from the coarse grid (by gather_,
  // chosen at create for the grid's stride), each candidate's cross-correlation, the squares of its samples and its
  // score.
  std::vector<float> near_;
  std::vector<float> far_;
  std::vector<float> xy_;
  void (*gather_)(const float* in, int stride, int n, float* out);
  std::vector<double> sq_;
  std::vector<double> score_;
};

void InitTimeStretch(Napi::Env env, Napi::Object exports);

}  // namespace parley
