// Batched file writes for recordings: many files' blocks written by one call, so a worker hands its recordings'
// seconds to libuv's thread pool once per batch instead of once per block (each pool round trip costs a wake-up of
// a pool thread, a context switch on the worker's core and a completion through the event loop). Plain pwrite(2).
//
// A block is planar 16-bit stereo (the left channel's samples, then the right's, `capacity` each) and goes to the
// file interleaved, little-endian (a WAV's data chunk): the interleave is done here, once per block, in a scratch
// buffer of the job, so the recorder's per-frame work is a copy of each side's frame into its half (one memcpy)
// rather than 16-bit stores at every other sample position.
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
  const int16_t* planar;  // left: planar[0, capacity), right: planar[capacity, 2 * capacity)
  size_t capacity;
  size_t pairs;  // written: the first `pairs` of each channel (pairs <= capacity)
  int64_t offset;
  // Results: bytes written, and 0 or errno, kNothingWritten or kSkipped.
  size_t written = 0;
  int error = 0;
};

// Writes each block at its offset, in order, interleaved: a short write continues with the rest (POSIX allows one
// on a full disk or after a signal), EINTR is retried; the first failure of a group ends that group's writing.
// `written` counts bytes of the interleaved block (4 per pair).
void WriteBlocks(BlockWrite* writes, size_t count);

}  // namespace parley
