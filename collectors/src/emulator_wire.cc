#include "emulator_wire.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstring>
#include <span>
#include <type_traits>

#include "pathprof/core/clock.h"

namespace pathprof::collectors::emulator_wire {

namespace {

class Writer {
 public:
  Writer() : out_(own_) {}
  // Writes into `out` (cleared first; its capacity is kept).
  explicit Writer(std::vector<uint8_t>* out) : out_(*out) { out_.clear(); }
  template <typename T>
  void Put(const T& v) {
    static_assert(std::is_trivially_copyable_v<T>);
    const auto* p = reinterpret_cast<const uint8_t*>(&v);
    out_.insert(out_.end(), p, p + sizeof v);
  }
  template <typename T>
  void PutVector(const std::vector<T>& v) {
    static_assert(std::is_trivially_copyable_v<T>);
    Put(static_cast<uint32_t>(v.size()));
    if (v.empty()) return;
    const auto* p = reinterpret_cast<const uint8_t*>(v.data());
    out_.insert(out_.end(), p, p + v.size() * sizeof(T));
  }
  std::vector<uint8_t> Take() { return std::move(own_); }
  size_t size() const { return out_.size(); }
  void PatchU32(size_t at, uint32_t v) { std::memcpy(out_.data() + at, &v, sizeof v); }

 private:
  std::vector<uint8_t> own_;
  std::vector<uint8_t>& out_;
};

class Reader {
 public:
  explicit Reader(std::span<const uint8_t> in) : in_(in) {}
  template <typename T>
  bool Get(T* v) {
    static_assert(std::is_trivially_copyable_v<T>);
    if (in_.size() - at_ < sizeof(T)) return false;
    std::memcpy(v, in_.data() + at_, sizeof(T));
    at_ += sizeof(T);
    return true;
  }
  template <typename T>
  bool GetVector(std::vector<T>* v) {
    uint32_t n = 0;
    if (!Get(&n) || (in_.size() - at_) / sizeof(T) < n) return false;
    v->resize(n);
    if (n != 0) std::memcpy(v->data(), in_.data() + at_, size_t{n} * sizeof(T));
    at_ += size_t{n} * sizeof(T);
    return true;
  }
  // The next `n` bytes, which the reader then steps over (empty and false when fewer are left).
  bool Take(size_t n, std::span<const uint8_t>* out) {
    if (in_.size() - at_ < n) return false;
    *out = in_.subspan(at_, n);
    at_ += n;
    return true;
  }
  bool Done() const { return at_ == in_.size(); }

 private:
  std::span<const uint8_t> in_;
  size_t at_ = 0;
};

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

Settings SettingsFor(const EmulationSettings& s) {
  Settings out;
  out.window_taken = s.window_taken;
  out.hint_pages = s.hint_pages;
  out.learn_hints = s.learn_hints;
  out.max_processes = s.max_processes;
  out.max_stable_pages = s.max_stable_pages;
  out.max_decoded = s.max_decoded;
  return out;
}

EmulationSettings FromSettings(const Settings& s) {
  EmulationSettings out;
  out.window_taken = s.window_taken;
  out.hint_pages = s.hint_pages;
  out.learn_hints = s.learn_hints != 0;
  out.max_processes = s.max_processes;
  out.max_stable_pages = s.max_stable_pages;
  out.max_decoded = s.max_decoded;
  return out;
}

bool Send(int sock, Type type, const void* payload, uint32_t size, int fd) {
  const Header h{type, size};
  iovec iov[2] = {{const_cast<Header*>(&h), sizeof h}, {const_cast<void*>(payload), size}};
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

void Append(Type type, const void* payload, uint32_t size, std::vector<uint8_t>* out) {
  const Header h{type, size};
  const auto* hp = reinterpret_cast<const uint8_t*>(&h);
  out->insert(out->end(), hp, hp + sizeof h);
  if (size != 0) {
    const auto* p = static_cast<const uint8_t*>(payload);
    out->insert(out->end(), p, p + size);
  }
}

bool SendBytes(int sock, const std::vector<uint8_t>& bytes) {
  size_t at = 0;
  while (at < bytes.size()) {
    const ssize_t n = send(sock, bytes.data() + at, bytes.size() - at, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    at += static_cast<size_t>(n);
  }
  return true;
}

ReceiveResult MessageReader::Next(int timeout_ms, Header* header, std::vector<uint8_t>* payload) {
  const uint64_t deadline =
      timeout_ms < 0 ? 0 : MonotonicNs() + static_cast<uint64_t>(timeout_ms) * 1'000'000;
  bool began = false;
  for (;;) {
    const size_t have = buf_.size() - at_;
    if (have >= sizeof(Header)) {
      std::memcpy(header, buf_.data() + at_, sizeof *header);
      if (header->size > kMaxPayload) return ReceiveResult::kBroken;
      if (have >= sizeof(Header) + header->size) {
        const uint8_t* p = buf_.data() + at_ + sizeof(Header);
        payload->assign(p, p + header->size);
        at_ += sizeof(Header) + header->size;
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

bool Send(int sock, Type type, const std::vector<uint8_t>& payload, int fd) {
  return Send(sock, type, payload.data(), static_cast<uint32_t>(payload.size()), fd);
}

ReceiveResult Receive(int sock, int timeout_ms, Header* header, std::vector<uint8_t>* payload,
                      int* fd) {
  *fd = -1;
  const uint64_t deadline =
      timeout_ms < 0 ? 0 : MonotonicNs() + static_cast<uint64_t>(timeout_ms) * 1'000'000;
  ReceiveResult r =
      ReadFully(sock, reinterpret_cast<uint8_t*>(header), sizeof *header, deadline, fd);
  if (r != ReceiveResult::kMessage) return r;
  if (header->size > kMaxPayload) return ReceiveResult::kBroken;
  payload->resize(header->size);
  if (header->size == 0) return r;
  // The rest gets as long again: a message that began arrives whole or the peer is broken.
  const uint64_t rest =
      timeout_ms < 0 ? 0 : MonotonicNs() + static_cast<uint64_t>(timeout_ms) * 1'000'000;
  r = ReadFully(sock, payload->data(), payload->size(), rest, nullptr);
  return r == ReceiveResult::kMessage ? r : ReceiveResult::kBroken;
}

namespace {

void EncodeSampleInto(const RawStackSample& s, Writer& w) {
  w.Put(s.pid);
  w.Put(s.tid);
  w.Put(s.time_ns);
  w.Put(s.exec_id);
  w.PutVector(s.regs);
  // Not the sample's stack copy (for unwinding, the collector's): the emulation reads the
  // snapshot's.
  const bool has = s.snapshot != nullptr;
  w.Put(static_cast<uint8_t>(has));
  if (has) {
    const RawSnapshot& n = *s.snapshot;
    w.Put(n.rflags);
    w.Put(n.fs_base);
    w.Put(n.gs_base);
    w.Put(n.orig_rax);
    w.Put(static_cast<uint8_t>(n.in_kernel | (n.has_mapping_sequence << 1) |
                               (n.mappings_changing << 2)));
    w.Put(n.mapping_sequence);
    w.Put(n.threads);
    w.Put(n.stack_base);
    w.PutVector(n.stack);
    w.PutVector(n.pieces);
    w.PutVector(n.bytes);
    w.PutVector(n.unreadable);
  }
}

}  // namespace

std::vector<uint8_t> EncodeSample(const RawStackSample& s) {
  Writer w;
  EncodeSampleInto(s, w);
  return w.Take();
}

namespace {

bool DecodeSampleFrom(std::span<const uint8_t> bytes, RawStackSample* s) {
  Reader r(bytes);
  uint8_t has = 0;
  if (!r.Get(&s->pid) || !r.Get(&s->tid) || !r.Get(&s->time_ns) || !r.Get(&s->exec_id) ||
      !r.GetVector(&s->regs) || !r.Get(&has))
    return false;
  if (has) {
    auto n = std::make_shared<RawSnapshot>();
    uint8_t flags = 0;
    if (!r.Get(&n->rflags) || !r.Get(&n->fs_base) || !r.Get(&n->gs_base) || !r.Get(&n->orig_rax) ||
        !r.Get(&flags) || !r.Get(&n->mapping_sequence) || !r.Get(&n->threads) ||
        !r.Get(&n->stack_base) || !r.GetVector(&n->stack) || !r.GetVector(&n->pieces) ||
        !r.GetVector(&n->bytes) || !r.GetVector(&n->unreadable))
      return false;
    n->in_kernel = flags & 1;
    n->has_mapping_sequence = flags & 2;
    n->mappings_changing = flags & 4;
    s->snapshot = std::move(n);
  }
  return r.Done();
}

}  // namespace

bool DecodeSample(const std::vector<uint8_t>& bytes, RawStackSample* s) {
  return DecodeSampleFrom(bytes, s);
}

void EncodeSamples(const std::vector<const RawStackSample*>& samples, std::vector<uint8_t>* out) {
  Writer w(out);
  w.Put(static_cast<uint32_t>(samples.size()));
  for (const RawStackSample* s : samples) {
    const size_t at = w.size();
    w.Put(uint32_t{0});
    EncodeSampleInto(*s, w);
    w.PatchU32(at, static_cast<uint32_t>(w.size() - at - sizeof(uint32_t)));
  }
}

bool DecodeSamples(const std::vector<uint8_t>& bytes, std::vector<RawStackSample>* samples) {
  Reader r(bytes);
  uint32_t count = 0;
  if (!r.Get(&count) || count > kMaxBatch) return false;
  samples->clear();
  for (uint32_t i = 0; i < count; ++i) {
    uint32_t n = 0;
    std::span<const uint8_t> one;
    if (!r.Get(&n) || !r.Take(n, &one)) return false;
    samples->emplace_back();
    if (!DecodeSampleFrom(one, &samples->back())) return false;
  }
  return r.Done();
}

std::vector<uint8_t> EncodeOutcome(const SampleOutcome& o) {
  OutcomeHeader h{};
  h.kind = static_cast<uint8_t>(o.kind);
  h.end = static_cast<uint8_t>(o.end);
  h.flags = (o.exec ? kExec : 0) | (o.evicted ? kEvicted : 0) | (o.in_syscall ? kInSyscall : 0);
  h.taken = o.taken;
  h.emulate_ns = o.emulate_ns;
  h.image = o.image;
  h.events = static_cast<uint32_t>(o.events.size());
  h.evicted_pid = o.evicted_pid;
  std::vector<uint8_t> out(sizeof h + o.events.size() * sizeof(BranchEvent));
  std::memcpy(out.data(), &h, sizeof h);
  if (!o.events.empty())
    std::memcpy(out.data() + sizeof h, o.events.data(), o.events.size() * sizeof(BranchEvent));
  return out;
}

bool DecodeOutcome(const std::vector<uint8_t>& bytes, uint32_t max_events, SampleOutcome* o) {
  OutcomeHeader h{};
  if (bytes.size() < sizeof h) return false;
  std::memcpy(&h, bytes.data(), sizeof h);
  if (h.kind > static_cast<uint8_t>(SampleOutcome::Kind::kInMappingSyscall) ||
      h.end >= emulator::kEmulationEndCount || h.events > max_events ||
      bytes.size() != sizeof h + size_t{h.events} * sizeof(BranchEvent))
    return false;
  o->kind = static_cast<SampleOutcome::Kind>(h.kind);
  o->end = static_cast<emulator::EmulationEnd>(h.end);
  o->exec = h.flags & kExec;
  o->evicted = h.flags & kEvicted;
  o->in_syscall = h.flags & kInSyscall;
  o->evicted_pid = h.evicted_pid;
  o->taken = h.taken;
  o->emulate_ns = h.emulate_ns;
  o->image = h.image;
  o->events.resize(h.events);
  for (uint32_t i = 0; i < h.events; ++i) {
    // Each byte that holds an enum or a bool is made one of its values before it becomes one:
    // a BranchKind past its table would index tables downstream, a bool of 2 is undefined.
    uint8_t raw[sizeof(BranchEvent)];
    std::memcpy(raw, bytes.data() + sizeof h + size_t{i} * sizeof raw, sizeof raw);
    uint8_t& kind = raw[offsetof(BranchEvent, kind)];
    if (kind >= kBranchKindCount) kind = static_cast<uint8_t>(BranchKind::kUnknown);
    for (size_t at : {offsetof(BranchEvent, taken), offsetof(BranchEvent, mispredicted)})
      raw[at] = raw[at] != 0;
    std::memcpy(static_cast<void*>(&o->events[i]), raw, sizeof raw);
  }
  return true;
}

std::vector<uint8_t> EncodeHints(uint32_t pid, const std::vector<uint64_t>& pages) {
  Writer w;
  w.Put(pid);
  w.PutVector(pages);
  return w.Take();
}

bool DecodeHints(const std::vector<uint8_t>& bytes, uint32_t max_pages, uint32_t* pid,
                 std::vector<uint64_t>* pages) {
  Reader r(bytes);
  return r.Get(pid) && r.GetVector(pages) && r.Done() && pages->size() <= max_pages;
}

}  // namespace pathprof::collectors::emulator_wire
