#include "snapshot_pages.h"

#include <algorithm>
#include <cstring>

namespace pathprof::stepping {

using emulator::Guest;

const char* SnapshotPageClassName(SnapshotPageClass c) {
  switch (c) {
    case SnapshotPageClass::kCode:
      return "code";
    case SnapshotPageClass::kImage:
      return "image";
    case SnapshotPageClass::kStack:
      return "stack";
    case SnapshotPageClass::kOther:
      return "other";
  }
  return "?";
}

SnapshotPage ClassifySnapshotPage(uint64_t page, bool stable, bool executable,
                                  const SnapshotStack& stack) {
  SnapshotPage p;
  p.page = page;
  if (stable) {
    p.cls = executable ? SnapshotPageClass::kCode : SnapshotPageClass::kImage;
  } else if (page >= stack.low && page < stack.high) {
    p.cls = SnapshotPageClass::kStack;
    const uint64_t end = page + Guest::kPageSize;
    p.stack_reach = end > stack.rsp ? end - stack.rsp : 0;
  }
  return p;
}

bool SnapshotHolds(const SnapshotPolicy& policy, const SnapshotPage& page, bool hinted) {
  switch (page.cls) {
    case SnapshotPageClass::kCode:
      return true;
    case SnapshotPageClass::kImage:
      return policy.image || (policy.hint_pages > 0 && hinted);
    case SnapshotPageClass::kStack:
      return page.stack_reach <= policy.stack_bytes || (policy.hint_pages > 0 && hinted);
    case SnapshotPageClass::kOther:
      return policy.hint_pages > 0 && hinted;
  }
  return false;
}

namespace {

constexpr uint64_t kPage = Guest::kPageSize;

// The bytes the stack copy holds: from the red zone below the stack pointer up stack_bytes.
ByteRange StackCopy(const SnapshotStack& stack, uint64_t stack_bytes) {
  return {stack.rsp - SnapshotStack::kRedZone, stack.rsp + stack_bytes};
}

// Appends `r` less what `cut` covers (up to two pieces) to `out`.
void AppendOutside(ByteRange r, ByteRange cut, std::vector<ByteRange>* out) {
  if (r.lo < std::min(r.hi, cut.lo)) out->push_back({r.lo, std::min(r.hi, cut.lo)});
  if (std::max(r.lo, cut.hi) < r.hi) out->push_back({std::max(r.lo, cut.hi), r.hi});
}

std::vector<ByteRange> Merged(std::vector<ByteRange> v) {
  std::sort(v.begin(), v.end(), [](const ByteRange& a, const ByteRange& b) { return a.lo < b.lo; });
  std::vector<ByteRange> out;
  for (const ByteRange& r : v) {
    if (!out.empty() && r.lo <= out.back().hi)
      out.back().hi = std::max(out.back().hi, r.hi);
    else
      out.push_back(r);
  }
  return out;
}

}  // namespace

std::vector<ByteRange> RegisterRanges(const emulator::CpuState& state, const SnapshotPolicy& policy,
                                      const SnapshotStack& stack,
                                      const std::function<bool(uint64_t)>& readable) {
  std::vector<ByteRange> out;
  if (policy.register_below == 0 && policy.register_above == 0) return out;
  const ByteRange copy = StackCopy(stack, policy.stack_bytes);
  constexpr uint64_t kTop = ~(kPage - 1);  // the last page's start: ranges end at or below it
  auto add = [&](uint64_t value) {
    if (value >= kTop) return;  // no user address
    uint64_t lo = value >= policy.register_below ? value - policy.register_below : 0;
    uint64_t hi = std::min<uint64_t>(kTop, value + policy.register_above);
    if (policy.register_whole_pages) {
      lo &= ~(kPage - 1);
      hi = (hi + kPage - 1) & ~(kPage - 1);
    }
    for (uint64_t page = lo & ~(kPage - 1); page < hi; page += kPage)
      if (readable(page))
        AppendOutside({std::max(lo, page), std::min(hi, page + kPage)}, copy, &out);
  };
  for (uint64_t value : state.gpr) add(value);
  add(state.fs_base);
  return Merged(std::move(out));
}

uint64_t TotalBytes(const std::vector<ByteRange>& ranges) {
  uint64_t n = 0;
  for (const ByteRange& r : ranges) n += r.hi - r.lo;
  return n;
}

bool HintPages::Holds(uint64_t code_page, uint64_t page) const {
  auto it = pages_.find(code_page);
  return it != pages_.end() &&
         std::find(it->second.begin(), it->second.end(), page) != it->second.end();
}

void HintPages::Learn(uint64_t code_page, uint64_t page) {
  if (per_key_ == 0) return;
  std::vector<uint64_t>& list = pages_[code_page];
  auto it = std::find(list.begin(), list.end(), page);
  if (it != list.end()) list.erase(it);
  list.insert(list.begin(), page);
  if (list.size() > per_key_) list.resize(per_key_);
}

bool SnapshotGuest::ReadPage(uint64_t page, uint8_t* out, bool* stable) {
  if (!live_.ReadPage(page, out, stable)) return false;  // the live window faults there too
  const bool executable = *stable && live_.PageExecutable(page);
  Read r;
  r.page = ClassifySnapshotPage(page, *stable, executable, stack_);
  const bool hinted = hints_ != nullptr && hints_->Holds(hint_key_, page);
  // The parts of this page the register copy holds, as offsets into it.
  std::vector<ByteRange> kept;
  for (const ByteRange& h : also_held_)
    if (h.lo < page + kPage && h.hi > page)
      kept.push_back({std::max(h.lo, page) - page, std::min(h.hi, page + kPage) - page});
  const bool whole_by_registers = kept.size() == 1 && kept[0].lo == 0 && kept[0].hi == kPage;
  r.held = SnapshotHolds(policy_, r.page, hinted) || whole_by_registers;
  reads_.push_back(r);
  if (r.held && r.page.cls != SnapshotPageClass::kStack) return true;
  if (mode_ == Mode::kServe) return true;
  if (r.held) {
    // A stack page: the copy holds the bytes from the red zone up stack_bytes; below the red
    // zone, only what the window writes there itself is live (a read of the rest would be a
    // read of dead stack), so poison shows a window that relied on more, and tracking makes
    // those bytes unknown.
    if (mode_ == Mode::kPoison || mode_ == Mode::kTrack) {
      const uint64_t copy_low = StackCopy(stack_, policy_.stack_bytes).lo;
      const uint64_t below = copy_low > page ? std::min(copy_low - page, kPageSize) : 0;
      std::memset(out, poison_, below);
      if (mode_ == Mode::kTrack && below > 0) held_parts_[page] = {{below, kPageSize}};
      // stack_reach <= stack_bytes: every byte above the red zone is in the copy.
    }
    return true;
  }
  if (mode_ == Mode::kEnd) return false;
  // Not held as a whole page: the bytes the stack copy or the register copy hold are kept,
  // the rest is poison.
  if (r.page.cls == SnapshotPageClass::kStack) {
    const ByteRange copy = StackCopy(stack_, policy_.stack_bytes);
    const uint64_t lo = std::max(copy.lo, page), hi = std::min(copy.hi, page + kPageSize);
    if (lo < hi) kept.push_back({lo - page, hi - page});
  }
  uint8_t live[kPageSize];
  std::memcpy(live, out, kPageSize);
  std::memset(out, poison_, kPageSize);
  for (const ByteRange& k : kept) std::memcpy(out + k.lo, live + k.lo, k.hi - k.lo);
  *stable = false;  // its bytes are this snapshot's: not to be kept across windows
  if (mode_ == Mode::kTrack) held_parts_[page] = std::move(kept);
  return true;
}

bool SnapshotGuest::UnheldBytes(uint64_t page, uint8_t* unheld) {
  auto it = held_parts_.find(page);
  if (it == held_parts_.end()) return false;
  std::memset(unheld, 1, kPageSize);
  for (const ByteRange& k : it->second) std::memset(unheld + k.lo, 0, k.hi - k.lo);
  return true;
}

bool SnapshotGuest::LoadVectorState(emulator::CpuState* state) {
  ++vector_loads_;
  if (policy_.vector_state || mode_ == Mode::kServe) return live_.LoadVectorState(state);
  if (mode_ == Mode::kEnd || mode_ == Mode::kTrack) return false;  // kTrack: unknown from here
  // Poison: the registers' bytes and the opmasks; the control words keep the values every
  // program here runs with (the defaults), which a snapshot could assume.
  for (auto& z : state->zmm) std::memset(z.data(), poison_, z.size());
  for (uint64_t& k : state->k) std::memset(&k, poison_, sizeof k);
  return true;
}

uint64_t SnapshotGuest::first_unheld() const {
  for (const Read& r : reads_)
    if (!r.held) return r.page.page;
  return ~0ull;
}

uint32_t TakenInCommon(const emulator::EmulatedWindow& live, const emulator::EmulatedWindow& run) {
  uint32_t taken = 0;
  const size_t n = std::min(live.events.size(), run.events.size());
  for (size_t i = 0; i < n && live.events[i] == run.events[i]; ++i) taken += live.events[i].taken;
  return taken;
}

}  // namespace pathprof::stepping
