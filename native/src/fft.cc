#include "fft.h"

#include <cmath>
#include <utility>

namespace parley {

size_t NextPow2(size_t n) {
  size_t p = 1;
  while (p < n) p <<= 1;
  return p;
}

Fft::Fft(size_t size) : size_(size), bitrev_(size), cos_(size / 2), sin_(size / 2) {
  unsigned bits = 0;
  while ((size_t{1} << bits) < size) bits++;
  for (size_t i = 0; i < size; i++) {
    unsigned r = 0;
    for (unsigned b = 0; b < bits; b++)
      if (i & (size_t{1} << b)) r |= 1u << (bits - 1 - b);
    bitrev_[i] = r;
  }
  for (size_t k = 0; k < size / 2; k++) {
    double a = -2.0 * M_PI * static_cast<double>(k) / static_cast<double>(size);
    cos_[k] = static_cast<float>(std::cos(a));
    sin_[k] = static_cast<float>(std::sin(a));
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
  for (size_t len = 2; len <= n; len <<= 1) {
    const size_t half = len / 2;
    const size_t stride = n / len;
    for (size_t start = 0; start < n; start += len) {
      for (size_t k = 0; k < half; k++) {
        const float wr = cos_[k * stride], wi = sin_[k * stride];
        const size_t a = start + k, b = a + half;
        const float tr = re[b] * wr - im[b] * wi;
        const float ti = re[b] * wi + im[b] * wr;
        re[b] = re[a] - tr;
        im[b] = im[a] - ti;
        re[a] += tr;
        im[a] += ti;
      }
    }
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
  for (size_t n = 0; n < h; n++) {
    zr_[n] = in[2 * n];
    zi_[n] = in[2 * n + 1];
  }
  half_.Forward(zr_.data(), zi_.data());
  // X[k] = E[k] + W^k O[k], E[k] = (Z[k] + conj Z[h-k]) / 2, O[k] = (Z[k] - conj Z[h-k]) / 2i.
  for (size_t k = 0; k <= h; k++) {
    const size_t a = k % h, b = (h - k) % h;
    const float er = 0.5f * (zr_[a] + zr_[b]);
    const float ei = 0.5f * (zi_[a] - zi_[b]);
    const float or_ = 0.5f * (zi_[a] + zi_[b]);
    const float oi = -0.5f * (zr_[a] - zr_[b]);
    const float wr = k < h ? cos_[k] : -1.f, wi = k < h ? sin_[k] : 0.f;
    re[k] = er + wr * or_ - wi * oi;
    im[k] = ei + wr * oi + wi * or_;
  }
}

}  // namespace parley
