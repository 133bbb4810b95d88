#include "pathprof/decoders/branch_cache.h"

#include "pathprof/decoders/x86_branch.h"

namespace pathprof::decoders {

BranchCache::BranchCache(std::shared_ptr<const ElfImage> image) : image_(std::move(image)) {
  for (const ElfSegment& s : image_->segments()) {
    if (!s.executable || s.file_size == 0) continue;
    segments_.push_back({s.vaddr, image_->bytes().subspan(s.file_offset, s.file_size)});
  }
  memo_.reserve(1024);
}

BranchCache::BranchCache(std::vector<CodeSegment> segments, std::shared_ptr<const void> keepalive)
    : keepalive_(std::move(keepalive)), segments_(std::move(segments)) {}

std::span<const uint8_t> BranchCache::CodeAt(uint64_t vaddr) const {
  for (const CodeSegment& s : segments_) {
    if (vaddr >= s.vaddr && vaddr - s.vaddr < s.bytes.size()) {
      return s.bytes.subspan(vaddr - s.vaddr);
    }
  }
  return {};
}

bool BranchCache::DecodeAt(uint64_t vaddr, X86Instruction* out) const {
  std::span<const uint8_t> code = CodeAt(vaddr);
  return !code.empty() && DecodeX86Fast(code.data(), code.size(), vaddr, out);
}

BranchSite BranchCache::Scan(uint64_t vaddr) {
  BranchSite site;
  site.address = vaddr;
  std::span<const uint8_t> code = CodeAt(vaddr);
  if (code.empty()) {
    site.scan = BranchScan::kNotCode;
    return site;
  }
  uint64_t off = 0;
  uint32_t count = 0;
  while (true) {
    if (off >= code.size()) {
      site.scan = BranchScan::kEndOfCode;
      site.address = vaddr + off;
      return site;
    }
    if (off > kMaxScanBytes) {
      site.scan = BranchScan::kTooLong;
      site.address = vaddr + off;
      return site;
    }
    X86Instruction insn;
    ++decoded_instructions_;
    if (!DecodeX86Fast(code.data() + off, code.size() - off, vaddr + off, &insn)) {
      site.scan = BranchScan::kInvalidBytes;
      site.address = vaddr + off;
      return site;
    }
    ++count;
    if (insn.is_branch) {
      site.address = insn.address;
      site.length = insn.length;
      site.kind = insn.kind;
      site.has_direct_target = insn.has_direct_target;
      site.direct_target = insn.direct_target;
      site.instructions = count;
      return site;
    }
    off += insn.length;
  }
}

const BranchSite& BranchCache::NextBranch(uint64_t vaddr) {
  auto it = memo_.find(vaddr);
  if (it != memo_.end()) return it->second;
  return memo_.emplace(vaddr, Scan(vaddr)).first->second;
}

uint32_t BranchCache::InstructionsTo(uint64_t start, uint64_t target) const {
  std::span<const uint8_t> code = CodeAt(start);
  if (code.empty() || target < start || target - start >= code.size() ||
      target - start > kMaxScanBytes) {
    return 0;
  }
  uint64_t off = 0;
  uint32_t count = 0;
  while (off <= target - start) {
    X86Instruction insn;
    if (!DecodeX86Fast(code.data() + off, code.size() - off, start + off, &insn)) return 0;
    ++count;
    if (start + off == target) return count;
    if (insn.is_branch) return 0;
    off += insn.length;
  }
  return 0;
}

}  // namespace pathprof::decoders
