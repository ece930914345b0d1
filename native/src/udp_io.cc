// Batched UDP I/O: see udp_io.h.
#include "udp_io.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstring>
#include <new>

namespace parley {

UdpSocket::~UdpSocket() {
  Close();
  FreeTables();
}

void UdpSocket::FreeTables() {
  delete[] rx_msgs_;
  delete[] rx_iov_;
  delete[] rx_addr_;
  delete[] tx_msgs_;
  delete[] tx_iov_;
  delete[] tx_addr_;
  rx_msgs_ = tx_msgs_ = nullptr;
  rx_iov_ = tx_iov_ = nullptr;
  rx_addr_ = tx_addr_ = nullptr;
}

int UdpSocket::Open(const char* host, uint16_t port, int rcvbuf, int sndbuf, uint8_t* rx_data, uint32_t* rx_meta, uint32_t slots,
                    uint32_t slot_bytes, uint8_t* tx_data, size_t tx_bytes, uint32_t* tx_meta, uint32_t tx_slots) {
  if (fd_ >= 0) return EISCONN;
  struct sockaddr_in local;
  std::memset(&local, 0, sizeof local);
  local.sin_family = AF_INET;
  local.sin_port = htons(port);
  if (inet_pton(AF_INET, host, &local.sin_addr) != 1) return EINVAL;

  int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return errno;
  if ((rcvbuf > 0 && ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf) != 0) ||
      (sndbuf > 0 && ::setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof sndbuf) != 0)) {
    int err = errno;
    ::close(fd);
    return err;
  }
  if (::bind(fd, reinterpret_cast<struct sockaddr*>(&local), sizeof local) != 0) {
    int err = errno;
    ::close(fd);
    return err;
  }
  socklen_t len = sizeof local;
  if (::getsockname(fd, reinterpret_cast<struct sockaddr*>(&local), &len) != 0) {
    int err = errno;
    ::close(fd);
    return err;
  }

  FreeTables();
  rx_msgs_ = new (std::nothrow) struct mmsghdr[slots];
  rx_iov_ = new (std::nothrow) struct iovec[slots];
  rx_addr_ = new (std::nothrow) struct sockaddr_in[slots];
  tx_msgs_ = new (std::nothrow) struct mmsghdr[tx_slots];
  tx_iov_ = new (std::nothrow) struct iovec[tx_slots];
  tx_addr_ = new (std::nothrow) struct sockaddr_in[tx_slots];
  if (!rx_msgs_ || !rx_iov_ || !rx_addr_ || !tx_msgs_ || !tx_iov_ || !tx_addr_) {
    FreeTables();
    ::close(fd);
    return ENOMEM;
  }
  std::memset(rx_msgs_, 0, sizeof(struct mmsghdr) * slots);
  std::memset(tx_msgs_, 0, sizeof(struct mmsghdr) * tx_slots);
  std::memset(tx_addr_, 0, sizeof(struct sockaddr_in) * tx_slots);
  for (uint32_t i = 0; i < slots; i++) {
    rx_iov_[i].iov_base = rx_data + static_cast<size_t>(i) * slot_bytes;
    rx_iov_[i].iov_len = slot_bytes;
    rx_msgs_[i].msg_hdr.msg_iov = &rx_iov_[i];
    rx_msgs_[i].msg_hdr.msg_iovlen = 1;
    rx_msgs_[i].msg_hdr.msg_name = &rx_addr_[i];
  }
  for (uint32_t i = 0; i < tx_slots; i++) {
    tx_addr_[i].sin_family = AF_INET;
    tx_msgs_[i].msg_hdr.msg_iov = &tx_iov_[i];
    tx_msgs_[i].msg_hdr.msg_iovlen = 1;
    tx_msgs_[i].msg_hdr.msg_name = &tx_addr_[i];
    tx_msgs_[i].msg_hdr.msg_namelen = sizeof(struct sockaddr_in);
  }
  fd_ = fd;
  local_port_ = ntohs(local.sin_port);
  rx_data_ = rx_data;
  rx_meta_ = rx_meta;
  slots_ = slots;
  slot_bytes_ = slot_bytes;
  tx_data_ = tx_data;
  tx_bytes_ = tx_bytes;
  tx_meta_ = tx_meta;
  tx_slots_ = tx_slots;
  return 0;
}

int UdpSocket::Receive() {
  if (fd_ < 0) return -EBADF;
  for (uint32_t i = 0; i < slots_; i++) {
    rx_msgs_[i].msg_hdr.msg_namelen = sizeof(struct sockaddr_in);
    rx_msgs_[i].msg_hdr.msg_flags = 0;
  }
  int n;
  do {
    n = ::recvmmsg(fd_, rx_msgs_, slots_, MSG_DONTWAIT, nullptr);
  } while (n < 0 && errno == EINTR);
  if (n < 0) return (errno == EAGAIN || errno == EWOULDBLOCK) ? 0 : -errno;
  for (int i = 0; i < n; i++) {
    uint32_t* meta = rx_meta_ + static_cast<size_t>(i) * kUdpMetaWords;
    const struct msghdr& h = rx_msgs_[i].msg_hdr;
    bool truncated = (h.msg_flags & MSG_TRUNC) != 0;
    meta[0] = truncated ? slot_bytes_ : rx_msgs_[i].msg_len;
    meta[1] = ntohl(rx_addr_[i].sin_addr.s_addr);
    meta[2] = ntohs(rx_addr_[i].sin_port);
    meta[3] = truncated ? kUdpFlagTruncated : 0;
    if (truncated) counters_.rx_truncated++;
  }
  counters_.rx_packets += n;
  counters_.rx_batches++;
  return n;
}

void UdpSocket::Store(uint32_t slot, const uint8_t* data, uint32_t length, uint32_t address, uint16_t port, bool truncated) {
  uint32_t* meta = rx_meta_ + static_cast<size_t>(slot) * kUdpMetaWords;
  if (length > slot_bytes_) {
    length = slot_bytes_;
    truncated = true;
  }
  std::memcpy(rx_data_ + static_cast<size_t>(slot) * slot_bytes_, data, length);
  meta[0] = length;
  meta[1] = address;
  meta[2] = port;
  meta[3] = truncated ? kUdpFlagTruncated : 0;
  if (truncated) counters_.rx_truncated++;
  counters_.rx_packets++;
  if (slot == 0) counters_.rx_batches++;
}

const char* UdpSocket::CheckTx(uint32_t count) const {
  if (count > tx_slots_) return "count exceeds the send table";
  for (uint32_t i = 0; i < count; i++) {
    const uint32_t* meta = tx_meta_ + static_cast<size_t>(i) * kUdpMetaWords;
    uint64_t end = static_cast<uint64_t>(meta[0]) + meta[1];
    if (end > tx_bytes_) return "send entry outside the send buffer";
    if (meta[1] > kUdpMaxPayload) return "send entry longer than a UDP datagram";
    if (meta[3] == 0 || meta[3] > 65535) return "send entry port must be 1..65535";
  }
  return nullptr;
}

int UdpSocket::Send(uint32_t count, uint32_t* failed_index) {
  if (fd_ < 0) {
    *failed_index = 0;
    return -EBADF;
  }
  for (uint32_t i = 0; i < count; i++) {
    const uint32_t* meta = tx_meta_ + static_cast<size_t>(i) * kUdpMetaWords;
    tx_iov_[i].iov_base = tx_data_ + meta[0];
    tx_iov_[i].iov_len = meta[1];
    tx_addr_[i].sin_addr.s_addr = htonl(meta[2]);
    tx_addr_[i].sin_port = htons(static_cast<uint16_t>(meta[3]));
  }
  uint32_t done = 0;
  while (done < count) {
    int n = ::sendmmsg(fd_, tx_msgs_ + done, count - done, 0);
    if (n > 0) {
      done += static_cast<uint32_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      counters_.tx_dropped += count - done;
      break;
    }
    // sendmmsg reports an error only for the first message of the call: that is packet `done`.
    int err = n < 0 ? errno : EIO;
    counters_.tx_packets += done;
    *failed_index = done;
    return -err;
  }
  counters_.tx_packets += done;
  return static_cast<int>(done);
}

void UdpSocket::Close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

}  // namespace parley
