#include "pathprof/stepping/helper_socket.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstring>

#include "pathprof/core/clock.h"

namespace pathprof::stepping {

namespace {

// Waits for `sock` to be readable until `deadline_ns` (0: forever).
bool WaitReadable(int sock, uint64_t deadline_ns) {
  for (;;) {
    int timeout = -1;
    if (deadline_ns != 0) {
      const uint64_t now = MonotonicNs();
      if (now >= deadline_ns) return false;
      timeout = static_cast<int>((deadline_ns - now) / 1'000'000 + 1);
    }
    pollfd p{sock, POLLIN, 0};
    const int rc = poll(&p, 1, timeout);
    if (rc > 0) return true;
    if (rc == 0) return false;
    if (errno != EINTR) return false;
  }
}

// Reads exactly `size` bytes; the first read may carry a descriptor.
ReceiveResult ReadFully(int sock, uint8_t* out, size_t size, uint64_t deadline_ns, int* fd) {
  size_t got = 0;
  while (got < size) {
    if (!WaitReadable(sock, deadline_ns))
      return got == 0 ? ReceiveResult::kTimeout : ReceiveResult::kBroken;
    iovec iov{out + got, size - got};
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))];
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    if (fd != nullptr) {
      msg.msg_control = control;
      msg.msg_controllen = sizeof control;
    }
    const ssize_t n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ReceiveResult::kBroken;
    if (n == 0) return got == 0 ? ReceiveResult::kEof : ReceiveResult::kBroken;
    if (fd != nullptr) {
      for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
        const size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (size_t i = 0; i < count; ++i) {
          int received = -1;
          std::memcpy(&received, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
          // One descriptor a message: any other is closed, never kept.
          if (*fd < 0)
            *fd = received;
          else
            close(received);
        }
      }
      if (msg.msg_flags & MSG_CTRUNC) return ReceiveResult::kBroken;
    }
    got += static_cast<size_t>(n);
  }
  return ReceiveResult::kMessage;
}

}  // namespace

bool SendMessage(int sock, uint32_t type, const void* payload, uint32_t size, int fd) {
  const MessageHeader h{type, size};
  iovec iov[2] = {{const_cast<MessageHeader*>(&h), sizeof h}, {const_cast<void*>(payload), size}};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msghdr msg{};
  msg.msg_iov = iov;
  msg.msg_iovlen = size == 0 ? 1 : 2;
  if (fd >= 0) {
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(c), &fd, sizeof fd);
  }
  size_t left = sizeof h + size;
  // A short write sends the rest without the descriptor (it went with the first bytes).
  while (left > 0) {
    const ssize_t n = sendmsg(sock, &msg, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    left -= static_cast<size_t>(n);
    msg.msg_control = nullptr;
    msg.msg_controllen = 0;
    size_t skip = static_cast<size_t>(n);
    while (skip > 0 && msg.msg_iovlen > 0) {
      iovec& first = msg.msg_iov[0];
      const size_t take = std::min(skip, first.iov_len);
      first.iov_base = static_cast<uint8_t*>(first.iov_base) + take;
      first.iov_len -= take;
      skip -= take;
      if (first.iov_len == 0) {
        ++msg.msg_iov;
        --msg.msg_iovlen;
      }
    }
  }
  return true;
}

void AppendMessage(uint32_t type, const void* payload, uint32_t size, std::vector<uint8_t>* out) {
  const MessageHeader h{type, size};
  const auto* hp = reinterpret_cast<const uint8_t*>(&h);
  out->insert(out->end(), hp, hp + sizeof h);
  if (size != 0) {
    const auto* p = static_cast<const uint8_t*>(payload);
    out->insert(out->end(), p, p + size);
  }
}

bool SendAll(int sock, std::span<const uint8_t> bytes) {
  size_t at = 0;
  while (at < bytes.size()) {
    const ssize_t n = send(sock, bytes.data() + at, bytes.size() - at, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    at += static_cast<size_t>(n);
  }
  return true;
}

ReceiveResult MessageReader::Next(int timeout_ms, MessageHeader* header,
                                  std::vector<uint8_t>* payload) {
  const uint64_t deadline =
      timeout_ms < 0 ? 0 : MonotonicNs() + static_cast<uint64_t>(timeout_ms) * 1'000'000;
  bool began = false;
  for (;;) {
    const size_t have = buf_.size() - at_;
    if (have >= sizeof(MessageHeader)) {
      std::memcpy(header, buf_.data() + at_, sizeof *header);
      if (header->size > max_payload_) return ReceiveResult::kBroken;
      if (have >= sizeof(MessageHeader) + header->size) {
        const uint8_t* p = buf_.data() + at_ + sizeof(MessageHeader);
        payload->assign(p, p + header->size);
        at_ += sizeof(MessageHeader) + header->size;
        return ReceiveResult::kMessage;
      }
    }
    began = began || have > 0;
    // Keep what is unread at the front, then read as much as has arrived (64 KiB at least).
    buf_.erase(buf_.begin(), buf_.begin() + static_cast<std::ptrdiff_t>(at_));
    at_ = 0;
    if (!WaitReadable(sock_, deadline))
      return began ? ReceiveResult::kBroken : ReceiveResult::kTimeout;
    const size_t old = buf_.size();
    buf_.resize(old + (256u << 10));
    const ssize_t n = recv(sock_, buf_.data() + old, buf_.size() - old, 0);
    buf_.resize(old + static_cast<size_t>(std::max<ssize_t>(n, 0)));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ReceiveResult::kBroken;
    if (n == 0) return began ? ReceiveResult::kBroken : ReceiveResult::kEof;
  }
}

ReceiveResult ReceiveMessage(int sock, int timeout_ms, uint32_t max_payload, MessageHeader* header,
                             std::vector<uint8_t>* payload, int* fd) {
  *fd = -1;
  const uint64_t deadline =
      timeout_ms < 0 ? 0 : MonotonicNs() + static_cast<uint64_t>(timeout_ms) * 1'000'000;
  ReceiveResult r =
      ReadFully(sock, reinterpret_cast<uint8_t*>(header), sizeof *header, deadline, fd);
  if (r != ReceiveResult::kMessage) return r;
  if (header->size > max_payload) return ReceiveResult::kBroken;
  payload->resize(header->size);
  if (header->size == 0) return r;
  // The rest gets as long again: a message that began arrives whole or the peer is broken.
  const uint64_t rest =
      timeout_ms < 0 ? 0 : MonotonicNs() + static_cast<uint64_t>(timeout_ms) * 1'000'000;
  r = ReadFully(sock, payload->data(), payload->size(), rest, nullptr);
  return r == ReceiveResult::kMessage ? r : ReceiveResult::kBroken;
}

}  // namespace pathprof::stepping
