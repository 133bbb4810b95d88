#include "import_wire.h"

#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "import_wire.pb.h"

namespace pathprof::pipeline::import_wire {
namespace {

namespace pb = pathprof::pipeline::import_wire::pb;

constexpr uint8_t kTaken = 1, kMispredicted = 2;

Status Corrupt(const std::string& what) {
  return Error(ErrorCode::kCorrupt, "the import helper sent " + what);
}

void PutCounts(const std::map<std::string, uint64_t>& from,
               google::protobuf::RepeatedPtrField<pb::Count>* to) {
  for (const auto& [name, n] : from) {
    pb::Count* c = to->Add();
    c->set_name(name);
    c->set_count(n);
  }
}

Status GetCounts(const google::protobuf::RepeatedPtrField<pb::Count>& from, size_t* budget,
                 std::map<std::string, uint64_t>* to) {
  for (const pb::Count& c : from) {
    if (*budget == 0)
      return Corrupt("a summary with more than " + std::to_string(kMaxNamedCounts) +
                     " counts and warnings");
    --*budget;
    if (c.name().empty() || c.name().size() > kMaxText) return Corrupt("a count without a name");
    (*to)[c.name()] += c.count();
  }
  return Status::Ok();
}

// Writes `size` bytes whole. False when the reader is gone.
bool WriteAll(int fd, const void* data, size_t size) {
  const auto* at = static_cast<const char*>(data);
  while (size > 0) {
    const ssize_t n = ::write(fd, at, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    at += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

std::string Text(const std::string& s) {
  return s.size() > kMaxText ? s.substr(0, kMaxText) : s;
}

void PutBatch(const BranchBatch& b, size_t first, size_t count, pb::Batch* out) {
  out->set_pid(b.pid);
  out->set_tid(b.tid);
  out->set_time_ns(b.time_ns);
  out->set_gap_before(first == 0 && b.gap_before);
  out->set_window(b.window);
  const int n = static_cast<int>(count);
  out->mutable_from()->Reserve(n);
  out->mutable_to()->Reserve(n);
  out->mutable_cycles()->Reserve(n);
  out->mutable_instructions()->Reserve(n);
  std::string kinds(count, '\0'), flags(count, '\0');
  for (size_t i = 0; i < count; ++i) {
    const BranchEvent& e = b.events[first + i];
    out->add_from(e.from);
    out->add_to(e.to);
    out->add_cycles(e.cycles);
    out->add_instructions(e.instructions);
    kinds[i] = static_cast<char>(e.kind);
    flags[i] = static_cast<char>((e.taken ? kTaken : 0) | (e.mispredicted ? kMispredicted : 0));
  }
  out->set_kinds(std::move(kinds));
  out->set_flags(std::move(flags));
}

Result<Frame> ParseBegin(const pb::Begin& in) {
  BeginFrame out;
  if (in.windows() > static_cast<uint32_t>(BranchWindows::kTimeRagged))
    return Corrupt("an unknown kind of windows (" + std::to_string(in.windows()) + ")");
  out.windows = static_cast<BranchWindows>(in.windows());
  if (static_cast<size_t>(in.processes_size()) > kMaxProcesses)
    return Corrupt("more than " + std::to_string(kMaxProcesses) + " processes");
  size_t mappings = 0;
  for (const pb::Process& p : in.processes()) {
    if (out.processes.contains(p.pid()))
      return Corrupt("process " + std::to_string(p.pid()) + " twice");
    RecordedProcess& rp = out.processes[p.pid()];
    if (p.comm().size() > kMaxText)
      return Corrupt("a process name over " + std::to_string(kMaxText) + " bytes");
    rp.comm = p.comm();
    mappings += static_cast<size_t>(p.mappings_size());
    if (mappings > kMaxMappings)
      return Corrupt("more than " + std::to_string(kMaxMappings) + " mappings");
    for (const pb::Mapping& m : p.mappings()) {
      if (m.start() + m.len() < m.start())
        return Corrupt("a mapping of process " + std::to_string(p.pid()) + " that wraps around");
      if (m.path().size() > kMaxText || m.build_id().size() > kMaxText)
        return Corrupt("a mapping's path or build-id over " + std::to_string(kMaxText) + " bytes");
      decoders::Mapping d;
      d.start = m.start();
      d.len = m.len();
      d.pgoff = m.pgoff();
      d.executable = m.executable();
      d.path = m.path();
      d.build_id = m.build_id();
      rp.mappings.push_back(std::move(d));
    }
  }
  return Frame(std::move(out));
}

Result<Frame> ParseBatch(const pb::Batch& in) {
  const size_t n = static_cast<size_t>(in.from_size());
  if (n > kMaxBatchEvents)
    return Corrupt("a batch of more than " + std::to_string(kMaxBatchEvents) + " events");
  if (static_cast<size_t>(in.to_size()) != n || static_cast<size_t>(in.cycles_size()) != n ||
      static_cast<size_t>(in.instructions_size()) != n || in.kinds().size() != n ||
      in.flags().size() != n)
    return Corrupt("a batch whose event columns differ in length");
  BranchBatch b;
  b.pid = in.pid();
  b.tid = in.tid();
  b.time_ns = in.time_ns();
  b.gap_before = in.gap_before();
  b.window = in.window();
  b.events.resize(n);
  for (size_t i = 0; i < n; ++i) {
    const auto kind = static_cast<uint8_t>(in.kinds()[i]);
    const auto flags = static_cast<uint8_t>(in.flags()[i]);
    if (kind >= kBranchKindCount)
      return Corrupt("an unknown branch kind (" + std::to_string(kind) + ")");
    if ((flags & ~(kTaken | kMispredicted)) != 0) return Corrupt("unknown event flags");
    if (in.instructions(static_cast<int>(i)) > UINT16_MAX)
      return Corrupt("an event of more than 65535 instructions");
    BranchEvent& e = b.events[i];
    e.from = in.from(static_cast<int>(i));
    e.to = in.to(static_cast<int>(i));
    e.cycles = in.cycles(static_cast<int>(i));
    e.instructions = static_cast<uint16_t>(in.instructions(static_cast<int>(i)));
    e.kind = static_cast<BranchKind>(kind);
    e.taken = (flags & kTaken) != 0;
    e.mispredicted = (flags & kMispredicted) != 0;
  }
  return Frame(std::move(b));
}

Result<Frame> ParseSummary(const pb::Summary& in) {
  DecodeSummary d;
  if (in.format().size() > kMaxText)
    return Corrupt("a format name over " + std::to_string(kMaxText) + " bytes");
  d.format = in.format();
  d.records = in.records();
  d.samples = in.samples();
  size_t budget = kMaxNamedCounts;
  PATHPROF_RETURN_IF_ERROR(GetCounts(in.broken_windows(), &budget, &d.broken_windows));
  PATHPROF_RETURN_IF_ERROR(GetCounts(in.dropped_entries(), &budget, &d.dropped_entries));
  PATHPROF_RETURN_IF_ERROR(GetCounts(in.decode_errors(), &budget, &d.decode_errors));
  PATHPROF_RETURN_IF_ERROR(GetCounts(in.counters(), &budget, &d.counters));
  for (const std::string& w : in.warnings()) {
    if (budget == 0) return Corrupt("a summary with too many warnings");
    --budget;
    d.warnings.push_back(Text(w));
  }
  Frame frame(std::in_place_type<DecodeSummary>, std::move(d));
  return frame;
}

Result<Frame> ParseFailure(const pb::Failure& in) {
  const uint32_t code = in.code();
  if (code == 0 || code > static_cast<uint32_t>(ErrorCode::kIo))
    return Corrupt("a failure with an unknown code (" + std::to_string(code) + ")");
  // Built in place (here and in ParseSummary): GCC 12 at -O2 takes a Status or a summary moved
  // into a temporary variant for uninitialized (-Wmaybe-uninitialized).
  Frame frame(std::in_place_type<Status>, static_cast<ErrorCode>(code), Text(in.message()));
  return frame;
}

}  // namespace

std::string Serialize(const Frame& frame) {
  pb::Frame out;
  if (const auto* b = std::get_if<BeginFrame>(&frame)) {
    pb::Begin* begin = out.mutable_begin();
    begin->set_windows(static_cast<uint32_t>(b->windows));
    for (const auto& [pid, p] : b->processes) {
      pb::Process* proc = begin->add_processes();
      proc->set_pid(pid);
      proc->set_comm(p.comm);
      for (const decoders::Mapping& m : p.mappings) {
        pb::Mapping* map = proc->add_mappings();
        map->set_start(m.start);
        map->set_len(m.len);
        map->set_pgoff(m.pgoff);
        map->set_executable(m.executable);
        map->set_path(m.path);
        map->set_build_id(m.build_id);
      }
    }
  } else if (const auto* batch = std::get_if<BranchBatch>(&frame)) {
    PutBatch(*batch, 0, batch->events.size(), out.mutable_batch());
  } else if (const auto* d = std::get_if<DecodeSummary>(&frame)) {
    pb::Summary* s = out.mutable_summary();
    s->set_format(d->format);
    s->set_records(d->records);
    s->set_samples(d->samples);
    PutCounts(d->broken_windows, s->mutable_broken_windows());
    PutCounts(d->dropped_entries, s->mutable_dropped_entries());
    PutCounts(d->decode_errors, s->mutable_decode_errors());
    PutCounts(d->counters, s->mutable_counters());
    for (const std::string& w : d->warnings) s->add_warnings(Text(w));
  } else {
    const Status& st = std::get<Status>(frame);
    out.mutable_failure()->set_code(static_cast<uint32_t>(st.code()));
    out.mutable_failure()->set_message(Text(st.message()));
  }
  return out.SerializeAsString();
}

Result<Frame> Parse(std::span<const uint8_t> bytes) {
  pb::Frame in;
  if (bytes.size() > kMaxFrameBytes ||
      !in.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))
    return Corrupt("a frame that is not a Frame message (" + std::to_string(bytes.size()) +
                   " bytes)");
  switch (in.body_case()) {
    case pb::Frame::kBegin:
      return ParseBegin(in.begin());
    case pb::Frame::kBatch:
      return ParseBatch(in.batch());
    case pb::Frame::kSummary:
      return ParseSummary(in.summary());
    case pb::Frame::kFailure:
      return ParseFailure(in.failure());
    case pb::Frame::BODY_NOT_SET:
      break;
  }
  return Corrupt("an empty frame");
}

bool Writer::Write(const Frame& frame) {
  if (const auto* b = std::get_if<BranchBatch>(&frame)) return WriteBatch(*b);
  return WriteBytes(Serialize(frame));
}

bool Writer::WriteBatch(const BranchBatch& batch) {
  size_t first = 0;
  do {
    const size_t count = std::min(kMaxBatchEvents, batch.events.size() - first);
    pb::Frame out;
    PutBatch(batch, first, count, out.mutable_batch());
    if (!WriteBytes(out.SerializeAsString())) return false;
    first += count;
  } while (first < batch.events.size());
  return true;
}

bool Writer::WriteBytes(const std::string& payload) {
  too_large_ = payload.size() > kMaxFrameBytes;
  if (too_large_) return false;
  const auto size = static_cast<uint32_t>(payload.size());
  const uint8_t head[4] = {static_cast<uint8_t>(size), static_cast<uint8_t>(size >> 8),
                           static_cast<uint8_t>(size >> 16), static_cast<uint8_t>(size >> 24)};
  // Two writes, not one of a copy: a frame is up to 64 MiB.
  return WriteAll(fd_, head, sizeof head) && WriteAll(fd_, payload.data(), payload.size());
}

Result<bool> Reader::ReadExact(void* dst, size_t n, int silence_ms, bool eof_ok) {
  auto* out = static_cast<uint8_t*>(dst);
  size_t at = 0;
  while (at < n) {
    pollfd p{fd_, POLLIN, 0};
    const int ready = poll(&p, 1, silence_ms);
    if (ready < 0 && errno == EINTR) continue;
    if (ready == 0)
      return Error(ErrorCode::kUnavailable, "the import helper sent nothing for " +
                                                std::to_string(silence_ms) +
                                                " ms; it was taken for hung and stopped");
    const ssize_t r = ::read(fd_, out + at, n - at);
    if (r < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (r < 0)
      return Error(ErrorCode::kIo, std::string("import helper pipe: ") + std::strerror(errno));
    if (r == 0) {
      if (at == 0 && eof_ok) return false;
      return Error(ErrorCode::kTruncated, "the import helper ended inside a frame");
    }
    at += static_cast<size_t>(r);
  }
  return true;
}

Result<bool> Reader::Next(int silence_ms, Frame* out) {
  uint8_t head[4];
  PATHPROF_ASSIGN_OR_RETURN(const bool more, ReadExact(head, sizeof head, silence_ms, true));
  if (!more) return false;
  const uint32_t size =
      head[0] | (uint32_t{head[1]} << 8) | (uint32_t{head[2]} << 16) | (uint32_t{head[3]} << 24);
  if (size > kMaxFrameBytes)
    return Corrupt("a frame of " + std::to_string(size) + " bytes (at most " +
                   std::to_string(kMaxFrameBytes) + ")");
  payload_.resize(size);
  PATHPROF_ASSIGN_OR_RETURN(const bool whole, ReadExact(payload_.data(), size, silence_ms, false));
  (void)whole;
  PATHPROF_ASSIGN_OR_RETURN(*out, Parse(payload_));
  return true;
}

}  // namespace pathprof::pipeline::import_wire
