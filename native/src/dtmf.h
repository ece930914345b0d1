// DTMF receiver after ITU-T Q.23 (the frequencies) and Q.24 (the receiver's limits), with Goertzel filters.
//
// Q.24 leaves the exact limits to administrations (its Table A.1); this receiver implements:
//   - operate on tones of 40 ms or more; non-operate on tones of 20 ms or less;
//   - a pause of 40 ms or more separates two digits (two tone-free blocks);
//   - frequency deviation: operate within +-1.5 %, non-operate beyond +-3.5 % (decision at +-2.5 %);
//   - twist: operate with the low (row) tone up to 8 dB above the high (column) tone ("normal twist") and up
//     to 4 dB below it ("reverse twist"), each with 0.5 dB measurement margin;
//   - level: each tone at least -36 dBm0 (Q.24's operate range ends at -25 dBm0 per frequency).
//
// Audio is cut into blocks of 12.75 ms (102 samples at 8 kHz). Each block is split into two halves; the Goertzel DFT
// of each half at the eight Q.23 frequencies gives the block's tone powers (halves combined) and, from the phase
// advance between halves, each tone's actual frequency, so the frequency deviation and a window-corrected power are
// measured rather than guessed. The row and column tones are fitted jointly (least squares over both sinusoids), so a
// strong tone's spectral leakage does not bias the weaker one. A block "hits" a digit when the strongest row and
// column tones pass level, twist and frequency checks, stand 6 dB above the other tones of their group, carry 70 % of
// the block's energy, are steady across the two halves (3 dB) and the column tone has no second harmonic (talk-off
// guards). A digit is reported after two consecutive hits; it ends after two misses.
//
// Timing that follows: a 40 ms tone always spans two whole blocks (2 x 102 + 101 samples = 38.1 ms); a block
// only hits when both halves hold 70 % of a half of the tone or more, so two hits need at least 2 x 87 samples
// (21.75 ms): tones of 20 ms or less never make a digit.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "handle.h"

namespace parley {

class DtmfDetector : public Module {
 public:
  static DtmfDetector* Create(int rateHz);

  // Feeds samples; writes each newly detected digit (ASCII: 0-9, *, #, A-D) to out (up to capacity) and returns
  // the number written.
  size_t Process(const int16_t* in, size_t n, uint8_t* out, size_t capacity);
  void Reset();

 private:
  enum class State { Idle, Candidate, Active };
  struct Tone {
    float power;      // window-corrected power of the tone
    float raw_power;  // power as measured in the block
    float deviation;  // relative frequency deviation
    float balance_db; // |level difference| between the two halves
  };

  explicit DtmfDetector(int rateHz);
  int AnalyseBlock();  // digit index 0..15 or -1
  // Joint least-squares fit of the row and column tones (so neither leaks into the other's measurement).
  void MeasurePair(int row, int col, Tone* r, Tone* c) const;
  void Refit(float row_hz, float col_hz, float* row_power, float* col_power) const;
  void Transition(int digit, uint8_t* out, size_t capacity, size_t* written);

  int rate_;
  size_t half_;   // samples per half block
  size_t block_;  // 2 * half_
  std::vector<float> buf_;
  size_t filled_ = 0;
  float coeff_[8], cos_[8], sin_[8], cos_half_[8], sin_half_[8], dft_cos_[8], dft_sin_[8];
  float harmonic_coeff_[4];
  // Inverse Gram matrices (4 x 4, row-major) of the model a_r cos + b_r sin + a_c cos + b_c sin for each
  // (row, col) pair, over a half block and over a whole block.
  double inv_half_[16][16];
  double inv_block_[16][16];
  // Goertzel results of the two halves: real and imaginary DFT values per frequency.
  float re1_[8], im1_[8], re2_[8], im2_[8];

  State state_ = State::Idle;
  int digit_ = -1;
  int count_ = 0;  // hits (Candidate) or misses (Active)
};

}  // namespace parley
