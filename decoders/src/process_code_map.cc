#include "pathprof/decoders/process_code_map.h"

#include <algorithm>

namespace pathprof::decoders {

void ProcessCodeMap::AddMapping(uint32_t pid, Mapping m) {
  Process& p = procs_[pid];
  p.space.Add(std::move(m));
  // Mappings change rarely next to samples; re-resolving everything is cheap (images are cached
  // by the store) and cannot keep a stale clipped region.
  p.resolved.clear();
  p.last = nullptr;
}

void ProcessCodeMap::SetAddressSpace(uint32_t pid, AddressSpace space) {
  Process& p = procs_[pid];
  p.space = std::move(space);
  p.resolved.clear();
  p.last = nullptr;
}

void ProcessCodeMap::Fork(uint32_t parent, uint32_t child) {
  auto it = procs_.find(parent);
  if (it == procs_.end() || parent == child) return;
  AddressSpace copy = it->second.space;
  SetAddressSpace(child, std::move(copy));
}

const AddressSpace* ProcessCodeMap::space(uint32_t pid) const {
  auto it = procs_.find(pid);
  return it == procs_.end() ? nullptr : &it->second.space;
}

std::vector<CodeRegion> ProcessCodeMap::Resolve(uint32_t pid, const Mapping& m) {
  std::vector<CodeRegion> out;
  if (!m.executable || m.IsKernel()) {
    ++stats_.mappings_without_image;
    return out;
  }
  Result<std::shared_ptr<const ElfImage>> image = Status(ErrorCode::kNotFound, "");
  uint64_t pgoff = m.pgoff;
  if (m.IsVdso()) {
    if (read_live_vdso_) image = store_->GetVdso(static_cast<int>(pid), m.start, m.len);
    pgoff = 0;  // the vdso image starts at the mapping start; perf records odd offsets for it
  } else if (!m.IsSpecial()) {
    image = store_->Get(m.path, m.build_id);
  }
  if (!image.ok()) {
    ++stats_.mappings_without_image;
    return out;
  }
  BranchCache* cache = store_->CacheFor(*image);
  for (const ElfSegment& s : (*image)->segments()) {
    if (!s.executable || s.file_size == 0) continue;
    // Runtime address of the segment's first file byte, as placed by this mapping.
    const uint64_t seg_runtime = m.start + s.file_offset - pgoff;
    const uint64_t begin = std::max(m.start, seg_runtime);
    const uint64_t end = std::min(m.end(), seg_runtime + s.file_size);
    if (begin >= end) continue;
    CodeRegion r;
    r.begin = begin;
    r.end = end;
    r.bias = seg_runtime - s.vaddr;
    r.cache = cache;
    out.push_back(r);
  }
  if (out.empty()) {
    ++stats_.mappings_without_image;
  } else {
    ++stats_.mappings_resolved;
  }
  return out;
}

const CodeRegion* ProcessCodeMap::FindIn(uint32_t pid, Process& p, uint64_t addr) {
  if (p.last != nullptr && p.last->Contains(addr)) return p.last;
  const Mapping* m = p.space.Find(addr);
  if (m == nullptr) return nullptr;
  auto it = p.resolved.find(m->start);
  if (it == p.resolved.end()) it = p.resolved.emplace(m->start, Resolve(pid, *m)).first;
  for (const CodeRegion& r : it->second) {
    if (r.Contains(addr)) {
      p.last = &r;
      return &r;
    }
  }
  return nullptr;
}

const CodeRegion* ProcessCodeMap::Find(uint32_t pid, uint64_t addr) {
  if (IsKernelAddress(addr)) pid = kKernelPid;
  auto it = procs_.find(pid);
  if (it == procs_.end()) return nullptr;
  return FindIn(pid, it->second, addr);
}

}  // namespace pathprof::decoders
