// Batched UDP I/O for RTP: one non-blocking IPv4 socket drained with recvmmsg(2) and written with sendmmsg(2).
//
// Pure socket code, no N-API and no libuv: bind_udp.cc owns the event-loop side. All buffers are the caller's
// (shared with JavaScript) and are attached once at Open(); Receive() and Send() allocate nothing.
//
// Receive ring: `slots` slots of `slot_bytes` bytes each in `rx_data`; per slot 4 uint32 in `rx_meta`:
//   [length, IPv4 address (host byte order), port, flags]   (flags bit 0: datagram truncated to slot_bytes)
// Send table: per packet 4 uint32 in `tx_meta`:
//   [offset into tx_data, length, IPv4 address (host byte order), port]
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>

#include <cstddef>
#include <cstdint>

namespace Napi {
class Env;
class Object;
}  // namespace Napi

namespace parley {

// Registers the udp* bindings (bind_udp.cc).
void InitUdp(Napi::Env env, Napi::Object exports);

// Layout of one rx_meta / tx_meta entry (uint32 words).
constexpr size_t kUdpMetaWords = 4;
constexpr uint32_t kUdpFlagTruncated = 1;
// RFC 768 / IPv4: the largest UDP payload is 65535 - 8 (UDP header) - 20 (IPv4 header).
constexpr uint32_t kUdpMaxPayload = 65507;
// Upper bound on slots per ring and packets per send call (Linux UIO_MAXIOV caps sendmmsg's vlen at 1024).
constexpr uint32_t kUdpMaxBatch = 1024;

struct UdpCounters {
  double rx_packets = 0;
  double rx_batches = 0;
  double rx_truncated = 0;
  double tx_packets = 0;
  double tx_dropped = 0;  // dropped on EAGAIN (socket send buffer full): see Send()
};

class UdpSocket {
 public:
  UdpSocket() = default;
  ~UdpSocket();
  UdpSocket(const UdpSocket&) = delete;
  UdpSocket& operator=(const UdpSocket&) = delete;

  // Creates, configures and binds the socket and attaches the buffers. Returns 0 or an errno value (the socket
  // is closed again on failure). `host` must be a dotted IPv4 address (EINVAL otherwise). `rcvbuf` / `sndbuf`:
  // SO_RCVBUF / SO_SNDBUF in bytes (0 keeps the system default; the kernel caps them at net.core.rmem_max/wmem_max).
  int Open(const char* host, uint16_t port, int rcvbuf, int sndbuf, uint8_t* rx_data, uint32_t* rx_meta, uint32_t slots, uint32_t slot_bytes,
           uint8_t* tx_data, size_t tx_bytes, uint32_t* tx_meta, uint32_t tx_slots);

  // One recvmmsg(2) into the ring. Returns the number of datagrams (0 when nothing is waiting) or -errno.
  int Receive();

  // Stores one datagram received elsewhere (the io_uring path, udp_ring.h) in ring slot `slot` (< slots()), with
  // the same meta layout as Receive(); `length` beyond slot_bytes is cut and flagged truncated.
  void Store(uint32_t slot, const uint8_t* data, uint32_t length, uint32_t address, uint16_t port, bool truncated);

  // Sends tx entries [0, count) with sendmmsg(2), looping on partial sends. The table must have been checked with
  // CheckTx(). Returns the number sent. On EAGAIN (send buffer full) the rest is dropped and counted in
  // counters().tx_dropped: RTP is real time, a packet sent late is worth less than one not sent, and holding it
  // would delay every later packet of the stream. On any other error returns -errno and sets *failed_index to the
  // packet that failed (packets before it were sent, the ones after it were not).
  int Send(uint32_t count, uint32_t* failed_index);

  // Checks tx entries [0, count) against the buffers: 0, or a message for a RangeError.
  const char* CheckTx(uint32_t count) const;

  // Closes the descriptor (idempotent). The owner must stop polling it first.
  void Close();

  int fd() const { return fd_; }
  uint16_t local_port() const { return local_port_; }
  uint32_t slots() const { return slots_; }
  const uint8_t* tx_data() const { return tx_data_; }
  const uint32_t* tx_meta() const { return tx_meta_; }
  void CountSent(uint32_t sent, uint32_t dropped) {
    counters_.tx_packets += sent;
    counters_.tx_dropped += dropped;
  }
  const UdpCounters& counters() const { return counters_; }

 private:
  int fd_ = -1;
  uint16_t local_port_ = 0;
  uint8_t* rx_data_ = nullptr;
  uint32_t* rx_meta_ = nullptr;
  uint32_t slots_ = 0;
  uint32_t slot_bytes_ = 0;
  uint8_t* tx_data_ = nullptr;
  size_t tx_bytes_ = 0;
  uint32_t* tx_meta_ = nullptr;
  uint32_t tx_slots_ = 0;
  // Preallocated at Open(): one header, iovec and address per slot.
  struct mmsghdr* rx_msgs_ = nullptr;
  struct iovec* rx_iov_ = nullptr;
  struct sockaddr_in* rx_addr_ = nullptr;
  struct mmsghdr* tx_msgs_ = nullptr;
  struct iovec* tx_iov_ = nullptr;
  struct sockaddr_in* tx_addr_ = nullptr;
  UdpCounters counters_;

  void FreeTables();
};

}  // namespace parley
