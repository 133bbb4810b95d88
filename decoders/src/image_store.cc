#include "pathprof/decoders/image_store.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "pathprof/core/procfs.h"

namespace pathprof::decoders {
namespace {

// perf's build-id header feature stores ids in a zero-padded 20-byte field, so a 8-byte LLD id
// reads back with 12 zero bytes appended. Compare and key ids without trailing zero bytes.
std::string NormalizedBuildId(std::string id) {
  while (id.size() >= 2 && id.ends_with("00")) id.resize(id.size() - 2);
  return id;
}

std::string Identity(const std::string& file, const ElfImage& image) {
  if (!image.build_id().empty()) return "b:" + NormalizedBuildId(image.build_id());
  struct stat st {};
  if (::stat(file.c_str(), &st) != 0) return "p:" + file;
  return "p:" + file + ":" + std::to_string(st.st_mtim.tv_sec) + "." +
         std::to_string(st.st_mtim.tv_nsec) + ":" + std::to_string(st.st_size);
}

// libdebuginfod is optional at run time: loaded with dlopen so that hosts without it still run.
struct DebuginfodApi {
  void* (*begin)() = nullptr;
  int (*find_executable)(void*, const unsigned char*, int, char**) = nullptr;
  int (*find_debuginfo)(void*, const unsigned char*, int, char**) = nullptr;
  void (*end)(void*) = nullptr;
  bool ok = false;
};

const DebuginfodApi& Debuginfod() {
  static const DebuginfodApi api = [] {
    DebuginfodApi a;
    void* h = dlopen("libdebuginfod.so.1", RTLD_NOW | RTLD_LOCAL);
    if (h == nullptr) return a;
    a.begin = reinterpret_cast<void* (*)()>(dlsym(h, "debuginfod_begin"));
    a.find_executable = reinterpret_cast<int (*)(void*, const unsigned char*, int, char**)>(
        dlsym(h, "debuginfod_find_executable"));
    a.find_debuginfo = reinterpret_cast<int (*)(void*, const unsigned char*, int, char**)>(
        dlsym(h, "debuginfod_find_debuginfo"));
    a.end = reinterpret_cast<void (*)(void*)>(dlsym(h, "debuginfod_end"));
    a.ok = a.begin && a.find_executable && a.find_debuginfo && a.end;
    return a;
  }();
  return api;
}

}  // namespace

ImageStore::ImageStore(ImageStoreOptions options)
    : options_(std::move(options)),
      cache_(options_.cache ? options_.cache : std::make_shared<ImageCache>()) {}
ImageStore::~ImageStore() = default;

// Where `perf buildid-cache` keeps a file: DIR/.build-id/xx/rest, a link to the file itself
// (older perf) or to a directory holding it as `elf`.
static std::string BuildIdCacheEntry(const std::string& dir, const std::string& id) {
  if (id.size() < 4) return {};
  const std::filesystem::path entry =
      std::filesystem::path(dir) / ".build-id" / id.substr(0, 2) / id.substr(2);
  std::error_code ec;
  if (std::filesystem::is_directory(entry, ec)) return (entry / "elf").string();
  return entry.string();
}

// Every ELF file under the binary dir, by build-id: a recording names binaries by where they
// were on the recording host (propeller_sample_1.bin.gen), and copies are seldom kept under the
// same name. Indexed once, on the first lookup that has an id; bounded so that a mistaken
// --binary-dir / cannot walk a whole file system.
std::string ImageStore::InBinaryDirByBuildId(const std::string& build_id) {
  namespace fs = std::filesystem;
  if (!binary_dir_indexed_) {
    binary_dir_indexed_ = true;
    constexpr uint64_t kMaxEntries = 100000;
    uint64_t seen = 0;
    std::error_code ec;
    fs::recursive_directory_iterator it(options_.binary_dir,
                                        fs::directory_options::skip_permission_denied, ec);
    for (; !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
      if (++seen > kMaxEntries) {
        ++stats_.binary_dir_unindexed;
        break;
      }
      std::error_code type_ec;
      if (!it->is_regular_file(type_ec) || it->file_size(type_ec) < 64) continue;
      char magic[4] = {};
      {
        std::ifstream in(it->path(), std::ios::binary);
        if (!in.read(magic, sizeof magic) || std::memcmp(magic,
                                                         "\x7f"
                                                         "ELF",
                                                         4) != 0)
          continue;
      }
      auto id = ReadBuildId(it->path().string());
      if (!id.ok()) {
        ++stats_.binary_dir_unindexed;
        continue;
      }
      ++stats_.binary_dir_elf_files;
      if (!id->empty()) binary_dir_by_build_id_.emplace(NormalizedBuildId(*id), it->path());
    }
    if (ec) ++stats_.binary_dir_unindexed;
  }
  auto found = binary_dir_by_build_id_.find(build_id);
  return found != binary_dir_by_build_id_.end() ? found->second : std::string();
}

std::vector<std::string> ImageStore::Candidates(const std::string& path,
                                                const std::string& build_id, size_t* by_build_id) {
  std::vector<std::string> out;
  if (!options_.binary_dir.empty() && !build_id.empty()) {
    if (std::string f = BuildIdCacheEntry(options_.binary_dir, build_id); !f.empty())
      out.push_back(f);
    if (std::string f = InBinaryDirByBuildId(build_id); !f.empty()) out.push_back(f);
  }
  *by_build_id = out.size();
  if (!options_.binary_dir.empty()) {
    out.push_back(options_.binary_dir + "/" + path);
    out.push_back(options_.binary_dir + "/" + std::filesystem::path(path).filename().string());
  }
  if (options_.use_host_paths) out.push_back(path);
  return out;
}

std::string ImageStore::Debuginfod(const std::string& build_id, bool debuginfo) {
  const char* urls = std::getenv("DEBUGINFOD_URLS");
  if (!options_.use_debuginfod || urls == nullptr || *urls == '\0' || build_id.empty()) return {};
  const DebuginfodApi& api = pathprof::decoders::Debuginfod();
  if (!api.ok) return {};
  void* client = api.begin();
  if (client == nullptr) return {};
  char* found = nullptr;
  const auto* id = reinterpret_cast<const unsigned char*>(build_id.c_str());
  int fd = debuginfo ? api.find_debuginfo(client, id, 0, &found)
                     : api.find_executable(client, id, 0, &found);
  api.end(client);
  std::string result;
  if (fd >= 0) {
    ::close(fd);
    ++stats_.debuginfod_fetches;
    if (found != nullptr) result = found;
  }
  std::free(found);
  return result;
}

void ImageStore::Remember(const std::string& request, Result<std::string> answer) {
  if (by_request_.size() >= kMaxRequests) {
    // Forgetting all answers at once keeps this simple and bounded; the images themselves stay
    // in the cache, so a forgotten answer costs one open and fstat to find again.
    stats_.requests_forgotten += by_request_.size();
    by_request_.clear();
  }
  by_request_.insert_or_assign(request, std::move(answer));
}

Result<std::shared_ptr<const ElfImage>> ImageStore::Get(const std::string& path,
                                                        const std::string& recorded_build_id) {
  ++stats_.lookups;
  const std::string build_id = NormalizedBuildId(recorded_build_id);
  const std::string key = path + "\n" + build_id;
  if (auto it = by_request_.find(key); it != by_request_.end()) {
    if (!it->second.ok()) return it->second.status();
    if (auto image = cache_->Find(*it->second)) {
      ++stats_.found;
      return image;
    }
    by_request_.erase(it);  // evicted since: look for it again
  }
  if (!build_id.empty()) {
    if (auto image = cache_->Find("b:" + build_id)) {
      Remember(key, "b:" + build_id);
      ++stats_.found;
      return image;
    }
  }
  size_t by_build_id = 0;  // the first candidates are the build-id's files
  std::vector<std::string> candidates = Candidates(path, build_id, &by_build_id);
  std::string tried;
  for (size_t pass = 0; pass < 2; ++pass) {
    for (size_t i = 0; i < candidates.size(); ++i) {
      const std::string& file = candidates[i];
      if (!tried.empty()) tried += ", ";
      tried += file;
      std::error_code ec;
      if (!std::filesystem::is_regular_file(file, ec)) continue;
      auto image = ElfImage::Open(file, options_.max_image_bytes);
      if (!image.ok()) {
        if (image.status().code() == ErrorCode::kResourceExhausted) ++stats_.too_large;
        continue;
      }
      if (!build_id.empty() && !(*image)->build_id().empty() &&
          NormalizedBuildId((*image)->build_id()) != build_id) {
        ++stats_.build_id_mismatches;
        continue;
      }
      const std::string identity = Identity(file, **image);
      Remember(key, identity);
      ++stats_.found;
      if (pass == 0 && i < by_build_id) ++stats_.found_by_build_id;
      return cache_->Insert(identity, *image);
    }
    if (pass == 0) {
      candidates.clear();
      std::string fetched = Debuginfod(recorded_build_id, /*debuginfo=*/false);
      if (fetched.empty()) break;
      candidates.push_back(fetched);
    }
  }
  ++stats_.not_found;
  Status missing(ErrorCode::kNotFound,
                 "no ELF file for mapping " + path +
                     (build_id.empty() ? "" : " (build-id " + build_id + ")") + "; tried " + tried +
                     "; pass --binary-dir DIR holding a copy of it");
  Remember(key, missing);
  return missing;
}

Result<std::shared_ptr<const ElfImage>> ImageStore::GetMapped(const Mapping& m,
                                                              const FileAccess& access) {
  if (access.live_pid == 0) return Get(m.read_path.empty() ? m.path : m.read_path, m.build_id);
  ++stats_.lookups;
  // Answers are remembered per requester and mapped inode: another user's answer is never
  // reused, and the same file mapped again (another process, a later read of the maps) is
  // found without reading it.
  const std::string key = "live:" + (access.open_as ? std::to_string(access.open_as->uid) : "-") +
                          ":" + std::to_string(m.device) + ":" + std::to_string(m.inode) + ":" +
                          m.path;
  if (auto it = by_request_.find(key); it != by_request_.end() && m.inode != 0) {
    if (!it->second.ok()) return it->second.status();
    if (auto image = cache_->Find(*it->second)) {
      ++stats_.found;
      return image;
    }
    by_request_.erase(it);
  }
  auto fd = OpenMappedFile(access.live_pid, m, access.open_as);
  if (!fd.ok()) {
    if (fd.status().code() == ErrorCode::kPermission) ++stats_.not_permitted;
    if (fd.status().message().find("device or inode differ") != std::string::npos)
      ++stats_.not_mapped_file;
    ++stats_.not_found;
    // Not remembered: the process may still be alive at the next lookup with its entry back.
    return fd.status();
  }
  struct stat st {};
  if (fstat(fd->get(), &st) != 0) return Error(ErrorCode::kIo, "fstat of " + m.path + " failed");
  const std::string identity = "f:" + std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino) +
                               ":" + std::to_string(st.st_size) + ":" +
                               std::to_string(st.st_mtim.tv_sec) + "." +
                               std::to_string(st.st_mtim.tv_nsec);
  if (auto image = cache_->Find(identity)) {
    Remember(key, identity);
    ++stats_.found;
    return image;
  }
  auto image = ElfImage::Read(fd->get(), m.path, options_.max_image_bytes);
  if (!image.ok()) {
    if (image.status().code() == ErrorCode::kResourceExhausted) ++stats_.too_large;
    ++stats_.not_found;
    Remember(key, image.status());
    return image.status();
  }
  Remember(key, identity);
  ++stats_.found;
  return cache_->Insert(identity, *image);
}

Result<std::shared_ptr<const ElfImage>> ImageStore::GetVdso(int pid, uint64_t start, uint64_t len) {
  const std::string mem = procfs::Procfs::Host().Path(pid, "mem");
  if (len == 0 || len > (64u << 20)) {
    return Error(ErrorCode::kInvalidArgument, "vdso of pid " + std::to_string(pid) +
                                                  ": implausible length " + std::to_string(len));
  }
  int fd = procfs::Procfs::Host().Open(pid, "mem", O_RDONLY);
  if (fd < 0) {
    return Error(ErrorCode::kPermission,
                 mem + ": cannot open; reading the vdso needs ptrace access to the process");
  }
  std::vector<uint8_t> bytes(len);
  ssize_t got = ::pread(fd, bytes.data(), len, static_cast<off_t>(start));
  ::close(fd);
  if (got != static_cast<ssize_t>(len)) {
    return Error(ErrorCode::kIo, mem + ": short read of the vdso at " + std::to_string(start));
  }
  PATHPROF_ASSIGN_OR_RETURN(auto image, ElfImage::FromBytes(std::move(bytes), "[vdso]"));
  // The kernel's vdso has a build-id; one with none is kept per process.
  return cache_->Insert(image->build_id().empty() ? "vdso:" + std::to_string(pid)
                                                  : "b:" + NormalizedBuildId(image->build_id()),
                        image);
}

std::string ImageStore::FindDebugFile(const ElfImage& image) {
  const std::string& id = image.build_id();
  if (id.size() < 4) return {};
  for (const std::string& dir : options_.debug_dirs) {
    std::string candidate = dir + "/.build-id/" + id.substr(0, 2) + "/" + id.substr(2) + ".debug";
    std::error_code ec;
    if (std::filesystem::is_regular_file(candidate, ec)) return candidate;
  }
  return Debuginfod(id, /*debuginfo=*/true);
}

BranchCache* ImageStore::CacheFor(const std::shared_ptr<const ElfImage>& image) {
  auto& slot = caches_[image.get()];
  if (!slot) slot = std::make_unique<BranchCache>(image);
  return slot.get();
}

}  // namespace pathprof::decoders
