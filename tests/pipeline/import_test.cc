// A recording imported as a session (SessionManager::Import, Session::FromRecording): ended from
// the start, one store per recorded process, counted against the session limit, queried like a
// live session (its answers merge the processes and carry their pids).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "pathprof/core/pbs.h"
#include "pathprof/pipeline/session_manager.h"

namespace pathprof::pipeline {
namespace {

// An exact stream of one loop: `iterations` taken backward branches 0x1010 -> 0x1000, each
// after a not-taken forward branch at 0x1008.
BranchBatch Loop(uint32_t pid, int iterations) {
  BranchBatch b;
  b.pid = b.tid = pid;
  for (int i = 0; i < iterations; ++i) {
    b.events.push_back({0x1008, 0x1010, 0, 2, BranchKind::kConditional, false, false});
    b.events.push_back({0x1010, 0x1000, 0, 3, BranchKind::kConditional, true, false});
  }
  return b;
}

class Import : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/pathprof-import-XXXXXX";
    dir_ = mkdtemp(tmpl);
    PbsContents c;
    c.batches = {Loop(10, 300), Loop(20, 100)};
    ASSERT_TRUE(WritePbsFile(path(), c).ok());
  }
  void TearDown() override { std::system(("rm -rf " + dir_).c_str()); }
  std::string path() const { return dir_ + "/two.pbs"; }

  SessionManager Manager(size_t max_sessions) {
    SessionManagerOptions o;
    o.max_sessions = max_sessions;
    o.probe_capabilities = false;
    return SessionManager(o, collectors::HostCapabilities());
  }
  std::string dir_;
};

TEST_F(Import, ARecordingIsAnEndedSessionWithAStorePerProcess) {
  SessionManager m = Manager(4);
  auto s = m.Import(path(), AnalyzeOptions());
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  const SessionInfo info = (*s)->Info();
  EXPECT_EQ(info.state, SessionState::kStopped);
  EXPECT_EQ(info.pids, (std::vector<uint32_t>{10, 20}));
  EXPECT_EQ(info.source_reason, "a recording (pbs)");
  EXPECT_TRUE((*s)->WaitEnded(0));  // nothing to wait for
  (*s)->Stop();                     // and nothing to stop
  EXPECT_EQ((*s)->Stores().size(), 2u);
  EXPECT_EQ(m.Get(info.id), *s);

  // Merged over both processes, hottest first, each path with its process.
  HotPathsQuery q;
  q.top_k = 10;
  const HotPathsResult r = (*s)->HotPaths(q);
  ASSERT_GE(r.paths.size(), 2u);
  EXPECT_EQ(r.paths[0].pid, 10u);
  EXPECT_NEAR(static_cast<double>(r.paths[0].observations), 300, 2);
  bool saw_20 = false;
  for (const HotPath& p : r.paths)
    if (p.pid == 20 && p.length == r.paths[0].length && p.outcomes == r.paths[0].outcomes) {
      saw_20 = true;
      EXPECT_NEAR(static_cast<double>(p.observations), 100, 2);
    }
  EXPECT_TRUE(saw_20);
  EXPECT_NEAR(r.paths[0].estimate.share, 300.0 / 400.0, 0.02);
}

TEST_F(Import, CountsAgainstTheSessionLimit) {
  SessionManager m = Manager(1);
  ASSERT_TRUE(m.Import(path(), AnalyzeOptions()).ok());
  auto second = m.Import(path(), AnalyzeOptions());
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), ErrorCode::kResourceExhausted);
  EXPECT_EQ(m.List().size(), 1u);
}

TEST_F(Import, AFileThatCannotBeReadLeavesNoSession) {
  SessionManager m = Manager(4);
  auto missing = m.Import(dir_ + "/none.pbs", AnalyzeOptions());
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("none.pbs"), std::string::npos);
  EXPECT_TRUE(m.List().empty());
}

}  // namespace
}  // namespace pathprof::pipeline
