#include "pathprof/decoders/pt_image.h"

#include <intel-pt.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>

namespace pathprof::decoders {

Result<std::shared_ptr<PtSectionCache>> PtSectionCache::Create() {
  pt_image_section_cache* c = pt_iscache_alloc("pathprof");
  if (!c) return Error(ErrorCode::kResourceExhausted, "libipt: cannot allocate a section cache");
  return std::shared_ptr<PtSectionCache>(new PtSectionCache(c));
}

PtSectionCache::~PtSectionCache() {
  pt_iscache_free(iscache_);
}

int PtSectionCache::Read(int isid, uint64_t vaddr, uint8_t* buf, uint64_t size) const {
  return pt_iscache_read(iscache_, buf, size, isid, vaddr);
}

PtImage::PtImage(std::shared_ptr<PtSectionCache> cache, const std::string& name)
    : cache_(std::move(cache)), image_(pt_image_alloc(name.c_str())) {}

PtImage::~PtImage() {
  pt_image_free(image_);
}

Status PtImage::AddFile(const std::string& path, uint64_t file_offset, uint64_t start,
                        uint64_t end) {
  if (end <= start) return Error(ErrorCode::kInvalidArgument, "empty mapping of " + path);
  int isid = pt_iscache_add_file(cache_->raw(), path.c_str(), file_offset, end - start, start);
  if (isid < 0)
    return Error(ErrorCode::kNotFound, "libipt cannot map " + path + " at offset " +
                                           std::to_string(file_offset) + ": " +
                                           pt_errstr(pt_errcode(isid)));
  int err = pt_image_add_cached(image_, cache_->raw(), isid, nullptr);
  if (err < 0)
    return Error(ErrorCode::kInternal,
                 "libipt cannot add " + path + " to the image: " + pt_errstr(pt_errcode(err)));
  ++stats_.sections;
  summaries_.clear();
  // Emptied in place, not freed: decoders of this image hold a pointer to the slots.
  std::fill(slots_.begin(), slots_.end(), PtBlockSlot{});
  return Status::Ok();
}

void PtImage::AddImages(const std::vector<ImageRecord>& images) {
  for (const auto& img : images) {
    if (img.path.empty() || img.path[0] != '/' || access(img.path.c_str(), R_OK) != 0 ||
        !AddFile(img.path, img.file_offset, img.start, img.end).ok())
      ++stats_.skipped_no_file;
  }
}

bool PtImage::AddPerfMmap(const PerfMmap& m) {
  if (m.is_mmap2 && !(m.prot & PROT_EXEC)) return false;
  const std::string& path = m.filename;
  if (path.empty() || path[0] != '/' || access(path.c_str(), R_OK) != 0 ||
      !AddFile(path, m.pgoff, m.start, m.start + m.len).ok()) {
    ++stats_.skipped_no_file;
    return false;
  }
  return true;
}

}  // namespace pathprof::decoders
