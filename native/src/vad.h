// Voice activity detector: band energies against adaptive per-band noise estimates, a probability-like score
// per 10 ms, and the agent's timing rules as an explicit state machine.
//
// Every 10 ms the last 20 ms are Hann-windowed and transformed; the power in five telephone bands (200 Hz to
// 3.8 kHz, the same at every rate: 8 kHz telephony is analysed natively, 16, 24 and 48 kHz after half-band
// decimation to 8 or 12 kHz) is smoothed across steps and compared with each band's noise: the running mean
// of the steps near the band's minimum over the last ~1.5 s (minimum statistics, Martin 2001), learnt only
// while the detector is in silence and held while speech may be present, bounded by 0 to 10 dB above that
// minimum so it follows drops at once and rises within the window (a rise during speech: ~1.5 s late).
// The best band SNR is the step's score, mapped by a logistic to a probability; a step is voiced when it
// reaches vad_threshold (in speech: vad_threshold - 0.15, the hysteresis of Silero VAD's VADIterator) and is
// within 25 dB of the speaker's recent level. The first 500 ms of a stream only teach the noise.
//
// Timing (the agent's vad_* settings): speech starts after min_speech_ms of consecutive voiced steps (the
// start is placed at the first of them); it ends after min_silence_ms without speech (inside that hangover
// speech resumes only after 30 ms of steps at the full threshold), and the end is placed after the LAST VOICED
// STEP, not after the hangover. Once the hangover is over, the last voiced step is extended over the following
// steps whose band power, averaged over +-100 ms, still stands clearly above the noise (by 1.6 standard
// deviations of one step's band power: weak tails). The last prebuffer_ms of audio are kept in a ring so the
// caller can fetch the audio leading into speech. Process allocates nothing.
//
// SetOptions (a transfer to another agent: its vad_* settings) changes the options of a running detector and
// keeps everything it has learnt: noise estimates, speech level, state, positions and the prebuffered audio (a
// new detector would spend its first 500 ms learning the noise again). A new option applies from the next step:
// - threshold: that step's decision uses the new full threshold (new - 0.15 while in Speech);
// - min_speech_ms: a run of voiced steps already under way (MaybeSpeech) counts against the new length; if it
//   is already long enough, speech starts at the next voiced step, placed at the run's first step as ever;
// - min_silence_ms: a hangover under way (MaybeSilence) counts from the last voiced step; if the unvoiced steps
//   since already reach the new length, speech ends at the next step (at the last voiced step, refined as ever);
// - prebuffer_ms: the ring takes the new length at once, keeping the newest of the samples it held.
// The two buffers whose length follows an option (the prebuffer ring, and the per-step history covering the
// hangover and the refinement's reach) are reallocated inside SetOptions when that length changes, never in
// Process: SetOptions is not a per-frame call (allocating for the largest allowed values at Create would hold
// ~1 MB of prebuffer per 48 kHz stream for nothing). When options are never set, nothing differs from a
// detector created with them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "fft.h"
#include "halfband.h"
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
  static constexpr int kSubWindows = 5;  // minimum statistics: completed sub-windows kept (vad.cc)

  // The ranges Create and SetOptions accept: each option from 0 up to its maximum here. Exported to JavaScript as
  // the addon's vadLimits (bind_vad.cc); the agent schema's vad_* bounds (src/schemas/agents.ts) must equal them
  // (test/native/vad-limits.test.ts), or an agent could be saved that no conversation can start with.
  static constexpr float kMaxThreshold = 1.f;
  static constexpr int kMaxPrebufferMs = 10000;
  static constexpr int kMaxMinSpeechMs = 10000;
  static constexpr int kMaxMinSilenceMs = 60000;

  // Returns null for an unsupported rate or options out of range.
  static Vad* Create(int rateHz, const VadOptions& options);
  // Whether options are within the ranges above.
  static bool ValidOptions(const VadOptions& options);

  // New options for the running detector (see the header comment for when each applies). Returns false, and
  // changes nothing, for options out of range. Allocates when the prebuffer or the hangover history changes
  // length.
  bool SetOptions(const VadOptions& options);
  const VadOptions& options() const { return options_; }

  // Feeds samples (any count; analysed in 10 ms steps). Returns VadEvent bits for what happened in them.
  int Process(const int16_t* in, size_t n);
  // Copies the prebuffer (oldest first, ending at the last sample fed) into out; returns the count.
  size_t ReadPrebuffer(int16_t* out, size_t capacity) const;
  void Reset();

  bool speaking() const { return state_ == State::Speech || state_ == State::MaybeSilence; }
  // The probability of the last step, computed when asked: the decisions need it only near a threshold.
  float probability() const;
  int64_t speech_start_sample() const { return speech_start_; }
  int64_t last_voiced_sample() const { return last_voiced_end_; }
  int64_t samples_seen() const { return samples_; }
  size_t prebuffer_capacity() const { return ring_.size(); }
  size_t step() const { return step_; }

 private:
  enum class State { Silence, MaybeSpeech, Speech, MaybeSilence };
  enum class Input { Voiced, Unvoiced };

  Vad(int rateHz, const VadOptions& options);
  void Analyse();                         // the step just completed: band powers, noise, best_ratio_
  // probability() >= the full threshold (speaking: false) or the speaking one (true); without the logarithm
  // and the exponential unless the step's ratio lies within a hair of the threshold's.
  bool Reaches(bool speaking) const;
  int Transition(Input input);            // the state machine; returns event bits
  void UpdateNoiseFloor(const float* smoothed);
  // At speech-end: extends the last voiced step over the hangover steps that, averaged with their
  // neighbours, still stand above the noise (weak tails the per-step decision missed).
  void RefineEnd();
  // Appends n samples to the prebuffer ring.
  void PushPrebuffer(const int16_t* in, size_t n);
  // thresholds_ and sure_below_/sure_above_ from options_.threshold.
  void SetThresholds();
  // The prebuffer ring at a new length (samples), keeping the newest samples held.
  void ResizePrebuffer(size_t length);
  // The step history at a new length (steps), keeping the records of the newest steps held.
  void ResizeHistory(size_t length);

  int rate_;
  VadOptions options_;
  size_t step_;  // input samples per 10 ms
  // Input at 16, 24 or 48 kHz is halved once or twice by half-band filters before the analysis (to 8, 12 and
  // 12 kHz; the bands end at 3.8 kHz), so its FFT is as short as at 8 kHz. 22.05 and 44.1 kHz (steps not
  // divisible into whole 4-sample blocks) are analysed as they come.
  int halvings_;          // 0 to 2
  size_t analysis_step_;  // step_ at the analysis rate
  size_t window_;         // 2 analysis steps
  // The Hann-windowed transform: read-only tables shared by every detector of this window length (built once
  // per configuration, never changed after; its working arrays, like the bin powers and the halvings' middle
  // signal, are the calling thread's for one Process call: a detector holds only what outlives a step).
  const WindowedPowerFft* fft_;
  // The window's samples, zero-padded to fft_->padded_length(): the previous step, then the current one.
  std::vector<float> frame_;
  size_t filled_ = 0;  // input samples of the current step so far
  bool primed_ = false;  // a full window is available
  int band_lo_[kBands], band_hi_[kBands];
  float window_norm_;  // band power per sum of fft_ bin powers

  // Per-band state, padded to kBandSlots so the noise update runs on whole Float4s (the lanes past kBands hold
  // finite values nobody reads).
  static constexpr int kBandSlots = 8;
  float smoothed_[kBandSlots];
  float floor_[kBandSlots];  // minimum statistics
  float noise_[kBandSlots];    // mean noise power estimate used by this step: learned_ bounded by the minimum
  float learned_[kBandSlots];  // running mean of noise steps, learnt in Silence, held while speech may be present
  float window_min_[kBandSlots];
  // (the minima of the completed sub-windows: history_min_, below with the fields steps seldom read)
  float history_floor_[kBandSlots];  // their minimum (infinity before the first completes)
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
  float best_ratio_ = 0.f;  // the last step's best band power / noise
  bool scored_ = false;     // it has a probability (false before the first analysis and while the noise is learnt)
  // The full and the speaking threshold; best ratios below sure_below_ surely score under them, above
  // sure_above_ surely reach them (0 and infinity: always computed).
  float thresholds_[2], sure_below_[2], sure_above_[2];
  float frame_power_ = 0.f;   // smoothed band power of the last step
  float speech_level_ = 0.f;  // decaying peak of frame_power_ over voiced steps

  // Per-step history covering the hangover: band power / noise ratios, loudness gate (24 bytes; a step's end
  // sample is not kept: step k analysed ends at sample (k + 2) step_, see StepEnd).
  struct StepRecord {
    float ratio[kBands];
    bool loud_enough;
  };
  // The input sample at which analysed step k ends (the first analysis closes the second step: the first only
  // primes the window).
  int64_t StepEnd(int64_t k) const { return (k + 2) * static_cast<int64_t>(step_); }
  std::vector<StepRecord> history_;
  int64_t step_index_ = 0;  // steps analysed so far
  // The oldest step whose record history_ may hold (0; after ResizeHistory, the oldest it kept).
  int64_t history_from_ = 0;
  int64_t last_voiced_step_ = -1;

  std::vector<int16_t> ring_;
  size_t ring_pos_ = 0;
  size_t ring_fill_ = 0;

  // Last, what most steps do not read, so that the fields every step reads share fewer cache lines:
  // the half-band decimators (halvings_ of them in use; none at 8 kHz), the minima of the completed noise
  // sub-windows (read once per sub-window), the refinement's ratios (read at speech ends).
  HalfbandDecimator first_, second_;
  float history_min_[kSubWindows * kBands] = {};  // kSubWindows x kBands minima, sub-window after sub-window
  float refine_ratio_[kBands];  // power / noise a band's +-100 ms average must reach to extend an end
};

}  // namespace parley
