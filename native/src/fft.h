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

// Smallest power of two >= n.
size_t NextPow2(size_t n);

}  // namespace parley
