#include "time_stretch.h"
#include "vec8.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace parley {
namespace {

// Segment length: 2-3 pitch periods of the lowest voices (~80 Hz) at 25 ms.
constexpr int kWindowMs = 25;
// Search range for the best-aligned segment: a full period of voices down to ~60 Hz at +-8 ms.
constexpr int kToleranceMs = 8;
// The coarse search correlates on a grid of about 4 kHz (every k-th sample and offset): voiced speech has most of
// its energy below 1 kHz, so alignment on that grid is within a sample or two; a full-rate search of the +-k
// neighbourhood of the best then finds the exact offset.
constexpr int kSearchRateHz = 4000;
// Keeps the normalization finite for a silent candidate.
constexpr double kEnergyFloor = 1e-9;

// The kernels (correlation, energy, overlap-add): 8-wide vectors (GCC/Clang vector extensions), built twice
// (target_clones): an AVX2 clone and a baseline (SSE2 / NEON) clone, one chosen once at load by the dynamic
// linker, never per call.
// (Vec8 and its helpers: vec8.h.)
constexpr int kLanes = 8;
// Candidates correlated together in the main loop: four vectors, four independent sums in flight.
constexpr int kBlock = 4 * kLanes;

// xy[k] = sum over j < len of near[j] * far[k + j], for k < count rounded up to whole vectors (far is readable that
// far: scratch or held input; the candidates past count are never chosen). Vectorized across candidates: a broadcast
// sample of the natural continuation times eight neighbouring candidates' samples, so no horizontal sums.
PARLEY_KERNEL_CLONES
void Correlate(const float* near, const float* far, int len, int count, float* xy) {
  int k = 0;
  for (; k + kBlock <= count; k += kBlock) {
    Vec8 a0 = Splat8(0.f), a1 = a0, a2 = a0, a3 = a0;
    const float* f = far + k;
    for (int j = 0; j < len; j++) {
      const float e = near[j];
      a0 += e * Load8(f + j);
      a1 += e * Load8(f + kLanes + j);
      a2 += e * Load8(f + 2 * kLanes + j);
      a3 += e * Load8(f + 3 * kLanes + j);
    }
    Store8(xy + k, a0);
    Store8(xy + k + kLanes, a1);
    Store8(xy + k + 2 * kLanes, a2);
    Store8(xy + k + 3 * kLanes, a3);
  }
  // Fewer candidates than a block (the fine pass, the coarse pass's last few): one vector of candidates, four
  // partial sums over j so the additions overlap.
  for (; k < count; k += kLanes) {
    Vec8 a0 = Splat8(0.f), a1 = a0, a2 = a0, a3 = a0;
    const float* f = far + k;
    int j = 0;
    for (; j + 4 <= len; j += 4) {
      a0 += near[j] * Load8(f + j);
      a1 += near[j + 1] * Load8(f + j + 1);
      a2 += near[j + 2] * Load8(f + j + 2);
      a3 += near[j + 3] * Load8(f + j + 3);
    }
    for (; j < len; j++) a0 += near[j] * Load8(f + j);
    Store8(xy + k, (a0 + a1) + (a2 + a3));
  }
}

typedef double Vec4d __attribute__((vector_size(32)));

PARLEY_INLINE Vec4d Load4d(const double* p) {
  Vec4d v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

PARLEY_INLINE void Store4d(double* p, const Vec4d& v) { std::memcpy(p, &v, sizeof v); }

// 16-byte vectors: what SSE2 and NEON have. In the baseline clone, a 32-byte vector's compare-and-select, shuffle or
// loop-carried sum goes through memory; the search's code uses these where 32-byte vectors would be slower.
typedef double Vec2d __attribute__((vector_size(16)));
typedef float Vec4f __attribute__((vector_size(16)));

PARLEY_INLINE Vec4f Load4f(const float* p) {
  Vec4f v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// |x|: the sign bits cleared.
PARLEY_INLINE Vec4d Abs4d(Vec4d x) {
  typedef int64_t Long4 __attribute__((vector_size(32)));
  Long4 bits;
  std::memcpy(&bits, &x, sizeof bits);
  bits &= std::numeric_limits<int64_t>::max();
  std::memcpy(&x, &bits, sizeof x);
  return x;
}

// Four floats widened to doubles.
PARLEY_INLINE Vec4d Widen4d(const float* p) { return __builtin_convertvector(Load4f(p), Vec4d); }

// The first k < count with the highest normalized cross-correlation xy[k] / sqrt(yy[k]), where yy[k] is the energy
// of far[k, k + len). Scored as xy |xy| / (yy + floor), a sign-kept square of it (the same order), with one division
// and no square root, four candidates at a time: the best is the maximum score, then the first candidate with it.
// The energies are sums of squares of whole 16-bit samples, so every sum is exact in double in any order: the four
// energies of k..k+3 advance to k+4..k+7 by the four squares entering minus the four leaving, one vector addition
// in the dependency chain per four candidates. sq: scratch for count + len + 7 doubles; score: RoundUp(count, 4).
PARLEY_KERNEL_CLONES
int BestScore(const float* far, const float* xy, int len, int count, double* sq, double* score) {
  const int used = count + len - 1;
  int i = 0;
  for (; i + 4 <= used; i += 4) {
    const Vec4d v = Widen4d(far + i);
    Store4d(sq + i, v * v);
  }
  for (; i < used; i++) sq[i] = static_cast<double>(far[i]) * far[i];
  // The last vector of candidates reads up to sq[RoundUp(count, 4) + len + 2]: zeros, for lanes past count (scored,
  // never compared).
  const Vec4d zero = {0, 0, 0, 0};
  Store4d(sq + used, zero);
  Store4d(sq + used + 4, zero);

  // Four sums in flight, in registers in every clone.
  double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  int j = 0;
  for (; j + 4 <= len; j += 4) {
    s0 += sq[j];
    s1 += sq[j + 1];
    s2 += sq[j + 2];
    s3 += sq[j + 3];
  }
  double e0 = (s0 + s1) + (s2 + s3);
  for (; j < len; j++) e0 += sq[j];
  const double e1 = e0 + (sq[len] - sq[0]);
  const double e2 = e1 + (sq[len + 1] - sq[1]);
  Vec4d yy = {e0, e1, e2, e2 + (sq[len + 2] - sq[2])};

  for (int k = 0; k < count; k += 4) {
    const Vec4d x = Widen4d(xy + k);
    Store4d(score + k, x * Abs4d(x) / (yy + kEnergyFloor));
    const double* l = sq + k;
    const double* e = sq + k + len;
    yy += ((Load4d(e) - Load4d(l)) + (Load4d(e + 1) - Load4d(l + 1))) +
          ((Load4d(e + 2) - Load4d(l + 2)) + (Load4d(e + 3) - Load4d(l + 3)));
  }
  // The best score: two lanes at a time (16 bytes, so no compare-and-select goes through memory).
  Vec2d top = {score[0], score[0]};
  int k = 0;
  for (; k + 2 <= count; k += 2) {
    Vec2d v;
    std::memcpy(&v, score + k, sizeof v);
    top = v > top ? v : top;
  }
  double best = std::max(top[0], top[1]);
  if (k < count) best = std::max(best, score[k]);
  k = 0;
  while (score[k] != best) k++;
  return k;
}

// x saturated to 16 bits and rounded half up (JavaScript's Math.round): floor(x + 0.5) as a truncation corrected
// down for negative fractions, so the vector and scalar paths compute the same.
PARLEY_INLINE int16_t Round16(float x) {
  const float y = (x > 32767.f ? 32767.f : x < -32768.f ? -32768.f : x) + 0.5f;
  const int t = static_cast<int>(y);
  return static_cast<int16_t>(t - (y < static_cast<float>(t)));
}

// One synthesis hop: out = tail + window's first half x segment's first half; tail = window's second half x
// segment's second half.
PARLEY_KERNEL_CLONES
void OverlapAdd(const float* seg, const float* w, float* tail, int hs, int16_t* out) {
  typedef int32_t Int8 __attribute__((vector_size(32)));
  typedef int16_t Short8 __attribute__((vector_size(16)));
  const Vec8 hi = Splat8(32767.f), lo = Splat8(-32768.f), half = Splat8(0.5f);
  int i = 0;
  for (; i + kLanes <= hs; i += kLanes) {
    Vec8 x = Load8(tail + i) + Load8(w + i) * Load8(seg + i);
    x = x > hi ? hi : x;
    x = x < lo ? lo : x;
    const Vec8 y = x + half;
    Int8 t = __builtin_convertvector(y, Int8);
    t += y < __builtin_convertvector(t, Vec8);  // a true comparison is -1
    const Short8 o = __builtin_convertvector(t, Short8);
    std::memcpy(out + i, &o, sizeof o);
    Store8(tail + i, Load8(w + hs + i) * Load8(seg + hs + i));
  }
  for (; i < hs; i++) {
    out[i] = Round16(tail[i] + w[i] * seg[i]);
    tail[i] = w[i + hs] * seg[i + hs];
  }
}

// 16-bit PCM to float, eight samples at a time.
PARLEY_KERNEL_CLONES
void Widen(const int16_t* in, size_t n, float* out) {
  typedef int16_t Short8 __attribute__((vector_size(16)));
  size_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    Short8 v;
    std::memcpy(&v, in + i, sizeof v);
    Store8(out + i, __builtin_convertvector(v, Vec8));
  }
  for (; i < n; i++) out[i] = in[i];
}

int RoundUp(int x, int m) { return (x + m - 1) / m * m; }

// The coarse search's gathers: out[m] = in[m * stride] for m < n. The vector ones write whole vectors of 4 (n
// rounded up) and read up to 4 strides past in[(n - 1) * stride]; one is chosen at create for the rate's stride.
// Every 2nd sample (8 kHz): the even lanes of two vectors.
PARLEY_KERNEL_CLONES
void GatherEvery2(const float* in, int, int n, float* out) {
  for (int m = 0; m < n; m += 4) {
    const Vec4f v = __builtin_shufflevector(Load4f(in + 2 * m), Load4f(in + 2 * m + 4), 0, 2, 4, 6);
    std::memcpy(out + m, &v, sizeof v);
  }
}

// Every 4th sample (16 kHz): lane 0 of four vectors.
PARLEY_KERNEL_CLONES
void GatherEvery4(const float* in, int, int n, float* out) {
  for (int m = 0; m < n; m += 4) {
    const float* p = in + 4 * m;
    const Vec4f lo = __builtin_shufflevector(Load4f(p), Load4f(p + 4), 0, 4, 0, 4);
    const Vec4f hi = __builtin_shufflevector(Load4f(p + 8), Load4f(p + 12), 0, 4, 0, 4);
    const Vec4f v = __builtin_shufflevector(lo, hi, 0, 1, 4, 5);
    std::memcpy(out + m, &v, sizeof v);
  }
}

void GatherEvery(const float* in, int stride, int n, float* out) {
  for (int m = 0; m < n; m++) out[m] = in[static_cast<ptrdiff_t>(m) * stride];
}

}  // namespace

TimeStretch* TimeStretch::Create(int rateHz, size_t maxInput, double speed) {
  if (!ValidRate(rateHz) || maxInput == 0 || maxInput > (1u << 22) || !ValidSpeed(speed)) return nullptr;
  return new TimeStretch(rateHz, maxInput, speed);
}

TimeStretch::TimeStretch(int rateHz, size_t maxInput, double speed)
    : n_(2 * static_cast<int>(std::lround(rateHz * static_cast<double>(kWindowMs) / 2000.0))),
      hs_(n_ / 2),
      tol_(static_cast<int>(std::lround(rateHz * static_cast<double>(kToleranceMs) / 1000.0))),
      step_(std::max(1, static_cast<int>(std::lround(static_cast<double>(rateHz) / kSearchRateHz)))),
      max_input_(maxInput),
      speed_(speed) {
  window_.resize(static_cast<size_t>(n_));
  // Periodic Hann: at 50% overlap the windows sum to exactly 1.
  for (int i = 0; i < n_; i++) window_[i] = static_cast<float>(0.5 - 0.5 * std::cos(2.0 * M_PI * i / n_));
  tail_.assign(static_cast<size_t>(hs_), 0.f);
  // Held input: what stays after a run (under 1.5 windows + 2 tolerances, see Compact) plus one chunk, or plus
  // the flush's silence (a window + a tolerance).
  in_.assign(maxInput + 4 * static_cast<size_t>(n_) + 4 * static_cast<size_t>(tol_) + 16, 0.f);
  const int coarse = 2 * tol_ / step_ + 1;
  const int fine = 2 * step_ - 1;
  const int candidates = RoundUp(std::max(coarse, fine), kLanes);
  // Room for the vector gathers' whole vectors.
  near_.assign(static_cast<size_t>(hs_ + kLanes), 0.f);
  far_.assign(static_cast<size_t>(candidates + hs_ + kLanes), 0.f);
  gather_ = step_ == 2 ? GatherEvery2 : step_ == 4 ? GatherEvery4 : GatherEvery;
  xy_.assign(static_cast<size_t>(candidates), 0.f);
  sq_.assign(static_cast<size_t>(candidates + hs_ + 8), 0.0);
  score_.assign(static_cast<size_t>(candidates), 0.0);
}

size_t TimeStretch::MaxOutput(size_t n) const {
  return static_cast<size_t>(std::ceil((static_cast<double>(n) + in_len_) / kTimeStretchSpeedMin)) + 2 * hs_;
}

bool TimeStretch::Idle() const { return speed_ == 1.0 && prev_ < 0 && in_len_ == 0; }

int64_t TimeStretch::StepsBound(int64_t end, int64_t until) const {
  // The same accumulation of ideal_ as StepOnce: the count is exact for the window condition of CanStep.
  const int64_t last = end - tol_ - n_;
  const double hop = speed_ * hs_;
  int64_t steps = 0;
  for (double x = ideal_; static_cast<int64_t>(std::floor(x)) <= last && x < static_cast<double>(until); x += hop)
    steps++;
  return steps;
}

size_t TimeStretch::ProcessBound(size_t n) const {
  if (Idle()) return n;
  const int64_t end = in_start_ + in_len_ + static_cast<int64_t>(n);
  return static_cast<size_t>(StepsBound(end, std::numeric_limits<int64_t>::max()) * hs_);
}

size_t TimeStretch::FlushBound() const {
  const int64_t end = in_start_ + in_len_;
  const int64_t steps = StepsBound(end + n_ + tol_, end);
  // The overlap tail follows any segment, one written before or one of these.
  const int64_t tail = prev_ >= 0 || steps > 0 ? 1 : 0;
  return static_cast<size_t>((steps + tail) * hs_);
}

bool TimeStretch::Reserve(size_t n) {
  if (in_len_ + static_cast<int64_t>(n) > static_cast<int64_t>(in_.size())) Compact();
  return in_len_ + static_cast<int64_t>(n) <= static_cast<int64_t>(in_.size());
}

bool TimeStretch::Process(const int16_t* in, size_t n, int16_t* out, size_t* written) {
  if (Idle()) {
    // Pass-through while idle at normal speed: exact, and nearly free (in and out may be one array).
    if (n > 0) std::memmove(out, in, n * sizeof(int16_t));
    *written = n;
    return true;
  }
  if (!Reserve(n)) return false;
  Widen(in, n, in_.data() + in_len_);
  in_len_ += static_cast<int64_t>(n);
  *written = Run(out, 0, std::numeric_limits<int64_t>::max());
  Compact();
  return true;
}

bool TimeStretch::Flush(int16_t* out, size_t* written) {
  // Pad with silence so the held input completes its last segments, then emit the overlap tail.
  const int64_t end = in_start_ + in_len_;
  const size_t zeros = static_cast<size_t>(n_ + tol_);
  if (!Reserve(zeros)) return false;
  std::fill(in_.begin() + in_len_, in_.begin() + in_len_ + static_cast<int64_t>(zeros), 0.f);
  in_len_ += static_cast<int64_t>(zeros);
  size_t w = Run(out, 0, end);
  if (prev_ >= 0) {
    for (int i = 0; i < hs_; i++) out[w++] = Round16(tail_[i]);
  }
  Reset();
  *written = w;
  return true;
}

void TimeStretch::Reset() {
  in_start_ = 0;
  in_len_ = 0;
  ideal_ = 0;
  prev_ = -1;
  std::fill(tail_.begin(), tail_.end(), 0.f);
}

// Drops input no future segment can reach: before the next search range and the natural continuation.
// What stays is under 1.5 windows + 2 tolerances (+2): a run stops when the next search range (ideal + tol + n)
// or the continuation (prev + hs + n) is past the end, and ideal is at most speed x hs + tol past prev.
void TimeStretch::Compact() {
  int64_t keepFrom = static_cast<int64_t>(std::floor(ideal_)) - tol_;
  if (prev_ >= 0) keepFrom = std::min(keepFrom, prev_ + hs_);
  const int64_t drop = std::max<int64_t>(0, std::min(in_len_, keepFrom - in_start_));
  if (drop == 0) return;
  std::memmove(in_.data(), in_.data() + drop, static_cast<size_t>(in_len_ - drop) * sizeof(float));
  in_start_ += drop;
  in_len_ -= drop;
}

bool TimeStretch::CanStep() const {
  const int64_t end = in_start_ + in_len_;
  const int64_t needCandidate = static_cast<int64_t>(std::floor(ideal_)) + tol_ + n_;
  const int64_t needNatural = prev_ < 0 ? 0 : prev_ + hs_ + n_;
  return needCandidate <= end && needNatural <= end;
}

size_t TimeStretch::Run(int16_t* out, size_t written, int64_t until) {
  while (CanStep() && ideal_ < static_cast<double>(until)) written = StepOnce(out, written);
  return written;
}

// Chooses the next segment, overlap-adds it, writes one synthesis hop.
size_t TimeStretch::StepOnce(int16_t* out, size_t written) {
  const int64_t ideal = static_cast<int64_t>(std::floor(ideal_));
  const int64_t pos = prev_ < 0 ? ideal : BestAlignment(ideal, prev_ + hs_);
  OverlapAdd(in_.data() + (pos - in_start_), window_.data(), tail_.data(), hs_, out + written);
  prev_ = pos;
  ideal_ += speed_ * hs_;
  return written + static_cast<size_t>(hs_);
}

// Start in [ideal - tol, ideal + tol] whose first half best matches the natural continuation: a coarse pass on the
// search grid, then every offset around its best.
int64_t TimeStretch::BestAlignment(int64_t ideal, int64_t natural) {
  const int64_t lo = std::max(in_start_, ideal - tol_);
  const int64_t hi = ideal + tol_;
  int64_t best = BestOnGrid(lo, hi, step_, natural, lo);
  if (step_ > 1) best = BestOnGrid(std::max(lo, best - step_ + 1), std::min(hi, best + step_ - 1), 1, natural, best);
  return best;
}

// The candidate in [from, to] (every `stride`-th) with the highest normalized cross-correlation of its first half
// (every `stride`-th sample) with the natural continuation; `fallback` when the range is empty. On a coarse grid,
// candidate k starts at sample k of the decimated run from `from`, so the samples of both are gathered once into
// contiguous scratch and every candidate is a contiguous dot product.
int64_t TimeStretch::BestOnGrid(int64_t from, int64_t to, int stride, int64_t natural, int64_t fallback) {
  if (to < from) return fallback;
  const float* b = in_.data();
  const float* n0 = b + (natural - in_start_);
  const float* c0 = b + (from - in_start_);
  const int len = (hs_ + stride - 1) / stride;
  const int count = static_cast<int>((to - from) / stride) + 1;
  // At full rate the held input is used in place: the kernel's reads past the last candidate (to a whole vector)
  // stay within the search window (hs + kLanes <= n), which CanStep guarantees is held.
  const float* near = n0;
  const float* far = c0;
  if (stride > 1) {
    // The vector gathers read at most 4 strides (1 ms) past the samples used: within the continuation and the
    // search window (ends hs = 12.5 ms past them), both held.
    gather_(n0, stride, len, near_.data());
    gather_(c0, stride, count + len - 1, far_.data());
    near = near_.data();
    far = far_.data();
  }
  float* xy = xy_.data();
  Correlate(near, far, len, count, xy);

  return from + static_cast<int64_t>(BestScore(far, xy, len, count, sq_.data(), score_.data())) * stride;
}

}  // namespace parley
