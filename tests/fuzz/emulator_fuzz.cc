// libFuzzer target for the window emulator, which interprets whatever code the traced program
// holds: code bytes, registers and memory all come from the input.
// Input layout (little-endian):
//   header  16 x u64 general registers (rax, rcx, ..., r15), u64 rflags, u16 rip offset into
//           the pages, u8 window's taken branches (1 + value % 64), u8 flags (bit 0: rsp points
//           at the top of the last page; bit 1: the vector registers can be read; bit 2: other
//           threads share the memory; bit 3: also run it over a partial guest, below)
//   pages   then up to kMaxPages records: u8 permissions (bit 0: writable, bit 1: executable,
//           bit 2: stable; bit 3: a partial guest does not hold the page, bit 4: nor its second
//           half; bit 5: it does not know whether the page was writable, bit 6: nor readable),
//           then up to 4096 bytes of the page (a short last page is zero-filled).
//           Page i lies at kBase + i * 4096; every other address is unmapped.
//   The rflags word's bits 16-31 (no flag user code holds) name the general registers a
//   partial guest does not hold.
// Properties: no crash or sanitizer report; every window ends with a known reason, within its
// limits, at the address its registers say; and the pages handed to the guest are unchanged
// (they are mapped read-only while the emulator runs, and compared byte for byte afterwards):
// the emulator keeps stores in its own overlay and never writes through to the target.
// Over a partial guest (Guest::Partial: unknown bytes tracked), run twice with what it does
// not hold (pages, registers, vector state) reading 0x00 and then 0xff: the two windows must
// be equal, and agree event for event with the window over the real bytes as far as both go.
// An unknown byte that steered a window unseen fails one or the other.
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
  uint8_t unheld = 0;  // partial guests: 0 held, 1 not held, 2 the second half not held
  bool writable_unknown = false, readable_unknown = false;  // partial guests
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

 protected:
  const PageInfo* Find(uint64_t page) const {
    if (page % kPage != 0 || page < kBase) return nullptr;
    const uint64_t i = (page - kBase) / kPage;
    return i < info_.size() ? &info_[i] : nullptr;
  }

 private:
  std::vector<PageInfo> info_;
  bool vectors_;
  uint8_t* memory_ = nullptr;
  size_t size_ = 0;
};

// The same pages, held in part: what it does not hold reads as `poison`.
class PartialGuest final : public FuzzGuest {
 public:
  PartialGuest(const uint8_t* pages, std::vector<PageInfo> info, bool vectors, uint8_t poison,
               uint16_t unheld_registers)
      : FuzzGuest(pages, std::move(info), vectors),
        vectors_(vectors),
        poison_(poison),
        unheld_registers_(unheld_registers) {}
  bool ReadPage(uint64_t page, uint8_t* out, bool* stable) override {
    if (!FuzzGuest::ReadPage(page, out, stable)) return false;
    const uint8_t u = Find(page)->unheld;
    if (u != 0) {
      const size_t from = u == 1 ? 0 : kPage / 2;
      std::memset(out + from, poison_, kPage - from);
      *stable = false;
    }
    return true;
  }
  bool LoadVectorState(CpuState* state) override {
    if (vectors_) return FuzzGuest::LoadVectorState(state);
    for (auto& z : state->zmm) std::memset(z.data(), poison_, z.size());
    for (uint64_t& k : state->k) std::memset(&k, poison_, sizeof k);
    return false;
  }
  bool Partial() override { return true; }
  bool UnheldBytes(uint64_t page, uint8_t* unheld) override {
    const PageInfo* p = Find(page);
    if (p == nullptr || p->unheld == 0) return false;
    const size_t from = p->unheld == 1 ? 0 : kPage / 2;
    std::memset(unheld + from, 1, kPage - from);
    return true;
  }
  uint16_t UnheldRegisters() override { return unheld_registers_; }
  bool WritableKnown(uint64_t page) override {
    const PageInfo* p = Find(page);
    return p == nullptr || !p->writable_unknown;
  }
  bool ReadableKnown(uint64_t page) override {
    const PageInfo* p = Find(page);
    return p == nullptr || !p->readable_unknown;
  }

 private:
  bool vectors_;
  uint8_t poison_;
  uint16_t unheld_registers_;
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
    info.push_back({(perms & 1) != 0, (perms & 2) != 0, (perms & 4) != 0,
                    static_cast<uint8_t>((perms & 8)    ? 1
                                         : (perms & 16) ? 2
                                                        : 0),
                    (perms & 32) != 0, (perms & 64) != 0});
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
  if (flags & 8) {
    const auto unheld_registers = static_cast<uint16_t>(Le(data + 128, 8) >> 16);
    std::vector<EmulatedWindow> partial;
    for (uint8_t poison : {0x00, 0xff}) {
      CpuState from = start;
      for (int r = 0; r < 16; ++r)
        if (unheld_registers & (1u << r)) std::memset(&from.gpr[r], poison, 8);
      PartialGuest g(pages.data(), info, (flags & 2) != 0, poison, unheld_registers);
      WindowEmulator e(limits);
      partial.push_back(e.Run(from, g, (flags & 4) != 0));
      Check(partial.back(), limits);
    }
    if (std::getenv("PATHPROF_FUZZ_VERBOSE"))
      for (const auto& pw : partial) {
        for (const auto& e : pw.events)
          std::fprintf(stderr, " %lx->%lx%s", (unsigned long)e.from, (unsigned long)e.to,
                       e.taken ? "T" : "n");
        std::fprintf(stderr, "\n");
      }
    if (partial[0].events != partial[1].events) std::abort();
    const size_t n = std::min(w.events.size(), partial[0].events.size());
    for (size_t i = 0; i < n; ++i)
      if (!(w.events[i] == partial[0].events[i])) std::abort();
  }
  const EmulatorStats& s = emulator.stats();
  uint64_t ends = 0;
  for (uint64_t e : s.ends) ends += e;
  if (ends != s.windows) std::abort();
  return 0;
}
