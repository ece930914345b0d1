// io_uring for many low-rate UDP sockets (one RTP port per call stream): receives and sends of all of a worker's
// sockets go through two rings, so the kernel is entered a few times per event-loop iteration instead of once per
// packet. Pure io_uring code on raw syscalls (linux/io_uring.h; no liburing, no N-API, no libuv): bind_udp.cc
// drives it from the Node loop.
//
// Why: with one socket per call stream, the cost beyond the kernel's own UDP path is one receive and one send
// syscall per packet (plus unwrapping each socket's handle); only batching across sockets removes it, and io_uring
// does that: one io_uring_enter per loop iteration for all receives and one per tick for all sends
// (bench/udp-io.ts measures the options).
// This file:
// - receive ring: one multishot IORING_OP_RECVMSG per socket (armed once, re-armed only when it ends), landing in
//   a provided-buffer ring (IORING_REGISTER_PBUF_RING) shared by all sockets. With IORING_SETUP_DEFER_TASKRUN the
//   kernel queues the receive work for this thread and signals a registered eventfd once per batch; Reap() runs
//   it all with one io_uring_enter and walks the completions. (Polling the ring's own descriptor would save the
//   eventfd read, but deferred work does not wake its pollers.)
// - send ring: one IORING_OP_SEND with a destination address per packet (no msghdr), MSG_DONTWAIT so a full
//   socket buffer fails at once with EAGAIN instead of waiting (RTP: late is worse than lost); a whole tick of
//   packets for every socket is submitted with one io_uring_enter and completes inline before it returns.
// - registered files (Open's fixed_files, SetFile): requests name a socket by its slot, skipping fget/fput; off by
//   default (no measurable gain in bench/udp-io.ts).
// Kernel: io_uring with SINGLE_ISSUER + DEFER_TASKRUN (6.1), multishot recvmsg and PBUF_RING (6.0), SEND with an
// address (6.0). Open() reports ENOSYS/EPERM/EINVAL where io_uring is missing or blocked (a container's seccomp
// profile): the caller falls back to uv_poll + recvmmsg/sendmmsg per socket (udp_io.h).
// All rings belong to the thread that opened them (IORING_SETUP_SINGLE_ISSUER): one UdpRing per worker.
#pragma once

#include <linux/io_uring.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cstddef>
#include <cstdint>

namespace parley {

// One received datagram as Reap() hands it over; the payload stays valid until the buffer is given back.
struct RingDatagram {
  uint64_t user_data;       // as passed to ArmRecv
  const uint8_t* payload;   // nullptr on an error completion
  uint32_t length;          // bytes available at payload (<= buffer room)
  uint32_t address;         // IPv4, host byte order
  uint16_t port;
  bool truncated;           // the datagram was longer than the buffer room (MSG_TRUNC)
  int error;                // 0, or the errno of a failed receive (the multishot ended; re-arm it)
  bool ended;               // the multishot receive ended (error, no buffers, cancel): re-arm unless closed
  uint16_t buffer_id;       // give back with ReturnBuffer() once the payload has been read
  bool has_buffer;
};

class UdpRing {
 public:
  UdpRing() = default;
  ~UdpRing();
  UdpRing(const UdpRing&) = delete;
  UdpRing& operator=(const UdpRing&) = delete;

  // Sets up both rings, the provided buffers (`buffers` rounded up to a power of two, at most 32768, each with
  // room for `payload_bytes`) and the eventfd; with `fixed_files` > 0 also a table of that many registered files
  // in each ring (empty: see SetFile). Returns 0 or an errno value.
  int Open(uint32_t buffers, uint32_t payload_bytes, uint32_t send_entries, uint32_t fixed_files = 0);
  void Close();
  bool open() const { return recv_.fd >= 0; }

  // The descriptor that becomes readable when receive work is waiting (poll it; Reap() clears it).
  int event_fd() const { return event_fd_; }

  // Registered files (IORING_REGISTER_FILES_UPDATE, both rings): slot `index` (< fixed_files) refers to `fd`, or
  // to nothing with fd -1. A registered socket is referenced by the rings until its slot is cleared: clear it
  // before closing fd. Requests then name the slot (fixed = true) and the kernel skips fget/fput per request.
  int SetFile(uint32_t index, int fd);
  uint32_t fixed_files() const { return fixed_files_; }

  // Arms a multishot receive on `fd` (a registered slot when fixed) whose completions carry `user_data`, and
  // submits it. 0 or -errno.
  int ArmRecv(int fd, uint64_t user_data, bool fixed = false);
  // Cancels every receive on `fd` (a registered slot when fixed) and runs the cancellation, so the ring holds no
  // request on the socket when this returns (the caller then clears its slot, closes fd and may bind its port
  // again). 0 or -errno.
  int CancelRecv(int fd, bool fixed = false);

  // Runs the queued receive work (one io_uring_enter) and then calls on_datagram(ctx, d) for each completion until it
  // returns false (the caller's storage is full: the rest stays queued for the next Reap), max_datagrams were handed
  // over, or none is left; again if more work came meanwhile, a bounded number of times (then the eventfd is left
  // signalled, so the event loop comes back after its other phases). Returns the number handed over, or -errno on a
  // failed syscall.
  using DatagramFn = bool (*)(void* ctx, const RingDatagram& d);
  int Reap(DatagramFn on_datagram, void* ctx, int max_datagrams);
  // True when completions are still queued (Reap stopped early).
  bool Pending() const;
  void ReturnBuffer(uint16_t buffer_id);
  // Signals the eventfd, so its poller comes back (completions left queued). 0 or -errno.
  int Wake();

  // Queues one datagram to send from `fd` (a registered slot when fixed); the data must stay unchanged until
  // SubmitSends() returns. Returns false when the send ring is full (submit, then queue again).
  bool QueueSend(int fd, const uint8_t* data, uint32_t length, uint32_t address, uint16_t port, uint64_t user_data,
                 bool fixed = false);
  // Submits the queued sends and waits until each has completed (inline for UDP with MSG_DONTWAIT), then calls
  // on_sent(ctx, user_data, result) per packet (result: bytes, or -errno). Returns 0 or -errno.
  using SentFn = void (*)(void* ctx, uint64_t user_data, int result);
  int SubmitSends(SentFn on_sent, void* ctx);
  uint32_t queued_sends() const { return send_queued_; }

  double enters() const { return enters_; }

 private:
  struct Ring {
    int fd = -1;
    void* sq_map = nullptr;
    size_t sq_map_bytes = 0;
    void* cq_map = nullptr;  // == sq_map with IORING_FEAT_SINGLE_MMAP
    size_t cq_map_bytes = 0;
    struct io_uring_sqe* sqes = nullptr;
    size_t sqes_bytes = 0;
    uint32_t* sq_head = nullptr;
    uint32_t* sq_tail = nullptr;
    uint32_t sq_mask = 0;
    uint32_t sq_entries = 0;
    uint32_t* sq_array = nullptr;
    uint32_t* sq_flags = nullptr;
    uint32_t* cq_head = nullptr;
    uint32_t* cq_tail = nullptr;
    uint32_t cq_mask = 0;
    uint32_t cq_entries = 0;
    struct io_uring_cqe* cqes = nullptr;
    uint32_t local_tail = 0;  // SQEs prepared, not yet published
  };

  int SetupRing(Ring& r, uint32_t entries, uint32_t cq_entries);
  void TeardownRing(Ring& r);
  struct io_uring_sqe* NextSqe(Ring& r);
  int Enter(Ring& r, uint32_t to_submit, uint32_t min_complete, uint32_t flags);
  int SubmitPrepared(Ring& r, uint32_t min_complete);
  bool WorkQueued() const;
  int RunQueuedWork();
  RingDatagram Decode(const struct io_uring_cqe& cqe) const;

  Ring recv_;
  Ring send_;
  int event_fd_ = -1;
  // Provided buffers (PBUF ring of io_uring_buf entries, then the buffers themselves).
  void* buf_ring_map_ = nullptr;
  size_t buf_ring_bytes_ = 0;
  struct io_uring_buf_ring* buf_ring_ = nullptr;
  uint8_t* buffers_ = nullptr;
  size_t buffers_bytes_ = 0;
  uint32_t buffer_count_ = 0;
  uint32_t buffer_bytes_ = 0;
  uint16_t buf_tail_ = 0;
  bool buf_registered_ = false;
  // The msghdr every multishot receive reads its name/control sizes from.
  struct msghdr recv_msg_ {};
  // Destination addresses of queued sends (read by the kernel when the send is prepared, at submit).
  struct sockaddr_in* send_addrs_ = nullptr;
  uint32_t send_queued_ = 0;
  // Multishot receives armed and not yet ended: the most work items Reap can find queued.
  uint32_t armed_ = 0;
  uint32_t fixed_files_ = 0;
  double enters_ = 0;
};

}  // namespace parley
