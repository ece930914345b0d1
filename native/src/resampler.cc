#include "resampler.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <mutex>
#include <numeric>
#include <utility>

#include "g711.h"
#include "vec8.h"

namespace parley {
namespace {

// The six rates of the media pipeline (src/media/format.ts) and their 20 ms frames.
constexpr int kRates[] = {8000, 16000, 22050, 24000, 44100, 48000};

constexpr double kPassEdge = 0.42;   // of the lower rate
constexpr double kStopEdgeDown = 0.50;  // of the output rate when down-sampling: its Nyquist frequency
constexpr double kAttenuationDb = 80.0;
// Taps per phase are rounded up to whole vectors of the kernel (no scalar tail).
constexpr int kVector = 8;
// Outputs computed together against one coefficient phase (their loads of it shared).
constexpr int kBlock = 4;
// Prototype taps this small (relative to a peak near 1) are rounding noise of sin(pi m), exactly zero in theory:
// flushed, so that a Nyquist filter's phase 0 is exactly one tap.
constexpr double kZeroTap = 1e-9;

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
  // Band edges in Hz (see resampler.h): the stop edge is the output Nyquist frequency when down-sampling and the
  // first image of the pass band when up-sampling.
  const double passHz = kPassEdge * std::min(fromHz, toHz);
  const double stopHz = toHz < fromHz ? kStopEdgeDown * toHz : fromHz - passHz;
  // Transition width in cycles per sample at the input rate; Kaiser's length formula
  // N = (A - 7.95) / (2.285 * delta_omega) gives taps per input sample, i.e. per phase.
  const double delta = (stopHz - passHz) / fromHz;
  int taps = static_cast<int>(std::ceil((kAttenuationDb - 7.95) / (2.285 * 2.0 * M_PI * delta)));
  taps = (taps + kVector - 1) / kVector * kVector;
  table->taps = taps;

  // Prototype at L * fromHz, cut off midway through the transition band, centred at K * L / 2 so the group
  // delay is exactly K / 2 input samples. DC gain L, so each phase has unit gain.
  const int length = taps * L;
  const double cutoff = (passHz + stopHz) / 2.0 / (static_cast<double>(L) * fromHz);
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
  table->single.assign(static_cast<size_t>(L), -1);
  for (int phase = 0; phase < L; phase++) {
    int nonZero = 0, last = -1;
    for (int k = 0; k < taps; k++) {
      // y[n] = sum_k h[phase + k L] x[i - k]; stored reversed so that c[j] multiplies history[i + j].
      double c = h[phase + static_cast<size_t>(k) * L] * L / sum;
      if (std::fabs(c) < kZeroTap) c = 0.0;
      const int j = taps - 1 - k;
      table->coeffs[static_cast<size_t>(phase) * taps + j] = static_cast<float>(c);
      if (c != 0.0) {
        nonZero++;
        last = j;
      }
    }
    if (nonZero == 1) table->single[static_cast<size_t>(phase)] = last;
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

// The kernel: 8-wide vectors (GCC/Clang vector extensions). Built twice (target_clones): an AVX2 clone and a
// baseline (SSE2 / NEON) clone, one chosen once at load by the dynamic linker from the CPU's features, never per
// sample. Every output is one accumulator over the taps in order and the same final reduction, whichever path
// computes it, so blocked and single outputs are bit-identical (no FMA contraction: -std=c++17 keeps
// -ffp-contract=off).
// (Vec8 and its helpers: vec8.h.)

PARLEY_INLINE float Dot(const float* c, const float* x, int K) {
  Vec8 a = {0, 0, 0, 0, 0, 0, 0, 0};
  for (int j = 0; j < K; j += kVector) a += Load8(c + j) * Load8(x + j);
  return Sum8(a);
}

// Four outputs of one phase: inputs x, x + xs, x + 2 xs, x + 3 xs; outputs o, o + os, o + 2 os, o + 3 os.
PARLEY_INLINE void Dot4(const float* c, const float* x, int64_t xs, int K, int16_t* o, int os) {
  Vec8 a0 = {0, 0, 0, 0, 0, 0, 0, 0}, a1 = a0, a2 = a0, a3 = a0;
  const float* x1 = x + xs;
  const float* x2 = x1 + xs;
  const float* x3 = x2 + xs;
  for (int j = 0; j < K; j += kVector) {
    const Vec8 cj = Load8(c + j);
    a0 += cj * Load8(x + j);
    a1 += cj * Load8(x1 + j);
    a2 += cj * Load8(x2 + j);
    a3 += cj * Load8(x3 + j);
  }
  o[0] = SaturateToI16(Sum8(a0));
  o[os] = SaturateToI16(Sum8(a1));
  o[2 * os] = SaturateToI16(Sum8(a2));
  o[3 * os] = SaturateToI16(Sum8(a3));
}

// Integer up-sampling (M = 1): output n is input index n / L, phase n mod L. Thirty-two consecutive inputs are
// four vectors of eight outputs per phase (a broadcast coefficient times eight neighbouring inputs per tap, four
// independent sums in flight): no horizontal sums, and the half-band / L-th band phase that is a single tap stays
// one multiply. Each lane sums its taps in order, and so does the one-output tail (SequentialDot), so any
// chunking gives the same output.
constexpr int kLanes = 4 * kVector;

PARLEY_INLINE float SequentialDot(const float* c, const float* x, int K) {
  float a = 0.f;
  for (int j = 0; j < K; j++) a += c[j] * x[j];
  return a;
}

PARLEY_KERNEL_CLONES
int64_t RunInterpolate(const PolyphaseTable& t, const float* buf, int64_t pos, int64_t end, int16_t* out,
                       size_t* written) {
  const int K = t.taps;
  const int L = t.L;
  const float* coeffs = t.coeffs.data();
  const int* single = t.single.data();
  size_t w = 0;
  // One output at a time up to a whole input index (phase 0), and for the inputs after the last whole vector.
  auto one = [&](int64_t p) {
    const int64_t index = p / L;
    const int phase = static_cast<int>(p - index * L);
    const float* c = coeffs + static_cast<size_t>(phase) * K;
    const int s = single[phase];
    out[w++] = SaturateToI16(s >= 0 ? c[s] * buf[index + s] : SequentialDot(c, buf + index, K));
  };
  while (pos < end && pos % L != 0) one(pos++);
  const int64_t span = static_cast<int64_t>(kLanes) * L;
  while (pos + span <= end) {
    const float* x = buf + pos / L;
    for (int phase = 0; phase < L; phase++) {
      const float* c = coeffs + static_cast<size_t>(phase) * K;
      int16_t* o = out + w + phase;
      const int s = single[phase];
      if (s >= 0) {
        for (int k = 0; k < kLanes; k++) o[k * L] = SaturateToI16(c[s] * x[k + s]);
        continue;
      }
      Vec8 a0 = {0, 0, 0, 0, 0, 0, 0, 0}, a1 = a0, a2 = a0, a3 = a0;
      for (int j = 0; j < K; j++) {
        const float cj = c[j];
        const Vec8 cv = {cj, cj, cj, cj, cj, cj, cj, cj};
        a0 += cv * Load8(x + j);
        a1 += cv * Load8(x + kVector + j);
        a2 += cv * Load8(x + 2 * kVector + j);
        a3 += cv * Load8(x + 3 * kVector + j);
      }
      for (int k = 0; k < kVector; k++) {
        o[k * L] = SaturateToI16(a0[k]);
        o[(kVector + k) * L] = SaturateToI16(a1[k]);
        o[(2 * kVector + k) * L] = SaturateToI16(a2[k]);
        o[(3 * kVector + k) * L] = SaturateToI16(a3[k]);
      }
    }
    pos += span;
    w += static_cast<size_t>(span);
  }
  while (pos < end) one(pos++);
  *written = w;
  return pos;
}

// Computes the outputs at positions pos, pos + M, ... below end; returns the next position.
// Outputs n and n + L use the same phase against inputs M apart, so whole blocks of kBlock * L outputs run as L
// calls of Dot4 (one coefficient load per four products); the remainder one output at a time. A phase that is a
// single tap (an up-sampler's phase 0) is one multiply: the dot product's other terms are exact zeros.
PARLEY_KERNEL_CLONES
int64_t RunPolyphase(const PolyphaseTable& t, const float* buf, int64_t pos, int64_t end, int16_t* out,
                     size_t* written) {
  const int K = t.taps;
  const int L = t.L;
  const int M = t.M;
  const float* coeffs = t.coeffs.data();
  const int* single = t.single.data();
  size_t w = 0;
  const int64_t blockSpan = static_cast<int64_t>(kBlock) * L * M;
  while (pos + blockSpan - M < end) {
    for (int k = 0; k < L; k++) {
      const int64_t p = pos + static_cast<int64_t>(k) * M;
      const int64_t index = p / L;
      const int phase = static_cast<int>(p - index * L);
      const float* c = coeffs + static_cast<size_t>(phase) * K;
      int16_t* o = out + w + k;
      const int s = single[phase];
      if (s >= 0) {
        for (int b = 0; b < kBlock; b++) o[b * L] = SaturateToI16(c[s] * buf[index + s + static_cast<int64_t>(b) * M]);
      } else {
        Dot4(c, buf + index, M, K, o, L);
      }
    }
    pos += blockSpan;
    w += static_cast<size_t>(kBlock) * L;
  }
  while (pos < end) {
    const int64_t index = pos / L;
    const int phase = static_cast<int>(pos - index * L);
    const float* c = coeffs + static_cast<size_t>(phase) * K;
    const int s = single[phase];
    out[w++] = SaturateToI16(s >= 0 ? c[s] * buf[index + s] : Dot(c, buf + index, K));
    pos += M;
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
  float* buf = history_.data();
  float* fresh = buf + (K - 1);
  for (size_t i = 0; i < n; i++) fresh[i] = static_cast<float>(in[i]);

  const int64_t end = static_cast<int64_t>(n) * L;
  size_t written = 0;
  const int64_t next = table_->M == 1 ? RunInterpolate(*table_, buf, position_, end, out, &written)
                                      : RunPolyphase(*table_, buf, position_, end, out, &written);
  position_ = next - end;
  // Carry the last K - 1 samples (of history + fresh) to the front.
  const size_t total = static_cast<size_t>(K - 1) + n;
  std::copy(buf + (total - (K - 1)), buf + total, buf);
  return written;
}

}  // namespace parley
