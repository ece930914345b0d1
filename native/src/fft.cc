#include "fft.h"

#include <cmath>
#include <utility>

#include "float4.h"

namespace parley {

size_t NextPow2(size_t n) {
  size_t p = 1;
  while (p < n) p <<= 1;
  return p;
}

Fft::Fft(size_t size) : size_(size), bitrev_(size) {
  unsigned bits = 0;
  while ((size_t{1} << bits) < size) bits++;
  for (size_t i = 0; i < size; i++) {
    unsigned r = 0;
    for (unsigned b = 0; b < bits; b++)
      if (i & (size_t{1} << b)) r |= 1u << (bits - 1 - b);
    bitrev_[i] = r;
  }
  for (size_t len = 8; len <= size; len <<= 1) {
    for (size_t k = 0; k < len / 2; k++) {
      double a = -2.0 * M_PI * static_cast<double>(k) / static_cast<double>(len);
      stage_cos_.push_back(static_cast<float>(std::cos(a)));
      stage_sin_.push_back(static_cast<float>(std::sin(a)));
    }
  }
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

}  // namespace parley
