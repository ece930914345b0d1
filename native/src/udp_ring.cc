// io_uring for many UDP sockets: see udp_ring.h.
#include "udp_ring.h"

#include <arpa/inet.h>
#include <errno.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstddef>
#include <cstring>
#include <initializer_list>
#include <new>

namespace parley {
namespace {

// user_data of the ring's own requests (cancellations), never a caller's (callers' values fit in 63 bits).
constexpr uint64_t kInternalUserData = 1ull << 63;
constexpr uint16_t kBufferGroup = 0;
// io_uring_register_pbuf_ring: at most 32768 entries (IORING_MAX_ENTRIES / buffer id is 16 bits).
constexpr uint32_t kMaxBuffers = 32768;
// SQEs of the receive ring: arming and cancelling only (one socket at a time), so a small queue suffices.
constexpr uint32_t kRecvSqEntries = 64;
// Room before the payload in a provided buffer (io_uring_recvmsg_out, then the source address).
constexpr uint32_t kRecvHeaderBytes = sizeof(struct io_uring_recvmsg_out) + sizeof(struct sockaddr_in);
// Rounds of (run the queued work, walk the completions) per Reap while more keeps arriving: bounded, so a steady
// stream of datagrams cannot hold the event loop (its timers run the pacing clock) in one poll callback.
constexpr int kMaxReapRounds = 2;

uint32_t RoundUpPow2(uint32_t v) {
  uint32_t p = 1;
  while (p < v) p <<= 1;
  return p;
}

template <typename T>
T LoadAcquire(const T* p) {
  return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}
template <typename T>
void StoreRelease(T* p, T v) {
  __atomic_store_n(p, v, __ATOMIC_RELEASE);
}

int SysSetup(uint32_t entries, struct io_uring_params* p) {
  return static_cast<int>(::syscall(__NR_io_uring_setup, entries, p));
}
int SysEnter(int fd, uint32_t to_submit, uint32_t min_complete, uint32_t flags) {
  return static_cast<int>(::syscall(__NR_io_uring_enter, fd, to_submit, min_complete, flags, nullptr, 0));
}
int SysRegister(int fd, uint32_t opcode, const void* arg, uint32_t nr_args) {
  return static_cast<int>(::syscall(__NR_io_uring_register, fd, opcode, arg, nr_args));
}

}  // namespace

UdpRing::~UdpRing() { Close(); }

int UdpRing::SetupRing(Ring& r, uint32_t entries, uint32_t cq_entries) {
  struct io_uring_params p;
  std::memset(&p, 0, sizeof p);
  // One issuer (the worker thread), receive work run only when that thread asks (Reap), not by interrupting it.
  // TASKRUN_FLAG: the kernel marks sq_flags when receive work is queued, so Reap() knows without a syscall.
  p.flags = IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN | IORING_SETUP_TASKRUN_FLAG | IORING_SETUP_CQSIZE;
  p.cq_entries = cq_entries;
  int fd = SysSetup(entries, &p);
  if (fd < 0) return errno;
  r.fd = fd;
  if (!(p.features & IORING_FEAT_SINGLE_MMAP) || !(p.features & IORING_FEAT_NODROP) || !(p.features & IORING_FEAT_EXT_ARG)) {
    TeardownRing(r);
    return ENOSYS;
  }
  size_t sq_bytes = p.sq_off.array + p.sq_entries * sizeof(uint32_t);
  size_t cq_bytes = p.cq_off.cqes + p.cq_entries * sizeof(struct io_uring_cqe);
  r.sq_map_bytes = sq_bytes > cq_bytes ? sq_bytes : cq_bytes;
  void* map = ::mmap(nullptr, r.sq_map_bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, IORING_OFF_SQ_RING);
  if (map == MAP_FAILED) {
    int err = errno;
    TeardownRing(r);
    return err;
  }
  r.sq_map = map;
  r.sqes_bytes = p.sq_entries * sizeof(struct io_uring_sqe);
  void* sqes = ::mmap(nullptr, r.sqes_bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, IORING_OFF_SQES);
  if (sqes == MAP_FAILED) {
    int err = errno;
    TeardownRing(r);
    return err;
  }
  r.sqes = static_cast<struct io_uring_sqe*>(sqes);
  uint8_t* base = static_cast<uint8_t*>(map);
  r.sq_head = reinterpret_cast<uint32_t*>(base + p.sq_off.head);
  r.sq_tail = reinterpret_cast<uint32_t*>(base + p.sq_off.tail);
  r.sq_mask = *reinterpret_cast<uint32_t*>(base + p.sq_off.ring_mask);
  r.sq_entries = p.sq_entries;
  r.sq_array = reinterpret_cast<uint32_t*>(base + p.sq_off.array);
  r.sq_flags = reinterpret_cast<uint32_t*>(base + p.sq_off.flags);
  for (uint32_t i = 0; i < p.sq_entries; i++) r.sq_array[i] = i;  // identity: SQE i sits in slot i
  r.cq_head = reinterpret_cast<uint32_t*>(base + p.cq_off.head);
  r.cq_tail = reinterpret_cast<uint32_t*>(base + p.cq_off.tail);
  r.cq_mask = *reinterpret_cast<uint32_t*>(base + p.cq_off.ring_mask);
  r.cq_entries = p.cq_entries;
  r.cqes = reinterpret_cast<struct io_uring_cqe*>(base + p.cq_off.cqes);
  r.local_tail = *r.sq_tail;
  return 0;
}

void UdpRing::TeardownRing(Ring& r) {
  if (r.sqes != nullptr) ::munmap(r.sqes, r.sqes_bytes);
  if (r.sq_map != nullptr) ::munmap(r.sq_map, r.sq_map_bytes);
  if (r.fd >= 0) ::close(r.fd);
  r = Ring();
}

int UdpRing::Open(uint32_t buffers, uint32_t payload_bytes, uint32_t send_entries, uint32_t fixed_files) {
  if (open()) return EISCONN;
  if (buffers == 0 || payload_bytes == 0 || send_entries == 0) return EINVAL;
  buffer_count_ = RoundUpPow2(buffers < kMaxBuffers ? buffers : kMaxBuffers);
  buffer_bytes_ = kRecvHeaderBytes + payload_bytes;
  // Every buffer can complete once, plus the end of each multishot: twice the buffers is room to spare, and the
  // kernel keeps overflowing completions (IORING_FEAT_NODROP) rather than losing them.
  int err = SetupRing(recv_, kRecvSqEntries, 2 * buffer_count_);
  if (err == 0) err = SetupRing(send_, send_entries, 2 * RoundUpPow2(send_entries));
  if (err != 0) {
    Close();
    return err;
  }
  send_addrs_ = new (std::nothrow) struct sockaddr_in[send_.sq_entries];
  buf_ring_bytes_ = buffer_count_ * sizeof(struct io_uring_buf);
  buf_ring_map_ = ::mmap(nullptr, buf_ring_bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  buffers_bytes_ = static_cast<size_t>(buffer_count_) * buffer_bytes_;
  void* bufs = ::mmap(nullptr, buffers_bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (send_addrs_ == nullptr || buf_ring_map_ == MAP_FAILED || bufs == MAP_FAILED) {
    if (buf_ring_map_ == MAP_FAILED) buf_ring_map_ = nullptr;
    if (bufs != MAP_FAILED) ::munmap(bufs, buffers_bytes_);
    Close();
    return ENOMEM;
  }
  buffers_ = static_cast<uint8_t*>(bufs);
  buf_ring_ = static_cast<struct io_uring_buf_ring*>(buf_ring_map_);
  struct io_uring_buf_reg reg;
  std::memset(&reg, 0, sizeof reg);
  reg.ring_addr = reinterpret_cast<uint64_t>(buf_ring_);
  reg.ring_entries = buffer_count_;
  reg.bgid = kBufferGroup;
  if (SysRegister(recv_.fd, IORING_REGISTER_PBUF_RING, &reg, 1) != 0) {
    err = errno;
    Close();
    return err;
  }
  buf_registered_ = true;
  for (uint32_t i = 0; i < buffer_count_; i++) ReturnBuffer(static_cast<uint16_t>(i));

  event_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (event_fd_ < 0 || SysRegister(recv_.fd, IORING_REGISTER_EVENTFD, &event_fd_, 1) != 0) {
    err = errno;
    Close();
    return err;
  }
  if (fixed_files > 0) {
    // An empty (sparse) table in each ring; slots are filled as sockets join (SetFile).
    struct io_uring_rsrc_register files;
    std::memset(&files, 0, sizeof files);
    files.nr = fixed_files;
    files.flags = IORING_RSRC_REGISTER_SPARSE;
    if (SysRegister(recv_.fd, IORING_REGISTER_FILES2, &files, sizeof files) != 0 ||
        SysRegister(send_.fd, IORING_REGISTER_FILES2, &files, sizeof files) != 0) {
      err = errno;
      Close();
      return err;
    }
    fixed_files_ = fixed_files;
  }
  std::memset(&recv_msg_, 0, sizeof recv_msg_);
  recv_msg_.msg_namelen = sizeof(struct sockaddr_in);
  for (uint32_t i = 0; i < send_.sq_entries; i++) {
    std::memset(&send_addrs_[i], 0, sizeof send_addrs_[i]);
    send_addrs_[i].sin_family = AF_INET;
  }
  return 0;
}

void UdpRing::Close() {
  // Closing the ring descriptors cancels whatever is in flight; the kernel drops its socket references with them.
  TeardownRing(recv_);
  TeardownRing(send_);
  if (event_fd_ >= 0) ::close(event_fd_);
  event_fd_ = -1;
  if (buffers_ != nullptr) ::munmap(buffers_, buffers_bytes_);
  if (buf_ring_map_ != nullptr) ::munmap(buf_ring_map_, buf_ring_bytes_);
  buffers_ = nullptr;
  buf_ring_map_ = nullptr;
  buf_ring_ = nullptr;
  buf_registered_ = false;
  delete[] send_addrs_;
  send_addrs_ = nullptr;
  send_queued_ = 0;
  armed_ = 0;
  fixed_files_ = 0;
}

int UdpRing::SetFile(uint32_t index, int fd) {
  if (index >= fixed_files_) return -EINVAL;
  int32_t fds[1] = {fd};
  struct io_uring_files_update update;
  std::memset(&update, 0, sizeof update);
  update.offset = index;
  update.fds = reinterpret_cast<uint64_t>(fds);
  for (Ring* r : {&recv_, &send_}) {
    if (SysRegister(r->fd, IORING_REGISTER_FILES_UPDATE, &update, 1) < 0) return -errno;
  }
  return 0;
}

struct io_uring_sqe* UdpRing::NextSqe(Ring& r) {
  uint32_t head = LoadAcquire(r.sq_head);
  if (r.local_tail - head >= r.sq_entries) return nullptr;
  struct io_uring_sqe* sqe = &r.sqes[r.local_tail & r.sq_mask];
  std::memset(sqe, 0, sizeof *sqe);
  r.local_tail++;
  return sqe;
}

int UdpRing::Enter(Ring& r, uint32_t to_submit, uint32_t min_complete, uint32_t flags) {
  int n;
  do {
    enters_++;
    n = SysEnter(r.fd, to_submit, min_complete, flags);
  } while (n < 0 && errno == EINTR);
  return n < 0 ? -errno : n;
}

// Publishes the prepared SQEs and submits them all; with min_complete > 0 also waits for that many completions.
int UdpRing::SubmitPrepared(Ring& r, uint32_t min_complete) {
  StoreRelease(r.sq_tail, r.local_tail);
  uint32_t flags = min_complete > 0 ? IORING_ENTER_GETEVENTS : 0;
  for (;;) {
    uint32_t pending = r.local_tail - LoadAcquire(r.sq_head);
    if (pending == 0 && min_complete == 0) return 0;
    int n = Enter(r, pending, min_complete, flags);
    if (n < 0) return n;
    if (static_cast<uint32_t>(n) >= pending) return 0;
    // Partly consumed (the kernel ran out of memory for requests): submit the rest.
  }
}

int UdpRing::ArmRecv(int fd, uint64_t user_data, bool fixed) {
  struct io_uring_sqe* sqe = NextSqe(recv_);
  if (sqe == nullptr) return -EBUSY;
  sqe->opcode = IORING_OP_RECVMSG;
  sqe->fd = fd;
  sqe->addr = reinterpret_cast<uint64_t>(&recv_msg_);
  sqe->len = 1;
  sqe->ioprio = IORING_RECV_MULTISHOT;
  sqe->flags = IOSQE_BUFFER_SELECT | (fixed ? IOSQE_FIXED_FILE : 0);
  sqe->buf_group = kBufferGroup;
  sqe->user_data = user_data;
  int rc = SubmitPrepared(recv_, 0);
  if (rc == 0) armed_++;
  return rc;
}

int UdpRing::CancelRecv(int fd, bool fixed) {
  struct io_uring_sqe* sqe = NextSqe(recv_);
  if (sqe == nullptr) return -EBUSY;
  sqe->opcode = IORING_OP_ASYNC_CANCEL;
  sqe->fd = fd;
  sqe->cancel_flags = IORING_ASYNC_CANCEL_FD | IORING_ASYNC_CANCEL_ALL | (fixed ? IORING_ASYNC_CANCEL_FD_FIXED : 0);
  sqe->user_data = kInternalUserData;
  StoreRelease(recv_.sq_tail, recv_.local_tail);
  // Submit and run the deferred work in the same call: the cancelled receive completes and lets go of the socket.
  int n = Enter(recv_, 1, 0, IORING_ENTER_GETEVENTS);
  return n < 0 ? n : 0;
}

void UdpRing::ReturnBuffer(uint16_t buffer_id) {
  // Entries indexed from the ring's start: in C++ the header's flexible `bufs` member sits after an empty struct
  // (one byte, padded to eight), not at offset 0 where the kernel reads the entries.
  struct io_uring_buf* b = static_cast<struct io_uring_buf*>(buf_ring_map_) + (buf_tail_ & (buffer_count_ - 1));
  // Field by field: bufs[0].resv is the ring's tail.
  b->addr = reinterpret_cast<uint64_t>(buffers_ + static_cast<size_t>(buffer_id) * buffer_bytes_);
  b->len = buffer_bytes_;
  b->bid = buffer_id;
  buf_tail_++;
  StoreRelease(&buf_ring_->tail, buf_tail_);
}

bool UdpRing::Pending() const { return LoadAcquire(recv_.cq_tail) != *recv_.cq_head; }

bool UdpRing::WorkQueued() const { return (LoadAcquire(recv_.sq_flags) & IORING_SQ_TASKRUN) != 0; }

int UdpRing::Reap(DatagramFn on_datagram, void* ctx, int max_datagrams) {
  int handed = 0;
  int rounds = 0;
  for (;;) {
    // The kernel sets IORING_SQ_TASKRUN before it signals the eventfd, and clears it when the work runs.
    if (WorkQueued()) {
      int n = RunQueuedWork();
      if (n < 0) return n;
    }
    uint32_t head = *recv_.cq_head;
    uint32_t tail = LoadAcquire(recv_.cq_tail);
    bool stopped = false;
    for (; head != tail; head++) {
      const struct io_uring_cqe* cqe = &recv_.cqes[head & recv_.cq_mask];
      if (cqe->user_data & kInternalUserData) continue;
      if (handed >= max_datagrams || !on_datagram(ctx, Decode(*cqe))) {
        stopped = true;
        break;
      }
      if (!(cqe->flags & IORING_CQE_F_MORE) && armed_ > 0) armed_--;  // that receive ended
      handed++;
    }
    StoreRelease(recv_.cq_head, head);
    if (stopped) return handed;  // the caller comes back while Pending()
    // Clear the eventfd (posting completions signalled it too), then look again: work queued since the enter has
    // set the flag, and its signal may have been the one just read.
    uint64_t ignored;
    if (::read(event_fd_, &ignored, sizeof ignored) < 0 && errno != EAGAIN) return -errno;
    if (!WorkQueued()) return handed;
    if (++rounds >= kMaxReapRounds) {
      // Datagrams keep coming: give the loop back (timers, the pacing clock) and come back on its next turn.
      int err = Wake();
      return err < 0 ? err : handed;
    }
  }
}

// Runs all the receive work queued for this thread in one io_uring_enter. A plain GETEVENTS enter runs at most
// max(20, min_complete) work items (one per socket that became readable) and leaves the rest unflagged until
// more arrives; so ask for one completion per armed receive (each queued item is one of them), with a zero
// timeout: everything queued runs, and the wait that follows ends at once (ETIME).
// Not more: the kernel's wait loop goes back to running work, without looking at the timeout, for as long as new
// work keeps being queued, so asking for more (the CQ's size) would receive a busy socket's stream one datagram at
// a time as each arrived, spinning the worker's core.
int UdpRing::RunQueuedWork() {
  uint32_t want = armed_ < 1 ? 1 : (armed_ < recv_.cq_entries ? armed_ : recv_.cq_entries);
  struct __kernel_timespec zero;
  std::memset(&zero, 0, sizeof zero);
  struct io_uring_getevents_arg arg;
  std::memset(&arg, 0, sizeof arg);
  arg.ts = reinterpret_cast<uint64_t>(&zero);
  int n;
  do {
    enters_++;
    n = static_cast<int>(::syscall(__NR_io_uring_enter, recv_.fd, 0, want,
                                   IORING_ENTER_GETEVENTS | IORING_ENTER_EXT_ARG, &arg, sizeof arg));
  } while (n < 0 && errno == EINTR);
  if (n < 0 && errno != ETIME) return -errno;
  return 0;
}

int UdpRing::Wake() {
  uint64_t one = 1;
  return ::write(event_fd_, &one, sizeof one) < 0 && errno != EAGAIN ? -errno : 0;
}

RingDatagram UdpRing::Decode(const struct io_uring_cqe& cqe) const {
  RingDatagram d;
  std::memset(&d, 0, sizeof d);
  d.user_data = cqe.user_data;
  d.ended = !(cqe.flags & IORING_CQE_F_MORE);
  d.has_buffer = (cqe.flags & IORING_CQE_F_BUFFER) != 0;
  d.buffer_id = static_cast<uint16_t>(cqe.flags >> IORING_CQE_BUFFER_SHIFT);
  if (cqe.res < 0) {
    // ENOBUFS: every provided buffer was in use; the datagrams wait in the socket until the receive is re-armed.
    d.error = -cqe.res;
  } else if (d.has_buffer) {
    const uint8_t* buf = buffers_ + static_cast<size_t>(d.buffer_id) * buffer_bytes_;
    struct io_uring_recvmsg_out out;
    std::memcpy(&out, buf, sizeof out);
    struct sockaddr_in from;
    std::memcpy(&from, buf + sizeof out, sizeof from);
    uint32_t room = buffer_bytes_ - kRecvHeaderBytes;
    d.payload = buf + kRecvHeaderBytes;
    d.length = out.payloadlen < room ? out.payloadlen : room;
    d.truncated = (out.flags & MSG_TRUNC) != 0 || out.payloadlen > room;
    d.address = ntohl(from.sin_addr.s_addr);
    d.port = ntohs(from.sin_port);
  }
  return d;
}

bool UdpRing::QueueSend(int fd, const uint8_t* data, uint32_t length, uint32_t address, uint16_t port, uint64_t user_data,
                        bool fixed) {
  struct io_uring_sqe* sqe = NextSqe(send_);
  if (sqe == nullptr) return false;
  struct sockaddr_in* to = &send_addrs_[(send_.local_tail - 1) & send_.sq_mask];
  to->sin_addr.s_addr = htonl(address);
  to->sin_port = htons(port);
  sqe->opcode = IORING_OP_SEND;
  sqe->fd = fd;
  sqe->addr = reinterpret_cast<uint64_t>(data);
  sqe->len = length;
  sqe->msg_flags = MSG_DONTWAIT;
  if (fixed) sqe->flags = IOSQE_FIXED_FILE;
  sqe->addr2 = reinterpret_cast<uint64_t>(to);  // IORING_OP_SEND with a destination (Linux 6.0)
  sqe->addr_len = sizeof(struct sockaddr_in);
  sqe->user_data = user_data;
  send_queued_++;
  return true;
}

int UdpRing::SubmitSends(SentFn on_sent, void* ctx) {
  uint32_t count = send_queued_;
  if (count == 0) return 0;
  send_queued_ = 0;
  int err = SubmitPrepared(send_, count);
  if (err < 0) return err;
  uint32_t head = *send_.cq_head;
  uint32_t seen = 0;
  while (seen < count) {
    uint32_t tail = LoadAcquire(send_.cq_tail);
    if (head == tail) {
      // Not all inline (should not happen for UDP with MSG_DONTWAIT): wait for the rest.
      StoreRelease(send_.cq_head, head);
      int n = Enter(send_, 0, count - seen, IORING_ENTER_GETEVENTS);
      if (n < 0) return n;
      continue;
    }
    for (; head != tail && seen < count; head++, seen++) {
      const struct io_uring_cqe* cqe = &send_.cqes[head & send_.cq_mask];
      on_sent(ctx, cqe->user_data, cqe->res);
    }
  }
  StoreRelease(send_.cq_head, head);
  return 0;
}

}  // namespace parley

static_assert(offsetof(struct io_uring_buf_ring, tail) == 14, "the PBUF ring tail overlays bufs[0].resv");
