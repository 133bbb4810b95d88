#include "pathprof/hwmodel/hot_path_table.h"

#include <algorithm>
#include <bit>
#include <string>
#include <tuple>

namespace pathprof::hwmodel {

std::string_view HptIndexName(HptIndex i) {
  return WordOf(kHptIndexWords, i);
}
bool ParseHptIndex(std::string_view name, HptIndex* out) {
  return ParseWord(kHptIndexWords, name, out);
}
std::string_view HptReplacementName(HptReplacement r) {
  return WordOf(kHptReplacementWords, r);
}
bool ParseHptReplacement(std::string_view name, HptReplacement* out) {
  return ParseWord(kHptReplacementWords, name, out);
}

Status HotPathTableConfig::Validate() const {
  if (ways < 1 || entries < ways || entries % ways != 0 || !std::has_single_bit(entries / ways)) {
    return Error(ErrorCode::kInvalidArgument,
                 "hot path table: " + std::to_string(entries) + " entries x " +
                     std::to_string(ways) +
                     " ways does not give a power-of-two number of sets; use entries = "
                     "ways * 2^n (e.g. 512 x 4)");
  }
  return Status::Ok();
}

Result<HotPathTable> HotPathTable::Create(const HotPathTableConfig& config) {
  PATHPROF_RETURN_IF_ERROR(config.Validate());
  return HotPathTable(config);
}

HotPathTable::HotPathTable(const HotPathTableConfig& config)
    : config_(config),
      sets_(config.entries / config.ways),
      set_bits_(static_cast<uint32_t>(std::countr_zero(config.entries / config.ways))),
      slots_(config.entries) {}

void HotPathTable::Miss(Slot* set, const PathDescriptor& p, uint64_t amount) {
  stats_.misses += 1;
  const uint32_t ways = config_.ways;
  Slot* victim = nullptr;
  for (uint32_t w = 0; w < ways && victim == nullptr; ++w) {
    if (!set[w].valid) victim = &set[w];
  }
  if (victim == nullptr) {
    victim = &set[0];
    for (uint32_t w = 1; w < ways; ++w) {
      const Slot& s = set[w];
      const bool better = config_.replacement == HptReplacement::kLfu
                              ? s.value < victim->value
                              : static_cast<int32_t>(s.last_use - victim->last_use) < 0;
      if (better) victim = &set[w];
    }
    stats_.evictions += 1;
    stats_.evicted_value += victim->value;
  }
  victim->valid = true;
  victim->start = p.start;
  victim->outcomes = p.outcomes;
  victim->length = p.length;
  if (amount > kMaxValue) {
    stats_.saturations += 1;
    amount = kMaxValue;
  }
  victim->value = static_cast<uint32_t>(amount);
  victim->last_use = ++clock_;
}

std::vector<HotPathTable::Entry> HotPathTable::Sorted() const {
  std::vector<Entry> out;
  for (const Slot& s : slots_) {
    if (s.valid) out.push_back(Entry{s.path(), s.value});
  }
  std::sort(out.begin(), out.end(), [](const Entry& a, const Entry& b) {
    if (a.value != b.value) return a.value > b.value;
    return std::tie(a.path.start, a.path.length, a.path.outcomes) <
           std::tie(b.path.start, b.path.length, b.path.outcomes);
  });
  return out;
}

std::vector<HotPathTable::Entry> HotPathTable::SetContents(uint32_t set) const {
  std::vector<Entry> out;
  if (set >= sets_) return out;
  for (uint32_t w = 0; w < config_.ways; ++w) {
    const Slot& s = slots_[static_cast<size_t>(set) * config_.ways + w];
    if (s.valid) out.push_back(Entry{s.path(), s.value});
  }
  return out;
}

uint64_t HotPathTable::Total() const {
  uint64_t total = 0;
  for (const Slot& s : slots_) total += s.valid ? s.value : 0;
  return total;
}

void HotPathTable::Clear() {
  for (Slot& s : slots_) s = Slot{};
  clock_ = 0;
}

}  // namespace pathprof::hwmodel
