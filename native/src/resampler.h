// Streaming rational (L/M) polyphase resampler with a Kaiser-windowed sinc prototype.
//
// For fromHz -> toHz, L = toHz / g and M = fromHz / g (g = gcd). The prototype low-pass runs at L * fromHz with
// its pass band to 0.42 of the lower rate and 80 dB design attenuation from its stop edge:
// - down-sampling: the stop band starts at the output Nyquist frequency (0.5 * toHz), so nothing aliases;
// - up-sampling: the stop band starts where the first image of the pass band lies ((1 - 0.42) * fromHz), so every
//   image of pass-band audio is at least 80 dB down. The transition band is twice as wide as a stop edge at the
//   input Nyquist frequency would allow, and the filter half as long; for an integer ratio the prototype is then
//   a Nyquist (L-th band) filter whose phase 0 is a single tap, computed as one multiply.
// Taps per phase K follow Kaiser's length formula, rounded up to whole vectors of the kernel.
// It is split into L phases of K taps each; output n uses phase (n * M) mod L against the K most recent inputs.
// The history of K - 1 samples is carried across calls, so any chunking of the input gives the same output as one
// call (every output is computed by the same arithmetic whichever kernel path produces it).
//
// Coefficient tables are shared by every resampler of the same rate pair (built at the first create, guarded by a
// mutex for worker threads); create allocates the history buffer for maxFrame input samples; process allocates
// nothing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "handle.h"

namespace parley {

struct PolyphaseTable {
  int L = 1;
  int M = 1;
  int taps = 0;               // K, taps per phase (a multiple of the kernel's vector width)
  std::vector<float> coeffs;  // L phases x K taps, each phase reversed for a forward dot product
  std::vector<int> single;    // per phase: index of its only non-zero tap, or -1 (a full dot product)
};

class Resampler : public Module {
 public:
  // Returns null if the rates are not supported or maxFrame is 0.
  static Resampler* Create(int fromHz, int toHz, size_t maxFrame);

  // Largest output count process() can return for an input of n samples.
  size_t MaxOutput(size_t n) const;
  // Resamples n <= maxFrame input samples; returns the number written to out (caller ensures MaxOutput(n)).
  size_t Process(const int16_t* in, size_t n, int16_t* out);
  void Reset();
  size_t max_frame() const { return max_frame_; }
  // Group delay in input samples (K / 2).
  int delay() const { return table_->taps / 2; }

 private:
  Resampler(std::shared_ptr<const PolyphaseTable> table, size_t maxFrame);

  std::shared_ptr<const PolyphaseTable> table_;
  size_t max_frame_;
  std::vector<float> history_;  // K - 1 carried samples followed by up to maxFrame new ones
  int64_t position_ = 0;        // next output position, in 1/L input samples from the current chunk start
};

bool IsSupportedRate(int hz);

}  // namespace parley
