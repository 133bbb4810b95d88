#include "pathprof/decoders/bolt_fdata_writer.h"

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <map>
#include <tuple>
#include <vector>

#include "bolt_fall_through_entries.h"
#include "pathprof/decoders/elf_function_symbols.h"

namespace pathprof::decoders {
namespace {

// One end of a line: a function (index into the symbol list) and the offset into it, or
// "unknown" (index -1, offset 0), as perf2bolt writes addresses outside known functions.
struct End {
  int64_t function = -1;
  uint64_t offset = 0;
  bool in_binary = false;
  auto operator<=>(const End&) const = default;
};

struct Counts {
  uint64_t count = 0;
  uint64_t mispredicted = 0;
};

class Locator {
 public:
  Locator(const PbsContents& recording, const ElfImage& binary, const std::string& binary_path,
          const std::vector<FunctionSymbol>& functions)
      : binary_(binary), functions_(functions) {
    for (const ImageRecord& img : recording.images)
      if (img.path == binary_path) mappings_.push_back(&img);
  }
  size_t mappings() const { return mappings_.size(); }

  End Find(uint32_t pid, uint64_t address) const {
    End end;
    for (const ImageRecord* img : mappings_) {
      if ((img->pid != 0 && pid != 0 && img->pid != pid) || address < img->start ||
          address >= img->end)
        continue;
      uint64_t vaddr = 0;
      if (!binary_.FileOffsetToVaddr(address - img->start + img->file_offset, &vaddr)) continue;
      end.in_binary = true;
      if (const FunctionSymbol* f = FindFunction(functions_, vaddr)) {
        end.function = f - functions_.data();
        end.offset = vaddr - f->vaddr;
      }
      return end;
    }
    return end;
  }

 private:
  const ElfImage& binary_;
  const std::vector<FunctionSymbol>& functions_;
  std::vector<const ImageRecord*> mappings_;
};

}  // namespace

Result<BoltFdataStats> WriteBoltFdata(const PbsContents& recording, const ElfImage& binary,
                                      const std::string& binary_path, const std::string& output) {
  PATHPROF_ASSIGN_OR_RETURN(auto symbols, ReadFunctionSymbols(binary));
  const std::vector<FunctionSymbol>& functions = symbols;
  Locator locate(recording, binary, binary_path, functions);
  BoltFdataStats stats;
  stats.mappings = locate.mappings();
  if (stats.mappings == 0) {
    return Error(ErrorCode::kNotFound,
                 "the recording never mapped " + binary_path +
                     ": name a binary among its images (pathctl export prints them)");
  }
  std::map<std::pair<End, End>, Counts> lines;
  std::map<int64_t, std::vector<std::pair<uint64_t, uint64_t>>> entries_of;
  // The straight-line run from the last branch's landing to this branch: the fall-throughs
  // into jump targets it ran over, as perf2bolt finds them from its CFG.
  auto walk = [&](const End& landed, const End& left) {
    if (landed.function < 0 || landed.function != left.function || landed.offset > left.offset)
      return;
    auto it = entries_of.find(landed.function);
    if (it == entries_of.end())
      it = entries_of
               .emplace(landed.function, FallThroughEntries(binary, functions[landed.function]))
               .first;
    const auto& entries = it->second;
    auto e = std::upper_bound(entries.begin(), entries.end(),
                              std::pair<uint64_t, uint64_t>{landed.offset, UINT64_MAX});
    for (; e != entries.end() && e->first <= left.offset; ++e) {
      const End from{landed.function, e->second, true}, to{landed.function, e->first, true};
      ++lines[std::make_pair(from, to)].count;
      ++stats.fall_throughs;
    }
  };
  for (const BranchBatch& batch : recording.batches) {
    End landed;  // where the previous event of the batch went (none before the first)
    for (const BranchEvent& e : batch.events) {
      const End previous_landing = landed;
      landed = End{};
      if (e.kind == BranchKind::kFarTransfer || e.kind == BranchKind::kUnknown) {
        ++stats.far_transfers;
        continue;
      }
      if (!e.taken && e.kind != BranchKind::kConditional) continue;  // nothing to lay out
      End from = locate.Find(batch.pid, e.from);
      End to = locate.Find(batch.pid, e.to);
      walk(previous_landing, from);
      landed = to;
      if (!from.in_binary && !to.in_binary) {
        ++stats.elsewhere;
        continue;
      }
      if (from.function < 0 && to.function < 0) {  // e.g. PLT stubs: no symbol BOLT matches
        ++stats.unnamed;
        continue;
      }
      Counts& c = lines[{from, to}];
      ++c.count;
      c.mispredicted += e.mispredicted ? 1 : 0;
      ++(e.taken ? stats.taken : stats.fall_throughs);
    }
  }
  std::FILE* f = std::fopen(output.c_str(), "w");
  if (f == nullptr) {
    return Error(ErrorCode::kIo, "cannot write " + output + ": " + std::strerror(errno));
  }
  auto put = [&](const End& end) {
    if (end.function < 0) {
      std::fputs("0 [unknown] 0 ", f);
    } else {
      std::fprintf(f, "1 %s %" PRIx64 " ", functions[end.function].bolt_name.c_str(), end.offset);
    }
  };
  for (const auto& [key, counts] : lines) {
    put(key.first);
    put(key.second);
    std::fprintf(f, "%" PRIu64 " %" PRIu64 "\n", counts.mispredicted, counts.count);
  }
  stats.lines = lines.size();
  if (std::ferror(f) != 0 || std::fclose(f) != 0) {
    return Error(ErrorCode::kIo, "writing " + output + " failed: " + std::strerror(errno));
  }
  return stats;
}

}  // namespace pathprof::decoders
