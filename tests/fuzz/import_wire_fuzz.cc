// libFuzzer target for what the daemon reads from its import helper
// (pipeline/src/import_wire.h): the helper parses recordings somebody else made, so once taken
// over it can send any frame. The input is one frame's bytes (without its size).
// Properties: no crash or sanitizer report; an accepted frame keeps every bound the parser
// promises (branch kinds inside their table, at most kMaxBatchEvents events, kMaxProcesses
// processes, texts of at most kMaxText bytes), and serializes back to bytes that parse to the
// same frame.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <span>
#include <variant>

#include "import_wire.h"

namespace {

namespace wire = pathprof::pipeline::import_wire;

void Check(bool ok, const char* what) {
  if (ok) return;
  std::fprintf(stderr, "import_wire_fuzz: %s\n", what);
  std::abort();
}

bool SameSummary(const pathprof::pipeline::DecodeSummary& a,
                 const pathprof::pipeline::DecodeSummary& b) {
  return a.format == b.format && a.records == b.records && a.samples == b.samples &&
         a.broken_windows == b.broken_windows && a.dropped_entries == b.dropped_entries &&
         a.decode_errors == b.decode_errors && a.counters == b.counters && a.warnings == b.warnings;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto frame = wire::Parse(std::span<const uint8_t>(data, size));
  if (!frame.ok()) return 0;
  if (const auto* b = std::get_if<pathprof::BranchBatch>(&*frame)) {
    Check(b->events.size() <= wire::kMaxBatchEvents, "more events than a frame may hold");
    for (const pathprof::BranchEvent& e : b->events)
      Check(static_cast<int>(e.kind) < pathprof::kBranchKindCount, "a kind past its table");
  } else if (const auto* begin = std::get_if<wire::BeginFrame>(&*frame)) {
    Check(begin->processes.size() <= wire::kMaxProcesses, "more processes than allowed");
    for (const auto& [pid, p] : begin->processes) {
      Check(p.comm.size() <= wire::kMaxText, "a name over the bound");
      for (const auto& m : p.mappings) Check(m.start + m.len >= m.start, "a mapping that wraps");
    }
  } else if (const auto* s = std::get_if<pathprof::Status>(&*frame)) {
    Check(!s->ok(), "a failure that is OK");
  }
  const std::string again = wire::Serialize(*frame);
  auto reparsed = wire::Parse(
      std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(again.data()), again.size()));
  Check(reparsed.ok(), "a frame that does not parse after a round trip");
  Check(reparsed->index() == frame->index(), "a round trip that changed the frame's kind");
  if (const auto* b = std::get_if<pathprof::BranchBatch>(&*frame))
    Check(*b == std::get<pathprof::BranchBatch>(*reparsed), "a round trip that changed a batch");
  if (const auto* s = std::get_if<pathprof::pipeline::DecodeSummary>(&*frame))
    Check(SameSummary(*s, std::get<pathprof::pipeline::DecodeSummary>(*reparsed)),
          "a round trip that changed a summary");
  return 0;
}
