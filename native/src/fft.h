// In-place radix-2 complex FFT of a fixed power-of-two size; tables built at construction, nothing allocated
// per transform.
#pragma once

#include <cstddef>
#include <vector>

namespace parley {

class Fft {
 public:
  explicit Fft(size_t size);  // size: a power of two >= 2
  size_t size() const { return size_; }
  // Forward transform (e^{-i...}) of re/im in place.
  void Forward(float* re, float* im) const;

 private:
  size_t size_;
  std::vector<unsigned> bitrev_;
  std::vector<float> cos_, sin_;  // twiddles e^{-2 pi i k / size}, k < size / 2
};

// Spectrum of a real signal of a power-of-two size N >= 4 through one complex FFT of size N / 2 (even samples
// as real parts, odd ones as imaginary parts, then split): about half the work of a complex FFT of size N.
class RealFft {
 public:
  explicit RealFft(size_t size);
  size_t size() const { return size_; }
  // in: size() samples (overwritten as scratch); writes bins 0..size()/2 to re/im (size()/2 + 1 each).
  void Forward(float* in, float* re, float* im);

 private:
  size_t size_;
  Fft half_;
  std::vector<float> zr_, zi_, cos_, sin_;  // scratch, and twiddles e^{-2 pi i k / size}
};

// Smallest power of two >= n.
size_t NextPow2(size_t n);

}  // namespace parley
