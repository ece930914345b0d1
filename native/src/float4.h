// Four floats processed together through the GCC/Clang vector extension (SSE on x86-64, NEON on arm64), loaded
// and stored unaligned: explicit 4-wide arithmetic for the DSP kernels, whatever the optimisation level.
#pragma once

#include <cstdint>
#include <cstring>

namespace parley {

typedef float Float4 __attribute__((vector_size(16)));

inline Float4 Load4(const float* p) {
  Float4 v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

inline void Store4(float* p, Float4 v) { std::memcpy(p, &v, sizeof v); }

inline Float4 Splat4(float x) { return Float4{x, x, x, x}; }

inline Float4 Reverse4(Float4 v) { return Float4{v[3], v[2], v[1], v[0]}; }

typedef int16_t Short8 __attribute__((vector_size(16)));

// Four int16 samples, each doubled into both halves of a 32-bit lane by a shuffle (s0 s0 s1 s1 ...), as floats:
// the lane shifted down arithmetically is the sign-extended sample (a shuffle and a shift instead of a scalar
// conversion per sample).
inline Float4 DoubledInt16ToFloat4(Short8 doubled) {
  typedef int32_t Int4 __attribute__((vector_size(16)));
  Int4 a;
  std::memcpy(&a, &doubled, sizeof a);
  return __builtin_convertvector(a >> 16, Float4);
}

}  // namespace parley
