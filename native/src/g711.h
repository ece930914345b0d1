// ITU-T G.711 mu-law and A-law, PCM16 <-> float32 conversion, gain and mixing kernels.
// Pure functions over caller-owned buffers; the lookup tables are built once per process.
#pragma once

#include <cstddef>
#include <cstdint>

namespace parley {

void MulawEncode(const int16_t* pcm, uint8_t* out, size_t n);
void MulawDecode(const uint8_t* in, int16_t* pcm, size_t n);
void AlawEncode(const int16_t* pcm, uint8_t* out, size_t n);
void AlawDecode(const uint8_t* in, int16_t* pcm, size_t n);

// int16 -> float in [-1, 1): x / 32768.
void Pcm16ToFloat(const int16_t* in, float* out, size_t n);
// float -> int16: round to nearest, saturating.
void FloatToPcm16(const float* in, int16_t* out, size_t n);
// In place: x * gain, rounded, saturating.
void ApplyGain(int16_t* buf, size_t n, float gain);
// dst += src * gain, rounded, saturating.
void MixInto(int16_t* dst, const int16_t* src, size_t n, float gain);

inline int16_t SaturateToI16(float v) {
  // Round half away from zero, then clamp to the int16 range.
  float r = v >= 0.f ? v + 0.5f : v - 0.5f;
  if (r >= 32767.f) return 32767;
  if (r <= -32768.f) return -32768;
  return static_cast<int16_t>(r);
}

}  // namespace parley
