// Single-tone detector for answering-machine beeps: one steady sinusoid between minHz and maxHz lasting at
// least minDurationMs.
//
// Every 10 ms the last 32 ms are Hann-windowed and transformed. A step is tonal when the strongest bin in
// [minHz, maxHz] and its Hann main lobe (+-2 bins) carry at least 80 % of the step's power, the level is at
// least -40 dBm0, and the frequency (parabolic interpolation of the peak) stays within 2 % of where the run of
// tonal steps began. A run lasting minDurationMs reports kToneStart (once); the first non-tonal step after it
// reports kToneEnd. Speech is harmonic: its energy never sits in one narrow peak for 100 ms.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "fft.h"
#include "handle.h"

namespace parley {

enum ToneEvent : int { kToneNone = 0, kToneStart = 1, kToneEnd = 2 };

struct ToneOptions {
  float min_hz = 400.f;
  float max_hz = 2000.f;
  int min_duration_ms = 100;
};

class ToneDetector : public Module {
 public:
  static ToneDetector* Create(int rateHz, const ToneOptions& options);

  // Feeds samples; returns ToneEvent bits (when both are set, the end came first).
  int Process(const int16_t* in, size_t n);
  void Reset();
  float frequency() const { return run_hz_; }
  int64_t start_sample() const { return run_start_; }
  int64_t end_sample() const { return run_end_; }

 private:
  enum class State { Idle, Run, Reported };
  ToneDetector(int rateHz, const ToneOptions& options);
  float AnalyseStep();  // the step's tone frequency, or 0 if not tonal
  int Transition(float hz);

  int rate_;
  ToneOptions options_;
  size_t step_;
  size_t window_;
  RealFft fft_;
  std::vector<float> hann_, frame_, in_, re_, im_;  // in_: FFT input; re_/im_: bins 0..N/2
  size_t filled_ = 0;
  size_t primed_ = 0;  // samples available in frame_, up to window_
  float window_norm_;
  int lo_bin_, hi_bin_;
  int min_steps_;

  State state_ = State::Idle;
  int run_steps_ = 0;
  float run_hz_ = 0.f;
  int64_t run_start_ = -1;
  int64_t run_end_ = -1;
  int64_t samples_ = 0;
};

}  // namespace parley
