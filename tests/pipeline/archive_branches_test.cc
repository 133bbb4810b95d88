// Session::BranchesForArchive: what continuous mode keeps of a window's branch windows beside its
// pprof. Under the bound, every process keeps its newest windows in proportion to the branches
// it held; only the images those windows touch go with them; the meta records say what was kept
// of what was taken.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <string>

#include "loop_window.h"
#include "pathprof/core/pbs.h"
#include "pathprof/pipeline/offline_analysis.h"
#include "pathprof/pipeline/session.h"

namespace {

namespace pl = pathprof::pipeline;
using pathprof::BranchBatch;
using pathprof::ImageRecord;
using pathprof::MetaRecord;
using pathprof::PbsContents;
using pathprof::testing::LoopWindow;

constexpr uint32_t kBusy = 4242;  // LoopWindow's pid
constexpr uint32_t kQuiet = 5000;

// 30 windows of kBusy and 10 of kQuiet (16 branches each, times 1..40 interleaved), each
// process mapping the loop's page and one page no window touches.
std::string WriteRecording() {
  PbsContents c;
  for (uint32_t pid : {kBusy, kQuiet}) {
    c.images.push_back({pid, 0x1000, 0x2000, 0, "/nonexistent/loop", ""});
    c.images.push_back({pid, 0x900000, 0x901000, 0, "/nonexistent/untouched", ""});
  }
  for (uint64_t t = 1; t <= 40; ++t) {
    BranchBatch b = LoopWindow(t);
    if (t % 4 == 0) b.pid = kQuiet;
    c.batches.push_back(std::move(b));
  }
  const std::string path =
      ::testing::TempDir() + "archive_branches_" + std::to_string(getpid()) + ".pbs";
  EXPECT_TRUE(pathprof::WritePbsFile(path, c).ok());
  return path;
}

std::unique_ptr<pl::Session> Recording() {
  const std::string path = WriteRecording();
  std::vector<std::string> warnings;
  auto session = pl::SessionFromRecording("archive", path, pl::AnalyzeOptions{}, &warnings);
  std::remove(path.c_str());
  EXPECT_TRUE(session.ok()) << session.status().ToString();
  return session.ok() ? std::move(session.value()) : nullptr;
}

std::string Meta(const PbsContents& c, const std::string& key) {
  for (const MetaRecord& m : c.meta)
    if (m.key == key) return m.value;
  return "";
}

TEST(ArchiveBranches, UnderTheBoundEachProcessKeepsItsNewestInProportion) {
  auto session = Recording();
  ASSERT_NE(session, nullptr);
  // Half the branches held (640): kBusy held 3/4 of them (15 windows' worth), kQuiet 1/4 (5).
  const pl::Session::ArchivedBranches kept = session->BranchesForArchive(320);
  EXPECT_EQ(kept.windows_kept, 20u);
  EXPECT_EQ(kept.windows_held, 40u);
  EXPECT_EQ(kept.windows_taken, 40u);
  std::vector<uint64_t> busy, quiet;
  for (const BranchBatch& b : kept.recording.batches)
    (b.pid == kBusy ? busy : quiet).push_back(b.time_ns);
  std::sort(busy.begin(), busy.end());
  std::sort(quiet.begin(), quiet.end());
  ASSERT_EQ(busy.size(), 15u);
  ASSERT_EQ(quiet.size(), 5u);
  // The newest: kBusy's last 15 of 30 (times 21..39 but the multiples of 4), kQuiet's last 5.
  EXPECT_EQ(busy.front(), 21u);
  EXPECT_EQ(busy.back(), 39u);
  EXPECT_EQ(quiet, (std::vector<uint64_t>{24, 28, 32, 36, 40}));
  // Only the loop's page of each process: no window touched the other.
  ASSERT_EQ(kept.recording.images.size(), 2u);
  for (const ImageRecord& img : kept.recording.images) EXPECT_EQ(img.path, "/nonexistent/loop");
  EXPECT_EQ(Meta(kept.recording, "windows_kept"), "20");
  EXPECT_EQ(Meta(kept.recording, "windows_taken"), "40");
  // The bytes read back as the same recording.
  auto bytes = pathprof::PbsBytes(kept.recording);
  ASSERT_TRUE(bytes.ok());
  auto reader = pathprof::PbsReader::FromBytes(std::vector<uint8_t>(bytes->begin(), bytes->end()));
  ASSERT_TRUE(reader.ok());
  auto back = pathprof::ReadPbs(&*reader);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->batches.size(), 20u);
}

TEST(ArchiveBranches, ABoundAboveWhatIsHeldKeepsEverythingAndZeroKeepsNothing) {
  auto session = Recording();
  ASSERT_NE(session, nullptr);
  EXPECT_EQ(session->BranchesForArchive(1 << 20).windows_kept, 40u);
  const pl::Session::ArchivedBranches none = session->BranchesForArchive(0);
  EXPECT_EQ(none.windows_kept, 0u);
  EXPECT_TRUE(none.recording.batches.empty());
  EXPECT_TRUE(none.recording.images.empty());
}

}  // namespace
