// libFuzzer target for what the collector reads from its emulator helper
// (collectors/src/emulator_wire.h): the helper interprets code somebody else chose, so once
// taken over it can send anything. The first byte picks the message: a window's outcome, hint
// pages or (the other direction, for completeness) a sample.
// Properties: no crash or sanitizer report; an accepted outcome has an end and branch kinds
// inside their tables, no more events than asked, and encodes back to what decodes to itself;
// accepted hint pages are no more than asked.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "emulator_wire.h"

namespace {

namespace wire = pathprof::collectors::emulator_wire;

void Check(bool ok, const char* what) {
  if (ok) return;
  std::fprintf(stderr, "emulator_wire_fuzz: %s\n", what);
  std::abort();
}

constexpr uint32_t kMaxEvents = 64 * 32 + 64;
constexpr uint32_t kMaxHints = 64;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::vector<uint8_t> bytes(data + 1, data + size);
  switch (data[0] % 3) {
    case 0: {
      pathprof::collectors::SampleOutcome o;
      if (!wire::DecodeOutcome(bytes, kMaxEvents, &o)) return 0;
      Check(static_cast<int>(o.end) < pathprof::emulator::kEmulationEndCount,
            "an end past its table");
      Check(o.events.size() <= kMaxEvents, "more events than asked");
      for (const pathprof::BranchEvent& e : o.events)
        Check(static_cast<int>(e.kind) < pathprof::kBranchKindCount, "a kind past its table");
      pathprof::collectors::SampleOutcome again;
      Check(wire::DecodeOutcome(wire::EncodeOutcome(o), kMaxEvents, &again), "no round trip");
      Check(again.events == o.events && again.end == o.end && again.kind == o.kind,
            "a round trip that changed the outcome");
      break;
    }
    case 1: {
      uint32_t pid = 0;
      std::vector<uint64_t> pages;
      if (!wire::DecodeHints(bytes, kMaxHints, &pid, &pages)) return 0;
      Check(pages.size() <= kMaxHints, "more hint pages than asked");
      break;
    }
    default: {
      pathprof::collectors::RawStackSample s;
      if (!wire::DecodeSample(bytes, &s)) return 0;
      pathprof::collectors::RawStackSample again;
      Check(wire::DecodeSample(wire::EncodeSample(s), &again), "no round trip");
      Check(again.regs == s.regs && (again.snapshot == nullptr) == (s.snapshot == nullptr),
            "a round trip that changed the sample");
      break;
    }
  }
  return 0;
}
