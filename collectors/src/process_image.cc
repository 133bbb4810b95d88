#include "process_image.h"

#include <fcntl.h>
#include <sys/auxv.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "pathprof/core/clock.h"

namespace pathprof::collectors {

namespace {

constexpr uint64_t kPage = 4096;
// /proc/PID/pagemap entries (Documentation/admin-guide/mm/pagemap.rst).
constexpr uint64_t kPagemapPresent = 1ull << 63;
constexpr uint64_t kPagemapSwapped = 1ull << 62;  // only anonymous pages are swapped
constexpr uint64_t kPagemapFileOrSharedAnon = 1ull << 61;

// This process's vdso and its length (the host's kernel maps the same one into every process).
std::pair<const uint8_t*, uint64_t> OwnVdso() {
  static const std::pair<const uint8_t*, uint64_t> vdso = [] {
    const auto base = getauxval(AT_SYSINFO_EHDR);
    if (base == 0) return std::pair<const uint8_t*, uint64_t>{nullptr, 0};
    auto self = decoders::ReadProcMaps(getpid());
    if (self.ok())
      for (const decoders::Mapping& m : self->mappings())
        if (m.IsVdso() && m.start == base)
          return std::pair<const uint8_t*, uint64_t>{reinterpret_cast<const uint8_t*>(base), m.len};
    return std::pair<const uint8_t*, uint64_t>{nullptr, 0};
  }();
  return vdso;
}

}  // namespace

ProcessImage::ProcessImage(pid_t pid, ProcessAccess& access) : pid_(pid), access_(access) {}

ProcessImage::~ProcessImage() = default;

void ProcessImage::LoadShared() {
  (void)OwnVdso();
}

void ProcessImage::ReadMaps(uint64_t now_ns) {
  read_at_ns_ = now_ns;
  ++stats_.maps_reads;
  read_started_ns_ = MonotonicNs();
  auto space = access_.ReadMaps(pid_);
  read_ended_ns_ = MonotonicNs();
  decoders::AddressSpace read = space.ok() ? std::move(*space) : decoders::AddressSpace{};
  if (read.mappings() != space_.mappings()) {
    described_.clear();
    ++stats_.maps_changed;
  }
  // The samples observed so far were all taken before this read began.
  before_read_ = last_;
  after_read_ = {};
  space_ = std::move(read);
  stable_ = decoders::StableMappings(space_);
}

void ProcessImage::ObserveSequence(uint64_t time_ns, uint32_t sequence) {
  const SeenSequence seen{true, time_ns, sequence};
  if (!last_.seen || time_ns >= last_.time_ns) last_ = seen;
  if (read_ended_ns_ == 0) return;  // the maps were never read
  if (time_ns <= read_started_ns_ && (!before_read_.seen || time_ns > before_read_.time_ns))
    before_read_ = seen;
  if (time_ns >= read_ended_ns_ && (!after_read_.seen || time_ns < after_read_.time_ns))
    after_read_ = seen;
  if (before_read_.seen && after_read_.seen && before_read_.sequence == after_read_.sequence &&
      !Describes(before_read_.sequence)) {
    if (described_.size() >= kMaxDescribed) described_.erase(described_.begin());
    described_.push_back(before_read_.sequence);
  }
}

bool ProcessImage::Describes(uint32_t sequence) const {
  return std::find(described_.begin(), described_.end(), sequence) != described_.end();
}

bool ProcessImage::DescribesSample(const RawSnapshot& sample) const {
  return !sample.has_mapping_sequence ||
         (!sample.mappings_changing && Describes(sample.mapping_sequence));
}

bool ProcessImage::RefreshForSample(const RawSnapshot& sample, uint64_t sample_ns, uint64_t now_ns,
                                    uint64_t max_age_ns) {
  if (sample.has_mapping_sequence && !sample.mappings_changing)
    ObserveSequence(sample_ns, sample.mapping_sequence);
  return Refresh(now_ns,
                 DescribesSample(sample) ? max_age_ns : std::min(max_age_ns, kMissRefreshNs));
}

const decoders::Mapping* ProcessImage::Find(uint64_t page, bool* stable) {
  auto find = [&]() -> const decoders::Mapping* {
    const decoders::Mapping* m = space_.Find(page);
    if (m == nullptr) return nullptr;
    *stable = stable_[static_cast<size_t>(m - space_.mappings().data())];
    return m;
  };
  if (const decoders::Mapping* m = find()) return m;
  const uint64_t now = MonotonicNs();
  if (read_at_ns_ != 0 && now - read_at_ns_ < kMissRefreshNs) return nullptr;
  ReadMaps(now);
  return find();
}

ProcessImage::PageInfo ProcessImage::Info(uint64_t page) {
  PageInfo info;
  bool stable = false;
  const decoders::Mapping* m = Find(page, &stable);
  if (m == nullptr) return info;
  info.mapped = true;
  info.readable = m->readable;
  info.writable = m->writable;
  info.executable = m->executable;
  info.stable = stable;
  return info;
}

bool ProcessImage::WantsCopy(uint64_t page) {
  bool stable = false;
  const decoders::Mapping* m = Find(page, &stable);
  return m != nullptr && stable && !m->IsVdso() && adopted_.count(page) == 0 &&
         Anonymous(page) != 0;
}

bool ProcessImage::Adopt(uint64_t page, const uint8_t* bytes) {
  if (!WantsCopy(page)) return false;
  if (adopted_.size() >= kMaxAdopted) {
    stats_.adopted_dropped += adopted_.size();
    adopted_.clear();
  }
  adopted_.emplace(page, std::vector<uint8_t>(bytes, bytes + kPage));
  ++stats_.adopted;
  return true;
}

bool ProcessImage::Refresh(uint64_t now_ns, uint64_t max_age_ns) {
  if (read_at_ns_ != 0 && now_ns - read_at_ns_ < max_age_ns) return false;
  std::vector<decoders::Mapping> before;
  for (size_t i = 0; i < space_.mappings().size(); ++i)
    if (stable_[i]) before.push_back(space_.mappings()[i]);
  ReadMaps(now_ns);
  bool changed = false;
  for (const decoders::Mapping& old : before) {
    const decoders::Mapping* now = space_.Find(old.start);
    if (now == nullptr || now->start != old.start || now->len != old.len ||
        now->pgoff != old.pgoff || now->inode != old.inode || now->device != old.device ||
        now->writable) {
      changed = true;
      // Copies of its written pages describe a mapping that is gone.
      for (auto it = adopted_.lower_bound(old.start);
           it != adopted_.end() && it->first < old.end();) {
        it = adopted_.erase(it);
        ++stats_.adopted_dropped;
      }
    }
  }
  return changed;
}

int ProcessImage::Anonymous(uint64_t page) {
  if (!pagemap_tried_) {
    pagemap_tried_ = true;
    auto fd = access_.OpenPagemap(pid_);
    if (fd.ok()) pagemap_ = std::move(*fd);
  }
  if (pagemap_.get() < 0) return -1;
  uint64_t entry = 0;
  if (pread(pagemap_.get(), &entry, sizeof entry,
            static_cast<off_t>(page / kPage * sizeof entry)) != static_cast<ssize_t>(sizeof entry))
    return -1;
  if (entry & kPagemapSwapped) return 1;
  return (entry & kPagemapPresent) != 0 && (entry & kPagemapFileOrSharedAnon) == 0 ? 1 : 0;
}

int ProcessImage::FileFor(const decoders::Mapping& m) {
  const std::pair<uint64_t, uint64_t> key{m.device, m.inode};
  auto it = files_.find(key);
  if (it != files_.end()) return it->second.get();
  if (files_.size() >= kMaxOpenFiles) files_.clear();
  auto fd = access_.OpenMapped(pid_, m);
  if (!fd.ok()) return -1;
  const int raw = fd->get();
  files_.emplace(key, std::move(*fd));
  return raw;
}

ProcessImage::StableRead ProcessImage::ReadStable(uint64_t page, uint8_t* out) {
  bool stable = false;
  const decoders::Mapping* m = Find(page, &stable);
  if (m == nullptr || !stable) return StableRead::kNotStable;
  const uint64_t offset = page - m->start;
  if (m->IsVdso()) {
    const auto [vdso, len] = OwnVdso();
    if (vdso == nullptr || len != m->len || offset + kPage > len) {
      ++stats_.unreadable;
      return StableRead::kUnreadable;
    }
    std::memcpy(out, vdso + offset, kPage);
    ++stats_.vdso_pages;
    return StableRead::kRead;
  }
  if (auto it = adopted_.find(page); it != adopted_.end()) {
    std::memcpy(out, it->second.data(), kPage);
    return StableRead::kRead;
  }
  // Unknown (no pagemap) counts as written: a file page served where the process has its own
  // copy would be a wrong byte, an unknown one only a shorter window.
  if (Anonymous(page) != 0) {
    ++stats_.written_pages;
    return StableRead::kWritten;
  }
  const int fd = FileFor(*m);
  if (fd < 0) {
    ++stats_.unreadable;
    return StableRead::kUnreadable;
  }
  const ssize_t got = pread(fd, out, kPage, static_cast<off_t>(m->pgoff + offset));
  if (got < 0) {
    ++stats_.unreadable;
    return StableRead::kUnreadable;
  }
  // Past the end of the file the last page of a mapping reads as zeros.
  std::memset(out + got, 0, kPage - static_cast<size_t>(got));
  ++stats_.file_pages;
  return StableRead::kRead;
}

}  // namespace pathprof::collectors
