// Session::ExportBranchProfile: the newest windows of a running session as an optimizer profile.
#include <sys/mman.h>
#include <unistd.h>

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

}  // namespace

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
