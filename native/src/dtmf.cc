#include "dtmf.h"

#include <algorithm>
#include <cmath>

#include "resampler.h"

namespace parley {
namespace {

// ITU-T Q.23: low (row) and high (column) group frequencies, Hz.
constexpr float kFreqs[8] = {697.f, 770.f, 852.f, 941.f, 1209.f, 1336.f, 1477.f, 1633.f};
constexpr char kDigits[16] = {'1', '2', '3', 'A', '4', '5', '6', 'B', '7', '8', '9', 'C', '*', '0', '#', 'D'};

constexpr double kBlockSeconds = 0.01275;  // 102 samples at 8 kHz
constexpr float kMaxDeviation = 0.025f;    // between Q.24's +-1.5 % operate and +-3.5 % non-operate
constexpr float kNormalTwistDb = 8.f + 0.5f;
constexpr float kReverseTwistDb = 4.f + 0.5f;
// -36 dBm0: 0 dBm0 is a sine 3.17 dB below full scale (ITU-T G.711 digital milliwatt), power 32768^2/2 / 10^0.317.
constexpr float kMinTonePower = 32768.f * 32768.f / 2.f / 2.0749f * 2.5119e-4f;
constexpr float kGroupMarginDb = 6.f;      // strongest tone over the next in its group
constexpr float kMinEnergyShare = 0.7f;    // both tones' share of the block's energy
constexpr float kMaxHalfImbalanceDb = 3.f; // steadiness across the two halves
constexpr float kHarmonicMarginDb = 10.f;  // column tone over its second harmonic
constexpr int kHitsToAccept = 2;
constexpr int kMissesToEnd = 2;

// Inverts the Gram matrix of {cos w1 n, sin w1 n, cos w2 n, sin w2 n}, n = 0..length-1 (Gauss-Jordan).
void InverseGram(double w1, double w2, size_t length, double* inv) {
  double g[4][8] = {};
  const double w[4] = {w1, w1, w2, w2};
  for (size_t n = 0; n < length; n++) {
    double phi[4];
    for (int i = 0; i < 4; i++) phi[i] = i % 2 == 0 ? std::cos(w[i] * n) : std::sin(w[i] * n);
    for (int i = 0; i < 4; i++)
      for (int j = 0; j < 4; j++) g[i][j] += phi[i] * phi[j];
  }
  for (int i = 0; i < 4; i++) g[i][4 + i] = 1.0;
  for (int col = 0; col < 4; col++) {
    int pivot = col;
    for (int i = col + 1; i < 4; i++)
      if (std::fabs(g[i][col]) > std::fabs(g[pivot][col])) pivot = i;
    for (int j = 0; j < 8; j++) std::swap(g[col][j], g[pivot][j]);
    const double d = g[col][col];
    for (int j = 0; j < 8; j++) g[col][j] /= d;
    for (int i = 0; i < 4; i++) {
      if (i == col) continue;
      const double m = g[i][col];
      for (int j = 0; j < 8; j++) g[i][j] -= m * g[col][j];
    }
  }
  for (int i = 0; i < 4; i++)
    for (int j = 0; j < 4; j++) inv[i * 4 + j] = g[i][4 + j];
}

// Complex amplitude A = a - i b of the model's tone k (0: row, 1: column) from the projections v.
inline void Solve(const double* inv, const double* v, double* a_row, double* b_row, double* a_col, double* b_col) {
  double theta[4];
  for (int i = 0; i < 4; i++) theta[i] = inv[i * 4] * v[0] + inv[i * 4 + 1] * v[1] + inv[i * 4 + 2] * v[2] + inv[i * 4 + 3] * v[3];
  *a_row = theta[0];
  *b_row = theta[1];
  *a_col = theta[2];
  *b_col = theta[3];
}

inline float Db(float ratio) { return 10.f * std::log10(std::max(ratio, 1e-20f)); }

}  // namespace

DtmfDetector* DtmfDetector::Create(int rateHz) {
  if (!IsSupportedRate(rateHz)) return nullptr;
  return new DtmfDetector(rateHz);
}

DtmfDetector::DtmfDetector(int rateHz)
    : rate_(rateHz),
      half_(static_cast<size_t>(std::lround(rateHz * kBlockSeconds / 2.0))),
      block_(2 * half_),
      buf_(block_) {
  for (int f = 0; f < 8; f++) {
    double w = 2.0 * M_PI * kFreqs[f] / rateHz;
    coeff_[f] = static_cast<float>(2.0 * std::cos(w));
    cos_[f] = static_cast<float>(std::cos(w));
    sin_[f] = static_cast<float>(std::sin(w));
    cos_half_[f] = static_cast<float>(std::cos(w * static_cast<double>(half_)));
    sin_half_[f] = static_cast<float>(std::sin(w * static_cast<double>(half_)));
    dft_cos_[f] = static_cast<float>(std::cos(-w * static_cast<double>(half_ - 1)));
    dft_sin_[f] = static_cast<float>(std::sin(-w * static_cast<double>(half_ - 1)));
  }
  for (int r = 0; r < 4; r++) {
    for (int c = 0; c < 4; c++) {
      const double wr = 2.0 * M_PI * kFreqs[r] / rateHz, wc = 2.0 * M_PI * kFreqs[4 + c] / rateHz;
      InverseGram(wr, wc, half_, inv_half_[r * 4 + c]);
      InverseGram(wr, wc, block_, inv_block_[r * 4 + c]);
    }
  }
  for (int c = 0; c < 4; c++)
    harmonic_coeff_[c] = static_cast<float>(2.0 * std::cos(2.0 * M_PI * 2.0 * kFreqs[4 + c] / rateHz));
}

void DtmfDetector::Reset() {
  filled_ = 0;
  state_ = State::Idle;
  digit_ = -1;
  count_ = 0;
}

// Rectangular-window amplitude response at an offset of dw rad/sample over n samples.
inline double RectResponse(double dw, double n) {
  return std::fabs(dw) < 1e-9 ? 1.0 : std::fabs(std::sin(n * dw / 2.0) / (n * std::sin(dw / 2.0)));
}

void DtmfDetector::MeasurePair(int row, int col, Tone* r, Tone* c) const {
  const double* inv_half = inv_half_[row * 4 + (col - 4)];
  const double* inv_block = inv_block_[row * 4 + (col - 4)];
  // Projections: sum x cos(w n) = Re X, sum x sin(w n) = -Im X (X the DFT referenced to the segment start).
  double v1[4] = {re1_[row], -im1_[row], re1_[col], -im1_[col]};
  double v2[4] = {re2_[row], -im2_[row], re2_[col], -im2_[col]};
  double vb[4];
  const int fs[2] = {row, col};
  for (int t = 0; t < 2; t++) {
    const int f = fs[t];
    // The whole block: X = X1 + e^{-i w h} X2.
    const float re = re1_[f] + cos_half_[f] * re2_[f] + sin_half_[f] * im2_[f];
    const float im = im1_[f] + cos_half_[f] * im2_[f] - sin_half_[f] * re2_[f];
    vb[2 * t] = re;
    vb[2 * t + 1] = -im;
  }
  double h1[4], h2[4], b[4];
  Solve(inv_half, v1, &h1[0], &h1[1], &h1[2], &h1[3]);
  Solve(inv_half, v2, &h2[0], &h2[1], &h2[2], &h2[3]);
  Solve(inv_block, vb, &b[0], &b[1], &b[2], &b[3]);
  Tone* out[2] = {r, c};
  for (int t = 0; t < 2; t++) {
    const int f = fs[t];
    // A = a - i b per half; the phase advance between halves is (w_true) h.
    const double a1 = h1[2 * t], b1 = -h1[2 * t + 1];
    const double a2 = h2[2 * t], b2 = -h2[2 * t + 1];
    const double cross_re = a2 * a1 + b2 * b1;
    const double cross_im = b2 * a1 - a2 * b1;
    double advance = std::atan2(cross_im, cross_re) - 2.0 * M_PI * kFreqs[f] * static_cast<double>(half_) / rate_;
    advance = std::remainder(advance, 2.0 * M_PI);
    const double dw = advance / static_cast<double>(half_);
    out[t]->deviation = static_cast<float>(dw * rate_ / (2.0 * M_PI) / kFreqs[f]);
    const double power = (b[2 * t] * b[2 * t] + b[2 * t + 1] * b[2 * t + 1]) / 2.0;
    out[t]->raw_power = static_cast<float>(power);
    const double p1 = a1 * a1 + b1 * b1, p2 = a2 * a2 + b2 * b2;
    // The halves' amplitudes, corrected for the offset's (smaller) loss over a half block.
    const double response = RectResponse(dw, static_cast<double>(half_));
    out[t]->power = static_cast<float>((p1 + p2) / 4.0 / std::max(response * response, 1e-3));
    out[t]->balance_db = std::fabs(Db(static_cast<float>(p1 / std::max(p2, 1e-20))));
  }
}

// Powers of the row and column tones fitted jointly at their measured frequencies over the whole block (the
// fit at the nominal frequencies loses a deviation-dependent fraction of each tone).
void DtmfDetector::Refit(float row_hz, float col_hz, float* row_power, float* col_power) const {
  const double wr = 2.0 * M_PI * row_hz / rate_, wc = 2.0 * M_PI * col_hz / rate_;
  double inv[16];
  InverseGram(wr, wc, block_, inv);
  double v[4] = {0, 0, 0, 0};
  for (size_t n = 0; n < block_; n++) {
    const double x = buf_[n];
    v[0] += x * std::cos(wr * n);
    v[1] += x * std::sin(wr * n);
    v[2] += x * std::cos(wc * n);
    v[3] += x * std::sin(wc * n);
  }
  double a_r, b_r, a_c, b_c;
  Solve(inv, v, &a_r, &b_r, &a_c, &b_c);
  *row_power = static_cast<float>((a_r * a_r + b_r * b_r) / 2.0);
  *col_power = static_cast<float>((a_c * a_c + b_c * b_c) / 2.0);
}

int DtmfDetector::AnalyseBlock() {
  const size_t h = half_;
  float energy = 0.f;
  for (size_t i = 0; i < block_; i++) energy += buf_[i] * buf_[i];
  for (int f = 0; f < 8; f++) {
    for (int part = 0; part < 2; part++) {
      const float* x = buf_.data() + part * h;
      float s1 = 0.f, s2 = 0.f;
      for (size_t i = 0; i < h; i++) {
        float s0 = x[i] + coeff_[f] * s1 - s2;
        s2 = s1;
        s1 = s0;
      }
      // y = s[h-1] - e^{-iw} s[h-2] = sum x[n] e^{iw(h-1-n)}; multiply by e^{-iw(h-1)} for the DFT.
      const float yr = s1 - cos_[f] * s2;
      const float yi = sin_[f] * s2;
      const float c = dft_cos_[f], s = dft_sin_[f];
      float* re = part == 0 ? re1_ : re2_;
      float* im = part == 0 ? im1_ : im2_;
      re[f] = yr * c - yi * s;
      im[f] = yr * s + yi * c;
    }
  }
  // Candidates: the strongest row and column by plain DFT power of the whole block.
  float dft_power[8];
  const float n2 = static_cast<float>(block_) * static_cast<float>(block_);
  for (int f = 0; f < 8; f++) {
    const float re = re1_[f] + cos_half_[f] * re2_[f] + sin_half_[f] * im2_[f];
    const float im = im1_[f] + cos_half_[f] * im2_[f] - sin_half_[f] * re2_[f];
    dft_power[f] = 2.f * (re * re + im * im) / n2;
  }
  int row = 0, col = 4;
  for (int f = 1; f < 4; f++)
    if (dft_power[f] > dft_power[row]) row = f;
  for (int f = 5; f < 8; f++)
    if (dft_power[f] > dft_power[col]) col = f;
  for (int f = 0; f < 8; f++) {
    if (f == row || f == col) continue;
    const float own = f < 4 ? dft_power[row] : dft_power[col];
    if (Db(own / std::max(dft_power[f], 1e-20f)) < kGroupMarginDb) return -1;
  }
  Tone r, c;
  MeasurePair(row, col, &r, &c);
  // Frequencies outside the accepted deviation end it here; the others are refitted where they are.
  if (std::fabs(r.deviation) > kMaxDeviation || std::fabs(c.deviation) > kMaxDeviation) return -1;
  if (r.balance_db > kMaxHalfImbalanceDb || c.balance_db > kMaxHalfImbalanceDb) return -1;
  Refit(kFreqs[row] * (1.f + r.deviation), kFreqs[col] * (1.f + c.deviation), &r.power, &c.power);
  if (r.power < kMinTonePower || c.power < kMinTonePower) return -1;
  const float twist = Db(r.power / c.power);  // > 0: normal twist (row stronger)
  if (twist > kNormalTwistDb || -twist > kReverseTwistDb) return -1;
  const float mean_power = energy / static_cast<float>(block_);
  if (r.power + c.power < kMinEnergyShare * mean_power) return -1;
  // Second harmonic of the column tone (speech is harmonic-rich; DTMF is not).
  float s1 = 0.f, s2 = 0.f;
  const float k = harmonic_coeff_[col - 4];
  for (size_t i = 0; i < block_; i++) {
    float s0 = buf_[i] + k * s1 - s2;
    s2 = s1;
    s1 = s0;
  }
  const float n = static_cast<float>(block_);
  const float harmonic = 2.f * (s1 * s1 + s2 * s2 - k * s1 * s2) / (n * n);
  if (Db(c.raw_power / std::max(harmonic, 1e-20f)) < kHarmonicMarginDb) return -1;
  return row * 4 + (col - 4);
}

void DtmfDetector::Transition(int digit, uint8_t* out, size_t capacity, size_t* written) {
  switch (state_) {
    case State::Idle:
      if (digit < 0) return;
      state_ = State::Candidate;
      digit_ = digit;
      count_ = 1;
      return;
    case State::Candidate:
      if (digit < 0) {
        state_ = State::Idle;
        return;
      }
      if (digit != digit_) {
        digit_ = digit;
        count_ = 1;
        return;
      }
      if (++count_ < kHitsToAccept) return;
      state_ = State::Active;
      count_ = 0;
      if (*written < capacity) out[(*written)++] = static_cast<uint8_t>(kDigits[digit_]);
      return;
    case State::Active:
      // Only the same digit continues it; anything else counts towards the pause that ends it.
      if (digit == digit_) {
        count_ = 0;
        return;
      }
      if (++count_ >= kMissesToEnd) state_ = State::Idle;
      return;
  }
}

size_t DtmfDetector::Process(const int16_t* in, size_t n, uint8_t* out, size_t capacity) {
  size_t written = 0;
  for (size_t i = 0; i < n; i++) {
    buf_[filled_++] = static_cast<float>(in[i]);
    if (filled_ < block_) continue;
    filled_ = 0;
    Transition(AnalyseBlock(), out, capacity, &written);
  }
  return written;
}

}  // namespace parley
