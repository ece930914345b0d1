#include "block_writer.h"

#include <cerrno>
#include <unistd.h>

namespace parley {

namespace {

void WriteOne(BlockWrite& w) {
  const char* data = static_cast<const char*>(w.data);
  while (w.written < w.bytes) {
    const ssize_t n = pwrite(w.fd, data + w.written, w.bytes - w.written, w.offset + static_cast<int64_t>(w.written));
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

}  // namespace

void WriteBlocks(BlockWrite* writes, size_t count) {
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
    WriteOne(w);
    failed = w.error != 0;
  }
}

}  // namespace parley
