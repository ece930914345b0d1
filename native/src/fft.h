// In-place radix-2 complex FFT of a fixed power-of-two size; tables built at construction, nothing allocated
// per transform.
#pragma once

#include <cstddef>
#include <vector>

#include "float4.h"

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

// Power spectrum of a windowed real frame zero-padded to a power-of-two size N >= 64, for the VAD: the same
// transform as RealFft (one complex FFT of N / 2 points, radix-2 decimation in time, then the real split) with
// the same operations on the same values in the same order, so its powers equal RealFft's bit for bit (the
// VAD's decisions do not move; but for an exact factor 4, see Power()), arranged to run four-wide throughout:
// - the complex FFT of h = N / 2 points is split by its input index m mod 4 into four interleaved FFTs of h / 4
//   points (decimation in time by 4), computed side by side, one per lane of a Float4; their first
//   log2(h / 4) radix-2 stages are exactly the first stages of the h-point FFT, with one twiddle for all lanes;
// - a 4 x 4 transpose then gives natural order for the last two stages (the radix-4 combination of the four),
//   done in registers with it;
// - the input is windowed, split into even (real) and odd (imaginary) samples and scattered into the
//   bit-reversed order of the quarter-size FFTs in one pass, 8 samples at a time;
// - the split into bins of the real signal yields only the powers of the bins asked for (times 4).
// Two radix-2 stages run per pass over memory where they can (the radix-2^2 idea of He and Torkelson 1996,
// here only as a loop fusion: the arithmetic is still that of two radix-2 stages).
class WindowedPowerFft {
 public:
  // The largest size: the scratch of Power() is one fixed set of arrays per thread, sized for it (the VAD's
  // largest transform, 44.1 kHz: 20 ms = 882 samples, padded to 1024).
  static constexpr size_t kMaxSize = 1024;
  // size: a power of two, 64 <= size <= kMaxSize; window: length values (copied), size / 2 < length <= size.
  WindowedPowerFft(size_t size, const float* window, size_t length);
  size_t size() const { return size_; }
  // Window length rounded up to whole blocks of 8: the samples Power() reads.
  size_t padded_length() const { return 8 * live_; }
  // power[k] = 4 |X_k|^2 for first <= k < end (end <= size() / 2 + 1), X the spectrum of x[i] window[i] for
  // i < length followed by zeros; x: padded_length() samples, those past length finite (they are weighted 0).
  // Four times RealFft's power exactly (its split halves every value; here they are left whole: a power of
  // two, so no rounding differs). Other bins of power from 1 to size() / 2 - 1 may be written too.
  // Const and reentrant: the object holds only read-only tables (one instance may serve every stream of a
  // configuration, on any thread); the transform's working arrays are the calling thread's (thread_local,
  // used only inside this call).
  void Power(const float* x, size_t first, size_t end, float* power) const;

 private:
  struct Scratch;  // the four quarter-size FFTs and the h-point FFT in natural order (fft.cc)
  static Scratch* ThreadScratch();  // the calling thread's
  template <bool kLastZero>
  void FirstStages(const float* x, Scratch& s) const;  // input windowed and scattered, stages of length 2 and 4
  void MiddleStages(Scratch& s) const;                 // lengths 8 .. h/4
  void LastStagesInOrder(Scratch& s) const;            // lengths h/2 and h, natural order

  size_t size_;
  size_t half_;     // h: the complex FFT's size
  size_t quarter_;  // h / 4: the size of each lane's FFT
  size_t live_;     // input vectors (8 samples) that are not zero padding
  std::vector<float> window_;  // padded to 8 live_ with zeros
  std::vector<unsigned> slot_;  // bit-reversed position (among h / 4) of input vector v = z[4v..4v+3]
  // Twiddles e^{-2 pi i k / len} of the stages len = 8, 16, ..., h, each stage's k contiguous (as in Fft),
  // and e^{-2 pi i k / size} of the real split (as in RealFft).
  std::vector<float> stage_cos_, stage_sin_, cos_, sin_;
  std::vector<Float4> lane_cos_, lane_sin_;  // stage_cos_/stage_sin_ of stages 8 .. h/4 splatted
};

// Smallest power of two >= n.
size_t NextPow2(size_t n);

}  // namespace parley
