#include "pathprof/profiles/pcct_child_table.h"

#include <algorithm>

namespace pathprof::profiles {

void PcctChildTable::Grow() {
  std::vector<Slot> old = std::move(slots_);
  slots_.assign(std::max<size_t>(16, old.size() * 2), Slot{});
  mask_ = slots_.size() - 1;
  for (const Slot& s : old) {
    if (s.id == kNone) continue;
    size_t i = s.tag & mask_;
    while (slots_[i].id != kNone) i = (i + 1) & mask_;
    slots_[i] = s;
  }
}

void PcctChildTable::Insert(uint64_t hash, uint32_t id) {
  // At most half full, so probe runs stay short.
  if (2 * (size_ + 1) > slots_.size()) Grow();
  const uint32_t tag = TagOf(hash);
  size_t i = tag & mask_;
  while (slots_[i].id != kNone) i = (i + 1) & mask_;
  slots_[i] = Slot{id, tag};
  ++size_;
}

void PcctChildTable::Erase(uint64_t hash, uint32_t id) {
  if (slots_.empty()) return;
  size_t i = TagOf(hash) & mask_;
  for (;; i = (i + 1) & mask_) {
    if (slots_[i].id == kNone) return;
    if (slots_[i].id == id) break;
  }
  // Backward shift: pull later entries of the run into the hole when their home slot allows it,
  // so that lookups never stop early at a hole.
  for (size_t j = (i + 1) & mask_;; j = (j + 1) & mask_) {
    if (slots_[j].id == kNone) break;
    const size_t home = slots_[j].tag & mask_;
    // Move j into the hole i unless home lies cyclically in (i, j].
    const bool stays = i <= j ? (home > i && home <= j) : (home > i || home <= j);
    if (stays) continue;
    slots_[i] = slots_[j];
    i = j;
  }
  slots_[i] = Slot{};
  --size_;
}

void PcctChildTable::Clear() {
  std::fill(slots_.begin(), slots_.end(), Slot{});
  size_ = 0;
}

}  // namespace pathprof::profiles
