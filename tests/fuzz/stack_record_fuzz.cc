// libFuzzer target for the eBPF sampler's record parser (collectors/src/stack_record.h). A
// record's header comes from the BPF program, but everything behind it is the sampled process's
// memory, and a record may be cut short of what its header says (the ring's reservation is the
// bytes copied, not the struct's maximum). The input is the record, copied into an 8-byte
// aligned buffer as the ring buffer aligns records.
// Properties: no crash or sanitizer report (no read past the record); the stack copy lies
// inside the record; the registers are all there or none; every snapshot piece lies whole in
// the snapshot's bytes, in order, without wrapping the address space; every range the sampler
// could not read is at most a page and does not wrap.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "stack_record.h"

namespace {

void Check(bool ok, const char* what) {
  if (ok) return;
  std::fprintf(stderr, "stack_record_fuzz: %s\n", what);
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<uint64_t> aligned((size + 7) / 8);
  if (size > 0) std::memcpy(aligned.data(), data, size);
  pathprof::collectors::RawStackSample out;
  if (!pathprof::collectors::ParseStackRecord(aligned.data(), size, &out)) return 0;
  Check(out.user.size() <= 127 && out.kernel.size() <= 127, "more frames than the record holds");
  Check(out.regs.empty() || out.regs.size() == 17, "a partial register set");
  Check(out.stack.size() <= size, "a stack copy longer than the record");
  Check(out.stack.empty() || !out.regs.empty(), "a stack copy without registers");
  if (out.snapshot) {
    const auto& snap = *out.snapshot;
    Check(snap.stack.size() <= size, "a snapshot stack longer than the record");
    uint64_t next = 0;
    for (const auto& piece : snap.pieces) {
      Check(piece.offset == next, "pieces out of order");
      Check(uint64_t{piece.offset} + piece.size <= snap.bytes.size(), "a piece past its bytes");
      Check(piece.address + piece.size >= piece.address, "a piece wrapping the address space");
      next = uint64_t{piece.offset} + piece.size;
    }
    for (const auto& range : snap.unreadable) {
      Check(range.size > 0 && range.size <= 4096, "an unreadable range of no or many pages");
      Check(range.address + range.size >= range.address, "an unreadable range wrapping");
    }
  }
  return 0;
}
