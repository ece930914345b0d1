#include "tone.h"

#include <algorithm>
#include <cmath>

#include "resampler.h"

namespace parley {
namespace {

constexpr int kStepMs = 10;
constexpr double kWindowSeconds = 0.032;
constexpr int kMainLobeBins = 2;        // Hann main lobe half-width
constexpr float kMinShare = 0.9f;       // of the step's power in the peak's main lobe
constexpr float kMaxDrift = 0.01f;      // relative frequency drift within a run
constexpr float kEdgeTolerance = 0.02f; // the range's edges, relative (frequency estimate error)
// -40 dBm0 (0 dBm0: a sine 3.17 dB below full scale, ITU-T G.711 digital milliwatt).
constexpr float kMinPower = 32768.f * 32768.f / 2.f / 2.0749f * 1e-4f;

}  // namespace

ToneDetector* ToneDetector::Create(int rateHz, const ToneOptions& o) {
  if (!IsSupportedRate(rateHz)) return nullptr;
  if (!(o.min_hz > 0.f && o.max_hz > o.min_hz && o.max_hz < rateHz * 0.45f)) return nullptr;
  if (o.min_duration_ms < kStepMs || o.min_duration_ms > 10000) return nullptr;
  return new ToneDetector(rateHz, o);
}

ToneDetector::ToneDetector(int rateHz, const ToneOptions& options)
    : rate_(rateHz),
      options_(options),
      step_(static_cast<size_t>(rateHz) * kStepMs / 1000),
      window_(static_cast<size_t>(std::lround(rateHz * kWindowSeconds))),
      fft_(NextPow2(window_)),
      hann_(window_),
      frame_(window_, 0.f),
      in_(fft_.size()),
      re_(fft_.size() / 2 + 1),
      im_(fft_.size() / 2 + 1) {
  double energy = 0.0;
  for (size_t i = 0; i < window_; i++) {
    hann_[i] = static_cast<float>(0.5 - 0.5 * std::cos(2.0 * M_PI * (i + 0.5) / window_));
    energy += static_cast<double>(hann_[i]) * hann_[i];
  }
  window_norm_ = static_cast<float>(2.0 / (static_cast<double>(fft_.size()) * energy));
  lo_bin_ = static_cast<int>(std::floor(options.min_hz * fft_.size() / rateHz));
  hi_bin_ = static_cast<int>(std::ceil(options.max_hz * fft_.size() / rateHz));
  // The first tonal step already holds a window of tone; the run then needs the rest of the duration.
  const int window_ms = static_cast<int>(kWindowSeconds * 1000);
  min_steps_ = std::max(1, (options.min_duration_ms - window_ms + kStepMs - 1) / kStepMs + 1);
  Reset();
}

void ToneDetector::Reset() {
  std::fill(frame_.begin(), frame_.end(), 0.f);
  filled_ = primed_ = 0;
  state_ = State::Idle;
  run_steps_ = 0;
  run_hz_ = 0.f;
  run_start_ = run_end_ = -1;
  samples_ = 0;
}

float ToneDetector::AnalyseStep() {
  const size_t n = fft_.size();
  for (size_t i = 0; i < window_; i++) {
    in_[i] = frame_[i] * hann_[i];
  }
  for (size_t i = window_; i < n; i++) in_[i] = 0.f;
  fft_.Forward(in_.data(), re_.data(), im_.data());
  float total = 0.f;
  for (size_t k = 1; k < n / 2; k++) {
    re_[k] = re_[k] * re_[k] + im_[k] * im_[k];  // power spectrum, in place
    total += re_[k];
  }
  int peak = lo_bin_;
  for (int k = lo_bin_; k <= hi_bin_; k++)
    if (re_[k] > re_[peak]) peak = k;
  float lobe = 0.f;
  for (int k = std::max(1, peak - kMainLobeBins); k <= peak + kMainLobeBins; k++) lobe += re_[k];
  if (lobe * window_norm_ < kMinPower || lobe < kMinShare * total) return 0.f;
  // Parabolic interpolation on log power.
  const float a = std::log(std::max(re_[peak - 1], 1e-20f));
  const float b = std::log(std::max(re_[peak], 1e-20f));
  const float c = std::log(std::max(re_[peak + 1], 1e-20f));
  const float denom = a - 2.f * b + c;
  const float offset = denom == 0.f ? 0.f : 0.5f * (a - c) / denom;
  const float hz = (static_cast<float>(peak) + offset) * static_cast<float>(rate_) / static_cast<float>(n);
  if (hz < options_.min_hz * (1.f - kEdgeTolerance) || hz > options_.max_hz * (1.f + kEdgeTolerance)) return 0.f;
  return hz;
}

int ToneDetector::Transition(float hz) {
  const int64_t window_start = samples_ - static_cast<int64_t>(window_);
  switch (state_) {
    case State::Idle:
      if (hz <= 0.f) return kToneNone;
      state_ = State::Run;
      run_steps_ = 0;
      run_hz_ = hz;
      run_start_ = window_start;
      [[fallthrough]];
    case State::Run:
      if (hz <= 0.f || std::fabs(hz - run_hz_) > kMaxDrift * run_hz_) {
        state_ = State::Idle;
        return hz > 0.f ? Transition(hz) : kToneNone;
      }
      if (++run_steps_ < min_steps_) return kToneNone;
      state_ = State::Reported;
      run_end_ = samples_;
      return kToneStart;
    case State::Reported:
      if (hz > 0.f && std::fabs(hz - run_hz_) <= kMaxDrift * run_hz_) {
        run_end_ = samples_;
        return kToneNone;
      }
      state_ = State::Idle;
      return kToneEnd | (hz > 0.f ? Transition(hz) : kToneNone);
  }
  return kToneNone;
}

int ToneDetector::Process(const int16_t* in, size_t n) {
  int events = kToneNone;
  for (size_t i = 0; i < n; i++) {
    // frame_ holds the last window_ samples; the newest step is appended at the end.
    frame_[window_ - step_ + filled_] = static_cast<float>(in[i]);
    samples_++;
    if (++filled_ < step_) continue;
    filled_ = 0;
    primed_ = std::min(primed_ + step_, window_);
    const float hz = primed_ >= window_ ? AnalyseStep() : 0.f;
    events |= Transition(hz);
    std::copy(frame_.begin() + static_cast<std::ptrdiff_t>(step_), frame_.end(), frame_.begin());
  }
  return events;
}

}  // namespace parley
