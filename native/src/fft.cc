#include "fft.h"

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "float4.h"

namespace parley {

size_t NextPow2(size_t n) {
  size_t p = 1;
  while (p < n) p <<= 1;
  return p;
}

namespace {

// The bit-reversal permutation of 0 .. size - 1 (size a power of two): entry i is i with its log2(size) bits reversed.
template <typename Index>
void FillBitReversed(std::vector<Index>& out, size_t size) {
  unsigned bits = 0;
  while ((size_t{1} << bits) < size) bits++;
  for (size_t i = 0; i < size; i++) {
    unsigned r = 0;
    for (unsigned b = 0; b < bits; b++)
      if (i & (size_t{1} << b)) r |= 1u << (bits - 1 - b);
    out[i] = r;
  }
}

// The twiddles exp(-2 pi i k / len), k < len / 2, of every radix-2 stage from len 8 up to max_len, one stage after
// the other (stages 2 and 4 need none: twiddles 1 and -i).
void AppendStageTwiddles(size_t max_len, std::vector<float>& cos_out, std::vector<float>& sin_out) {
  for (size_t len = 8; len <= max_len; len <<= 1) {
    for (size_t k = 0; k < len / 2; k++) {
      double a = -2.0 * M_PI * static_cast<double>(k) / static_cast<double>(len);
      cos_out.push_back(static_cast<float>(std::cos(a)));
      sin_out.push_back(static_cast<float>(std::sin(a)));
    }
  }
}

// The outputs of a radix-4 butterfly whose twiddles are 1 and -i, at s .. s + 3, from the sums and differences of
// the first pair (a = x0 + x1, b = x0 - x1) and the second (c = x2 + x3, d = x2 - x3): no products. T is float
// (Fft) or Float4 (WindowedPowerFft's four lanes).
template <typename T>
inline void Radix4Out(T* re, T* im, size_t s, T ar, T ai, T br, T bi, T cr, T ci, T dr, T di) {
  re[s] = ar + cr;
  im[s] = ai + ci;
  re[s + 2] = ar - cr;
  im[s + 2] = ai - ci;
  // (dr + i di) * -i = di - i dr
  re[s + 1] = br + di;
  im[s + 1] = bi - dr;
  re[s + 3] = br - di;
  im[s + 3] = bi + dr;
}

}  // namespace

Fft::Fft(size_t size) : size_(size), bitrev_(size) {
  FillBitReversed(bitrev_, size);
  AppendStageTwiddles(size, stage_cos_, stage_sin_);
}

void Fft::Forward(float* re, float* im) const {
  const size_t n = size_;
  for (size_t i = 0; i < n; i++) {
    size_t j = bitrev_[i];
    if (j > i) {
      std::swap(re[i], re[j]);
      std::swap(im[i], im[j]);
    }
  }
  ForwardBitReversed(re, im);
}

void Fft::ForwardBitReversed(float* re, float* im) const {
  const size_t n = size_;
  // Stages of length 2 and 4 together: their twiddles are 1 and -i, so a radix-4 butterfly without products.
  if (n == 2) {
    const float r0 = re[0], i0 = im[0];
    re[0] = r0 + re[1];
    im[0] = i0 + im[1];
    re[1] = r0 - re[1];
    im[1] = i0 - im[1];
    return;
  }
  for (size_t s = 0; s < n; s += 4) {
    const float ar = re[s] + re[s + 1], ai = im[s] + im[s + 1];
    const float br = re[s] - re[s + 1], bi = im[s] - im[s + 1];
    const float cr = re[s + 2] + re[s + 3], ci = im[s + 2] + im[s + 3];
    const float dr = re[s + 2] - re[s + 3], di = im[s + 2] - im[s + 3];
    Radix4Out(re, im, s, ar, ai, br, bi, cr, ci, dr, di);
  }
  const float* wc = stage_cos_.data();
  const float* ws = stage_sin_.data();
  for (size_t len = 8; len <= n; len <<= 1) {
    const size_t half = len / 2;
    for (size_t start = 0; start < n; start += len) {
      float* ar = re + start;
      float* ai = im + start;
      float* br = ar + half;
      float* bi = ai + half;
      // half is a multiple of 4 from len 8 on: four butterflies at a time.
      for (size_t k = 0; k < half; k += 4) {
        const Float4 wr = Load4(wc + k), wi = Load4(ws + k);
        const Float4 xr = Load4(br + k), xi = Load4(bi + k);
        const Float4 yr = Load4(ar + k), yi = Load4(ai + k);
        const Float4 tr = xr * wr - xi * wi;
        const Float4 ti = xr * wi + xi * wr;
        Store4(br + k, yr - tr);
        Store4(bi + k, yi - ti);
        Store4(ar + k, yr + tr);
        Store4(ai + k, yi + ti);
      }
    }
    wc += half;
    ws += half;
  }
}

RealFft::RealFft(size_t size)
    : size_(size), half_(size / 2), zr_(size / 2), zi_(size / 2), cos_(size / 2), sin_(size / 2) {
  for (size_t k = 0; k < size / 2; k++) {
    double a = -2.0 * M_PI * static_cast<double>(k) / static_cast<double>(size);
    cos_[k] = static_cast<float>(std::cos(a));
    sin_[k] = static_cast<float>(std::sin(a));
  }
}

void RealFft::Forward(float* in, float* re, float* im) {
  const size_t h = size_ / 2;
  float* zr = zr_.data();
  float* zi = zi_.data();
  // Even samples as real parts, odd ones as imaginary parts, scattered straight into bit-reversed order.
  for (size_t n = 0; n < h; n++) {
    const unsigned j = half_.bitrev(n);
    zr[j] = in[2 * n];
    zi[j] = in[2 * n + 1];
  }
  half_.ForwardBitReversed(zr, zi);
  // X[k] = E[k] + W^k O[k], E[k] = (Z[k] + conj Z[h-k]) / 2, O[k] = (Z[k] - conj Z[h-k]) / 2i (Z periodic in h).
  re[0] = zr[0] + zi[0];
  im[0] = 0.f;
  re[h] = zr[0] - zi[0];
  im[h] = 0.f;
  // Bins 1..h-1, four at a time while they last: Z[h-k] for k..k+3 is Z[h-k-3..h-k] read backwards.
  const Float4 half = Splat4(0.5f);
  size_t k = 1;
  for (; k + 4 <= h; k += 4) {
    const size_t b = h - k - 3;
    const Float4 ar = Load4(zr + k), ai = Load4(zi + k);
    const Float4 br = Reverse4(Load4(zr + b)), bi = Reverse4(Load4(zi + b));
    const Float4 er = half * (ar + br), ei = half * (ai - bi);
    const Float4 or_ = half * (ai + bi), oi = half * (br - ar);
    const Float4 wr = Load4(cos_.data() + k), wi = Load4(sin_.data() + k);
    Store4(re + k, er + wr * or_ - wi * oi);
    Store4(im + k, ei + wr * oi + wi * or_);
  }
  for (; k < h; k++) {
    const size_t b = h - k;
    const float er = 0.5f * (zr[k] + zr[b]);
    const float ei = 0.5f * (zi[k] - zi[b]);
    const float or_ = 0.5f * (zi[k] + zi[b]);
    const float oi = -0.5f * (zr[k] - zr[b]);
    re[k] = er + cos_[k] * or_ - sin_[k] * oi;
    im[k] = ei + cos_[k] * oi + sin_[k] * or_;
  }
}

namespace {

// Lanes picked from the eight of a and b (GCC >= 12 and Clang).
#define PARLEY_SHUFFLE(a, b, i, j, k, l) __builtin_shufflevector(a, b, i, j, k, l)

// One radix-2 decimation-in-time butterfly, four at a time: a, b <- a + w b, a - w b, in Fft's order of
// operations (t = b w first, then the sum and the difference).
inline void Butterfly(Float4& ar, Float4& ai, Float4& br, Float4& bi, Float4 wr, Float4 wi) {
  const Float4 tr = br * wr - bi * wi;
  const Float4 ti = br * wi + bi * wr;
  br = ar - tr;
  bi = ai - ti;
  ar = ar + tr;
  ai = ai + ti;
}

// z[m] = x[2m] w[2m] + i x[2m+1] w[2m+1] for the four m of samples 0..7.
inline void Input(const float* x, const float* w, Float4& re, Float4& im) {
  const Float4 a = Load4(x) * Load4(w), b = Load4(x + 4) * Load4(w + 4);
  re = PARLEY_SHUFFLE(a, b, 0, 2, 4, 6);
  im = PARLEY_SHUFFLE(a, b, 1, 3, 5, 7);
}

// Rows r0..r3 become columns: r_i[j] moves to r_j[i].
inline void Transpose(Float4& r0, Float4& r1, Float4& r2, Float4& r3) {
  const Float4 t0 = PARLEY_SHUFFLE(r0, r1, 0, 4, 1, 5), t1 = PARLEY_SHUFFLE(r0, r1, 2, 6, 3, 7);
  const Float4 t2 = PARLEY_SHUFFLE(r2, r3, 0, 4, 1, 5), t3 = PARLEY_SHUFFLE(r2, r3, 2, 6, 3, 7);
  r0 = PARLEY_SHUFFLE(t0, t2, 0, 1, 4, 5);
  r1 = PARLEY_SHUFFLE(t0, t2, 2, 3, 6, 7);
  r2 = PARLEY_SHUFFLE(t1, t3, 0, 1, 4, 5);
  r3 = PARLEY_SHUFFLE(t1, t3, 2, 3, 6, 7);
}

}  // namespace

// Power()'s working arrays, one set per thread for the largest size (a trivial type: no per-thread
// construction), shared by every stream the thread serves instead of a set per stream.
struct WindowedPowerFft::Scratch {
  Float4 lane_re[kMaxSize / 8], lane_im[kMaxSize / 8];  // the four quarter-size FFTs, lane j: inputs m = 4v + j
  alignas(16) float zr[kMaxSize / 2];                   // the h-point FFT in natural order
  alignas(16) float zi[kMaxSize / 2];
};

// The calling thread's working arrays (trivial: no construction guard; nothing in them outlives a Power call),
// behind a call the optimiser does not see through: addressed directly as a thread_local, the loops that use the
// arrays compile to slower code (a TLS address recomputed in them).
__attribute__((noinline)) WindowedPowerFft::Scratch* WindowedPowerFft::ThreadScratch() {
  thread_local Scratch scratch;
  return &scratch;
}

WindowedPowerFft::WindowedPowerFft(size_t size, const float* window, size_t length)
    : size_(size),
      half_(size / 2),
      quarter_(size / 8),
      live_((length + 7) / 8),
      window_(window, window + length),
      slot_(size / 8),
      cos_(size / 2),
      sin_(size / 2) {
  window_.resize(8 * live_, 0.f);
  FillBitReversed(slot_, quarter_);
  AppendStageTwiddles(half_, stage_cos_, stage_sin_);
  for (size_t k = 0; k < half_; k++) {
    double a = -2.0 * M_PI * static_cast<double>(k) / static_cast<double>(size);
    cos_[k] = static_cast<float>(std::cos(a));
    sin_[k] = static_cast<float>(std::sin(a));
  }
  // The twiddles of stages 8 .. h/4 (4 + 8 + ... + h/8 = h/4 - 4 of them) once more, each in all four lanes.
  for (size_t k = 0; k + 4 < quarter_; k++) {
    lane_cos_.push_back(Splat4(stage_cos_[k]));
    lane_sin_.push_back(Splat4(stage_sin_[k]));
  }
}

template <bool kLastZero>
void WindowedPowerFft::FirstStages(const float* x, Scratch& scratch) const {
  // The stages of length 2 and 4 together (twiddles 1 and -i), as in Fft::ForwardBitReversed, straight from
  // the input. Slot s + j (s a multiple of 4) of the bit-reversed order holds input vector v0 + j' n/4 with
  // v0 = slot_[s] < n/4 and j' = 0, 2, 1, 3 (j's two bits reversed): the first two lie in the first half,
  // always live (the window covers more than half the transform); the other two may be zero padding (from
  // live_ on), the last one is for every s when kLastZero (x + 0 = x: leaving it out changes no bit).
  Float4* re = scratch.lane_re;
  Float4* im = scratch.lane_im;
  const float* w = window_.data();
  const size_t live = live_;
  const size_t q = quarter_ / 4;
  const Float4 zero = Splat4(0.f);
  for (size_t s = 0; s < quarter_; s += 4) {
    const size_t v0 = slot_[s], v1 = v0 + 2 * q, v2 = v0 + q, v3 = v0 + 3 * q;
    Float4 r0, i0, r1 = zero, i1 = zero, r2, i2;
    Input(x + 8 * v0, w + 8 * v0, r0, i0);
    if (v1 < live) Input(x + 8 * v1, w + 8 * v1, r1, i1);
    Input(x + 8 * v2, w + 8 * v2, r2, i2);
    const Float4 ar = r0 + r1, ai = i0 + i1;
    const Float4 br = r0 - r1, bi = i0 - i1;
    Float4 cr = r2, ci = i2, dr = r2, di = i2;
    if (!kLastZero) {
      Float4 r3 = zero, i3 = zero;
      if (v3 < live) Input(x + 8 * v3, w + 8 * v3, r3, i3);
      cr = r2 + r3, ci = i2 + i3;
      dr = r2 - r3, di = i2 - i3;
    }
    Radix4Out(re, im, s, ar, ai, br, bi, cr, ci, dr, di);
  }
}

void WindowedPowerFft::MiddleStages(Scratch& scratch) const {
  // Stages of length 8 .. h/4, two per pass where two remain: blocks of 2 len, butterflies k of the first
  // stage at (k, k + len/2) and (k + len, k + 3 len/2), then those of the second at (k, k + len) and
  // (k + len/2, k + 3 len/2). One twiddle for the four lanes (they share the position within the stage).
  Float4* re = scratch.lane_re;
  Float4* im = scratch.lane_im;
  const size_t n = quarter_;
  const Float4* wc = lane_cos_.data();
  const Float4* ws = lane_sin_.data();
  size_t len = 8;
  for (; 2 * len <= n; len *= 4) {
    const size_t h = len / 2;
    const Float4* wc2 = wc + h;  // the next stage's twiddles (length 2 len: k = 0..len-1)
    const Float4* ws2 = ws + h;
    for (size_t start = 0; start < n; start += 2 * len) {
      for (size_t k = 0; k < h; k++) {
        const size_t a = start + k, b = a + h, c = a + len, d = c + h;
        Float4 ar = re[a], ai = im[a], br = re[b], bi = im[b], cr = re[c], ci = im[c], dr = re[d], di = im[d];
        Butterfly(ar, ai, br, bi, wc[k], ws[k]);
        Butterfly(cr, ci, dr, di, wc[k], ws[k]);
        Butterfly(ar, ai, cr, ci, wc2[k], ws2[k]);
        Butterfly(br, bi, dr, di, wc2[k + h], ws2[k + h]);
        re[a] = ar, im[a] = ai, re[b] = br, im[b] = bi, re[c] = cr, im[c] = ci, re[d] = dr, im[d] = di;
      }
    }
    wc = wc2 + len;
    ws = ws2 + len;
  }
  if (len <= n) {
    const size_t h = len / 2;
    for (size_t start = 0; start < n; start += len) {
      for (size_t k = 0; k < h; k++) Butterfly(re[start + k], im[start + k], re[start + k + h], im[start + k + h], wc[k], ws[k]);
    }
  }
}

void WindowedPowerFft::LastStagesInOrder(Scratch& scratch) const {
  // Lane j of quarter-FFT output q is bin position q + (h/4) rev2(j) of the h-point FFT after its first
  // log2(h/4) stages (j's two bits are the top two of the bit-reversed input index, reversed). Four
  // consecutive q transposed give the natural-order vectors at q, q + h/4, q + h/2, q + 3h/4 (lanes 0, 2, 1,
  // 3), exactly the four a radix-4 step of the last two stages (len h/2, then h) combines.
  const Float4* re = scratch.lane_re;
  const Float4* im = scratch.lane_im;
  const size_t n = quarter_;
  // Stage len's twiddles start after those of 8 .. len/2: at 4 + 8 + ... + len/4 = len/2 - 4.
  const float* c2 = stage_cos_.data() + (half_ / 4 - 4);
  const float* s2 = stage_sin_.data() + (half_ / 4 - 4);
  const float* c4 = stage_cos_.data() + (half_ / 2 - 4);
  const float* s4 = stage_sin_.data() + (half_ / 2 - 4);
  float* zr = scratch.zr;
  float* zi = scratch.zi;
  for (size_t q = 0; q < n; q += 4) {
    Float4 r0 = re[q], r2 = re[q + 1], r1 = re[q + 2], r3 = re[q + 3];
    Float4 i0 = im[q], i2 = im[q + 1], i1 = im[q + 2], i3 = im[q + 3];
    // The rows are named so that the columns land as r0 (lane 0), r2 (lane 1), r1 (lane 2), r3 (lane 3):
    // rK is then the block at q + K h/4.
    Transpose(r0, r2, r1, r3);
    Transpose(i0, i2, i1, i3);
    const Float4 w2r = Load4(c2 + q), w2i = Load4(s2 + q);
    Butterfly(r0, i0, r1, i1, w2r, w2i);
    Butterfly(r2, i2, r3, i3, w2r, w2i);
    Butterfly(r0, i0, r2, i2, Load4(c4 + q), Load4(s4 + q));
    Butterfly(r1, i1, r3, i3, Load4(c4 + q + n), Load4(s4 + q + n));
    Store4(zr + q, r0), Store4(zi + q, i0);
    Store4(zr + q + n, r1), Store4(zi + q + n, i1);
    Store4(zr + q + 2 * n, r2), Store4(zi + q + 2 * n, i2);
    Store4(zr + q + 3 * n, r3), Store4(zi + q + 3 * n, i3);
  }
}

void WindowedPowerFft::Power(const float* x, size_t first, size_t end, float* power) const {
  Scratch& scratch = *ThreadScratch();
  // Input vectors 3n/4 .. n - 1 all padding (a window of 5/8 of the transform, as at 8 kHz): slot 3 of every
  // group is zero.
  if (4 * live_ <= 3 * quarter_) {
    FirstStages<true>(x, scratch);
  } else {
    FirstStages<false>(x, scratch);
  }
  MiddleStages(scratch);
  LastStagesInOrder(scratch);
  // The real split of RealFft::Forward, each bin's operations unchanged but for its halvings (left out: every
  // value is then exactly twice RealFft's, no rounding moves, and the power four times), squared and summed
  // at once. Bins k and h - k share their even and odd parts: E_{h-k} = conj E_k and O_{h-k} = conj O_k
  // exactly (the same sums and differences, negated), so one set of loads serves both and only the twiddle
  // differs. Computed four pairs at a time from the lowest bin of a pair asked for up to h/2 (groups near h/2
  // may overlap: both ways give the same bits).
  const size_t h = half_;
  const float* zr = scratch.zr;
  const float* zi = scratch.zi;
  if (first == 0) {
    const float r = 2.f * (zr[0] + zi[0]);
    power[0] = r * r + 0.f * 0.f;
  }
  if (end == h + 1) {
    const float r = 2.f * (zr[0] - zi[0]);
    power[h] = r * r + 0.f * 0.f;
  }
  const size_t lo = std::max<size_t>(first, 1), hi = std::min(end, h);
  if (lo >= hi) return;
  for (size_t k = std::min(lo, h - (hi - 1)); k <= h / 2; k += 4) {
    const size_t b = h - k - 3;
    const Float4 ar = Load4(zr + k), ai = Load4(zi + k);
    const Float4 br = Reverse4(Load4(zr + b)), bi = Reverse4(Load4(zi + b));
    const Float4 er = ar + br, ei = ai - bi;
    const Float4 or_ = ai + bi, oi = br - ar;
    const Float4 wr = Load4(cos_.data() + k), wi = Load4(sin_.data() + k);
    const Float4 re = er + wr * or_ - wi * oi;
    const Float4 im = ei + wr * oi + wi * or_;
    Store4(power + k, re * re + im * im);
    // Bin h - k: er + W' or + W'i oi and -(ei + W' oi) + W'i or, W' = e^{-2 pi i (h - k) / size}.
    const Float4 vr = Reverse4(Load4(cos_.data() + b)), vi = Reverse4(Load4(sin_.data() + b));
    const Float4 mre = er + vr * or_ + vi * oi;
    const Float4 mim = vi * or_ - (ei + vr * oi);
    Store4(power + b, Reverse4(mre * mre + mim * mim));
  }
}

}  // namespace parley
