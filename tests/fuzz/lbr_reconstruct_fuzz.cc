// libFuzzer target for LBR reconstruction: the input supplies both the code (first 512 bytes,
// at runtime 0x401000) and the branch stack (the rest, 5 bytes per entry: two 16-bit offsets
// and a selector that can move either end to the kernel, outside the code, or to zero).
// Property: no crash, no sanitizer report, and every entry and range is accounted for.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <vector>

#include "pathprof/decoders/lbr_reconstruct.h"

namespace {

using namespace pathprof::decoders;

constexpr size_t kCodeBytes = 512;
constexpr uint64_t kBase = 0x401000;

class FuzzCode : public CodeMap {
 public:
  explicit FuzzCode(std::shared_ptr<std::vector<uint8_t>> bytes) {
    cache_ = std::make_unique<BranchCache>(
        std::vector<CodeSegment>{{0x1000, std::span<const uint8_t>(*bytes)}}, bytes);
    region_ = {kBase, kBase + bytes->size(), 0x400000, cache_.get()};
  }
  const CodeRegion* Find(uint32_t, uint64_t addr) override {
    return region_.Contains(addr) ? &region_ : nullptr;
  }

 private:
  std::unique_ptr<BranchCache> cache_;
  CodeRegion region_;
};

uint64_t Place(uint16_t off, uint8_t sel) {
  switch (sel & 3) {
    case 1:
      return 0xffffffff81000000ull + off;
    case 2:
      return sel & 4 ? 0 : 0x7f0000000000ull + off;
    default:
      return kBase + off % (kCodeBytes + 16);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < kCodeBytes) return 0;
  auto code_bytes = std::make_shared<std::vector<uint8_t>>(data, data + kCodeBytes);
  FuzzCode code(code_bytes);
  LbrReconstructor r(&code);
  std::vector<LbrEntry> entries;
  for (size_t i = kCodeBytes; i + 5 <= size && entries.size() < 64; i += 5) {
    const uint16_t from = data[i] | data[i + 1] << 8, to = data[i + 2] | data[i + 3] << 8;
    const uint8_t sel = data[i + 4];
    entries.push_back(
        {Place(from, sel), Place(to, sel >> 3), static_cast<uint32_t>(sel), (sel & 0x80) != 0});
  }
  LbrSample s;
  s.entries = entries;
  s.ip = entries.empty() ? kBase : entries[0].to + (data[0] & 31);
  std::vector<pathprof::BranchBatch> out;
  r.Reconstruct(s, &out);
  r.Reconstruct(s, &out);  // a second pass runs on the memoized cache
  const LbrStats& st = r.stats();
  if (st.entries_emitted + st.entries_dropped_total() != st.entries) std::abort();
  if (st.ranges_walked + st.ranges_broken_total() + st.duplicate_ranges != st.ranges) std::abort();
  for (const auto& b : out) {
    if (b.events.empty() || !b.gap_before || !b.window) std::abort();
  }
  return 0;
}
