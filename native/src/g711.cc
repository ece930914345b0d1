// G.711 after the ITU-T G.191 Software Tool Library reference (g711.c: alaw_compress, alaw_expand,
// ulaw_compress, ulaw_expand). The reference is evaluated once for all 65536 inputs and 256 codes into tables,
// so encode and decode are one load per sample.
#include "g711.h"

namespace parley {
namespace {

// ITU-T G.191 ulaw_compress: 14-bit magnitude (input >> 2, one's complement for negatives), bias 33, clip 0x1FFF.
constexpr int kMulawBias = 33;
constexpr int kMulawClip = 0x1FFF;

uint8_t MulawCompressReference(int16_t x) {
  int absno = x < 0 ? ((~x) >> 2) + kMulawBias : (x >> 2) + kMulawBias;
  if (absno > kMulawClip) absno = kMulawClip;
  int i = absno >> 6;
  int segno = 1;
  while (i != 0) {
    segno++;
    i >>= 1;
  }
  int high = 0x8 - segno;
  int low = 0xF - ((absno >> segno) & 0xF);
  int code = (high << 4) | low;
  if (x >= 0) code |= 0x80;
  return static_cast<uint8_t>(code);
}

// ITU-T G.191 ulaw_expand.
int16_t MulawExpandReference(uint8_t code) {
  int sign = code < 0x80 ? -1 : 1;
  int mantissa = ~code;
  int exponent = (mantissa >> 4) & 0x7;
  int segment = exponent + 1;
  mantissa &= 0xF;
  int step = 4 << segment;
  return static_cast<int16_t>(sign * ((0x80 << exponent) + step * mantissa + step / 2 - 4 * kMulawBias));
}

// ITU-T G.191 alaw_compress: 12-bit magnitude (input >> 4, one's complement for negatives), even bits inverted.
constexpr int kAlawXor = 0x55;

uint8_t AlawCompressReference(int16_t x) {
  int ix = x < 0 ? (~x) >> 4 : x >> 4;
  if (ix > 15) {
    int iexp = 1;
    while (ix > 16 + 15) {
      ix >>= 1;
      iexp++;
    }
    ix -= 16;
    ix += iexp << 4;
  }
  if (x >= 0) ix |= 0x80;
  return static_cast<uint8_t>(ix ^ kAlawXor);
}

// ITU-T G.191 alaw_expand.
int16_t AlawExpandReference(uint8_t code) {
  int ix = (code ^ kAlawXor) & 0x7F;
  int iexp = ix >> 4;
  int mant = ix & 0xF;
  if (iexp > 0) mant += 16;
  mant = (mant << 4) + 0x8;
  if (iexp > 1) mant <<= (iexp - 1);
  return static_cast<int16_t>(code > 127 ? mant : -mant);
}

struct Tables {
  uint8_t mulaw_encode[65536];
  uint8_t alaw_encode[65536];
  int16_t mulaw_decode[256];
  int16_t alaw_decode[256];

  Tables() {
    for (int v = -32768; v <= 32767; v++) {
      uint16_t index = static_cast<uint16_t>(static_cast<int16_t>(v));
      mulaw_encode[index] = MulawCompressReference(static_cast<int16_t>(v));
      alaw_encode[index] = AlawCompressReference(static_cast<int16_t>(v));
    }
    for (int c = 0; c < 256; c++) {
      mulaw_decode[c] = MulawExpandReference(static_cast<uint8_t>(c));
      alaw_decode[c] = AlawExpandReference(static_cast<uint8_t>(c));
    }
  }
};

// Built during module load (static initialisation), shared read-only by every worker thread.
const Tables kTables;

}  // namespace

void MulawEncode(const int16_t* pcm, uint8_t* out, size_t n) {
  for (size_t i = 0; i < n; i++) out[i] = kTables.mulaw_encode[static_cast<uint16_t>(pcm[i])];
}

void MulawDecode(const uint8_t* in, int16_t* pcm, size_t n) {
  for (size_t i = 0; i < n; i++) pcm[i] = kTables.mulaw_decode[in[i]];
}

void AlawEncode(const int16_t* pcm, uint8_t* out, size_t n) {
  for (size_t i = 0; i < n; i++) out[i] = kTables.alaw_encode[static_cast<uint16_t>(pcm[i])];
}

void AlawDecode(const uint8_t* in, int16_t* pcm, size_t n) {
  for (size_t i = 0; i < n; i++) pcm[i] = kTables.alaw_decode[in[i]];
}

constexpr float kPcmScale = 32768.f;

void Pcm16ToFloat(const int16_t* in, float* out, size_t n) {
  constexpr float inv = 1.f / kPcmScale;
  for (size_t i = 0; i < n; i++) out[i] = static_cast<float>(in[i]) * inv;
}

void FloatToPcm16(const float* in, int16_t* out, size_t n) {
  for (size_t i = 0; i < n; i++) out[i] = SaturateToI16(in[i] * kPcmScale);
}

void ApplyGain(int16_t* buf, size_t n, float gain) {
  for (size_t i = 0; i < n; i++) buf[i] = SaturateToI16(static_cast<float>(buf[i]) * gain);
}

void MixInto(int16_t* dst, const int16_t* src, size_t n, float gain) {
  for (size_t i = 0; i < n; i++) dst[i] = SaturateToI16(static_cast<float>(dst[i]) + static_cast<float>(src[i]) * gain);
}

}  // namespace parley
