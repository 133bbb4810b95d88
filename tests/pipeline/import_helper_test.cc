// The daemon's imports decoded in pathprof-import (pipeline/src/recording_import.h): the same
// stores and decode summary as a decode in this process, on a .pbs and on real LBR and PT
// recordings; the helper is nobody without capabilities under seccomp; a helper taken over (a
// wild write, an exec, a hang) ends that import alone; a requester who may not read the file
// is refused before any helper runs; and what a helper sends is checked (import_wire.h).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>
#include <string>
#include <thread>

#include "common/capable_user.h"
#include "common/corpus.h"
#include "common/proc_status.h"
#include "import_wire.h"
#include "import_wire.pb.h"
#include "pathprof/core/pbs.h"
#include "pathprof/core/procfs.h"
#include "pathprof/pipeline/offline_analysis.h"
#include "pathprof/pipeline/session.h"
#include "pathprof/stepping/helper_sandbox.h"

namespace pathprof::pipeline {
namespace {

namespace fs = std::filesystem;
namespace wire = import_wire;

// A root requester's import: the helper runs as nobody.
AnalyzeOptions InHelper(AnalyzeOptions o = {}) {
  o.decode_in_helper_for = decoders::FileCredentials{0, 0};
  return o;
}

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/pathprof-import-helper-XXXXXX";
    dir_ = mkdtemp(tmpl);
    chmod(dir_.c_str(), 0755);  // the helper (nobody) reads the binaries put here
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  const std::string& path() const { return dir_; }

 private:
  std::string dir_;
};

BranchBatch Loop(uint32_t pid, int iterations, bool window) {
  BranchBatch b;
  b.pid = b.tid = pid;
  b.window = window;
  b.time_ns = 1000 * pid;
  for (int i = 0; i < iterations; ++i) {
    b.events.push_back({0x401008, 0x401010, 7, 2, BranchKind::kConditional, false, false});
    b.events.push_back({0x401010, 0x401000, 9, 3, BranchKind::kConditional, true, i % 7 == 0});
    b.events.push_back({0x401020, 0x402000, 0, 1, BranchKind::kDirectCall, true, false});
    b.events.push_back({0x402004, 0x401025, 0, 2, BranchKind::kReturn, true, false});
  }
  return b;
}

// A .pbs of one process's loop of `iterations` (4 events each) in `dir`, readable by all (the
// helper may be nobody): its path.
std::string LoopPbs(const TempDir& dir, const std::string& name, int iterations) {
  PbsContents c;
  c.batches = {Loop(10, iterations, false)};
  const std::string path = dir.path() + "/" + name;
  EXPECT_TRUE(WritePbsFile(path, c).ok());
  chmod(path.c_str(), 0644);
  return path;
}

// Everything a decode reports and every store's hot paths, both ways.
void ExpectSame(const AnalyzeResult& here, const AnalyzeResult& helper) {
  const DecodeSummary& a = here.decode;
  const DecodeSummary& b = helper.decode;
  EXPECT_EQ(a.format, b.format);
  EXPECT_EQ(a.records, b.records);
  EXPECT_EQ(a.samples, b.samples);
  EXPECT_EQ(a.windows, b.windows);
  EXPECT_EQ(a.events, b.events);
  EXPECT_EQ(a.taken, b.taken);
  EXPECT_EQ(a.not_taken, b.not_taken);
  EXPECT_EQ(a.instructions, b.instructions);
  EXPECT_EQ(a.broken_windows, b.broken_windows);
  EXPECT_EQ(a.dropped_entries, b.dropped_entries);
  EXPECT_EQ(a.decode_errors, b.decode_errors);
  auto counters = [](std::map<std::string, uint64_t> c) {
    c.erase("clock_reads");  // each process's own
    return c;
  };
  EXPECT_EQ(counters(a.counters), counters(b.counters));
  EXPECT_EQ(a.warnings, b.warnings);
  ASSERT_EQ(here.stores.size(), helper.stores.size());
  HotPathsQuery q;
  q.top_k = 20;
  for (const auto& [pid, store] : here.stores) {
    ASSERT_TRUE(helper.stores.contains(pid)) << pid;
    const HotPathsResult x = store->HotPaths(q);
    const HotPathsResult y = helper.stores.at(pid)->HotPaths(q);
    ASSERT_EQ(x.paths.size(), y.paths.size()) << "pid " << pid;
    for (size_t i = 0; i < x.paths.size(); ++i) {
      EXPECT_EQ(x.paths[i].comm, y.paths[i].comm);
      EXPECT_EQ(x.paths[i].start.address, y.paths[i].start.address);
      EXPECT_EQ(x.paths[i].start.function, y.paths[i].start.function);
      EXPECT_EQ(x.paths[i].start.image, y.paths[i].start.image);
      EXPECT_EQ(x.paths[i].length, y.paths[i].length);
      EXPECT_EQ(x.paths[i].outcomes, y.paths[i].outcomes);
      EXPECT_EQ(x.paths[i].observations, y.paths[i].observations);
    }
  }
}

// The helper's decode, after checking it against one in this process.
AnalyzeResult CompareBothWays(const std::string& path, const AnalyzeOptions& options,
                              uint64_t at_least_events) {
  auto here = AnalyzeFile(path, options);
  EXPECT_TRUE(here.ok()) << here.status().ToString();
  auto helper = AnalyzeFile(path, InHelper(options));
  EXPECT_TRUE(helper.ok()) << helper.status().ToString();
  if (!here.ok() || !helper.ok()) return {};
  EXPECT_GE(here->decode.events, at_least_events);
  ExpectSame(*here, *helper);
  return std::move(*helper);
}

TEST(ImportHelper, APbsGivesWhatADecodeHereGives) {
  TempDir dir;
  PbsContents c;
  c.batches = {Loop(10, 3000, false), Loop(20, 500, false), Loop(10, 200, false)};
  c.images = {{10, 0x400000, 0x403000, 0, "/usr/bin/true", "\x01\x02"},
              {20, 0x400000, 0x403000, 0x1000, "/nonexistent/x", ""}};
  c.meta = {{"workload", "loops"}};
  const std::string path = dir.path() + "/loops.pbs";
  ASSERT_TRUE(WritePbsFile(path, c).ok());
  CompareBothWays(path, {}, 4 * 3700);
  // Sampled windows too (a window each: LBR-like).
  PbsContents w;
  for (int i = 0; i < 200; ++i) w.batches.push_back(Loop(30 + i % 3, 8, true));
  ASSERT_TRUE(WritePbsFile(dir.path() + "/windows.pbs", w).ok());
  CompareBothWays(dir.path() + "/windows.pbs", {}, 200 * 32);
}

// A real LBR recording (AutoFDO's propeller sample), its binary found by build-id in a binary
// directory the helper reads as nobody.
TEST(ImportHelper, AnLbrRecordingGivesWhatADecodeHereGives) {
  PATHPROF_SKIP_WITHOUT_CORPUS("lbr/autofdo/propeller_sample_1.bin");
  PATHPROF_SKIP_WITHOUT_CORPUS("lbr/autofdo/propeller_sample_1.perfdata1");
  TempDir symfs;
  fs::copy_file(testing::CorpusPath("lbr/autofdo/propeller_sample_1.bin"),
                symfs.path() + "/propeller_sample_1.bin");
  chmod((symfs.path() + "/propeller_sample_1.bin").c_str(), 0644);
  AnalyzeOptions o;
  o.binary_dir = symfs.path();
  auto helper =
      AnalyzeFile(testing::CorpusPath("lbr/autofdo/propeller_sample_1.perfdata1"), InHelper(o));
  ASSERT_TRUE(helper.ok()) << helper.status().ToString();
  // The binary was read by the helper: every range walked, as pathctl analyze reports.
  EXPECT_EQ(helper->decode.format, "perf.data/lbr");
  EXPECT_EQ(helper->decode.taken, 118458u);
  EXPECT_EQ(helper->decode.not_taken, 25315u);
  EXPECT_EQ(helper->decode.counters["images_build_id_mismatches"], 0u);
  CompareBothWays(testing::CorpusPath("lbr/autofdo/propeller_sample_1.perfdata1"), o, 118458);
}

TEST(ImportHelper, AnIntelPtRecordingGivesWhatADecodeHereGives) {
  PATHPROF_SKIP_WITHOUT_CORPUS("pt/quipper/perf.data.intel_pt-4.14");
  CompareBothWays(testing::CorpusPath("pt/quipper/perf.data.intel_pt-4.14"), {}, 0);
}

// The helper's own process, found among this process's children by name.
pid_t FindHelper(std::chrono::milliseconds within) {
  return testing::ChildNamed(getpid(), "pathprof-import", within);
}

std::string StatusLine(pid_t pid, const char* key) {
  return testing::ProcStatusLine(pid, key);
}

// With its hook holding it after its sandbox is entered, the helper is read from /proc: then
// the daemon's bound on its silence ends it, and the import fails saying so.
TEST(ImportHelper, TheHelperIsNobodyWithoutCapabilitiesUnderSeccompAndAHangIsBounded) {
#ifdef NDEBUG
  GTEST_SKIP() << "the helper's fault hook exists in builds with assertions only";
#endif
  TempDir dir;
  const std::string path = LoopPbs(dir, "a.pbs", 100);
  setenv("PATHPROF_IMPORT_FAULT", "hang", 1);
  AnalyzeOptions o = InHelper();
  o.helper_silence_ms = 2500;
  const auto started = std::chrono::steady_clock::now();
  auto import = std::async(std::launch::async, [&] { return AnalyzeFile(path, o); });
  const pid_t helper = FindHelper(std::chrono::seconds(3));
  ASSERT_GT(helper, 0) << "no pathprof-import child seen";
  // Its sandbox is entered before the hook: wait until the filter shows.
  for (int i = 0; i < 100 && StatusLine(helper, "Seccomp") != "2"; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  uid_t nobody_uid = 65534;
  EXPECT_EQ(StatusLine(helper, "Seccomp"), "2");
  EXPECT_EQ(StatusLine(helper, "NoNewPrivs"), "1");
  EXPECT_EQ(StatusLine(helper, "CapEff"), "0000000000000000");
  EXPECT_EQ(StatusLine(helper, "CapPrm"), "0000000000000000");
  const std::string uid = StatusLine(helper, "Uid");
  EXPECT_EQ(uid.substr(0, uid.find_first_of(" \t")), std::to_string(nobody_uid)) << uid;
  auto r = import.get();
  unsetenv("PATHPROF_IMPORT_FAULT");
  const double waited =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("sent nothing for 2500 ms"), std::string::npos)
      << r.status().ToString();
  EXPECT_NE(r.status().message().find("killed by signal 9"), std::string::npos)
      << r.status().ToString();
  EXPECT_LT(waited, 30.0);
  EXPECT_NE(kill(helper, 0), 0) << "the hung helper was left running";
}

// The packaged daemon is no root: it runs as `pathprof` with ambient capabilities, which an exec
// passes on. Its helper must drop them all the same: here a child made that way (a non-root
// user with CAP_DAC_READ_SEARCH, CAP_SETUID and CAP_SETGID ambient) imports, and the helper's
// /proc status is read while its hook holds it.
TEST(ImportHelper, AHelperOfANonRootProcessWithCapabilitiesHasNone) {
#ifdef NDEBUG
  GTEST_SKIP() << "the helper's fault hook exists in builds with assertions only";
#endif
  if (geteuid() != 0) GTEST_SKIP() << "making a non-root process with capabilities needs root";
  TempDir dir;
  const std::string path = LoopPbs(dir, "a.pbs", 100);
  constexpr uid_t kUser = 65533;  // not nobody: the helper becomes the requester, nobody
  const std::string got =
      testing::InChildAsCapableUser(kUser, {CAP_DAC_READ_SEARCH, CAP_SETUID, CAP_SETGID}, [&] {
        std::string out = stepping::HoldsPrivilege() ? "privileged" : "plain";
        setenv("PATHPROF_IMPORT_FAULT", "hang", 1);
        AnalyzeOptions o;
        o.decode_in_helper_for = decoders::FileCredentials{65534, 65534};
        o.helper_silence_ms = 2000;
        // Neither this process's kill nor the parent-death signal reaches a helper that became
        // another user (both are permission-checked): its deadline ends it.
        o.helper_deadline_ms = 4000;
        std::string failure;
        std::thread import([&] {
          auto r = AnalyzeFile(path, o);
          failure = r.ok() ? "succeeded" : r.status().message();
        });
        const pid_t helper = FindHelper(std::chrono::seconds(3));
        for (int i = 0; i < 100 && StatusLine(helper, "Seccomp") != "2"; ++i)
          std::this_thread::sleep_for(std::chrono::milliseconds(20));
        const std::string uid = StatusLine(helper, "Uid");
        out += " uid " + uid.substr(0, uid.find_first_of(" \t")) + " CapEff " +
               StatusLine(helper, "CapEff") + " CapAmb " + StatusLine(helper, "CapAmb") +
               " Seccomp " + StatusLine(helper, "Seccomp");
        import.join();
        // This process may not kill a helper that became nobody (no CAP_KILL): the import
        // ends at the silence bound all the same, saying so, and the helper at its deadline.
        out += failure.find("could not be killed") != std::string::npos ? " unkillable-reported"
                                                                        : " [" + failure + "]";
        return out;
      });
  EXPECT_EQ(got,
            "privileged uid 65534 CapEff 0000000000000000 CapAmb 0000000000000000 Seccomp 2 "
            "unkillable-reported");
}

// A helper that nobody may kill ends itself: a SIGKILL timer at its deadline, armed before its
// sandbox (which refuses to disarm it).
TEST(ImportHelper, AHungHelperEndsItselfAtItsDeadline) {
#ifdef NDEBUG
  GTEST_SKIP() << "the helper's fault hook exists in builds with assertions only";
#endif
  TempDir dir;
  const std::string path = LoopPbs(dir, "a.pbs", 100);
  setenv("PATHPROF_IMPORT_FAULT", "hang", 1);
  AnalyzeOptions o = InHelper();
  o.helper_silence_ms = 60'000;
  o.helper_deadline_ms = 1500;
  const auto started = std::chrono::steady_clock::now();
  auto r = AnalyzeFile(path, o);
  unsetenv("PATHPROF_IMPORT_FAULT");
  const double took =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("killed by signal 9"), std::string::npos)
      << r.status().ToString();
  EXPECT_GE(took, 1.4);
  EXPECT_LT(took, 20.0);
}

// What an exploit of a parser would do, at the helper's first byte of the recording: the
// import fails naming the helper's end; the next import goes on as before.
TEST(ImportHelper, AWildWriteOrAnExecEndsThatImportAlone) {
#ifdef NDEBUG
  GTEST_SKIP() << "the helper's fault hook exists in builds with assertions only";
#endif
  TempDir dir;
  const std::string path = LoopPbs(dir, "a.pbs", 100);
  setenv("PATHPROF_IMPORT_FAULT", "exec", 1);
  auto exec = AnalyzeFile(path, InHelper());
  setenv("PATHPROF_IMPORT_FAULT", "write", 1);
  auto write = AnalyzeFile(path, InHelper());
  unsetenv("PATHPROF_IMPORT_FAULT");
  ASSERT_FALSE(exec.ok());
  // The filter kills an exec outright (SIGSYS).
  EXPECT_NE(exec.status().message().find("killed by signal 31"), std::string::npos)
      << exec.status().ToString();
  ASSERT_FALSE(write.ok());
  EXPECT_NE(write.status().message().find("the helper"), std::string::npos)
      << write.status().ToString();
  EXPECT_EQ(write.status().message().find("exited with status 0"), std::string::npos)
      << write.status().ToString();
  auto after = AnalyzeFile(path, InHelper());
  ASSERT_TRUE(after.ok()) << after.status().ToString();
  EXPECT_EQ(after->decode.events, 400u);
}

// The file is opened with the requester's rights before any helper runs.
TEST(ImportHelper, ARequesterWhoMayNotReadTheFileIsRefused) {
  TempDir dir;
  const std::string path = LoopPbs(dir, "private.pbs", 10);
  chmod(path.c_str(), 0600);
  AnalyzeOptions o;
  o.decode_in_helper_for = decoders::FileCredentials{65534, 65534};
  auto r = AnalyzeFile(path, o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kPermission) << r.status().ToString();
  EXPECT_NE(r.status().message().find("private.pbs"), std::string::npos);
  EXPECT_EQ(FindHelper(std::chrono::milliseconds(0)), -1);
  // And a damaged file is the helper's decode error, naming the file.
  std::ofstream(dir.path() + "/bad.pbs") << "PBS\x1a not a stream";
  chmod((dir.path() + "/bad.pbs").c_str(), 0644);
  auto bad = AnalyzeFile(dir.path() + "/bad.pbs", InHelper());
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("bad.pbs"), std::string::npos) << bad.status().ToString();
}

// Frames a helper taken over could send, each refused with what was wrong.
std::string Framed(const std::string& payload) {
  const auto n = static_cast<uint32_t>(payload.size());
  std::string out = {static_cast<char>(n), static_cast<char>(n >> 8), static_cast<char>(n >> 16),
                     static_cast<char>(n >> 24)};
  return out + payload;
}

Result<bool> ReadOne(const std::string& bytes, wire::Frame* frame) {
  int p[2];
  if (pipe(p) != 0) return Error(ErrorCode::kIo, "pipe");
  std::thread writer([&] {
    (void)!write(p[1], bytes.data(), bytes.size());
    close(p[1]);
  });
  wire::Reader reader(p[0]);
  auto r = reader.Next(2000, frame);
  writer.join();
  close(p[0]);
  return r;
}

TEST(ImportWire, HostileFramesAreRefusedWithWhatWasWrong) {
  BranchBatch good = Loop(7, 3, false);
  wire::Frame frame;
  auto ok = ReadOne(Framed(wire::Serialize(good)), &frame);
  ASSERT_TRUE(ok.ok() && *ok) << ok.status().ToString();
  EXPECT_EQ(std::get<BranchBatch>(frame), good);

  auto refused = [&](const std::string& bytes, const std::string& why) {
    wire::Frame f;
    auto r = ReadOne(bytes, &f);
    ASSERT_FALSE(r.ok()) << why << ": accepted";
    EXPECT_NE(r.status().message().find(why), std::string::npos) << r.status().ToString();
  };
  auto batch_with = [&](auto&& edit) -> std::string {
    wire::pb::Frame f;
    EXPECT_TRUE(f.ParseFromString(wire::Serialize(good)));
    edit(f.mutable_batch());
    return Framed(f.SerializeAsString());
  };
  std::string bytes;
  bytes = batch_with([](wire::pb::Batch* b) { b->add_from(1); });
  refused(bytes, "columns differ");
  bytes = batch_with([](wire::pb::Batch* b) { (*b->mutable_kinds())[0] = 8; });
  refused(bytes, "unknown branch kind (8)");
  bytes = batch_with([](wire::pb::Batch* b) { (*b->mutable_flags())[1] = 4; });
  refused(bytes, "unknown event flags");
  bytes = batch_with([](wire::pb::Batch* b) { b->set_instructions(2, 70000); });
  refused(bytes, "more than 65535 instructions");
  {
    wire::pb::Frame f;
    f.mutable_begin()->set_windows(9);
    refused(Framed(f.SerializeAsString()), "unknown kind of windows (9)");
    f.mutable_begin()->set_windows(0);
    f.mutable_begin()->add_processes()->set_pid(3);
    f.mutable_begin()->add_processes()->set_pid(3);
    f.mutable_begin()->mutable_processes(0)->set_comm("a");
    refused(Framed(f.SerializeAsString()), "process 3 twice");
    wire::pb::Frame m;
    auto* map = m.mutable_begin()->add_processes()->add_mappings();
    map->set_start(~0ull - 5);
    map->set_len(100);
    refused(Framed(m.SerializeAsString()), "wraps around");
    wire::pb::Frame e;
    e.mutable_failure()->set_code(99);
    refused(Framed(e.SerializeAsString()), "unknown code (99)");
  }
  refused(Framed(""), "an empty frame");
  refused(Framed("\xff\xff\xff"), "not a Frame message");
  refused(std::string("\xff\xff\xff\x7f", 4), "a frame of 2147483647 bytes");
  refused(Framed(wire::Serialize(good)).substr(0, 20), "ended inside a frame");
}

}  // namespace
}  // namespace pathprof::pipeline
