// The whole-file bar: every branch record of the corpus LBR files is used or its drop counted,
// and the reconstructed instruction count equals what `perf script -F ip,brstackinsn` prints.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <set>
#include <string>

#include "pathprof/decoders/lbr_replay.h"

#include "common/corpus.h"

namespace pathprof::decoders {
namespace {

namespace fs = std::filesystem;
const std::string kCorpus = pathprof::testing::CorpusPath("lbr/autofdo/");
const char kPropellerRecordedPath[] =
    "/build/work/11ef31a2a8be9640fa8d4c917e76f0db3923/google3/blaze-out/k8-opt/genfiles/devtools/"
    "crosstool/autofdo/testdata/propeller_sample_1.bin.gen";

// A --symfs-style directory with `binary` placed at `recorded` under it.
class SymfsDir {
 public:
  SymfsDir(const std::string& binary, const std::string& recorded) {
    dir_ = fs::temp_directory_path() / ("pathprof-lbr-" + std::to_string(::getpid()) + "-" +
                                        fs::path(binary).filename().string());
    fs::path dest = dir_ / fs::path(recorded).relative_path();
    fs::create_directories(dest.parent_path());
    fs::copy_file(binary, dest, fs::copy_options::overwrite_existing);
  }
  ~SymfsDir() {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  std::string path() const { return dir_.string(); }

 private:
  fs::path dir_;
};

LbrReplayResult Replay(const std::string& file, const std::string& binary_dir,
                       LbrReconstructor::RangeObserver on_range = {}) {
  LbrReplayOptions opt;
  opt.on_range = std::move(on_range);
  opt.images.binary_dir = binary_dir;
  opt.images.use_host_paths = false;
  opt.images.use_debuginfod = false;
  auto r = ReplayLbr(file, opt);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? *r : LbrReplayResult{};
}

// Counts the instruction lines perf prints, or -1 when perf is not installed.
long long PerfInstructionLines(const std::string& file, const std::string& symfs,
                               long long* mismatches) {
  if (std::system("perf version >/dev/null 2>&1") != 0) return -1;
  const std::string cmd =
      "perf script -i " + file + " -F ip,brstackinsn --symfs " + symfs + " 2>/dev/null";
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return -1;
  long long insns = 0;
  *mismatches = 0;
  char line[4096];
  while (fgets(line, sizeof line, p) != nullptr) {
    if (std::strstr(line, "insn:") != nullptr) ++insns;
    if (std::strstr(line, "mismatch") != nullptr) ++*mismatches;
  }
  pclose(p);
  return insns;
}

void ExpectEveryRecordAccountedFor(const LbrStats& s) {
  EXPECT_EQ(s.entries_emitted + s.entries_dropped_total(), s.entries) << s.ToString();
  EXPECT_EQ(s.ranges_walked + s.ranges_broken_total() + s.duplicate_ranges, s.ranges)
      << s.ToString();
}

TEST(LbrCorpus, PropellerSampleMatchesPerfScriptInstructionForInstruction) {
  PATHPROF_SKIP_WITHOUT_CORPUS("lbr/autofdo/propeller_sample_1.bin");
  PATHPROF_SKIP_WITHOUT_CORPUS("lbr/autofdo/propeller_sample_1.perfdata1");
  SymfsDir symfs(kCorpus + "propeller_sample_1.bin", kPropellerRecordedPath);
  const LbrReplayResult r = Replay(kCorpus + "propeller_sample_1.perfdata1", symfs.path());
  const LbrStats& s = r.lbr;
  EXPECT_EQ(s.samples, 3732u);  // samples with a branch stack: 3732 x 32 = 119,424
  EXPECT_EQ(s.entries, 119424u);
  ExpectEveryRecordAccountedFor(s);
  EXPECT_EQ(s.perf_style_instructions, 584640u) << s.ToString();
  EXPECT_EQ(s.ranges_broken[static_cast<size_t>(LbrRangeBreak::kMisaligned)], 0u);
  EXPECT_EQ(s.entries_dropped[static_cast<size_t>(LbrEntryDrop::kTargetMismatch)], 0u);
  EXPECT_EQ(s.entries_dropped[static_cast<size_t>(LbrEntryDrop::kNotABranch)], 0u);
  long long mismatches = 0;
  const long long perf =
      PerfInstructionLines(kCorpus + "propeller_sample_1.perfdata1", symfs.path(), &mismatches);
  if (perf < 0) GTEST_SKIP() << "perf is not installed; compared with the recorded 584,640 only";
  EXPECT_EQ(static_cast<long long>(s.perf_style_instructions), perf);
  EXPECT_EQ(mismatches, 0);
}

TEST(LbrCorpus, GzipTestLbrMatchesPerfScript) {
  PATHPROF_SKIP_WITHOUT_CORPUS("lbr/autofdo/test.lbr");
  PATHPROF_SKIP_WITHOUT_CORPUS("lbr/autofdo/test.binary");
  // AutoFDO's view of the same file: fall-through ranges inside the binary, by (begin, end).
  std::map<std::pair<uint64_t, uint64_t>, uint64_t> ranges;
  const LbrReplayResult r =
      Replay(kCorpus + "test.lbr", kCorpus, [&](uint32_t, uint64_t begin, uint64_t end) {
        if (begin >= 0x400000 && end < 0x40a000) ++ranges[{begin, end}];
      });  // the binary is found by basename
  const LbrStats& s = r.lbr;
  EXPECT_EQ(s.samples, 9232u);
  EXPECT_EQ(s.entries, 147712u);
  ExpectEveryRecordAccountedFor(s);
  EXPECT_EQ(s.perf_style_instructions, 1419585u) << s.ToString();
  EXPECT_EQ(ranges.size(), 357u);  // AutoFDO's distinct range count
  EXPECT_EQ((ranges[{0x404e80, 0x404e8e}]), 1134u);
  uint64_t total = 0;
  for (const auto& [range, n] : ranges) total += n;
  EXPECT_EQ(total, 134677u);
  EXPECT_EQ(s.ranges_broken[static_cast<size_t>(LbrRangeBreak::kMisaligned)], 0u);
  // perf itself, with the binary at the path its (old-style) MMAP record names.
  SymfsDir symfs(kCorpus + "test.binary", "/export/hda3/tmp/test.binary");
  long long mismatches = 0;
  const long long perf = PerfInstructionLines(kCorpus + "test.lbr", symfs.path(), &mismatches);
  if (perf < 0) GTEST_SKIP() << "perf is not installed; compared with the recorded 1,419,585 only";
  EXPECT_EQ(static_cast<long long>(s.perf_style_instructions), perf);
  EXPECT_EQ(mismatches, 0);
}

TEST(LbrCorpus, WrongBinaryIsDetectedNotDecoded) {
  PATHPROF_SKIP_WITHOUT_CORPUS("lbr/autofdo/test.binary");
  PATHPROF_SKIP_WITHOUT_CORPUS("lbr/autofdo/propeller_sample_1.perfdata1");
  // Pretend the gzip binary is the propeller binary: the stacks must not decode cleanly.
  SymfsDir symfs(kCorpus + "test.binary", kPropellerRecordedPath);
  const LbrReplayResult r = Replay(kCorpus + "propeller_sample_1.perfdata1", symfs.path());
  const LbrStats& s = r.lbr;
  ExpectEveryRecordAccountedFor(s);
  // test.binary is not PIE: its segments do not even cover the recorded mapping's code.
  EXPECT_LT(s.entries_emitted, s.entries / 2) << s.ToString();
  EXPECT_LT(s.perf_style_instructions, 584640u / 2);
}

}  // namespace
}  // namespace pathprof::decoders
