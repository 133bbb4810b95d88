#include "pathprof/fleet/archive.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <set>

namespace pathprof::fleet {
namespace {

namespace fs = std::filesystem;

constexpr int64_t kT0 = 1'700'000'000'000'000'000;  // 2023-11-14, ns
constexpr int64_t kMinute = 60'000'000'000;

class ArchiveTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("pathprof_archive_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  ProfileWindow Window(int index, size_t bytes = 100) {
    ProfileWindow w;
    w.pprof = std::string(bytes, static_cast<char>('a' + index % 26));
    w.start_unix_nanos = kT0 + index * kMinute;
    w.end_unix_nanos = w.start_unix_nanos + kMinute;
    w.sample_rate_hz = 99;
    w.labels = ToLabels({.host = "web-1",
                         .unit = "nginx.service",
                         .cgroup = "/system.slice/nginx.service",
                         .executable = "/usr/sbin/nginx",
                         .build_id = "ab12",
                         .extra = {}});
    return w;
  }

  std::set<std::string> FilesOnDisk() {
    std::set<std::string> names;
    for (const auto& e : fs::directory_iterator(dir_)) names.insert(e.path().filename().string());
    return names;
  }

  fs::path dir_;
};

TEST_F(ArchiveTest, FileNameCarriesTimeSequenceAndEncodedLabels) {
  auto archive =
      ProfileArchive::Open({.directory = dir_.string(), .max_windows = 5, .max_bytes = 1 << 20});
  ASSERT_TRUE(archive.ok()) << archive.status().ToString();
  ASSERT_TRUE(archive->Add(Window(0)).ok());
  const std::string stem =
      "01700000000000000000-00000000_host=web-1+unit=nginx.service+cgroup=%2Fsystem.slice%"
      "2Fnginx.service+executable=%2Fusr%2Fsbin%2Fnginx+build_id=ab12";
  EXPECT_EQ(FilesOnDisk(), (std::set<std::string>{stem + ".pb.gz", stem + ".labels"}));
  std::ifstream meta(dir_ / (stem + ".labels"));
  std::stringstream text;
  text << meta.rdbuf();
  EXPECT_EQ(text.str(),
            "start_unix_nanos=1700000000000000000\nend_unix_nanos=1700000060000000000\n"
            "sample_rate_hz=99\nlabel.host=web-1\nlabel.unit=nginx.service\n"
            "label.cgroup=%2Fsystem.slice%2Fnginx.service\nlabel.executable=%2Fusr%2Fsbin%2Fnginx\n"
            "label.build_id=ab12\n");
  // The metadata line lengths sum to the stored size.
  EXPECT_EQ(archive->total_bytes(), 100 + text.str().size());
}

// The windows name the host's processes and functions: with a umask that would make them
// world-readable (and the folder world-writable), they are still 0640 in a 0750 folder.
TEST_F(ArchiveTest, FilesAre0640WhateverTheUmask) {
  const mode_t saved = umask(0);
  auto archive = ProfileArchive::Open(
      {.directory = (dir_ / "windows").string(), .max_windows = 5, .max_bytes = 1 << 20});
  Status added = archive.ok() ? archive->Add(Window(0)) : archive.status();
  umask(saved);
  ASSERT_TRUE(added.ok()) << added.ToString();
  struct stat st {};
  ASSERT_EQ(stat((dir_ / "windows").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0750u) << std::oct << (st.st_mode & 07777);
  size_t files = 0;
  for (const auto& e : fs::directory_iterator(dir_ / "windows")) {
    ASSERT_EQ(stat(e.path().c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 07777, 0640u) << e.path() << " " << std::oct << (st.st_mode & 07777);
    ++files;
  }
  EXPECT_EQ(files, 2u);  // the profile and its labels
}

TEST_F(ArchiveTest, CountLimitDeletesOldestFirstAndCountsIt) {
  auto archive =
      ProfileArchive::Open({.directory = dir_.string(), .max_windows = 3, .max_bytes = 1 << 20});
  ASSERT_TRUE(archive.ok());
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(archive->Add(Window(i)).ok());
  ASSERT_EQ(archive->windows().size(), 3u);
  EXPECT_EQ(archive->windows()[0].start_unix_nanos, kT0 + 2 * kMinute);
  EXPECT_EQ(archive->windows()[2].start_unix_nanos, kT0 + 4 * kMinute);
  EXPECT_EQ(archive->stats().windows_written, 5u);
  EXPECT_EQ(archive->stats().windows_deleted_count_limit, 2u);
  EXPECT_EQ(archive->stats().windows_deleted_byte_limit, 0u);
  EXPECT_EQ(FilesOnDisk().size(), 6u);  // 3 profiles + 3 metadata files
  EXPECT_EQ(archive->stats().bytes_written - archive->stats().bytes_deleted,
            archive->total_bytes());
}

TEST_F(ArchiveTest, ByteLimitDeletesOldestUntilUnderTheBound) {
  // Each window is 1000 pprof bytes + its metadata (same length for all: same label values and
  // same-width numbers), so the bound of 2.5 windows keeps 2.
  auto probe = ProfileArchive::Open({.directory = (dir_ / "probe").string()});
  ASSERT_TRUE(probe.ok());
  ASSERT_TRUE(probe->Add(Window(0, 1000)).ok());
  const uint64_t one = probe->total_bytes();
  fs::remove_all(dir_ / "probe");

  auto archive = ProfileArchive::Open(
      {.directory = dir_.string(), .max_windows = 100, .max_bytes = one * 5 / 2});
  ASSERT_TRUE(archive.ok());
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(archive->Add(Window(i, 1000)).ok());
  EXPECT_EQ(archive->windows().size(), 2u);
  EXPECT_EQ(archive->total_bytes(), 2 * one);
  EXPECT_EQ(archive->stats().windows_deleted_byte_limit, 2u);
  EXPECT_EQ(archive->stats().bytes_deleted, 2 * one);
  EXPECT_EQ(archive->windows()[0].start_unix_nanos, kT0 + 2 * kMinute);
}

TEST_F(ArchiveTest, WindowLargerThanTheWholeBudgetIsRejectedAndCounted) {
  auto archive =
      ProfileArchive::Open({.directory = dir_.string(), .max_windows = 3, .max_bytes = 500});
  ASSERT_TRUE(archive.ok());
  Status status = archive->Add(Window(0, 600));
  EXPECT_EQ(status.code(), ErrorCode::kResourceExhausted);
  EXPECT_EQ(archive->stats().windows_rejected_too_large, 1u);
  EXPECT_TRUE(FilesOnDisk().empty());
}

TEST_F(ArchiveTest, InvalidLabelNameIsRejected) {
  auto archive = ProfileArchive::Open({.directory = dir_.string()});
  ASSERT_TRUE(archive.ok());
  ProfileWindow w = Window(0);
  w.labels.push_back({"build-id", "x"});  // '-' is not allowed in a label name
  EXPECT_EQ(archive->Add(w).code(), ErrorCode::kInvalidArgument);
  w.labels.back() = {"host", "again"};  // duplicate
  EXPECT_EQ(archive->Add(w).code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(archive->stats().windows_rejected_invalid, 2u);
}

TEST_F(ArchiveTest, ReopenAdoptsWindowsAndReadReturnsThemExactly) {
  {
    auto archive = ProfileArchive::Open({.directory = dir_.string(), .max_windows = 10});
    ASSERT_TRUE(archive.ok());
    ProfileWindow w = Window(0);
    w.pprof = std::string("\x1f\x8b\x00\x00binary\n\r\0tail", 16);
    w.labels.push_back({"note", std::string(300, '%') + "=\n,{}"});  // long, odd characters
    ASSERT_TRUE(archive->Add(w).ok());
    ASSERT_TRUE(archive->Add(Window(1)).ok());
    // A name cut at 120 label bytes never ends inside a %XX escape.
    const std::string name = fs::path(archive->windows()[0].profile_path).filename().string();
    EXPECT_LE(name.size(), 30u + 120u + 6u);
    const std::string labels_part = name.substr(30, name.size() - 30 - 6);
    const size_t pct = labels_part.rfind('%');
    EXPECT_TRUE(pct == std::string::npos || pct + 3 <= labels_part.size()) << labels_part;
  }
  std::ofstream(dir_ / "README.txt") << "not ours";
  std::ofstream(dir_ / "01700000000000000000-00000099_x.pb.gz.tmp") << "crash leftover";

  auto archive = ProfileArchive::Open({.directory = dir_.string(), .max_windows = 10});
  ASSERT_TRUE(archive.ok());
  EXPECT_EQ(archive->stats().foreign_files_ignored, 1u);
  EXPECT_FALSE(fs::exists(dir_ / "01700000000000000000-00000099_x.pb.gz.tmp"));
  ASSERT_EQ(archive->windows().size(), 2u);
  auto read = archive->Read(archive->windows()[0]);
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  EXPECT_EQ(read->pprof, std::string("\x1f\x8b\x00\x00binary\n\r\0tail", 16));
  EXPECT_EQ(read->start_unix_nanos, kT0);
  EXPECT_EQ(read->end_unix_nanos, kT0 + kMinute);
  EXPECT_EQ(read->sample_rate_hz, 99);
  ASSERT_EQ(read->labels.size(), 6u);
  EXPECT_EQ(read->labels[5], (Label{"note", std::string(300, '%') + "=\n,{}"}));
  // Sequence numbers continue after a restart, so names never collide.
  ASSERT_TRUE(archive->Add(Window(0)).ok());
  EXPECT_EQ(archive->windows().back().sequence, 2u);
  // Same start time as window 0: the sequence breaks the tie, oldest stays first.
  EXPECT_EQ(archive->windows().size(), 3u);
}

TEST_F(ArchiveTest, ReopenWithSmallerBoundsEvictsAtOnce) {
  {
    auto archive = ProfileArchive::Open({.directory = dir_.string(), .max_windows = 10});
    ASSERT_TRUE(archive.ok());
    for (int i = 0; i < 4; ++i) ASSERT_TRUE(archive->Add(Window(i)).ok());
  }
  auto archive = ProfileArchive::Open({.directory = dir_.string(), .max_windows = 1});
  ASSERT_TRUE(archive.ok());
  ASSERT_EQ(archive->windows().size(), 1u);
  EXPECT_EQ(archive->windows()[0].start_unix_nanos, kT0 + 3 * kMinute);
  EXPECT_EQ(archive->stats().windows_deleted_count_limit, 3u);
  EXPECT_EQ(FilesOnDisk().size(), 2u);
}

// A window's branch windows (.pbs bytes) are a third file of the same stem: counted in its
// bytes, read back, deleted with it, adopted on reopen (a stray one, an unfinished Add, is
// deleted); when the profile fits the bound but not with them, the profile is stored alone and
// that is counted.
TEST_F(ArchiveTest, BranchesAreTheWindowsThirdFileAndGoWithIt) {
  const std::string branches = std::string("PBS\x1a\x01\x00\x00\x00", 8) + std::string(400, 'b');
  uint64_t one = 0;
  {
    auto archive = ProfileArchive::Open({.directory = dir_.string(), .max_windows = 2});
    ASSERT_TRUE(archive.ok());
    ProfileWindow w = Window(0);
    w.branches = branches;
    ASSERT_TRUE(archive->Add(w).ok());
    const ArchivedWindow& entry = archive->windows()[0];
    ASSERT_FALSE(entry.branches_path.empty());
    EXPECT_EQ(entry.branches_path.substr(0, entry.branches_path.size() - 4),
              entry.profile_path.substr(0, entry.profile_path.size() - 6));
    one = entry.bytes;
    EXPECT_EQ(one, fs::file_size(entry.profile_path) + fs::file_size(entry.labels_path) +
                       fs::file_size(entry.branches_path));
    EXPECT_EQ(archive->stats().windows_with_branches, 1u);
    auto read = archive->Read(entry);
    ASSERT_TRUE(read.ok()) << read.status().ToString();
    EXPECT_EQ(read->branches, branches);
    // A window without branches has no third file.
    ASSERT_TRUE(archive->Add(Window(1)).ok());
    EXPECT_TRUE(archive->windows()[1].branches_path.empty());
    EXPECT_EQ(FilesOnDisk().size(), 5u);
  }
  // An unfinished Add: branches written, profile never renamed into place.
  std::ofstream(dir_ / "01700000000000000000-00000050_x.pbs") << "half";
  // Someone else's recording in the folder: not named as ours, left alone.
  std::ofstream(dir_ / "notes.pbs") << "an admin's";
  auto archive = ProfileArchive::Open({.directory = dir_.string(), .max_windows = 2});
  ASSERT_TRUE(archive.ok());
  EXPECT_FALSE(fs::exists(dir_ / "01700000000000000000-00000050_x.pbs"));
  EXPECT_TRUE(fs::exists(dir_ / "notes.pbs"));
  EXPECT_EQ(archive->stats().foreign_files_ignored, 1u);
  ASSERT_EQ(archive->windows().size(), 2u);
  EXPECT_EQ(archive->windows()[0].bytes, one);
  auto read = archive->Read(archive->windows()[0]);
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  EXPECT_EQ(read->branches, branches);
  // Evicting the window deletes its branches too.
  const std::string evicted = archive->windows()[0].branches_path;
  ASSERT_TRUE(archive->Add(Window(2)).ok());
  EXPECT_FALSE(fs::exists(evicted));
  EXPECT_EQ(FilesOnDisk().size(), 5u);  // two windows' files and notes.pbs

  // The profile fits the bound, the profile with its branches does not: stored alone, counted.
  auto small = ProfileArchive::Open({.directory = (dir_ / "small").string(), .max_bytes = 400});
  ASSERT_TRUE(small.ok());
  ProfileWindow w = Window(3);
  w.branches = branches;
  ASSERT_TRUE(small->Add(w).ok());
  EXPECT_TRUE(small->windows()[0].branches_path.empty());
  EXPECT_EQ(small->stats().branches_rejected_too_large, 1u);
  EXPECT_EQ(small->stats().windows_with_branches, 0u);
}

}  // namespace
}  // namespace pathprof::fleet
