#include "burst_wire.h"

#include "thread_stack_reader.h"

#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <iterator>

namespace pathprof::stepping::wire {
namespace {

// Waits until fd is readable or the timeout passes; true when readable (or at EOF).
bool Readable(int fd, int timeout_ms) {
  pollfd p{fd, POLLIN, 0};
  for (;;) {
    const int n = poll(&p, 1, timeout_ms);
    if (n < 0 && errno == EINTR) continue;
    return n > 0;
  }
}

// Reads exactly size bytes, each wait bounded by timeout_ms. 1: done, 0: EOF at the first
// byte, -1: EOF mid-way, timeout or error.
int ReadAll(int fd, void* data, size_t size, int timeout_ms) {
  auto* p = static_cast<uint8_t*>(data);
  size_t done = 0;
  while (done < size) {
    if (!Readable(fd, timeout_ms)) return -1;
    const ssize_t n = read(fd, p + done, size - done);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n == 0) return done == 0 ? 0 : -1;
    if (n < 0) return -1;
    done += static_cast<size_t>(n);
  }
  return 1;
}

}  // namespace

Hello OurHello() {
  return Hello{kVersion, sizeof(PtraceBurstStats), sizeof(BranchEvent), 0};
}

SendResult Send(int fd, Type type, const void* payload, uint32_t size) {
  std::vector<uint8_t> buf(sizeof(Header) + size);
  const Header h{type, size};
  std::memcpy(buf.data(), &h, sizeof h);
  if (size) std::memcpy(buf.data() + sizeof h, payload, size);
  return SendBytes(fd, buf.data(), buf.size());
}

namespace {

// Whether `fd` became writable within timeout_ms, through any signals that interrupt the wait.
bool AwaitWritable(int fd, int timeout_ms) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() < 0) return false;
    pollfd p{fd, POLLOUT, 0};
    const int n = poll(&p, 1, static_cast<int>(left.count()));
    if (n > 0) return true;
    if (n == 0 || errno != EINTR) return false;
  }
}

}  // namespace

SendResult SendBytes(int fd, const uint8_t* data, size_t size) {
  // Messages are written whole or not at all: the pipe is large (F_SETPIPE_SZ) and a batch is
  // small against it, so a write that would not fit is refused up front by the kernel only when
  // the pipe is full; a partial write (rare) is finished with short waits.
  size_t done = 0;
  while (done < size) {
    const ssize_t n = write(fd, data + done, size - done);
    if (n > 0) {
      done += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) {
      if (done == 0) return SendResult::kFull;
      // The rest within a second, or the stream is cut mid-message. A signal (the tracer's
      // ticker interrupts its waits) is no reason to give up: taken as one, it ended a tracer
      // whose collector was only slow to read, mid-session, on a loaded host.
      if (!AwaitWritable(fd, 1000)) return SendResult::kBroken;
      continue;
    }
    return SendResult::kBroken;
  }
  return SendResult::kSent;
}

void AppendWindow(const BranchBatch& batch, std::vector<uint8_t>* out) {
  const ThreadStack& st = batch.stack;
  const bool has_regs = st.regs.size() == std::size(StackHeader{}.regs);
  const size_t stack_bytes = has_regs ? std::min(st.stack.size(), kMaxThreadStackBytes) : 0;
  const WindowHeader wh{batch.pid, batch.tid, batch.time_ns,
                        static_cast<uint32_t>(batch.events.size()),
                        static_cast<uint32_t>(stack_bytes)};
  StackHeader sh{};
  sh.stack_start = st.stack_start;
  sh.error = st.error;
  if (has_regs) {
    std::copy(st.regs.begin(), st.regs.end(), sh.regs);
    sh.reg_count = static_cast<uint32_t>(st.regs.size());
  }
  const size_t events = batch.events.size() * sizeof(BranchEvent);
  const Header h{Type::kWindow,
                 static_cast<uint32_t>(sizeof wh + sizeof sh + events + stack_bytes)};
  size_t at = out->size();
  out->resize(at + sizeof h + h.size);
  auto put = [&](const void* data, size_t size) {
    if (size) std::memcpy(out->data() + at, data, size);
    at += size;
  };
  put(&h, sizeof h);
  put(&wh, sizeof wh);
  put(&sh, sizeof sh);
  put(batch.events.data(), events);
  put(st.stack.data(), stack_bytes);
}

SendResult SendWindow(int fd, const BranchBatch& batch) {
  std::vector<uint8_t> buf;
  AppendWindow(batch, &buf);
  return SendBytes(fd, buf.data(), buf.size());
}

SendResult SendError(int fd, ErrorCode code, int sys_errno, const std::string& message) {
  std::vector<uint8_t> buf(sizeof(ErrorHeader) + message.size());
  const ErrorHeader eh{static_cast<int32_t>(code), sys_errno};
  std::memcpy(buf.data(), &eh, sizeof eh);
  std::memcpy(buf.data() + sizeof eh, message.data(), message.size());
  return Send(fd, Type::kError, buf.data(), static_cast<uint32_t>(buf.size()));
}

ReceiveResult Receive(int fd, int timeout_ms, Header* header, std::vector<uint8_t>* payload) {
  if (!Readable(fd, timeout_ms)) return ReceiveResult::kTimeout;
  const int got = ReadAll(fd, header, sizeof *header, timeout_ms);
  if (got == 0) return ReceiveResult::kEof;
  if (got < 0 || header->size > kMaxPayload) return ReceiveResult::kBroken;
  payload->resize(header->size);
  if (header->size != 0 && ReadAll(fd, payload->data(), header->size, timeout_ms) != 1)
    return ReceiveResult::kBroken;
  return ReceiveResult::kMessage;
}

BranchBatch DecodeWindow(const std::vector<uint8_t>& payload) {
  BranchBatch b;
  WindowHeader wh{};
  StackHeader sh{};
  if (payload.size() < sizeof wh) return b;
  std::memcpy(&wh, payload.data(), sizeof wh);
  b.pid = wh.pid;
  b.tid = wh.tid;
  b.time_ns = wh.time_ns;
  b.gap_before = true;
  b.window = true;
  size_t at = sizeof wh;
  if (payload.size() < at + sizeof sh) {
    b.stack.error = EBADMSG;
    return b;
  }
  std::memcpy(&sh, payload.data() + at, sizeof sh);
  at += sizeof sh;
  const size_t n = std::min<size_t>(wh.count, (payload.size() - at) / sizeof(BranchEvent));
  b.events.resize(n);
  if (n) std::memcpy(b.events.data(), payload.data() + at, n * sizeof(BranchEvent));
  at += n * sizeof(BranchEvent);
  const bool sizes_add_up = n == wh.count && payload.size() - at == wh.stack_bytes &&
                            wh.stack_bytes <= kMaxThreadStackBytes;
  // No registers (none read, or the read failed) comes with no stack bytes.
  const bool regs_ok =
      sh.reg_count == std::size(sh.regs) || (sh.reg_count == 0 && wh.stack_bytes == 0);
  if (!sizes_add_up || !regs_ok) {
    b.stack.error = EBADMSG;
    return b;
  }
  b.stack.error = sh.error;
  if (sh.reg_count == 0) return b;
  b.stack.regs.assign(std::begin(sh.regs), std::end(sh.regs));
  b.stack.stack_start = sh.stack_start;
  b.stack.stack.assign(payload.begin() + static_cast<long>(at), payload.end());
  return b;
}

}  // namespace pathprof::stepping::wire
