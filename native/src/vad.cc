#include "vad.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>

#include "float4.h"
#include "resampler.h"

namespace parley {
namespace {

constexpr int kStepMs = 10;
// Input rates are halved (see Vad::halvings_) while they are at least 16 kHz, at most twice, and while the
// step still splits into the decimator's blocks of 8 input samples.
constexpr int kMinHalvedRate = 16000;
constexpr int kMaxHalvings = 2;
constexpr size_t kHalvingBlock = 8;

int HalvingsFor(int rateHz) {
  int halvings = 0;
  int rate = rateHz;
  size_t step = static_cast<size_t>(rateHz) * kStepMs / 1000;
  while (halvings < kMaxHalvings && rate >= kMinHalvedRate && step % kHalvingBlock == 0) {
    rate /= 2;
    step /= 2;
    halvings++;
  }
  return halvings;
}
// Telephone-band analysis bands (Hz): low voicing, first formant, second formant, upper formants, fricatives.
constexpr float kBandEdges[Vad::kBands + 1] = {200.f, 400.f, 800.f, 1500.f, 2500.f, 3800.f};
// Smoothing of band power across steps (first-order, per 10 ms).
constexpr float kSmoothing = 0.7f;
// Minimum statistics: the floor is the minimum over kSubWindows completed sub-windows of kSubWindowSteps steps
// plus the current one, i.e. 1.5 to 1.8 s of history.
constexpr int kSubWindows = Vad::kSubWindows;
constexpr int kSubWindowSteps = 30;
// Steps within 10 dB of the minimum update the running mean of the noise (per-step weight 1 - 0.95), and only
// while the detector is in Silence: speech steps near a minimum raised by long speech would otherwise teach the
// noise and cut off final words. A narrower gate leaves out the upper half of the noise's own fluctuation and
// biases the mean low, so noise alone scores near the threshold (false starts). Outside Silence the learnt mean is held and only
// the minimum bounds it (from below: a noise that really rose is followed within the minimum's window).
constexpr float kNearFloorRatio = 10.f;
constexpr float kNoiseMeanSmoothing = 0.95f;
// For the first 500 ms the noise estimate is the plain mean of all steps (nothing better is known yet), and
// no step is voiced: a stream's first 500 ms only teach the noise floor (less leaves the mean of the narrow bands
// too uncertain in noise).
constexpr int64_t kInitSteps = 50;
// Absolute floor of band power, -60 dBFS (a full-scale sine has power 32768^2 / 2): digital silence and
// dither never count as speech.
constexpr float kMinBandPower = 32768.f * 32768.f / 2.f * 1e-6f;
// Band SNRs are clipped to this range (dB) before scoring.
constexpr float kMaxBandSnrDb = 30.f;
// Logistic mapping of the score (dB) to a probability: 0.5 at kScoreMidDb, slope 1 / kScoreScaleDb.
constexpr float kScoreMidDb = 5.f;
constexpr float kScoreScaleDb = 2.f;
// End refinement, with hindsight once the hangover is over: hangover steps whose band power, averaged over
// +-10 steps, stays above the noise in some band extend the speech (contiguously from the last voiced step).
// The long average finds weak final sounds 10-20 dB under white noise that single steps cannot. "Above" is
// measured in units of one step's relative noise fluctuation: a band holding K independent spectral values
// (its width times the 20 ms window length, the window's resolution being 1 / 20 ms) has a power whose
// standard deviation is 1 / sqrt(K) of its mean (a sum of K exponential variables), so a narrow band needs a
// larger excess than a wide one. The average must exceed the noise by kRefineSigmas of those deviations.
constexpr int64_t kRefineHalfWidth = 10;
constexpr float kRefineSigmas = 1.6f;
// Records the step history holds beyond the hangover: the refinement's reach on both sides, and a margin.
constexpr size_t kHistoryMarginSteps = 2 * kRefineHalfWidth + 2;
// Voiced steps in a row that end a hangover (30 ms).
constexpr int kResumeSteps = 3;
// Speech level: the peak band power of voiced steps while speaking, decaying 3 dB per second; steps more than
// 25 dB below it are unvoiced.
constexpr float kSpeechLevelGate = 0.0031623f;    // -25 dB
constexpr float kSpeechLevelDecay = 0.99311605f;  // -0.03 dB per 10 ms step
// In Speech, steps stay voiced down to threshold - 0.15 (the neg_threshold of Silero VAD's VADIterator). As in
// VADIterator, the drop keeps speech going but does not resume it: in the hangover a step needs the full
// threshold (with the drop, noise alone would resume speech and push ends late).
constexpr float kSpeakingThresholdDrop = 0.15f;

// The probability of a step whose best band power / noise ratio is ratio: its SNR in dB, clipped, through the
// logistic.
float ProbabilityOf(float ratio) {
  const float score = std::min(std::max(10.f * std::log10(ratio), 0.f), kMaxBandSnrDb);
  return 1.f / (1.f + std::exp(-(score - kScoreMidDb) / kScoreScaleDb));
}

// Ratios within this factor (0.04 dB) of a threshold's are scored exactly; beyond it the probability is
// thousands of float roundings away from the threshold, so the comparison alone decides.
constexpr double kSureRatioMargin = 1.01;

// Steps of history for a hangover of min_silence_ms.
size_t HistoryStepsFor(int min_silence_ms) {
  return static_cast<size_t>(min_silence_ms / kStepMs) + kHistoryMarginSteps;
}

// Prebuffer ring length (samples) for prebuffer_ms at rateHz.
size_t PrebufferSamplesFor(int rateHz, int prebuffer_ms) {
  return static_cast<size_t>(rateHz) * prebuffer_ms / 1000;
}

// Hann window of n points sampled at i + 1/2 (symmetric about its centre, no zero end points).
std::vector<float> HannWindow(size_t n) {
  std::vector<float> w(n);
  for (size_t i = 0; i < n; i++) w[i] = static_cast<float>(0.5 - 0.5 * std::cos(2.0 * M_PI * (i + 0.5) / n));
  return w;
}

// The Hann-windowed transform of `length` samples zero-padded to NextPow2(length): one immutable instance per length
// for the whole process (hundreds of detectors then read one set of tables instead of one each), built under a mutex
// at the first detector of that length and never freed (detectors on any thread may hold it until exit) nor changed.
const WindowedPowerFft* SharedFft(size_t length) {
  static std::mutex mutex;
  static auto* const table = new std::map<size_t, std::unique_ptr<const WindowedPowerFft>>();
  std::lock_guard<std::mutex> lock(mutex);
  std::unique_ptr<const WindowedPowerFft>& fft = (*table)[length];
  if (!fft) {
    const std::vector<float> hann = HannWindow(length);
    fft = std::make_unique<const WindowedPowerFft>(NextPow2(length), hann.data(), length);
  }
  return fft.get();
}

// The per-thread working arrays of one Process call: the bin powers of a step, and first_'s output (second_'s
// input) when halving twice (half a 48 kHz step, the longest).
constexpr size_t kMaxBetween = 48000 * kStepMs / 1000 / 2;
struct StepScratch {
  float power[WindowedPowerFft::kMaxSize / 2 + 1];
  float between[kMaxBetween];
};
thread_local StepScratch step_scratch;
// The calling thread's scratch, behind a call the optimiser does not see through (as in fft.cc: addressed
// directly as a thread_local, the halvings compile to slower code).
__attribute__((noinline)) StepScratch* ThreadScratch() { return &step_scratch; }

// out[i] = in[i] for i < n, eight samples at a time (float4.h: DoubledInt16ToFloat4).
void ToFloat(const int16_t* in, size_t n, float* out) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    Short8 s;
    std::memcpy(&s, in + i, sizeof s);
    Store4(out + i, DoubledInt16ToFloat4(__builtin_shufflevector(s, s, 0, 0, 1, 1, 2, 2, 3, 3)));
    Store4(out + i + 4, DoubledInt16ToFloat4(__builtin_shufflevector(s, s, 4, 4, 5, 5, 6, 6, 7, 7)));
  }
  for (; i < n; i++) out[i] = static_cast<float>(in[i]);
}

}  // namespace

bool Vad::ValidOptions(const VadOptions& o) {
  return o.threshold >= 0.f && o.threshold <= kMaxThreshold && o.prebuffer_ms >= 0 &&
         o.prebuffer_ms <= kMaxPrebufferMs && o.min_speech_ms >= 0 && o.min_speech_ms <= kMaxMinSpeechMs &&
         o.min_silence_ms >= 0 && o.min_silence_ms <= kMaxMinSilenceMs;
}

Vad* Vad::Create(int rateHz, const VadOptions& o) {
  if (!IsSupportedRate(rateHz) || !ValidOptions(o)) return nullptr;
  // The per-thread scratch covers every supported rate (the longest window: 44.1 kHz, 882 samples -> 1024;
  // the longest middle signal: 48 kHz); checked here so that a new rate cannot overrun it.
  const size_t step = static_cast<size_t>(rateHz) * kStepMs / 1000;
  const int halvings = HalvingsFor(rateHz);
  if (NextPow2(2 * (step >> halvings)) > WindowedPowerFft::kMaxSize) return nullptr;
  if (halvings >= 2 && step / 2 > kMaxBetween) return nullptr;
  return new Vad(rateHz, o);
}

Vad::Vad(int rateHz, const VadOptions& options)
    : rate_(rateHz),
      options_(options),
      step_(static_cast<size_t>(rateHz) * kStepMs / 1000),
      halvings_(HalvingsFor(rateHz)),
      analysis_step_(step_ >> halvings_),
      window_(2 * analysis_step_),
      fft_(SharedFft(window_)),
      frame_(fft_->padded_length(), 0.f),
      history_(HistoryStepsFor(options.min_silence_ms)),
      ring_(PrebufferSamplesFor(rateHz, options.prebuffer_ms)),
      first_(halvings_ >= 1 ? step_ : kHalvingBlock),
      second_(halvings_ >= 2 ? step_ / 2 : kHalvingBlock) {
  const std::vector<float> hann = HannWindow(window_);
  double energy = 0.0;
  for (size_t i = 0; i < window_; i++) energy += static_cast<double>(hann[i]) * hann[i];
  // Band power of a bin range = 2 * sum |X_k|^2 / (N * sum w^2): the mean power of the signal in that band.
  // fft_ gives 4 |X_k|^2: the quarter is folded in here (a power of two: the product rounds as before).
  window_norm_ = static_cast<float>(2.0 / (static_cast<double>(fft_->size()) * energy)) * 0.25f;
  SetThresholds();
  const int analysis_rate = rateHz >> halvings_;
  const float window_seconds = static_cast<float>(window_) / static_cast<float>(analysis_rate);
  for (int b = 0; b < kBands; b++) {
    band_lo_[b] = static_cast<int>(std::lround(kBandEdges[b] * fft_->size() / analysis_rate));
    band_hi_[b] = static_cast<int>(std::lround(kBandEdges[b + 1] * fft_->size() / analysis_rate));
    const float independent_values = (kBandEdges[b + 1] - kBandEdges[b]) * window_seconds;
    refine_ratio_[b] = 1.f + kRefineSigmas / std::sqrt(independent_values);
  }
  Reset();
}

void Vad::SetThresholds() {
  // Hysteresis as in Silero's VADIterator: in Speech a step stays voiced down to threshold - 0.15; starting or
  // resuming speech takes the full threshold.
  thresholds_[0] = options_.threshold;
  thresholds_[1] = options_.threshold - kSpeakingThresholdDrop;
  for (int i = 0; i < 2; i++) {
    sure_below_[i] = 0.f;
    sure_above_[i] = HUGE_VALF;
    const double t = thresholds_[i];
    if (!(t > 0.0 && t < 1.0)) continue;
    // The score (dB) at which the logistic reaches t, and the ratio giving it.
    const double score = kScoreMidDb + kScoreScaleDb * std::log(t / (1.0 - t));
    if (!(score > 1.0 && score < kMaxBandSnrDb - 1.0)) continue;
    const double ratio = std::pow(10.0, score / 10.0);
    sure_below_[i] = static_cast<float>(ratio / kSureRatioMargin);
    sure_above_[i] = static_cast<float>(ratio * kSureRatioMargin);
  }
}

bool Vad::SetOptions(const VadOptions& o) {
  if (!ValidOptions(o)) return false;
  options_ = o;
  SetThresholds();
  // The timing options are read by Transition at each step. A hangover under way keeps the records back to its
  // last voiced step and the refinement's reach, whatever the new min silence, so its end is refined as ever.
  size_t history = HistoryStepsFor(o.min_silence_ms);
  if (state_ == State::MaybeSilence && last_voiced_step_ >= 0)
    history = std::max(history, static_cast<size_t>(step_index_ - last_voiced_step_) + kHistoryMarginSteps);
  if (history != history_.size()) ResizeHistory(history);
  const size_t prebuffer = PrebufferSamplesFor(rate_, o.prebuffer_ms);
  if (prebuffer != ring_.size()) ResizePrebuffer(prebuffer);
  return true;
}

void Vad::ResizeHistory(size_t length) {
  std::vector<StepRecord> next(length);
  const int64_t old_size = static_cast<int64_t>(history_.size());
  const int64_t size = static_cast<int64_t>(length);
  // The steps held now: the newest old_size analysed, none before history_from_.
  const int64_t held_from = std::max({history_from_, step_index_ - old_size, int64_t{0}});
  const int64_t from = std::max(held_from, step_index_ - size);
  for (int64_t k = from; k < step_index_; k++) next[static_cast<size_t>(k % size)] = history_[static_cast<size_t>(k % old_size)];
  history_.swap(next);
  history_from_ = from;
}

void Vad::ResizePrebuffer(size_t length) {
  std::vector<int16_t> next(length);
  // The newest samples held, oldest first, at the start of the new ring.
  const size_t kept = ReadPrebuffer(next.data(), length);
  ring_.swap(next);
  ring_fill_ = kept;
  ring_pos_ = length == 0 ? 0 : kept % length;
}

void Vad::Reset() {
  std::fill(frame_.begin(), frame_.end(), 0.f);
  first_.Reset();
  second_.Reset();
  filled_ = 0;
  primed_ = false;
  for (int b = 0; b < kBandSlots; b++) {
    smoothed_[b] = 0.f;
    floor_[b] = kMinBandPower;
    noise_[b] = 0.f;
    learned_[b] = 0.f;
    window_min_[b] = 0.f;
    history_floor_[b] = HUGE_VALF;
  }
  sub_count_ = sub_filled_ = sub_next_ = 0;
  steps_ = 0;
  state_ = State::Silence;
  run_steps_ = 0;
  run_start_ = 0;
  speech_start_ = last_voiced_end_ = -1;
  samples_ = 0;
  best_ratio_ = 0.f;
  scored_ = false;
  frame_power_ = 0.f;
  speech_level_ = 0.f;
  ring_pos_ = ring_fill_ = 0;
  step_index_ = 0;
  history_from_ = 0;
  last_voiced_step_ = -1;
}

void Vad::UpdateNoiseFloor(const float* smoothed) {
  // Four bands at a time, each lane doing exactly the scalar operations (std::min(a, b) is b < a ? b : a,
  // std::max(a, b) is a < b ? b : a).
  const auto min = [](Float4 a, Float4 b) { return b < a ? b : a; };
  const auto max = [](Float4 a, Float4 b) { return a < b ? b : a; };
  const bool starting = steps_ < kInitSteps;
  const bool learning = starting || state_ == State::Silence;
  const Float4 min_power = Splat4(kMinBandPower), near_floor = Splat4(kNearFloorRatio);
  const Float4 keep = Splat4(kNoiseMeanSmoothing), take = Splat4(1.f - kNoiseMeanSmoothing);
  const Float4 count = Splat4(static_cast<float>(steps_)), next_count = Splat4(static_cast<float>(steps_ + 1));
  for (int b = 0; b < kBandSlots; b += 4) {
    const Float4 s = Load4(smoothed + b);
    const Float4 window_min = sub_count_ == 0 ? s : min(Load4(window_min_ + b), s);
    Store4(window_min_ + b, window_min);
    const Float4 floor = max(min(window_min, Load4(history_floor_ + b)), min_power);
    Store4(floor_ + b, floor);
    // The minimum sits below the mean noise power by a margin that depends on the band's width; the noise
    // estimate is the running mean of the steps near the minimum (learnt in Silence only), kept within 0 to
    // 10 dB above it.
    const Float4 lo = floor, hi = floor * near_floor;
    Float4 learned = Load4(learned_ + b);
    if (starting) {
      // Start-up: the cumulative mean of every step so far.
      learned = (learned * count + s) / next_count;
    } else if (learning) {
      const Float4 updated = keep * learned + take * s;
      learned = ((s <= hi) | (learned < lo)) ? updated : learned;
    }
    if (learning) learned = min(max(learned, lo), hi);
    Store4(learned_ + b, learned);
    Store4(noise_ + b, min(max(learned, lo), hi));
  }
  if (++sub_count_ == kSubWindowSteps) {
    for (int b = 0; b < kBands; b++) history_min_[static_cast<size_t>(sub_next_) * kBands + b] = window_min_[b];
    sub_next_ = (sub_next_ + 1) % kSubWindows;
    sub_filled_ = std::min(sub_filled_ + 1, kSubWindows);
    sub_count_ = 0;
    // The minimum of the completed sub-windows changes only here (once per kSubWindowSteps steps).
    for (int b = 0; b < kBands; b++) {
      float m = history_min_[static_cast<size_t>(b)];
      for (int w = 1; w < sub_filled_; w++) m = std::min(m, history_min_[static_cast<size_t>(w) * kBands + b]);
      history_floor_[b] = m;
    }
  }
}

void Vad::Analyse() {
  // The powers (times 4) of the bins the bands cover (contiguous: each band starts where the last ended).
  float* const bins = ThreadScratch()->power;
  fft_->Power(frame_.data(), static_cast<size_t>(band_lo_[0]), static_cast<size_t>(band_hi_[kBands - 1]), bins);
  float power[kBands];
  for (int b = 0; b < kBands; b++) {
    // Summed in bin order (as ever: the same rounding), eight bins per loop step.
    float sum = 0.f;
    const float* p = bins + band_lo_[b];
    const float* const end = bins + band_hi_[b];
    for (; end - p >= 8; p += 8) sum = ((((((((sum + p[0]) + p[1]) + p[2]) + p[3]) + p[4]) + p[5]) + p[6]) + p[7]);
    for (; end - p >= 4; p += 4) sum = (((sum + p[0]) + p[1]) + p[2]) + p[3];
    for (; p < end; p++) sum += *p;
    power[b] = sum * window_norm_;
    smoothed_[b] = steps_ == 0 ? power[b] : kSmoothing * smoothed_[b] + (1.f - kSmoothing) * power[b];
  }
  UpdateNoiseFloor(smoothed_);
  steps_++;
  float total = 0.f;
  for (int b = 0; b < kBands; b++) total += smoothed_[b];
  frame_power_ = total;
  StepRecord& record = history_[static_cast<size_t>(step_index_ % static_cast<int64_t>(history_.size()))];
  for (int b = 0; b < kBands; b++) record.ratio[b] = std::max(smoothed_[b], kMinBandPower) / noise_[b];
  // The score is the best band SNR (one logarithm, of the largest ratio, when the probability is needed).
  float best_ratio = record.ratio[0];
  for (int b = 1; b < kBands; b++) best_ratio = std::max(best_ratio, record.ratio[b]);
  best_ratio_ = best_ratio;
  // While the noise is being learnt nothing is speech.
  scored_ = steps_ > kInitSteps;
}

float Vad::probability() const { return scored_ ? ProbabilityOf(best_ratio_) : 0.f; }

bool Vad::Reaches(bool speaking) const {
  const int i = speaking ? 1 : 0;
  if (!scored_) return 0.f >= thresholds_[i];
  if (best_ratio_ < sure_below_[i]) return false;
  if (best_ratio_ > sure_above_[i]) return true;
  return ProbabilityOf(best_ratio_) >= thresholds_[i];
}

void Vad::RefineEnd() {
  // The step that closed the hangover is the newest recorded one; the history reaches back over the hangover.
  const int64_t newest = step_index_ - 1;
  const int64_t size = static_cast<int64_t>(history_.size());
  int64_t extended = last_voiced_step_;
  for (int64_t j = last_voiced_step_ + 1; j + kRefineHalfWidth <= newest; j++) {
    if (j - kRefineHalfWidth < history_from_ || j - kRefineHalfWidth <= newest - size) break;
    if (!history_[static_cast<size_t>(j % size)].loud_enough) break;
    bool above = false;
    for (int b = 0; b < kBands && !above; b++) {
      float sum = 0.f;
      for (int64_t k = j - kRefineHalfWidth; k <= j + kRefineHalfWidth; k++)
        sum += history_[static_cast<size_t>(k % size)].ratio[b];
      above = sum / (2 * kRefineHalfWidth + 1) >= refine_ratio_[b];
    }
    if (!above) break;
    extended = j;
  }
  if (extended > last_voiced_step_) {
    last_voiced_step_ = extended;
    last_voiced_end_ = StepEnd(extended);
  }
}

int Vad::Transition(Input input) {
  const int64_t step_start = samples_ - static_cast<int64_t>(step_);
  const int min_speech_steps = std::max(1, (options_.min_speech_ms + kStepMs - 1) / kStepMs);
  const int min_silence_steps = std::max(1, (options_.min_silence_ms + kStepMs - 1) / kStepMs);
  switch (state_) {
    case State::Silence:
      if (input == Input::Unvoiced) return kVadNone;
      run_start_ = step_start;
      run_steps_ = 0;
      state_ = State::MaybeSpeech;
      [[fallthrough]];
    case State::MaybeSpeech:
      if (input == Input::Unvoiced) {
        state_ = State::Silence;
        return kVadNone;
      }
      if (++run_steps_ < min_speech_steps) return kVadNone;
      state_ = State::Speech;
      speech_start_ = run_start_;
      last_voiced_end_ = samples_;
      last_voiced_step_ = step_index_ - 1;
      return kVadSpeechStart;
    case State::Speech:
      if (input == Input::Voiced) {
        last_voiced_end_ = samples_;
        last_voiced_step_ = step_index_ - 1;
        return kVadNone;
      }
      state_ = State::MaybeSilence;
      run_steps_ = 0;
      resume_steps_ = 0;
      [[fallthrough]];
    case State::MaybeSilence:
      // In the hangover, speech resumes only after kResumeSteps voiced steps in a row: a lone voiced step
      // (a noise burst) neither ends the hangover nor moves the last voiced frame.
      run_steps_++;
      if (input == Input::Voiced) {
        if (++resume_steps_ >= kResumeSteps) {
          state_ = State::Speech;
          last_voiced_end_ = samples_;
          last_voiced_step_ = step_index_ - 1;
          return kVadNone;
        }
      } else {
        resume_steps_ = 0;
      }
      if (run_steps_ < min_silence_steps) return kVadNone;
      state_ = State::Silence;
      RefineEnd();
      return kVadSpeechEnd;
  }
  return kVadNone;
}

void Vad::PushPrebuffer(const int16_t* in, size_t n) {
  const size_t size = ring_.size();
  if (size == 0) return;
  if (n >= size) {
    // Only the last `size` samples survive.
    std::copy(in + (n - size), in + n, ring_.begin());
    ring_pos_ = 0;
    ring_fill_ = size;
    return;
  }
  const size_t first = std::min(n, size - ring_pos_);
  std::copy(in, in + first, ring_.begin() + static_cast<std::ptrdiff_t>(ring_pos_));
  std::copy(in + first, in + n, ring_.begin());
  ring_pos_ = (ring_pos_ + n) % size;
  ring_fill_ = std::min(ring_fill_ + n, size);
}

int Vad::Process(const int16_t* in, size_t n) {
  int events = kVadNone;
  while (n > 0) {
    // Up to the end of the current step in one go.
    const size_t take = std::min(n, step_ - filled_);
    PushPrebuffer(in, take);
    if (halvings_ > 0) {
      first_.Write(filled_, in, take);
    } else {
      ToFloat(in, take, frame_.data() + step_ + filled_);
    }
    in += take;
    n -= take;
    samples_ += static_cast<int64_t>(take);
    filled_ += take;
    if (filled_ < step_) break;
    filled_ = 0;
    if (halvings_ == 1) {
      first_.Decimate(frame_.data() + analysis_step_);
    } else if (halvings_ == 2) {
      float* const between = ThreadScratch()->between;
      first_.Decimate(between);
      second_.Write(0, between, step_ / 2);
      second_.Decimate(frame_.data() + analysis_step_);
    }
    // The first window would be half empty: it only primes the second half.
    const bool analysed = primed_;
    if (primed_) {
      Analyse();
    } else {
      scored_ = false;
    }
    primed_ = true;
    // Slide: the step just completed becomes the first half of the next window.
    std::copy(frame_.begin() + static_cast<std::ptrdiff_t>(analysis_step_),
              frame_.begin() + static_cast<std::ptrdiff_t>(window_), frame_.begin());
    // In Speech the speaking threshold applies (the hysteresis: see the constructor). Steps far below the speaker's
    // recent level are not their speech (tails, breath, distant talkers).
    const bool loud_enough = frame_power_ >= speech_level_ * kSpeechLevelGate;
    const bool voiced = loud_enough && Reaches(state_ == State::Speech);
    if (analysed) {
      history_[static_cast<size_t>(step_index_ % static_cast<int64_t>(history_.size()))].loud_enough = loud_enough;
      step_index_++;
    }
    speech_level_ *= kSpeechLevelDecay;
    if (voiced && speaking()) speech_level_ = std::max(speech_level_, frame_power_);
    events |= Transition(voiced ? Input::Voiced : Input::Unvoiced);
  }
  return events;
}

size_t Vad::ReadPrebuffer(int16_t* out, size_t capacity) const {
  size_t count = std::min(ring_fill_, capacity);
  // Oldest of the last `count` samples.
  size_t start = (ring_pos_ + ring_.size() - count) % (ring_.empty() ? 1 : ring_.size());
  for (size_t i = 0; i < count; i++) {
    size_t j = start + i;
    if (j >= ring_.size()) j -= ring_.size();
    out[i] = ring_[j];
  }
  return count;
}

}  // namespace parley
