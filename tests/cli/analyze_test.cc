// Runs `pathctl analyze` as a user would on recordings with known contents: the propeller LBR
// corpus file (binary placed at its recorded path under --binary-dir), a real Intel PT
// recording without its binaries, and a .pbs exact trace of examples/loop, directly and through
// the synthesized Intel PT route (--via-pt), which must agree with the direct analysis. The JSON
// report is parsed back as pathprof.v1.RecordingReport, as any consumer would read it.
#include <google/protobuf/util/json_util.h>
#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <regex>
#include <string>

#include "common/corpus.h"
#include "common/run_command.h"
#include "pathprof/v1/reports.pb.h"

namespace {

namespace fs = std::filesystem;

using CmdResult = pathprof::testing::CommandResult;

CmdResult Run(const std::string& cmd) {
  return pathprof::testing::RunCommand(cmd + " 2>/dev/null");
}

CmdResult Pathctl(const std::string& args) {
  return Run(std::string(PATHPROF_BIN_DIR) + "/pathctl " + args);
}

namespace v1 = pathprof::v1;

// The report on stdout, parsed strictly; a report that does not parse fails the test.
v1::RecordingReport Parse(const CmdResult& r) {
  v1::RecordingReport report;
  const auto status = google::protobuf::util::JsonStringToMessage(r.out, &report);
  EXPECT_TRUE(status.ok()) << status.ToString() << ": " << r.out.substr(0, 600);
  return report;
}

// A decode figure by name: a DecodeSummary field, or a counter, decode error, dropped entry or
// broken window by its reason; "<missing NAME>" when there is none.
std::string Decoded(const v1::RecordingReport& report, const std::string& name) {
  const v1::DecodeSummary& d = report.decode();
  const std::map<std::string, std::string> fields = {
      {"format", d.format()},
      {"records", std::to_string(d.records())},
      {"samples", std::to_string(d.samples())},
      {"windows", std::to_string(d.windows())},
      {"events", std::to_string(d.events())},
      {"taken", std::to_string(d.taken())},
      {"not_taken", std::to_string(d.not_taken())},
      {"instructions", std::to_string(d.instructions())}};
  if (auto it = fields.find(name); it != fields.end()) return it->second;
  for (const auto* rows :
       {&d.counters(), &d.decode_errors(), &d.dropped_entries(), &d.broken_windows()})
    for (const v1::DropCount& row : *rows)
      if (row.reason() == name) return std::to_string(row.count());
  return "<missing " + name + ">";
}
std::string Decoded(const CmdResult& r, const std::string& name) {
  return Decoded(Parse(r), name);
}

// The processes' tables, without what differs from run to run: when each was read, and the
// CPU time the pipeline took.
std::string Tables(v1::RecordingReport report) {
  std::string out;
  for (v1::ProcessReport& p : *report.mutable_processes()) {
    p.mutable_hot_paths()->clear_compute_time();
    p.mutable_stats()->clear_pipeline_cpu_seconds();
    out += p.SerializeAsString();
  }
  return out;
}

const std::string kCorpus = pathprof::testing::CorpusDir();
const char kPropellerRecordedPath[] =
    "/build/work/11ef31a2a8be9640fa8d4c917e76f0db3923/google3/blaze-out/k8-opt/genfiles/devtools/"
    "crosstool/autofdo/testdata/propeller_sample_1.bin.gen";

class TempDir {
 public:
  explicit TempDir(const std::string& tag) {
    dir_ = fs::temp_directory_path() / ("pathprof-analyze-" + std::to_string(::getpid()) + tag);
    fs::create_directories(dir_);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  const fs::path& path() const { return dir_; }

 private:
  fs::path dir_;
};

TEST(AnalyzeCli, PropellerLbrFileReportsItsHotPathsAndEveryRecord) {
  PATHPROF_SKIP_WITHOUT_CORPUS("lbr/autofdo/propeller_sample_1.bin");
  PATHPROF_SKIP_WITHOUT_CORPUS("lbr/autofdo/propeller_sample_1.perfdata1");
  TempDir symfs("-propeller");
  const fs::path dest = symfs.path() / fs::path(kPropellerRecordedPath).relative_path();
  fs::create_directories(dest.parent_path());
  fs::copy_file(kCorpus + "/lbr/autofdo/propeller_sample_1.bin", dest);
  const CmdResult r = Pathctl("analyze --json --top 5 --binary-dir " + symfs.path().string() + " " +
                              kCorpus + "/lbr/autofdo/propeller_sample_1.perfdata1");
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_EQ(Decoded(r, "format"), "perf.data/lbr");
  EXPECT_EQ(Decoded(r, "samples"), "3732");
  EXPECT_EQ(Decoded(r, "lbr_entries"), "119424");
  EXPECT_EQ(Decoded(r, "lbr_entries_emitted"), "118458");
  EXPECT_EQ(Decoded(r, "perf_style_instructions"), "584640");
  EXPECT_EQ(Decoded(r, "images_build_id_mismatches"), "0");
  // Every record used or counted: 966 newest entries repeat their neighbour (a kernel quirk).
  EXPECT_EQ(Decoded(r, "records"), "5619");
  EXPECT_EQ(Decoded(r, "windows"), "3732");
  EXPECT_EQ(Decoded(r, "taken"), "118458");
  EXPECT_EQ(Decoded(r, "not_taken"), "25315");
  EXPECT_EQ(Decoded(r, "duplicate_entry"), "966");
  EXPECT_EQ(118458 + 966, 119424);
  EXPECT_EQ(Parse(r).decode().broken_windows_size(), 0);
  // Hot paths: the window estimator over 3,732 windows; the hottest is main's loop (0x1777),
  // seen whole 7,725 times, then compute_flag's two paths.
  const v1::RecordingReport report = Parse(r);
  ASSERT_EQ(report.processes_size(), 1);
  const v1::ProcessReport& process = report.processes(0);
  EXPECT_EQ(process.comm(), "propeller_sampl");
  EXPECT_EQ(process.hot_paths().estimator(), v1::PATH_ESTIMATOR_WINDOWS);
  EXPECT_EQ(process.hot_paths().paths_distinct(), 4);
  ASSERT_GT(process.hot_paths().paths_size(), 0);
  const v1::HotPath& first = process.hot_paths().paths(0);
  EXPECT_EQ(first.start().function(), "main");
  EXPECT_EQ(first.start().offset(), 55);
  EXPECT_EQ(first.length(), 6);
  EXPECT_EQ(first.outcomes(), 0b111110u);  // not taken, then taken five times
  EXPECT_EQ(first.observations(), 7725);
  EXPECT_EQ(first.start().image(), kPropellerRecordedPath);
  // The one call pair: main+0x47 -> compute_flag, which is also the hottest method.
  ASSERT_EQ(process.hot_call_pairs().pairs_size(), 1);
  const v1::CallPair& pair = process.hot_call_pairs().pairs(0);
  EXPECT_EQ(pair.call_site().function(), "main");
  EXPECT_EQ(pair.call_site().offset(), 71);
  EXPECT_EQ(pair.target().function(), "compute_flag");
  ASSERT_GT(process.hot_methods().methods_size(), 0);
  EXPECT_EQ(process.hot_methods().methods(0).function().function(), "compute_flag");
}

// --binary-dir at the corpus directory as it is: the propeller recording names its binary
// .../propeller_sample_1.bin.gen and is found by the build-id in its perf.data header, also from
// the corpus root two levels up; test.lbr (2.6.34, no build-ids) finds test.binary by basename.
TEST(AnalyzeCli, BinaryDirIsSearchedByBuildIdThenName) {
  PATHPROF_SKIP_WITHOUT_CORPUS("lbr/autofdo/propeller_sample_1.bin");
  PATHPROF_SKIP_WITHOUT_CORPUS("lbr/autofdo/propeller_sample_1.perfdata1");
  PATHPROF_SKIP_WITHOUT_CORPUS("lbr/autofdo/test.binary");
  PATHPROF_SKIP_WITHOUT_CORPUS("lbr/autofdo/test.lbr");
  const std::string dir = kCorpus + "/lbr/autofdo";
  const CmdResult propeller = Pathctl("analyze --json --top 1 --binary-dir " + dir + " " + dir +
                                      "/propeller_sample_1.perfdata1");
  ASSERT_EQ(propeller.rc, 0) << propeller.out;
  EXPECT_EQ(Decoded(propeller, "perf_style_instructions"), "584640");
  EXPECT_EQ(Decoded(propeller, "images_found_by_build_id"), "1");
  const CmdResult gzip =
      Pathctl("analyze --json --top 1 --binary-dir " + dir + " " + dir + "/test.lbr");
  ASSERT_EQ(gzip.rc, 0) << gzip.out;
  EXPECT_EQ(Decoded(gzip, "perf_style_instructions"), "1419585");
  EXPECT_EQ(Decoded(gzip, "images_found_by_build_id"), "0");
  const CmdResult from_root = Pathctl("analyze --json --top 1 --binary-dir " + kCorpus + " " + dir +
                                      "/propeller_sample_1.perfdata1");
  ASSERT_EQ(from_root.rc, 0) << from_root.out;
  EXPECT_EQ(Decoded(from_root, "perf_style_instructions"), "584640");
}

// Clocks are read per batch, not per sample: on a host whose thread clock is a system call
// (1.3 us each), two reads per sample once made 7,464 reads on this file (3,732 samples). Under the
// simulated slow-clock quirk every read is a real system call.
TEST(AnalyzeCli, ClockReadsArePerBatchNotPerSample) {
  PATHPROF_SKIP_WITHOUT_CORPUS("lbr/autofdo/propeller_sample_1.bin");
  PATHPROF_SKIP_WITHOUT_CORPUS("lbr/autofdo/propeller_sample_1.perfdata1");
  TempDir dir("-clock");
  const fs::path bin = dir.path() / fs::path(kPropellerRecordedPath).relative_path();
  fs::create_directories(bin.parent_path());
  fs::copy_file(kCorpus + "/lbr/autofdo/propeller_sample_1.bin", bin);
  const CmdResult r = ::Run("PATHPROF_SIMULATE_QUIRKS=slow-clock " + std::string(PATHPROF_BIN_DIR) +
                            "/pathctl analyze --json --binary-dir " + dir.path().string() + " " +
                            kCorpus + "/lbr/autofdo/propeller_sample_1.perfdata1");
  ASSERT_EQ(r.rc, 0) << r.out;
  const long long samples = std::stoll(Decoded(r, "samples"));
  const long long reads = std::stoll(Decoded(r, "clock_reads"));
  EXPECT_EQ(samples, 3732);
  EXPECT_LT(reads, samples / 20) << "clock reads per sample, not per batch";
}

TEST(AnalyzeCli, IntelPtRecordingWithoutItsBinariesCountsDecodeErrors) {
  PATHPROF_SKIP_WITHOUT_CORPUS("pt/quipper/perf.data.intel_pt-4.14");
  const CmdResult r = Pathctl("analyze --json " + kCorpus + "/pt/quipper/perf.data.intel_pt-4.14");
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_EQ(Decoded(r, "format"), "perf.data/intel-pt");
  EXPECT_EQ(Decoded(r, "samples"), "2");  // two AUXTRACE buffers
  EXPECT_EQ(Decoded(r, "pt_aux_bytes"), std::to_string(12240 + 137728));
  // 10 PSB syncs, each ending at code no image covers (9 executable mappings, none here); only
  // one event (an asynchronous transfer between two known addresses) comes out.
  EXPECT_EQ(Decoded(r, "pt_syncs"), "10");
  EXPECT_EQ(Decoded(r, "pt: no memory mapped at this address"), "10");
  EXPECT_EQ(Decoded(r, "images_not_found"), "9");
  EXPECT_EQ(Decoded(r, "events"), "1");
  const v1::RecordingReport report = Parse(r);
  ASSERT_EQ(report.processes_size(), 1);
  EXPECT_EQ(report.processes(0).comm(), "echo");
}

TEST(AnalyzeCli, ExactTraceOfTheLoopExampleDirectlyAndThroughSynthesizedPt) {
  TempDir dir("-pbs");
  const std::string pbs = (dir.path() / "loop.pbs").string();
  const CmdResult trace =
      Pathctl("trace --exact -o " + pbs + " -- " + PATHPROF_BIN_DIR + "/example_loop_static 3000");
  if (trace.rc != 0) GTEST_SKIP() << "cannot trace here (ptrace refused?): " << trace.out;

  const CmdResult direct = Pathctl("analyze --json --top 3 " + pbs);
  ASSERT_EQ(direct.rc, 0) << direct.out;
  EXPECT_EQ(Decoded(direct, "format"), "pbs");
  const v1::RecordingReport direct_report = Parse(direct);
  ASSERT_EQ(direct_report.processes_size(), 1);
  const v1::HotPaths& paths = direct_report.processes(0).hot_paths();
  EXPECT_EQ(paths.estimator(), v1::PATH_ESTIMATOR_HOT_PATH_TABLE);
  // spin(3000): the back-edge is taken 2999 times; the first of those ends the path from the
  // function entry, the other 2998 end the loop body's path (from the loop head), the hottest.
  ASSERT_GT(paths.paths_size(), 0);
  EXPECT_EQ(paths.paths(0).start().function(), "spin");
  EXPECT_NE(paths.paths(0).start().file().find("loop.c"), std::string::npos);
  EXPECT_EQ(paths.paths(0).estimate().value(), 2998);

  const CmdResult via_pt = Pathctl("analyze --json --top 3 --via-pt " + pbs);
  ASSERT_EQ(via_pt.rc, 0) << via_pt.out;
  EXPECT_EQ(Decoded(via_pt, "format"), "pbs/synthesized-pt");
  // The PT decoder gives back every branch of the exact stream.
  EXPECT_EQ(Decoded(via_pt, "events"), Decoded(direct, "events"));
  EXPECT_EQ(Decoded(via_pt, "taken"), Decoded(direct, "taken"));
  const v1::RecordingReport pt_report = Parse(via_pt);
  EXPECT_EQ(pt_report.decode().decode_errors_size(), 0) << via_pt.out.substr(0, 600);
  // And the same hot paths.
  ASSERT_EQ(pt_report.processes_size(), 1);
  v1::HotPaths pt_paths = pt_report.processes(0).hot_paths(), direct_paths = paths;
  pt_paths.clear_compute_time();
  direct_paths.clear_compute_time();
  std::string diff;
  google::protobuf::util::MessageDifferencer differ;
  differ.ReportDifferencesToString(&diff);
  EXPECT_TRUE(differ.Compare(pt_paths, direct_paths)) << diff;
}

TEST(AnalyzeCli, BadInputIsAClearErrorNotACrash) {
  TempDir dir("-bad");
  const std::string junk = (dir.path() / "junk.data").string();
  FILE* f = std::fopen(junk.c_str(), "w");
  ASSERT_NE(f, nullptr);
  std::fputs("this is not a perf.data file", f);
  std::fclose(f);
  EXPECT_EQ(Pathctl("analyze " + junk).rc, 1);
  EXPECT_EQ(Pathctl("analyze").rc, 2);
  EXPECT_EQ(Pathctl("analyze --top 0 " + junk).rc, 2);
}

// Input that never ends or is no recording at all is refused at once, and a stream is held in
// memory only up to its cap: `pathctl analyze /dev/zero` once grew past 776 MB in 3 s.
// Exit codes by the one ErrorCode mapping: a device is an invalid argument (2), a stream over
// its bound a limit reached (5), bytes that are no recording a failure (1).
// Two tests: this one needs no corpus file, so it runs without the corpus too; the cap needs a
// stream that starts as a real recording, the corpus's Intel PT file (below).
TEST(AnalyzeCli, DevicesAreRefusedAndWrongStreamsEndAtOnce) {
  const std::string pathctl = std::string(PATHPROF_BIN_DIR) + "/pathctl";
  CmdResult r = pathprof::testing::RunCommand("timeout 20 " + pathctl + " analyze /dev/zero 2>&1");
  EXPECT_EQ(r.rc, 2) << r.out;
  EXPECT_NE(r.out.find("/dev/zero is a character device"), std::string::npos) << r.out;
  r = pathprof::testing::RunCommand("timeout 20 " + pathctl + " analyze - < /dev/zero 2>&1");
  EXPECT_EQ(r.rc, 2) << r.out;
  EXPECT_NE(r.out.find("character device"), std::string::npos) << r.out;
  // An endless stream of the wrong bytes ends at its first bytes, not at the cap.
  r = pathprof::testing::RunCommand("yes | timeout 20 " + pathctl + " analyze - 2>&1");
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_NE(r.out.find("is not a recording: it starts with bytes 790a790a"), std::string::npos)
      << r.out;
}

// A stream that starts right (a real recording) but goes on past the cap.
TEST(AnalyzeCli, AStreamPastItsCapIsRefused) {
  PATHPROF_SKIP_WITHOUT_CORPUS("pt/quipper/perf.data.intel_pt-4.14");
  const std::string pathctl = std::string(PATHPROF_BIN_DIR) + "/pathctl";
  const std::string pt = kCorpus + "/pt/quipper/perf.data.intel_pt-4.14";
  const CmdResult r =
      pathprof::testing::RunCommand("cat " + pt + " /dev/zero | head -c 3000000 | timeout 20 " +
                                    pathctl + " analyze - --max-stream-mb 1 2>&1");
  EXPECT_EQ(r.rc, 5) << r.out;
  EXPECT_NE(r.out.find("longer than the 1 MiB"), std::string::npos) << r.out;
  EXPECT_EQ(Pathctl("analyze --max-stream-mb 0 " + pt).rc, 2);
}

// The same Intel PT trace in file form and in pipe form (made here by `perf inject -o -`, which
// writes perf's pipe format) gives the same AUX bytes and the same decode, read from a file or
// through a real pipe on stdin. The corpus's own piped file is another recording (tid 3587, not
// 3174): `perf report -D` lists its two AUXTRACE buffers as 76,400 and 68,192 bytes, and so do we.
TEST(AnalyzeCli, PipeModeGivesTheSameAuxBytesAndDecodeAsFileMode) {
  PATHPROF_SKIP_WITHOUT_CORPUS("pt/quipper/perf.data.intel_pt-4.14");
  PATHPROF_SKIP_WITHOUT_CORPUS("pt/quipper/perf.data.piped.intel_pt-4.14");
  const std::string pt = kCorpus + "/pt/quipper/perf.data.intel_pt-4.14";
  const CmdResult corpus_pipe =
      Pathctl("analyze --json " + kCorpus + "/pt/quipper/perf.data.piped.intel_pt-4.14");
  ASSERT_EQ(corpus_pipe.rc, 3) << corpus_pipe.out;  // no binaries: no branch comes out
  EXPECT_EQ(Decoded(corpus_pipe, "pt_aux_bytes"), std::to_string(76400 + 68192));

  if (::Run("command -v perf").rc != 0)
    GTEST_SKIP() << "perf is not installed (Debian: linux-perf)";
  TempDir dir("-pipe");
  const std::string piped = (dir.path() / "piped.data").string();
  ASSERT_EQ(::Run("perf inject -i " + pt + " -o - > " + piped).rc, 0);
  // In pipe mode perf inject writes this host's CPUID feature, not the recording's, and the PT
  // decoder applies errata by CPU: give the copy the recording's CPU back (the string field is
  // zero-padded to 64 bytes, so it is rewritten in place).
  {
    std::FILE* f = std::fopen(piped.c_str(), "r+b");
    ASSERT_NE(f, nullptr);
    std::string bytes;
    char buf[65536];
    for (size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;) bytes.append(buf, n);
    std::smatch m;
    ASSERT_TRUE(std::regex_search(bytes, m,
                                  std::regex("(GenuineIntel|AuthenticAMD|HygonGenuine),[0-9,]+")));
    const std::string recorded = "GenuineIntel,6,78,3";
    std::string field = recorded;
    field.resize(std::max<size_t>(recorded.size(), m.length()) + 1, '\0');
    for (size_t i = m.length(); i < field.size(); ++i)
      ASSERT_EQ(bytes[m.position() + i], '\0') << "no padding after the CPUID string";
    std::fseek(f, static_cast<long>(m.position()), SEEK_SET);
    std::fwrite(field.data(), 1, field.size(), f);
    std::fclose(f);
  }
  const CmdResult file = Pathctl("analyze --json " + pt);
  const CmdResult pipe_file = Pathctl("analyze --json " + piped);
  const CmdResult pipe_stdin =
      ::Run("cat " + piped + " | " + PATHPROF_BIN_DIR + "/pathctl analyze --json -");
  ASSERT_EQ(file.rc, 0) << file.out;
  ASSERT_EQ(pipe_file.rc, 0) << pipe_file.out;
  ASSERT_EQ(pipe_stdin.rc, 0) << pipe_stdin.out;
  for (const CmdResult* other : {&pipe_file, &pipe_stdin}) {
    EXPECT_EQ(Decoded(*other, "pt_aux_bytes"), std::to_string(12240 + 137728));
    for (const char* key : {"format", "samples", "events", "taken", "pt_syncs", "pt_gaps",
                            "pt_async_transfers", "pt: no memory mapped at this address"})
      EXPECT_EQ(Decoded(*other, key), Decoded(file, key)) << key;
    // Every decoded table is the same: the report after the decode statistics.
    EXPECT_EQ(Tables(Parse(*other)), Tables(Parse(file)));
  }
}

}  // namespace
