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
  // The same transform for input already in bit-reversed order (the caller scattered it with bitrev()).
  void ForwardBitReversed(float* re, float* im) const;
  // Bit-reversed position of index i (i < size()).
  unsigned bitrev(size_t i) const { return bitrev_[i]; }

 private:
  size_t size_;
  std::vector<unsigned> bitrev_;
  // Twiddles e^{-2 pi i k / len} of every butterfly stage (len = 8, 16, ..., size), stage after stage, each
  // stage's k = 0..len/2-1 contiguous so the butterfly loop reads them in order (len 2 and 4 need none).
  std::vector<float> stage_cos_, stage_sin_;
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
