// Eight floats processed together through the GCC/Clang vector extension, for the kernels built twice
// (target_clones): an AVX2 clone and a baseline (SSE2 / NEON) clone, one chosen once at load by the dynamic linker
// from the CPU's features, never per call. Loads and stores are unaligned.
#pragma once

#include <cstring>

// The helpers take and return Vec8 by value; they are always inlined, so the AVX calling convention that -Wpsabi
// warns about never applies.
#if defined(__GNUC__)
#pragma GCC diagnostic ignored "-Wpsabi"
#define PARLEY_INLINE inline __attribute__((always_inline))
#else
#define PARLEY_INLINE inline
#endif

// GCC on Linux only: target_clones dispatches through an ifunc resolver, which only ELF (Linux) loaders run, and
// Clang rejects the always-inline Vec8 helpers inside an AVX2 clone (its ABI check comes before inlining).
// Elsewhere the kernels are built once, for the baseline.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && defined(__linux__)
#define PARLEY_KERNEL_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define PARLEY_KERNEL_CLONES
#endif

namespace parley {

typedef float Vec8 __attribute__((vector_size(32)));

PARLEY_INLINE Vec8 Load8(const float* p) {
  Vec8 v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

PARLEY_INLINE void Store8(float* p, const Vec8& v) { std::memcpy(p, &v, sizeof v); }

// A scalar operand of vector arithmetic is broadcast (one vbroadcastss); an initializer list of eight copies is
// built lane by lane.
PARLEY_INLINE Vec8 Splat8(float x) { return Vec8{} + x; }

// Lanes summed in a fixed order (the same on every clone, so results do not depend on the CPU).
PARLEY_INLINE float Sum8(const Vec8& a) { return ((a[0] + a[4]) + (a[1] + a[5])) + ((a[2] + a[6]) + (a[3] + a[7])); }

}  // namespace parley
