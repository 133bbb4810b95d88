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
  r.held = SnapshotHolds(policy_, r.page, hinted);
  reads_.push_back(r);
  if (r.held && r.page.cls != SnapshotPageClass::kStack) return true;
  if (mode_ == Mode::kServe) return true;
  if (r.held) {
    // A stack page: the copy holds the bytes from the red zone up stack_bytes; below the red
    // zone, only what the window writes there itself is live (a read of the rest would be a
    // read of dead stack), so poison shows a window that relied on more.
    if (mode_ == Mode::kPoison) {
      const uint64_t copy_low = stack_.rsp - SnapshotStack::kRedZone;
      const uint64_t below = copy_low > page ? std::min(copy_low - page, kPageSize) : 0;
      std::memset(out, poison_, below);
      // stack_reach <= stack_bytes: every byte above the red zone is in the copy.
    }
    return true;
  }
  if (mode_ == Mode::kEnd) return false;
  // Not held as a whole page; a stack page the copy reaches into keeps the copied part.
  uint64_t keep_from = kPageSize, keep_to = kPageSize;  // [keep_from, keep_to): live bytes
  if (r.page.cls == SnapshotPageClass::kStack) {
    const uint64_t copy_low = stack_.rsp - SnapshotStack::kRedZone;
    const uint64_t copy_high = stack_.rsp + policy_.stack_bytes;
    const uint64_t lo = std::max(copy_low, page), hi = std::min(copy_high, page + kPageSize);
    if (lo < hi) keep_from = lo - page, keep_to = hi - page;
  }
  std::memset(out, poison_, keep_from);
  std::memset(out + keep_to, poison_, kPageSize - keep_to);
  *stable = false;  // its bytes are this snapshot's: not to be kept across windows
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
