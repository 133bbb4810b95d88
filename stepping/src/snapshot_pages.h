// Windows from a snapshot: instead of stopping the thread, a window could be emulated from what
// the eBPF stack sampler copies at a sample (the user registers and the stack above the stack
// pointer), the pages that never change (code and read-only data, read once per process) and
// "hint pages" the sampler learned to copy with the stack when it samples a thread in a given
// code page. A load from any other page cannot be served: the window ends there. This file says
// which pages such a snapshot holds, so that today's stop-and-emulate windows can measure how
// far a window would get on one (bench/snapshot_reach_bench.cc) before the sampler side is
// built: SnapshotGuest wraps the live Guest and serves only what a snapshot would hold.
//
// The stack copy: from the red zone below the stack pointer (128 bytes, which the sampler can
// copy as well) up `stack_bytes`. Stack pages wholly below the red zone count as held: a
// program reads below its stack pointer only what it wrote there itself (anything else a signal
// handler may overwrite at any time), so the window writes them before it reads them.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

#include "pathprof/emulator/window_emulator.h"

namespace pathprof::stepping {

// The thread's stack at the snapshot: its stack pointer and the mapping that holds it.
struct SnapshotStack {
  static constexpr uint64_t kRedZone = 128;
  uint64_t rsp = 0;
  uint64_t low = 0, high = 0;  // the stack mapping [low, high)
};

enum class SnapshotPageClass : uint8_t {
  kCode,   // stable and executable: the image's text, held by every snapshot
  kImage,  // stable, not executable: read-only data, RELRO (kept once per process)
  kStack,  // in the stack mapping (SnapshotPage::stack_reach says how far up it lies)
  kOther,  // anything else: heap, writable data, a JIT's or the vDSO's code
};
inline constexpr int kSnapshotPageClassCount = 4;
const char* SnapshotPageClassName(SnapshotPageClass c);  // "code", "image", "stack", "other"

struct SnapshotPage {
  uint64_t page = 0;
  SnapshotPageClass cls = SnapshotPageClass::kOther;
  // kStack: how many bytes above the stack pointer a copy must reach to hold the whole page
  // (its end minus rsp; 0 for a page that ends at or below rsp).
  uint64_t stack_reach = 0;
};

// `stable`: as Guest::ReadPage says; `executable`: as Guest::PageExecutable says.
SnapshotPage ClassifySnapshotPage(uint64_t page, bool stable, bool executable,
                                  const SnapshotStack& stack);

struct SnapshotPolicy {
  std::string name;
  uint64_t stack_bytes = 64 * 1024;  // copied from the stack pointer up (and the red zone)
  bool image = false;                // stable pages that are not code
  uint32_t hint_pages = 0;           // per code page of a window's start; 0: no hints
  // The bytes around what each general-purpose register and fs_base holds at the sample,
  // [value - register_below, value + register_above), widened to whole pages where
  // `register_whole_pages`: a sampler can copy them with bpf_probe_read_user at the sample, no
  // learning needed (a register that holds no address copies nothing). 0, 0: none.
  uint32_t register_below = 0, register_above = 0;
  bool register_whole_pages = false;
  // Whether the snapshot holds the vector registers. The eBPF sampler's user registers do not:
  // without them a window that needs them ends there (or, poisoned, runs on over poison).
  bool vector_state = true;
};

// Bytes [lo, hi) of the address space.
struct ByteRange {
  uint64_t lo = 0, hi = 0;
};

// The bytes `policy`'s register copy adds for a thread whose registers are `state`: sorted,
// disjoint ranges, each within pages for which `readable(page)` holds (what
// bpf_probe_read_user could copy); bytes the stack copy holds are left out.
std::vector<ByteRange> RegisterRanges(const emulator::CpuState& state, const SnapshotPolicy& policy,
                                      const SnapshotStack& stack,
                                      const std::function<bool(uint64_t)>& readable);
uint64_t TotalBytes(const std::vector<ByteRange>& ranges);

// Whether a snapshot taken under `policy` holds `page`; `hinted`: the hint pages of the
// window's code page include it (counts only where the policy has hints).
bool SnapshotHolds(const SnapshotPolicy& policy, const SnapshotPage& page, bool hinted);

// Per key (the 4 KiB code page of a window's start address, or one key for a whole process), the
// data pages windows under that key read lately, at most `per_key`, the most recently learned
// first: what a sampler would copy besides the stack when it samples a thread in that code page.
class HintPages {
 public:
  explicit HintPages(uint32_t per_key) : per_key_(per_key) {}
  bool Holds(uint64_t code_page, uint64_t page) const;
  // `page` was read by a window starting in `code_page`: it goes first, the oldest beyond
  // per_key is forgotten.
  void Learn(uint64_t code_page, uint64_t page);
  uint32_t per_key() const { return per_key_; }
  size_t keys() const { return pages_.size(); }

 private:
  uint32_t per_key_;
  std::unordered_map<uint64_t, std::vector<uint64_t>> pages_;
};

// A Guest serving, over the live one, what a snapshot would hold. What it would not hold is,
// by `mode`:
//   kEnd:    unreadable: the window ends at the first load a snapshot cannot serve (the
//            conservative figure: a snapshot emulator that marked the loaded bytes unknown
//            would go on until a branch, jump target or address depended on them);
//   kPoison: every byte it would not hold reads as `poison` (a stack page the copy holds in
//            part keeps the part): the window goes on, and where its branches first differ
//            from the live window's is where unknown bytes steered it;
//   kServe:  read as the live guest reads it (only recorded);
//   kTrack:  a partial guest (Guest::Partial): the bytes it would not hold read as `poison`
//            and are unknown to the emulator, which ends the window only where a branch,
//            jump target or address depends on them: what a snapshot emulator gets.
// Vector registers, where the policy holds none, are by the same mode: unreadable (the window
// ends as vector_state), all `poison`, the live thread's, or unknown.
// Every page read is recorded with its class and whether the snapshot holds it.
class SnapshotGuest final : public emulator::Guest {
 public:
  enum class Mode : uint8_t { kEnd, kPoison, kServe, kTrack };
  struct Read {
    SnapshotPage page;
    bool held = false;
  };
  // `hints` may be null (no hints); it must outlive this guest. `hint_key`: the key of `hints`
  // this window's hint pages are under (the code page of its start address, or one key for
  // the whole process).
  SnapshotGuest(emulator::Guest& live, const SnapshotPolicy& policy, const SnapshotStack& stack,
                const HintPages* hints, uint64_t hint_key, Mode mode, uint8_t poison = 0)
      : live_(live),
        policy_(policy),
        stack_(stack),
        hints_(hints),
        hint_key_(hint_key),
        mode_(mode),
        poison_(poison) {}

  bool ReadPage(uint64_t page, uint8_t* out, bool* stable) override;
  bool PageWritable(uint64_t page) override { return live_.PageWritable(page); }
  bool PageExecutable(uint64_t page) override { return live_.PageExecutable(page); }
  bool LoadVectorState(emulator::CpuState* state) override;
  bool Partial() override { return mode_ == Mode::kTrack; }
  bool UnheldBytes(uint64_t page, uint8_t* unheld) override;
  // Bytes the snapshot holds besides those of `policy` (RegisterRanges: sorted, disjoint). A
  // page they cover in part is not held (kEnd), or keeps those bytes and is poisoned elsewhere.
  void HoldAlso(std::vector<ByteRange> ranges) { also_held_ = std::move(ranges); }

  const std::vector<Read>& reads() const { return reads_; }
  // The first page read that the snapshot does not hold, or ~0 when none was.
  uint64_t first_unheld() const;
  uint32_t vector_loads() const { return vector_loads_; }

 private:
  emulator::Guest& live_;
  const SnapshotPolicy& policy_;
  SnapshotStack stack_;
  const HintPages* hints_;
  uint64_t hint_key_;
  Mode mode_;
  uint8_t poison_;
  std::vector<ByteRange> also_held_;
  // kTrack: the pages held in part, and the parts held (offsets into the page).
  std::unordered_map<uint64_t, std::vector<ByteRange>> held_parts_;
  std::vector<Read> reads_;
  uint32_t vector_loads_ = 0;
};

// How many taken branches the events of `run` share with `live` from the start, event by
// event: the length of a window that went on over unknown bytes (SnapshotGuest::Mode::kPoison)
// up to where they steered it elsewhere.
uint32_t TakenInCommon(const emulator::EmulatedWindow& live, const emulator::EmulatedWindow& run);

}  // namespace pathprof::stepping
