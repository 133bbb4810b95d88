// How images behind a live process's mappings are read, tested with the attacks that made the
// daemon crash or read through the file system (docs/operations.md, threat model):
//  - a mapping's path replaced by a symlink to a 1 TiB sparse file: the mapped file is read
//    (map_files), and the path is refused by inode once the process is gone, never read;
//  - a file above the size cap is refused before any byte is read; a FIFO never blocks; a
//    sparse file costs its data, not its size;
//  - a file the requester may not read is not opened for it, though the reader is root;
//  - the image cache stays within its bytes and says what it evicted;
//  - an exec replaces an address space, and overlays cannot grow it without end.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "pathprof/core/procfs.h"
#include "pathprof/decoders/address_space.h"
#include "pathprof/decoders/elf_image.h"
#include "pathprof/decoders/image_cache.h"
#include "pathprof/decoders/image_store.h"
#include "pathprof/decoders/mapped_file.h"

extern char** environ;

namespace pathprof::decoders {
namespace {

namespace fs = std::filesystem;
constexpr uint64_t kTiB = uint64_t{1} << 40;

// A scratch directory, removed at the end.
class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/pathprof-image-access-XXXXXX";
    path_ = mkdtemp(tmpl);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// A copy of sleep(1) running from `path`, killed at scope exit.
class Sleeper {
 public:
  explicit Sleeper(const std::string& path) {
    fs::copy_file("/bin/sleep", path);
    chmod(path.c_str(), 0755);
    char* argv[] = {const_cast<char*>(path.c_str()), const_cast<char*>("60"), nullptr};
    if (posix_spawn(&pid_, path.c_str(), nullptr, nullptr, argv, environ) != 0) pid_ = -1;
  }
  ~Sleeper() { Kill(); }
  void Kill() {
    if (pid_ <= 0) return;
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  pid_t pid() const { return pid_; }
  // The executable's mapping, once the process has exec'd (bounded wait).
  std::optional<Mapping> MappingOf(const std::string& path) const {
    for (int i = 0; i < 200; ++i) {
      auto space = ReadProcMaps(pid_);
      if (space.ok())
        for (const Mapping& m : space->mappings())
          if (m.path.starts_with(path) && m.executable) return m;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return std::nullopt;
  }

 private:
  pid_t pid_ = -1;
};

void MakeSparse(const std::string& path, uint64_t size) {
  std::ofstream(path).close();
  ASSERT_EQ(truncate(path.c_str(), static_cast<off_t>(size)), 0);
}

TEST(ElfImageBounds, OneTebibyteSparseFileIsRefusedUnread) {
  TempDir dir;
  MakeSparse(dir / "huge", kTiB);
  const auto start = std::chrono::steady_clock::now();
  auto image = ElfImage::Open(dir / "huge");
  ASSERT_FALSE(image.ok());
  EXPECT_EQ(image.status().code(), ErrorCode::kResourceExhausted) << image.status().ToString();
  EXPECT_NE(image.status().message().find("limits.max_image_bytes"), std::string::npos);
  // Refused from its size alone: reading a tebibyte of zeros would take minutes.
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
}

TEST(ElfImageBounds, FifoIsRefusedWithoutBlocking) {
  TempDir dir;
  ASSERT_EQ(mkfifo((dir / "fifo").c_str(), 0600), 0);
  auto image = ElfImage::Open(dir / "fifo");  // no writer: a blocking open would never return
  ASSERT_FALSE(image.ok());
  EXPECT_EQ(image.status().code(), ErrorCode::kInvalidArgument);
}

// Resident memory of this process in MiB (VmRSS).
long OwnRssMiB() {
  auto text = procfs::Procfs::Host().Read(getpid(), "status");
  if (!text.ok()) return 0;
  const auto rss = procfs::StatusField(*text, "VmRSS");  // "1234 kB"
  return rss ? std::stol(std::string(*rss)) / 1024 : 0;
}

// A user's own program padded to 512 MiB with a hole (it still runs: nothing maps the hole)
// costs the reader its data, not its size: 8 such images would otherwise take 4 GiB.
TEST(ElfImageBounds, SparseImageCostsItsDataNotItsSize) {
  TempDir dir;
  fs::copy_file("/bin/sleep", dir / "padded");
  const uint64_t data = fs::file_size(dir / "padded");
  constexpr uint64_t kSize = uint64_t{512} << 20;
  ASSERT_EQ(truncate((dir / "padded").c_str(), static_cast<off_t>(kSize)), 0);
  const long before = OwnRssMiB();
  auto image = ElfImage::Open(dir / "padded");
  ASSERT_TRUE(image.ok()) << image.status().ToString();
  const long grown = OwnRssMiB() - before;
  EXPECT_LT(grown, 32) << "RSS grew in MiB reading a 512 MiB file of " << data << " data bytes";
  // The same image as the unpadded file, all 512 MiB of it readable (the hole reads as zeros).
  EXPECT_EQ((*image)->build_id(), ElfImage::Open("/bin/sleep").value()->build_id());
  ASSERT_EQ((*image)->bytes().size(), kSize);
  std::ifstream original("/bin/sleep", std::ios::binary);
  std::string head(4096, '\0');
  original.read(head.data(), static_cast<std::streamsize>(head.size()));
  EXPECT_EQ(std::memcmp((*image)->bytes().data(), head.data(), head.size()), 0);
  for (uint64_t at = data; at < kSize; at += uint64_t{64} << 20)
    EXPECT_EQ((*image)->bytes()[at], 0) << "at byte " << at;
}

TEST(MappedFile, ReplacedPathIsNeverReadAndTheMappedFileStillIs) {
  TempDir dir;
  Sleeper target(dir / "prog");
  ASSERT_GT(target.pid(), 0);
  auto mapping = target.MappingOf(dir / "prog");
  ASSERT_TRUE(mapping.has_value());
  const std::string original_id = ElfImage::Open("/bin/sleep").value()->build_id();

  // The attack: the mapped file deleted and its "(deleted)" name made a symlink to a 1 TiB file.
  fs::remove(dir / "prog");
  MakeSparse(dir / "huge", kTiB);
  auto space = ReadProcMaps(target.pid());
  ASSERT_TRUE(space.ok());
  const Mapping* deleted = space->Find(mapping->start);
  ASSERT_NE(deleted, nullptr);
  ASSERT_EQ(deleted->path, dir / "prog (deleted)");
  fs::create_symlink(dir / "huge", deleted->path);

  ImageStore store;
  auto live = store.GetMapped(*deleted, space->access());
  ASSERT_TRUE(live.ok()) << live.status().ToString();
  EXPECT_EQ((*live)->build_id(), original_id);  // the mapped inode, through map_files

  // Once the process is gone only the path is left: it names another inode, so it is refused
  // without a byte read (a read would be a tebibyte).
  target.Kill();
  ImageStore after;
  auto gone = after.GetMapped(*deleted, space->access());
  ASSERT_FALSE(gone.ok());
  EXPECT_NE(gone.status().message().find("device or inode differ"), std::string::npos)
      << gone.status().ToString();
  EXPECT_EQ(after.stats().not_mapped_file, 1u);
  EXPECT_EQ(after.cache().stats().bytes, 0u);
}

TEST(MappedFile, FileTheRequesterMayNotReadIsNotOpenedForIt) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root: the test is that root's rights are not used";
  TempDir dir;
  std::ofstream(dir / "secret") << "root only";
  chmod((dir / "secret").c_str(), 0600);
  auto as_root = OpenFileAs(dir / "secret", std::nullopt);
  EXPECT_TRUE(as_root.ok()) << as_root.status().ToString();
  auto as_nobody = OpenFileAs(dir / "secret", FileCredentials{65534, 65534});
  ASSERT_FALSE(as_nobody.ok());
  EXPECT_EQ(as_nobody.status().code(), ErrorCode::kPermission);
  // The thread has root's file rights back afterwards.
  EXPECT_TRUE(OpenFileAs(dir / "secret", std::nullopt).ok());
}

TEST(ImageCacheBounds, HoldsAtMostItsBytesAndReportsWhatItEvicted) {
  auto image = ElfImage::Open("/bin/sleep");
  ASSERT_TRUE(image.ok());
  const uint64_t size = (*image)->bytes().size();
  ImageCache cache(ImageCacheLimits{3 * size, 100});
  std::vector<std::shared_ptr<const ElfImage>> held;
  for (int i = 0; i < 5; ++i) {
    auto copy = ElfImage::Open("/bin/sleep");
    held.push_back(cache.Insert("f:" + std::to_string(i), *copy));
  }
  const ImageCacheStats st = cache.stats();
  EXPECT_EQ(st.images, 3u);
  EXPECT_EQ(st.bytes, 3 * size);
  EXPECT_EQ(st.evictions, 2u);
  EXPECT_EQ(cache.Find("f:0"), nullptr);  // the least recently used went first
  EXPECT_EQ(cache.Find("f:4"), held[4]);
  uint64_t seq = 0;
  std::vector<const ElfImage*> evicted;
  EXPECT_TRUE(cache.EvictedSince(&seq, &evicted));
  ASSERT_EQ(evicted.size(), 2u);
  EXPECT_EQ(evicted[0], held[0].get());
  EXPECT_EQ(evicted[1], held[1].get());
  evicted.clear();
  EXPECT_TRUE(cache.EvictedSince(&seq, &evicted));
  EXPECT_TRUE(evicted.empty());
}

Mapping At(uint64_t start, const std::string& path) {
  Mapping m;
  m.start = start;
  m.len = 0x1000;
  m.path = path;
  return m;
}

TEST(AddressSpaceBounds, ExecReplacesAndOverlaysStayBounded) {
  AddressSpace space;
  AddressSpace before;
  before.Add(At(0x1000, "/old"));
  space.Overlay(before);
  AddressSpace after_exec;
  after_exec.Add(At(0x9000, "/new"));
  space.Replace(after_exec);
  EXPECT_EQ(space.Find(0x1000), nullptr);  // the old image's mapping is gone with it
  ASSERT_NE(space.Find(0x9000), nullptr);

  // Reads of a process that maps somewhere new each time (ASLR, an exec loop overlaid).
  AddressSpace grown;
  for (uint64_t i = 0; i < 3 * AddressSpace::kMaxMappings; i += 1000) {
    AddressSpace read;
    for (uint64_t k = 0; k < 1000; ++k) read.Add(At(0x10000 + (i + k) * 0x2000, "/lib"));
    grown.Overlay(read);
    ASSERT_LE(grown.mappings().size(), AddressSpace::kMaxMappings);
  }
}

}  // namespace
}  // namespace pathprof::decoders
