// Two mono int16 channels into one interleaved stereo int16 stream (left, right, left, right, ...), the sample
// layout of a 2-channel 16-bit PCM WAV data chunk (Microsoft RIFF spec, WAVE_FORMAT_PCM: samples of one frame
// stored channel after channel). Samples are stored in host byte order.
#pragma once

#include <napi.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace parley {

// Eight samples of one channel, through the GCC/Clang vector extension (punpck[lh]wd on x86-64, zip1/zip2 on
// arm64), loaded and stored unaligned.
typedef int16_t Int16x8 __attribute__((vector_size(16)));
constexpr size_t kInt16x8Lanes = 8;

// out[2i] = left[i], out[2i + 1] = right[i] for i in [0, n). out must not overlap left or right.
inline void InterleaveStereo(const int16_t* left, const int16_t* right, int16_t* out, size_t n) {
  size_t i = 0;
  for (; i + kInt16x8Lanes <= n; i += kInt16x8Lanes) {
    Int16x8 l, r;
    std::memcpy(&l, left + i, sizeof l);
    std::memcpy(&r, right + i, sizeof r);
    Int16x8 lo = __builtin_shufflevector(l, r, 0, 8, 1, 9, 2, 10, 3, 11);
    Int16x8 hi = __builtin_shufflevector(l, r, 4, 12, 5, 13, 6, 14, 7, 15);
    std::memcpy(out + 2 * i, &lo, sizeof lo);
    std::memcpy(out + 2 * i + kInt16x8Lanes, &hi, sizeof hi);
  }
  for (; i < n; i++) {
    out[2 * i] = left[i];
    out[2 * i + 1] = right[i];
  }
}

// Registers interleaveStereo (native/src/bind_pcm.cc).
void InitPcm(Napi::Env env, Napi::Object exports);

}  // namespace parley
