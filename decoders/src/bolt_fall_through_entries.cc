#include "bolt_fall_through_entries.h"

#include <algorithm>
#include <map>
#include <set>

#include "pathprof/decoders/x86_branch.h"

namespace pathprof::decoders {

std::vector<std::pair<uint64_t, uint64_t>> FallThroughEntries(const ElfImage& image,
                                                              const FunctionSymbol& function) {
  std::span<const uint8_t> code = image.CodeAt(function.vaddr);
  const size_t size = std::min<size_t>(code.size(), function.size);
  // Instruction start -> whether control can run on into the next instruction.
  std::map<uint64_t, bool> falls_on;
  std::set<uint64_t> targets;
  for (size_t at = 0; at < size;) {
    X86Instruction insn;
    if (!DecodeX86Fast(code.data() + at, size - at, function.vaddr + at, &insn)) break;
    const bool ends_flow =
        insn.kind == BranchKind::kDirectJump || insn.kind == BranchKind::kIndirectJump ||
        insn.kind == BranchKind::kReturn || insn.kind == BranchKind::kConditional;
    falls_on[at] = !insn.is_branch || IsCall(insn.kind) || !ends_flow;
    if ((insn.kind == BranchKind::kConditional || insn.kind == BranchKind::kDirectJump) &&
        insn.has_direct_target && insn.direct_target > function.vaddr &&
        insn.direct_target < function.vaddr + size)
      targets.insert(insn.direct_target - function.vaddr);
    at += insn.length;
  }
  std::vector<std::pair<uint64_t, uint64_t>> entries;
  for (uint64_t t : targets) {
    auto it = falls_on.find(t);
    if (it == falls_on.end() || it == falls_on.begin()) continue;  // not an instruction start
    --it;
    // A conditional's fall-through is its own not-taken event; a jump's successor is entered
    // only by branches.
    if (it->second) entries.emplace_back(t, it->first);
  }
  return entries;
}

}  // namespace pathprof::decoders
