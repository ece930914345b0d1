// Decimation by two with a linear-phase half-band FIR (Kaiser-windowed sinc, cut-off at a quarter of the input
// rate): every other coefficient but the centre one is zero, and the rest are symmetric, so an output costs
// kPairs additions of mirrored input pairs, kPairs products and the centre product.
//
// The caller writes each block of input with Write() (split into even and odd samples after the history, so
// the filter reads both contiguously), then Decimate() produces block / 2 outputs and keeps the last
// kTaps - 1 inputs for the next block.
// Tables and buffers are built at construction; nothing is allocated per block. Header-only: it is small and
// used by the VAD alone.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>
#include <cstring>
#include <type_traits>

#include "float4.h"

namespace parley {

class HalfbandDecimator {
 public:
  // 39 taps (20 non-zero off-centre ones), Kaiser beta 6: at 16 kHz in, -0.2 dB at 3.4 kHz, -2.8 dB at 3.8 kHz,
  // -6 dB at 4 kHz (half-band symmetry), at least 31 dB down from 4.6 kHz and 66 dB from 5 kHz.
  static constexpr int kTaps = 39;
  static constexpr int kPairs = (kTaps + 1) / 4;  // non-zero coefficient pairs around the centre

  explicit HalfbandDecimator(size_t block);  // block: inputs per Decimate(), even, a multiple of 8
  // Stores n input samples (int16 or float) as samples t.. of the current block (t + n <= block).
  template <typename Sample>
  void Write(size_t t, const Sample* in, size_t n);
  // Writes block / 2 outputs to out and slides the history.
  void Decimate(float* out);
  void Reset();

 private:
  static constexpr size_t kHistory = kTaps - 1;  // even
  // The filter, the same for every decimator: built once per process (a function-local static: thread-safe
  // initialisation), read-only after, so hundreds of streams share one copy instead of 176 bytes each.
  struct Coefficients {
    Float4 centre;
    Float4 pair[kPairs];  // coefficient of the pair at offsets +-(2k + 1) from the centre
  };
  static const Coefficients& Filter();
  size_t block_;
  const Coefficients* filter_;
  std::vector<float> even_, odd_;  // (kHistory + block) / 2 each: buffer samples 2j and 2j + 1
};

namespace halfband_detail {

constexpr double kKaiserBeta = 6.0;

// Modified Bessel function of the first kind, order 0 (power series), for the Kaiser window.
inline double BesselI0(double x) {
  double sum = 1.0, term = 1.0;
  for (int k = 1; k < 50; k++) {
    term *= (x / (2.0 * k)) * (x / (2.0 * k));
    sum += term;
    if (term < 1e-12 * sum) break;
  }
  return sum;
}

}  // namespace halfband_detail

inline HalfbandDecimator::HalfbandDecimator(size_t block)
    : block_(block), filter_(&Filter()), even_((kHistory + block) / 2), odd_((kHistory + block) / 2) {
  Reset();
}

inline const HalfbandDecimator::Coefficients& HalfbandDecimator::Filter() {
  static const Coefficients filter = [] {
    Coefficients f;
    // h[i] = 0.5 sinc((i - c) / 2) * kaiser(i), c = (kTaps - 1) / 2, normalised to unit gain at DC.
    const int c = (kTaps - 1) / 2;
    double h[kTaps];
    double sum = 0.0;
    for (int i = 0; i < kTaps; i++) {
      const double n = i - c;
      const double sinc = n == 0 ? 1.0 : std::sin(M_PI * n / 2.0) / (M_PI * n / 2.0);
      const double r = n / c;
      const double kaiser = halfband_detail::BesselI0(halfband_detail::kKaiserBeta * std::sqrt(1.0 - r * r)) /
                            halfband_detail::BesselI0(halfband_detail::kKaiserBeta);
      h[i] = 0.5 * sinc * kaiser;
      sum += h[i];
    }
    f.centre = Splat4(static_cast<float>(h[c] / sum));
    for (int k = 0; k < kPairs; k++) f.pair[k] = Splat4(static_cast<float>(h[c - (2 * k + 1)] / sum));
    return f;
  }();
  return filter;
}

inline void HalfbandDecimator::Reset() {
  std::fill(even_.begin(), even_.end(), 0.f);
  std::fill(odd_.begin(), odd_.end(), 0.f);
}

template <typename Sample>
void HalfbandDecimator::Write(size_t t, const Sample* in, size_t n) {
  size_t i = kHistory + t;  // buffer index of in[0]
  const size_t end = i + n;
  if ((i & 1) && i < end) odd_[i++ >> 1] = static_cast<float>(*in++);
  // Whole even/odd pairs.
  float* e = even_.data() + (i >> 1);
  float* o = odd_.data() + (i >> 1);
  const size_t pairs = (end - i) / 2;
  size_t p0 = 0;
  if constexpr (std::is_same_v<Sample, int16_t>) {
    for (; p0 + 4 <= pairs; p0 += 4) {
      Short8 s;
      std::memcpy(&s, in + 2 * p0, sizeof s);
      Store4(e + p0, DoubledInt16ToFloat4(__builtin_shufflevector(s, s, 0, 0, 2, 2, 4, 4, 6, 6)));
      Store4(o + p0, DoubledInt16ToFloat4(__builtin_shufflevector(s, s, 1, 1, 3, 3, 5, 5, 7, 7)));
    }
  }
  for (size_t p = p0; p < pairs; p++) {
    e[p] = static_cast<float>(in[2 * p]);
    o[p] = static_cast<float>(in[2 * p + 1]);
  }
  if ((end - i) & 1) e[pairs] = static_cast<float>(in[2 * pairs]);
}

inline void HalfbandDecimator::Decimate(float* out) {
  // Buffer b = history (kHistory samples) then the block; output m ends at block sample 2m + 1, i.e.
  // y[m] = sum_i h[i] b[2m + kTaps - i]. Its centre tap reads b[2m + kTaps - c] = b[2m + 20] = even_[m + 10]; the
  // pair at distance 2k + 1 reads b[2m + 21 + 2k] = odd_[m + 10 + k] and b[2m + 19 - 2k] = odd_[m + 9 - k].
  const size_t outputs = block_ / 2;
  const size_t mid = (kTaps - (kTaps - 1) / 2) / 2;  // 10
  // The coefficients in locals (registers): stores to out could alias the shared table for all the compiler
  // knows, which would reload them for every output vector.
  const Float4 centre = filter_->centre;
  Float4 pair[kPairs];
  for (int k = 0; k < kPairs; k++) pair[k] = filter_->pair[k];
  for (size_t m = 0; m < outputs; m += 4) {
    Float4 acc = centre * Load4(even_.data() + m + mid);
#pragma GCC unroll 10
    for (int k = 0; k < kPairs; k++) {
      acc += pair[k] * (Load4(odd_.data() + m + mid + k) + Load4(odd_.data() + m + mid - 1 - k));
    }
    Store4(out + m, acc);
  }
  // Slide: the last kHistory inputs become the history.
  std::copy(even_.end() - kHistory / 2, even_.end(), even_.begin());
  std::copy(odd_.end() - kHistory / 2, odd_.end(), odd_.begin());
}

}  // namespace parley
