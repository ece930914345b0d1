#include "block_writer.h"

#include <cerrno>
#include <unistd.h>
#include <vector>

#ifdef __SSE2__
#include <emmintrin.h>
#endif

namespace parley {

namespace {

constexpr size_t kBytesPerPair = 4;  // two 16-bit samples

// One block, interleaved into `data` (pairs * kBytesPerPair bytes), to its file at its offset.
void WriteOne(BlockWrite& w, const uint8_t* data) {
  const size_t bytes = w.pairs * kBytesPerPair;
  while (w.written < bytes) {
    const ssize_t n = pwrite(w.fd, data + w.written, bytes - w.written, w.offset + static_cast<int64_t>(w.written));
    if (n < 0) {
      if (errno == EINTR) continue;
      w.error = errno;
      return;
    }
    if (n == 0) {
      w.error = kNothingWritten;
      return;
    }
    w.written += static_cast<size_t>(n);
  }
}

// out[2i] = left[i], out[2i + 1] = right[i] for i < pairs, each 16-bit sample stored little-endian whatever the
// host.
void InterleaveLittleEndian(const int16_t* left, const int16_t* right, size_t pairs, uint8_t* out) {
  size_t i = 0;
#if defined(__SSE2__) && defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  // Eight pairs per step: the low and high halves of 8 left and 8 right samples unpacked into (l, r) pairs.
  constexpr size_t kStep = 8;
  for (; i + kStep <= pairs; i += kStep) {
    const __m128i l = _mm_loadu_si128(reinterpret_cast<const __m128i*>(left + i));
    const __m128i r = _mm_loadu_si128(reinterpret_cast<const __m128i*>(right + i));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i * kBytesPerPair), _mm_unpacklo_epi16(l, r));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i * kBytesPerPair + 16), _mm_unpackhi_epi16(l, r));
  }
#endif
  for (; i < pairs; i++) {
    const uint16_t l = static_cast<uint16_t>(left[i]);
    const uint16_t r = static_cast<uint16_t>(right[i]);
    uint8_t* p = out + i * kBytesPerPair;
    p[0] = static_cast<uint8_t>(l);
    p[1] = static_cast<uint8_t>(l >> 8);
    p[2] = static_cast<uint8_t>(r);
    p[3] = static_cast<uint8_t>(r >> 8);
  }
}

}  // namespace

void WriteBlocks(BlockWrite* writes, size_t count) {
  size_t largest = 0;
  for (size_t i = 0; i < count; i++) largest = writes[i].pairs > largest ? writes[i].pairs : largest;
  std::vector<uint8_t> scratch(largest * kBytesPerPair);
  // A group's blocks are adjacent and in order.
  int group = 0;
  bool failed = false;
  for (size_t i = 0; i < count; i++) {
    BlockWrite& w = writes[i];
    if (i == 0 || w.group != group) {
      group = w.group;
      failed = false;
    }
    if (failed) {
      w.error = kSkipped;
      continue;
    }
    InterleaveLittleEndian(w.planar, w.planar + w.capacity, w.pairs, scratch.data());
    WriteOne(w, scratch.data());
    failed = w.error != 0;
  }
}

}  // namespace parley
