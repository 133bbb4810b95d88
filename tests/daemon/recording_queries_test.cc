// One query, one document: each query command prints protobuf's JSON mapping of the same v1
// message whether the daemon answers it (a session imported from a recording) or pathctl answers
// it here from the recording itself, and on the same recording both documents agree. The
// recording is an exact trace of a real program (pathctl trace --exact), so the answers are
// deterministic: a difference is a difference in the code paths, not in sampling.
#include <google/protobuf/util/json_util.h>
#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>

#include <string>

#include "daemon_harness.h"
#include "pathprof/v1/profiler.pb.h"
#include "pathprof/v1/reports.pb.h"

namespace pathprof::daemon::testing {
namespace {

namespace v1 = pathprof::v1;

// Parses a --json document as `M`: fails on a field M lacks (ignore_unknown_fields off).
template <typename M>
::testing::AssertionResult Parse(const std::string& json, M* out) {
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = false;
  auto status = google::protobuf::util::JsonStringToMessage(json, out, options);
  if (!status.ok())
    return ::testing::AssertionFailure() << status.ToString() << " in: " << json.substr(0, 400);
  return ::testing::AssertionSuccess();
}

class RecordingQueries : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    char tmpl[] = "/tmp/pathprof-recording-queries-XXXXXX";
    dir_ = new std::string(mkdtemp(tmpl));
    pbs_ = new std::string(*dir_ + "/loop.pbs");
    trace_ = new CmdResult(Sh(kBin + "/pathctl trace --exact -o " + *pbs_ + " -- " + kBin +
                              "/example_loop_static 3000"));
  }
  static void TearDownTestSuite() {
    Sh("rm -rf " + *dir_);
    delete dir_;
    delete pbs_;
    delete trace_;
  }
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "tracing needs root (ptrace)";
    ASSERT_EQ(trace_->rc, 0) << trace_->out;
    ASSERT_TRUE(daemon_.Ready()) << daemon_.Log();
    auto imported = daemon_.Ctl("import " + *pbs_);
    ASSERT_EQ(imported.rc, 0) << imported.out << daemon_.Log();
    id_ = FirstLine(imported.out);
  }

  // Runs `query` (a command and its flags, with ARG where the session or recording goes) both
  // ways and parses both documents as M. `rc` is the exit status both must have.
  template <typename M>
  void Both(const std::string& query, M* daemon, M* here, int rc = 0) {
    auto with = [&](const std::string& arg) {
      std::string q = query;
      q.replace(q.find("ARG"), 3, arg);
      return q;
    };
    const CmdResult d = daemon_.Ctl(with(id_) + " --json");
    // The embedded answer connects nowhere: no --socket (Ctl would add it).
    const CmdResult h = Sh(kBin + "/pathctl " + with(*pbs_) + " --json");
    ASSERT_EQ(d.rc, rc) << d.out;
    ASSERT_EQ(h.rc, rc) << h.out;
    ASSERT_TRUE(Parse(d.out, daemon));
    ASSERT_TRUE(Parse(h.out, here));
    // Only the daemon's answer names a session (a recording is not a session resource); they
    // differ in nothing else.
    EXPECT_EQ(daemon->session(), "sessions/" + id_);
    EXPECT_EQ(here->session(), "");
    daemon->clear_session();
  }

  static ::testing::AssertionResult Same(const google::protobuf::Message& a,
                                         const google::protobuf::Message& b) {
    std::string diff;
    google::protobuf::util::MessageDifferencer d;
    d.ReportDifferencesToString(&diff);
    if (d.Compare(a, b)) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << diff;
  }

  static std::string* dir_;
  static std::string* pbs_;
  static CmdResult* trace_;
  Daemon daemon_;
  std::string id_;
};

std::string* RecordingQueries::dir_ = nullptr;
std::string* RecordingQueries::pbs_ = nullptr;
CmdResult* RecordingQueries::trace_ = nullptr;

TEST_F(RecordingQueries, HotPathsAgree) {
  v1::HotPaths d, h;
  Both("paths ARG --top 8 --blocks", &d, &h);
  // A profile clock: when each side read it.
  EXPECT_GT(d.compute_time().seconds(), 0);
  d.clear_compute_time();
  h.clear_compute_time();
  EXPECT_TRUE(Same(d, h));
  // An exact trace goes through the Hot Path Table: exact counts, and spin()'s loop on top.
  ASSERT_EQ(d.paths_size(), 8);
  EXPECT_EQ(d.estimator(), v1::PATH_ESTIMATOR_HOT_PATH_TABLE);
  EXPECT_EQ(d.paths(0).start().function(), "spin");
  EXPECT_GT(d.paths(0).blocks_size(), 0);
  EXPECT_EQ(d.paths(0).observations(), static_cast<uint64_t>(d.paths(0).estimate().value()));
}

TEST_F(RecordingQueries, HotSubpathsAgree) {
  v1::HotSubpaths d, h;
  Both("subpaths ARG --top 5", &d, &h);
  EXPECT_TRUE(Same(d, h));
  EXPECT_EQ(d.subpaths_size(), 5);
  EXPECT_GT(d.sampling_frequency(), 0);
}

TEST_F(RecordingQueries, HotCallPairsAgree) {
  v1::HotCallPairs d, h;
  Both("calls ARG --top 5", &d, &h);
  EXPECT_TRUE(Same(d, h));
  EXPECT_EQ(d.pairs_size(), 5);
}

TEST_F(RecordingQueries, HotMethodsAgree) {
  v1::HotMethods d, h;
  Both("methods ARG --top 5", &d, &h);
  EXPECT_TRUE(Same(d, h));
  // Entries counted from the branch stream (a recording has no stacks: no self weight).
  ASSERT_EQ(d.methods_size(), 5);
  EXPECT_GT(d.methods(0).entries().value(), 0);
  EXPECT_EQ(d.methods(0).self().value(), 0);
}

// A branch recording has no stack samples: both sides say so the same way (an empty tree, exit
// status 3).
TEST_F(RecordingQueries, CallingContextTreesAgree) {
  v1::CallingContextTree d, h;
  Both("tree ARG", &d, &h, 3);
  EXPECT_TRUE(Same(d, h));
  EXPECT_EQ(d.nodes_size(), 0);
}

// pathctl analyze reports a recording as the daemon answers it once imported: its report's
// tables are the daemon's documents, field for field (run's report is made by the same
// answers, api/answers.h, from its live session).
TEST_F(RecordingQueries, AnalyzeReportsWhatTheDaemonAnswers) {
  const CmdResult a = Sh(kBin + "/pathctl analyze " + *pbs_ + " --top 5 --json");
  ASSERT_EQ(a.rc, 0) << a.out;
  v1::RecordingReport report;
  ASSERT_TRUE(Parse(a.out, &report));
  ASSERT_EQ(report.processes_size(), 1) << a.out.substr(0, 2000);
  const v1::ProcessReport& here = report.processes(0);
  auto daemon = [&](const std::string& query, auto* out) {
    const CmdResult d = daemon_.Ctl(query + " " + id_ + " --top 5 --json");
    ASSERT_EQ(d.rc, 0) << d.out;
    ASSERT_TRUE(Parse(d.out, out));
    out->clear_session();
  };
  v1::HotPaths paths;
  daemon("paths --blocks", &paths);
  v1::HotPaths here_paths = here.hot_paths();
  paths.clear_compute_time();
  here_paths.clear_compute_time();
  EXPECT_TRUE(Same(paths, here_paths));
  v1::HotSubpaths subpaths;
  daemon("subpaths", &subpaths);
  EXPECT_TRUE(Same(subpaths, here.hot_subpaths()));
  v1::HotCallPairs pairs;
  daemon("calls", &pairs);
  EXPECT_TRUE(Same(pairs, here.hot_call_pairs()));
  v1::HotMethods methods;
  daemon("methods", &methods);
  EXPECT_TRUE(Same(methods, here.hot_methods()));
}

// The imported session is an ended session like any other, listed; a file that is not there is
// not found (exit 6) and named.
TEST_F(RecordingQueries, AnImportedRecordingIsAnEndedSession) {
  auto sessions = daemon_.Ctl("sessions --json");
  ASSERT_EQ(sessions.rc, 0) << sessions.out;
  EXPECT_NE(sessions.out.find("\"name\":\"sessions/" + id_ + "\""), std::string::npos)
      << sessions.out;
  auto missing = daemon_.Ctl("import " + *dir_ + "/no-such.pbs");
  EXPECT_EQ(missing.rc, 6) << missing.out;  // not found, as for a missing session
  EXPECT_NE(missing.out.find("no-such.pbs"), std::string::npos) << missing.out;
  // The same failure met by pathctl itself exits the same way (one ErrorCode -> exit mapping).
  auto here = Sh(kBin + "/pathctl paths " + *dir_ + "/no-such.pbs");
  EXPECT_EQ(here.rc, 6) << here.out;
  EXPECT_NE(here.out.find("no-such.pbs"), std::string::npos) << here.out;
}

// Only an admin may have the daemon read a file: a user gets PERMISSION_DENIED (exit 5) and the
// way to analyze the recording without the daemon.
TEST(RecordingImport, IsForAdminsOnly) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to run as a second user";
  const std::string as = EnsureTestUser();
  Daemon daemon{"", {"--socket-group", kTestGroup, "--admin-group", "pathprof-test-admins"}};
  ASSERT_TRUE(daemon.Ready()) << daemon.Log();
  auto r = daemon.Ctl("import /etc/hostname.pbs", as);
  EXPECT_EQ(r.rc, 5) << r.out;
  EXPECT_NE(r.out.find("only an admin"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace pathprof::daemon::testing
