#include "resampler.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <mutex>
#include <numeric>
#include <utility>

#include "g711.h"

namespace parley {
namespace {

// The six rates of the media pipeline (docs/CONTRACTS.md) and their 20 ms frames.
constexpr int kRates[] = {8000, 16000, 22050, 24000, 44100, 48000};

constexpr double kPassEdge = 0.42;   // of the lower rate
constexpr double kStopEdge = 0.50;   // of the lower rate: the lower Nyquist frequency
constexpr double kAttenuationDb = 80.0;
// Taps per phase are rounded up to whole iterations of the vector kernel (no scalar tail).
constexpr int kTapAlign = 16;

// Kaiser (1974) window design: beta for a stop band attenuation A > 50 dB.
double KaiserBeta(double a) { return 0.1102 * (a - 8.7); }

// Zeroth-order modified Bessel function of the first kind, power series.
double BesselI0(double x) {
  double sum = 1.0, term = 1.0, q = x * x / 4.0;
  for (int k = 1; k < 64; k++) {
    term *= q / (static_cast<double>(k) * k);
    sum += term;
    if (term < sum * 1e-17) break;
  }
  return sum;
}

std::shared_ptr<const PolyphaseTable> BuildTable(int fromHz, int toHz) {
  auto table = std::make_shared<PolyphaseTable>();
  int g = std::gcd(fromHz, toHz);
  table->L = toHz / g;
  table->M = fromHz / g;
  const int L = table->L;
  const double lower = std::min(fromHz, toHz);
  // Transition width in cycles per sample at the input rate; Kaiser's length formula
  // N = (A - 7.95) / (2.285 * delta_omega) gives taps per input sample, i.e. per phase.
  const double delta = (kStopEdge - kPassEdge) * lower / fromHz;
  int taps = static_cast<int>(std::ceil((kAttenuationDb - 7.95) / (2.285 * 2.0 * M_PI * delta)));
  taps = (taps + kTapAlign - 1) / kTapAlign * kTapAlign;
  table->taps = taps;

  // Prototype at L * fromHz, cut off midway through the transition band, centred at K * L / 2 so the group
  // delay is exactly K / 2 input samples. DC gain L, so each phase has unit gain.
  const int length = taps * L;
  const double cutoff = (kPassEdge + kStopEdge) / 2.0 * lower / (static_cast<double>(L) * fromHz);
  const double center = length / 2.0;
  const double beta = KaiserBeta(kAttenuationDb);
  const double i0beta = BesselI0(beta);
  std::vector<double> h(length);
  double sum = 0.0;
  for (int j = 0; j < length; j++) {
    double x = j - center;
    double sinc = x == 0.0 ? 2.0 * cutoff : std::sin(2.0 * M_PI * cutoff * x) / (M_PI * x);
    double r = x / center;
    double w = std::fabs(r) >= 1.0 ? 0.0 : BesselI0(beta * std::sqrt(1.0 - r * r)) / i0beta;
    h[j] = sinc * w;
    sum += h[j];
  }
  table->coeffs.resize(static_cast<size_t>(length));
  for (int phase = 0; phase < L; phase++) {
    for (int k = 0; k < taps; k++) {
      // y[n] = sum_k h[phase + k L] x[i - k]; stored reversed so that c[j] multiplies history[i + j].
      table->coeffs[static_cast<size_t>(phase) * taps + (taps - 1 - k)] =
          static_cast<float>(h[phase + static_cast<size_t>(k) * L] * L / sum);
    }
  }
  return table;
}

std::shared_ptr<const PolyphaseTable> TableFor(int fromHz, int toHz) {
  static std::mutex mutex;
  static std::map<std::pair<int, int>, std::shared_ptr<const PolyphaseTable>> cache;
  std::lock_guard<std::mutex> lock(mutex);
  auto key = std::make_pair(fromHz, toHz);
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  auto table = BuildTable(fromHz, toHz);
  cache.emplace(key, table);
  return table;
}

// The inner kernel: 8-wide vectors (GCC/Clang vector extensions) with two independent accumulators. Built twice
// (target_clones): an AVX2+FMA clone and a baseline (SSE2 / NEON) clone, one chosen once at load by the dynamic
// linker, never per sample. Taps are a multiple of 16.
typedef float Vec8 __attribute__((vector_size(32)));

#if defined(__x86_64__) && defined(__GNUC__)
#define PARLEY_KERNEL_CLONES __attribute__((target_clones("arch=haswell", "default")))
#else
#define PARLEY_KERNEL_CLONES
#endif

// Computes the outputs at positions pos, pos + M, ... below end; returns the next position.
PARLEY_KERNEL_CLONES
int64_t RunPolyphase(const float* coeffs, int K, int L, int M, const float* buf, int64_t pos, int64_t end,
                     int16_t* out, size_t* written) {
  size_t w = 0;
  int64_t index = pos / L;
  int phase = static_cast<int>(pos - index * L);
  const int64_t step_index = M / L;
  const int step_phase = M % L;
  while (pos < end) {
    const float* c = coeffs + static_cast<size_t>(phase) * K;
    const float* x = buf + index;
    Vec8 a0 = {0, 0, 0, 0, 0, 0, 0, 0}, a1 = {0, 0, 0, 0, 0, 0, 0, 0};
    for (int j = 0; j < K; j += 16) {
      Vec8 c0, c1, x0, x1;
      std::memcpy(&c0, c + j, sizeof c0);
      std::memcpy(&c1, c + j + 8, sizeof c1);
      std::memcpy(&x0, x + j, sizeof x0);
      std::memcpy(&x1, x + j + 8, sizeof x1);
      a0 += c0 * x0;
      a1 += c1 * x1;
    }
    Vec8 a = a0 + a1;
    float s = ((a[0] + a[4]) + (a[1] + a[5])) + ((a[2] + a[6]) + (a[3] + a[7]));
    out[w++] = SaturateToI16(s);
    pos += M;
    index += step_index;
    phase += step_phase;
    if (phase >= L) {
      phase -= L;
      index++;
    }
  }
  *written = w;
  return pos;
}

}  // namespace

bool IsSupportedRate(int hz) {
  for (int r : kRates)
    if (r == hz) return true;
  return false;
}

Resampler* Resampler::Create(int fromHz, int toHz, size_t maxFrame) {
  if (!IsSupportedRate(fromHz) || !IsSupportedRate(toHz) || maxFrame == 0) return nullptr;
  return new Resampler(TableFor(fromHz, toHz), maxFrame);
}

Resampler::Resampler(std::shared_ptr<const PolyphaseTable> table, size_t maxFrame)
    : table_(std::move(table)), max_frame_(maxFrame), history_(table_->taps - 1 + maxFrame, 0.f) {}

size_t Resampler::MaxOutput(size_t n) const {
  // Outputs are at positions position_ + k M < n L with position_ >= 0.
  return (n * static_cast<size_t>(table_->L) + table_->M - 1) / table_->M + 1;
}

void Resampler::Reset() {
  std::fill(history_.begin(), history_.end(), 0.f);
  position_ = 0;
}

size_t Resampler::Process(const int16_t* in, size_t n, int16_t* out) {
  const int K = table_->taps;
  const int L = table_->L;
  const int M = table_->M;
  float* buf = history_.data();
  float* fresh = buf + (K - 1);
  for (size_t i = 0; i < n; i++) fresh[i] = static_cast<float>(in[i]);

  const int64_t end = static_cast<int64_t>(n) * L;
  size_t written = 0;
  position_ = RunPolyphase(table_->coeffs.data(), K, L, M, buf, position_, end, out, &written) - end;
  // Carry the last K - 1 samples (of history + fresh) to the front.
  const size_t total = static_cast<size_t>(K - 1) + n;
  std::copy(buf + (total - (K - 1)), buf + total, buf);
  return written;
}

}  // namespace parley
