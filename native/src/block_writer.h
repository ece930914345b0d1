// Batched file writes for recordings: many files' blocks written by one call, so a worker hands its recordings'
// seconds to libuv's thread pool once per batch instead of once per block (500 recordings write 500 blocks a
// second: one pool round trip each cost a wake-up of a pool thread, a context switch on the worker's core and a
// completion through the event loop). The only I/O in native/: plain pwrite(2), no buffering of its own.
#pragma once

#include <cstddef>
#include <cstdint>

namespace parley {

// pwrite returned 0 for a non-empty write (no errno to give).
constexpr int kNothingWritten = -1;
// Not attempted: an earlier write of the same group (one recording's file) failed, so the file keeps the whole
// blocks before the failure and nothing after it.
constexpr int kSkipped = -2;

struct BlockWrite {
  int fd;
  int group;
  const void* data;
  size_t bytes;
  int64_t offset;
  // Results: bytes written, and 0 or errno, kNothingWritten or kSkipped.
  size_t written = 0;
  int error = 0;
};

// Writes each block at its offset, in order: a short write continues with the rest (POSIX allows one on a full
// disk or after a signal), EINTR is retried; the first failure of a group ends that group's writing.
void WriteBlocks(BlockWrite* writes, size_t count);

}  // namespace parley
