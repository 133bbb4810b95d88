// libFuzzer target for the window emulator, which interprets whatever code the traced program
// holds: code bytes, registers and memory all come from the input.
// Input layout (little-endian):
//   header  16 x u64 general registers (rax, rcx, ..., r15), u64 rflags, u16 rip offset into
//           the pages, u8 window's taken branches (1 + value % 64), u8 flags (bit 0: rsp points
//           at the top of the last page; bit 1: the vector registers can be read; bit 2: other
//           threads share the memory)
//   pages   then up to kMaxPages records: u8 permissions (bit 0: writable, bit 1: executable,
//           bit 2: stable), then up to 4096 bytes of the page (a short last page is zero-filled).
//           Page i lies at kBase + i * 4096; every other address is unmapped.
// Properties: no crash or sanitizer report; every window ends with a known reason, within its
// limits, at the address its registers say; and the pages handed to the guest are unchanged
// (they are mapped read-only while the emulator runs, and compared byte for byte afterwards):
// the emulator keeps stores in its own overlay and never writes through to the target.
#include <sys/mman.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "pathprof/emulator/window_emulator.h"

namespace {

using namespace pathprof::emulator;

constexpr uint64_t kBase = 0x10000;
constexpr size_t kMaxPages = 8;
constexpr size_t kHeaderBytes = 16 * 8 + 8 + 2 + 1 + 1;
constexpr uint64_t kPage = Guest::kPageSize;

struct PageInfo {
  bool writable = false;
  bool executable = false;
  bool stable = false;
};

// Pages in one read-only mapping: a write through any pointer the emulator kept faults.
class FuzzGuest : public Guest {
 public:
  FuzzGuest(const uint8_t* pages, std::vector<PageInfo> info, bool vectors)
      : info_(std::move(info)), vectors_(vectors) {
    size_ = info_.size() * kPage;
    if (size_ == 0) return;
    void* m = mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) std::abort();
    memory_ = static_cast<uint8_t*>(m);
    std::memcpy(memory_, pages, size_);
    if (mprotect(memory_, size_, PROT_READ) != 0) std::abort();
  }
  ~FuzzGuest() override {
    if (memory_) munmap(memory_, size_);
  }
  bool ReadPage(uint64_t page, uint8_t* out, bool* stable) override {
    const PageInfo* p = Find(page);
    if (p == nullptr) return false;
    std::memcpy(out, memory_ + (page - kBase), kPage);
    *stable = p->stable;
    return true;
  }
  bool PageWritable(uint64_t page) override {
    const PageInfo* p = Find(page);
    return p && p->writable;
  }
  bool PageExecutable(uint64_t page) override {
    const PageInfo* p = Find(page);
    return p && p->executable;
  }
  bool LoadVectorState(CpuState* state) override {
    if (!vectors_) return false;
    for (size_t i = 0; i < state->zmm.size(); ++i)
      for (size_t b = 0; b < state->zmm[i].size(); ++b) state->zmm[i][b] = uint8_t(i * 64 + b);
    state->vector_loaded = true;
    return true;
  }
  const uint8_t* memory() const { return memory_; }

 private:
  const PageInfo* Find(uint64_t page) const {
    if (page % kPage != 0 || page < kBase) return nullptr;
    const uint64_t i = (page - kBase) / kPage;
    return i < info_.size() ? &info_[i] : nullptr;
  }
  std::vector<PageInfo> info_;
  bool vectors_;
  uint8_t* memory_ = nullptr;
  size_t size_ = 0;
};

uint64_t Le(const uint8_t* p, int n) {
  uint64_t v = 0;
  for (int i = n - 1; i >= 0; --i) v = v << 8 | p[i];
  return v;
}

void Check(const EmulatedWindow& w, const EmulatorLimits& limits) {
  if (std::getenv("PATHPROF_FUZZ_VERBOSE")) {  // to check what a seed reaches
    std::fprintf(
        stderr, "window: %u taken, %lu instructions, end %s (%s) at 0x%lx\n", w.taken,
        static_cast<unsigned long>(w.instructions), std::string(EmulationEndName(w.end)).c_str(),
        std::string(MnemonicName(w.mnemonic)).c_str(), static_cast<unsigned long>(w.end_address));
  }
  if (static_cast<int>(w.end) >= kEmulationEndCount) std::abort();
  if (EmulationEndName(w.end).empty()) std::abort();
  if (w.taken > limits.window_taken) std::abort();
  if (w.end == EmulationEnd::kComplete && w.taken != limits.window_taken) std::abort();
  if (w.instructions > limits.max_instructions) std::abort();
  if (w.state.rip != w.end_address) std::abort();
  if (w.pages_read > limits.max_window_pages + 1) std::abort();
  uint32_t taken = 0;
  for (const auto& e : w.events) taken += e.taken;
  if (taken != w.taken) std::abort();
  (void)MnemonicName(w.mnemonic);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < kHeaderBytes) return 0;
  CpuState start;
  for (int r = 0; r < 16; ++r) start.gpr[r] = Le(data + 8 * r, 8);
  start.rflags = (Le(data + 128, 8) & 0xcd5) | 0x202;  // the flags user code can hold
  start.rip = kBase + Le(data + 136, 2);
  EmulatorLimits limits;
  limits.window_taken = 1 + data[138] % 64;
  limits.max_instructions = 4096;
  limits.max_window_pages = 32;
  limits.max_stable_pages = 4;
  limits.max_decoded = 256;
  const uint8_t flags = data[139];

  std::vector<PageInfo> info;
  std::vector<uint8_t> pages;
  for (size_t at = kHeaderBytes; at < size && info.size() < kMaxPages;) {
    const uint8_t perms = data[at++];
    info.push_back({(perms & 1) != 0, (perms & 2) != 0, (perms & 4) != 0});
    const size_t n = std::min<size_t>(kPage, size - at);
    pages.insert(pages.end(), data + at, data + at + n);
    pages.resize(info.size() * kPage);
    at += n;
  }
  if (flags & 1) start.gpr[kRsp] = kBase + info.size() * kPage - 8;

  FuzzGuest guest(pages.data(), info, (flags & 2) != 0);
  WindowEmulator emulator(limits);
  EmulatedWindow w = emulator.Run(start, guest, (flags & 4) != 0);
  Check(w, limits);
  // A second window from where the first ended, on the pages and decodes it kept.
  if (w.end == EmulationEnd::kComplete) Check(emulator.Run(w.state, guest), limits);
  if (!pages.empty() && std::memcmp(guest.memory(), pages.data(), pages.size()) != 0) std::abort();
  const EmulatorStats& s = emulator.stats();
  uint64_t ends = 0;
  for (uint64_t e : s.ends) ends += e;
  if (ends != s.windows) std::abort();
  return 0;
}
