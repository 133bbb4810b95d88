// Session::ExportBranchProfile: the newest windows of a running session as an optimizer profile.
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>

#include "pathprof/core/procfs.h"
#include "pathprof/pipeline/session.h"

namespace pathprof::pipeline {
namespace {

// The writers take a path; a memfd gives them one without touching the daemon's disk.
class MemoryFile {
 public:
  MemoryFile() : fd_(memfd_create("pathprof-branch-export", MFD_CLOEXEC)) {}
  ~MemoryFile() {
    if (fd_ >= 0) close(fd_);
  }
  MemoryFile(const MemoryFile&) = delete;
  MemoryFile& operator=(const MemoryFile&) = delete;
  bool ok() const { return fd_ >= 0; }
  // The memfd by name, for the exporters that write to a path.
  std::string path() const {
    return procfs::Procfs::Host().GlobalPath("self/fd/" + std::to_string(fd_));
  }
  Result<std::string> Contents() const {
    std::string out;
    char buf[1 << 16];
    for (off_t at = 0;;) {
      ssize_t n = pread(fd_, buf, sizeof buf, at);
      if (n < 0)
        return Error(ErrorCode::kIo, std::string("reading the export: ") + strerror(errno));
      if (n == 0) return out;
      out.append(buf, static_cast<size_t>(n));
      at += n;
    }
  }

 private:
  int fd_;
};

// The image record of `pid`'s executable (read through /proc/PID/root in a container).
std::string ExecutableImage(const PbsContents& recording, const TargetInfo& info) {
  for (const ImageRecord& img : recording.images) {
    if (img.pid != info.pid || info.executable.empty()) continue;
    if (img.path == info.executable || (img.path.starts_with(procfs::Procfs::Host().root() + "/") &&
                                        img.path.ends_with(info.executable)))
      return img.path;
  }
  return "";
}

// The images of `images` that an address of `batches` falls in.
std::vector<ImageRecord> ImagesTouched(std::vector<ImageRecord> images,
                                       const std::vector<BranchBatch>& batches) {
  std::sort(images.begin(), images.end(),
            [](const ImageRecord& a, const ImageRecord& b) { return a.start < b.start; });
  std::vector<bool> touched(images.size(), false);
  auto mark = [&](uint64_t address) {
    auto it = std::upper_bound(images.begin(), images.end(), address,
                               [](uint64_t a, const ImageRecord& img) { return a < img.start; });
    if (it == images.begin()) return;
    --it;
    if (address < it->end) touched[static_cast<size_t>(it - images.begin())] = true;
  };
  for (const BranchBatch& b : batches) {
    for (const BranchEvent& e : b.events) {
      mark(e.from);
      mark(e.to);
    }
  }
  std::vector<ImageRecord> out;
  for (size_t i = 0; i < images.size(); ++i)
    if (touched[i]) out.push_back(std::move(images[i]));
  return out;
}

}  // namespace

Session::ArchivedBranches Session::BranchesForArchive(uint64_t max_events) const {
  ArchivedBranches out;
  std::vector<std::pair<std::shared_ptr<const ProfileStore>, uint64_t>> held;  // store, branches
  uint64_t total_events = 0;
  for (auto& store : Stores()) {
    const TargetStats stats = store->Stats();
    out.windows_taken += stats.windows;
    out.windows_held += stats.export_windows_kept;
    const uint64_t events = store->RecentBranchEvents();
    if (events == 0) continue;
    total_events += events;
    held.emplace_back(std::move(store), events);
  }
  for (auto& [store, mine] : held) {
    // This process's share of `max_events`, as its share of the branches held: its newest
    // whole windows, copied out of the store only as far as the share goes.
    const uint64_t quota =
        total_events <= max_events
            ? mine
            : static_cast<uint64_t>(static_cast<long double>(max_events) * mine / total_events);
    if (quota == 0) continue;
    PbsContents one = store->RecentBranches(quota);
    if (one.batches.empty()) continue;
    std::vector<BranchBatch> kept = std::move(one.batches);
    PbsContents part;
    part.images = ImagesTouched(std::move(one.images), kept);
    // The build-ids now, through the store's image access (a confined requester's rights), while
    // the process still maps the files: a reader of the archive may find them only by build-id.
    decoders::FillBuildIds(
        &part, [&store](const ImageRecord& img) { return store->MappedImage(img.start); });
    const TargetInfo info = store->Info();
    if (!info.executable.empty())
      out.recording.meta.push_back({"executable." + std::to_string(info.pid), info.executable});
    out.windows_kept += kept.size();
    for (ImageRecord& i : part.images) out.recording.images.push_back(std::move(i));
    for (BranchBatch& b : kept) out.recording.batches.push_back(std::move(b));
  }
  out.recording.meta.push_back({"source", "pathprofd continuous window (session " + id() + ")"});
  out.recording.meta.push_back({"windows_kept", std::to_string(out.windows_kept)});
  out.recording.meta.push_back({"windows_held", std::to_string(out.windows_held)});
  out.recording.meta.push_back({"windows_taken", std::to_string(out.windows_taken)});
  return out;
}

Result<Session::BranchProfile> Session::ExportBranchProfile(decoders::BranchProfileRequest request,
                                                            uint32_t pid) const {
  PbsContents merged;
  std::vector<std::shared_ptr<const ProfileStore>> stores;
  std::map<uint32_t, std::shared_ptr<const ProfileStore>> by_pid;
  if (pid != 0) {
    if (auto store = Store(pid)) stores.push_back(std::move(store));
    if (stores.empty()) {
      return Error(ErrorCode::kNotFound,
                   "session " + id() + " has no process " + std::to_string(pid));
    }
  } else {
    stores = Stores();
  }
  for (const auto& store : stores) {
    by_pid[store->pid()] = store;
    PbsContents one = store->RecentBranches();
    if (request.binary.empty() && request.format == decoders::BranchProfileFormat::kBoltFdata &&
        !one.batches.empty())
      request.binary = ExecutableImage(one, store->Info());
    for (BranchBatch& b : one.batches) merged.batches.push_back(std::move(b));
    for (ImageRecord& i : one.images) merged.images.push_back(std::move(i));
  }
  if (merged.batches.empty()) {
    return Error(ErrorCode::kUnavailable,
                 "session " + id() +
                     " holds no branch windows yet (stacks-only sessions have "
                     "none; a branch source sends its first windows within a second or two)");
  }
  request.source = "session " + id();
  // The images as every other query of the session reads them: the mapped files, with a confined
  // session's requester's rights, bounded and shared through the image cache; never a path
  // opened by the daemon (root), which the target's owner may have pointed at any file.
  request.open_image =
      [&by_pid](const ImageRecord& img) -> Result<std::shared_ptr<const decoders::ElfImage>> {
    auto store = by_pid.find(img.pid);
    if (store == by_pid.end())
      return Error(ErrorCode::kNotFound,
                   "no process " + std::to_string(img.pid) + " mapped " + img.path);
    return store->second->MappedImage(img.start);
  };
  MemoryFile file;
  if (!file.ok()) return Error(ErrorCode::kIo, std::string("memfd_create: ") + strerror(errno));
  PATHPROF_ASSIGN_OR_RETURN(auto summary,
                            decoders::WriteBranchProfile(std::move(merged), request, file.path()));
  PATHPROF_ASSIGN_OR_RETURN(auto data, file.Contents());
  return BranchProfile{std::move(data), std::move(summary)};
}

}  // namespace pathprof::pipeline
