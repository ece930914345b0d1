// Voice activity detector: band energies against adaptive per-band noise floors (minimum statistics), a
// probability-like score per 10 ms, and the agent's timing rules as an explicit state machine.
//
// Every 10 ms the last 20 ms are Hann-windowed and transformed; the power in five telephone bands (200 Hz to
// 3.8 kHz) is smoothed and compared with each band's noise floor, the minimum of the smoothed power over the
// last ~1.5 s (Martin 2001, minimum statistics, without bias compensation). The two largest band SNRs give
// the frame's score, mapped to a probability by a logistic; a frame is voiced when it reaches vad_threshold.
//
// Timing (the agent's vad_* settings): speech starts after min_speech_ms of consecutive voiced frames (the
// start is placed at the first of them); it ends after min_silence_ms without a voiced frame, and the end is
// placed after the LAST VOICED FRAME, not after the hangover. The last prebuffer_ms of audio are kept in a
// ring so the caller can fetch the audio leading into speech when it starts.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "fft.h"
#include "handle.h"

namespace parley {

struct VadOptions {
  float threshold = 0.38f;
  int prebuffer_ms = 500;
  int min_speech_ms = 50;
  int min_silence_ms = 800;
};

// Bits of the value process() returns. When both are set, the end came first.
enum VadEvent : int { kVadNone = 0, kVadSpeechStart = 1, kVadSpeechEnd = 2 };

class Vad : public Module {
 public:
  static constexpr int kBands = 5;

  // Returns null for an unsupported rate or options out of range.
  static Vad* Create(int rateHz, const VadOptions& options);

  // Feeds samples (any count; analysed in 10 ms steps). Returns VadEvent bits for what happened in them.
  int Process(const int16_t* in, size_t n);
  // Copies the prebuffer (oldest first, ending at the last sample fed) into out; returns the count.
  size_t ReadPrebuffer(int16_t* out, size_t capacity) const;
  void Reset();

  bool speaking() const { return state_ == State::Speech || state_ == State::MaybeSilence; }
  float probability() const { return probability_; }
  int64_t speech_start_sample() const { return speech_start_; }
  int64_t last_voiced_sample() const { return last_voiced_end_; }
  int64_t samples_seen() const { return samples_; }
  size_t prebuffer_capacity() const { return ring_.size(); }
  size_t step() const { return step_; }

 private:
  enum class State { Silence, MaybeSpeech, Speech, MaybeSilence };
  enum class Input { Voiced, Unvoiced };

  Vad(int rateHz, const VadOptions& options);
  float Analyse();                        // the probability of the step just completed
  int Transition(Input input);            // the state machine; returns event bits
  void UpdateNoiseFloor(const float* smoothed);

  int rate_;
  VadOptions options_;
  size_t step_;    // samples per 10 ms
  size_t window_;  // 2 steps
  Fft fft_;
  std::vector<float> hann_, frame_, re_, im_;
  size_t filled_ = 0;  // samples of the current step in frame_ (after the previous step)
  bool primed_ = false;  // a full window is available
  int band_lo_[kBands], band_hi_[kBands];
  float window_norm_;

  float smoothed_[kBands];
  float floor_[kBands];  // minimum statistics
  float noise_[kBands];  // mean noise power estimate
  float window_min_[kBands];
  std::vector<float> history_min_;  // kSubWindows x kBands minima of completed sub-windows
  int sub_count_ = 0;               // steps in the current sub-window
  int sub_filled_ = 0;              // completed sub-windows (up to kSubWindows)
  int sub_next_ = 0;
  int64_t steps_ = 0;

  State state_ = State::Silence;
  int run_steps_ = 0;  // voiced steps (MaybeSpeech) or unvoiced steps (MaybeSilence)
  int resume_steps_ = 0;  // voiced steps in a row during the hangover
  int64_t run_start_ = 0;
  int64_t speech_start_ = -1;
  int64_t last_voiced_end_ = -1;
  int64_t samples_ = 0;
  float probability_ = 0.f;
  float frame_power_ = 0.f;   // smoothed band power of the last step
  float speech_level_ = 0.f;  // decaying peak of frame_power_ over voiced steps

  std::vector<int16_t> ring_;
  size_t ring_pos_ = 0;
  size_t ring_fill_ = 0;
};

}  // namespace parley
