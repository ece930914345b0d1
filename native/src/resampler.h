// Streaming rational (L/M) polyphase resampler with a Kaiser-windowed sinc prototype.
//
// For fromHz -> toHz, L = toHz / g and M = fromHz / g (g = gcd). The prototype low-pass runs at L * fromHz with
// its pass band to 0.42 * min(fromHz, toHz), its stop band from 0.5 * min(fromHz, toHz) and 80 dB design
// attenuation, so nothing above the lower Nyquist frequency survives (no aliasing, no images). It is split into L
// phases of K taps each; output n uses phase (n * M) mod L against the K most recent inputs. The history of K - 1
// samples is carried across calls, so any chunking of the input gives the same output as one call.
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
  int taps = 0;               // K, taps per phase (even)
  std::vector<float> coeffs;  // L phases x K taps, each phase reversed for a forward dot product
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
