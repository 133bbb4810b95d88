#include "emulator_wire.h"

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstring>
#include <span>
#include <type_traits>

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
  return stepping::SendMessage(sock, static_cast<uint32_t>(type), payload, size, fd);
}

bool Send(int sock, Type type, const std::vector<uint8_t>& payload, int fd) {
  return Send(sock, type, payload.data(), static_cast<uint32_t>(payload.size()), fd);
}

void Append(Type type, const void* payload, uint32_t size, std::vector<uint8_t>* out) {
  stepping::AppendMessage(static_cast<uint32_t>(type), payload, size, out);
}

bool SendBytes(int sock, const std::vector<uint8_t>& bytes) {
  return stepping::SendAll(sock, bytes);
}

ReceiveResult Receive(int sock, int timeout_ms, Header* header, std::vector<uint8_t>* payload,
                      int* fd) {
  stepping::MessageHeader h{};
  const ReceiveResult r = stepping::ReceiveMessage(sock, timeout_ms, kMaxPayload, &h, payload, fd);
  *header = Header{static_cast<Type>(h.type), h.size};
  return r;
}

ReceiveResult MessageReader::Next(int timeout_ms, Header* header, std::vector<uint8_t>* payload) {
  stepping::MessageHeader h{};
  const ReceiveResult r = reader_.Next(timeout_ms, &h, payload);
  *header = Header{static_cast<Type>(h.type), h.size};
  return r;
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
