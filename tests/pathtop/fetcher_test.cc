// The fetcher against a real gRPC server on a real Unix socket (the in-test fake daemon):
// starting and joining sessions, the WatchHotPaths stream, polling a view, and reconnecting
// after the daemon restarts.
#include <google/protobuf/util/time_util.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <thread>

#include "fake_daemon.h"
#include "pathtop/fetcher.h"

namespace pathtop {
namespace {

using pathtop_test::FakeDaemon;

std::string TempSocket(const char* name) {
  std::string path = "/tmp/pathtop_" + std::string(name) + "_" + std::to_string(getpid()) + ".sock";
  unlink(path.c_str());
  return path;
}

// Collects the fetcher's inbox until `done` holds for the merged state or 10 s pass (a bound
// against hanging, not a timing assertion).
struct Collected {
  std::optional<v1::HotPaths> hot_paths;
  std::optional<v1::CallingContextTree> cct;
  std::optional<v1::HotPaths> context_paths;
  std::optional<v1::Session> session;
  std::optional<ConnectionState> connection;
  int stats = 0;
  bool saw_disconnect = false;
  std::string messages;  // every connection message seen, one a line
};

bool Collect(Fetcher& f, Collected* c, const std::function<bool(const Collected&)>& done) {
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < until) {
    Inbox in = f.Take();
    if (in.hot_paths) c->hot_paths = in.hot_paths;
    if (in.cct) c->cct = in.cct;
    if (in.context_paths) c->context_paths = in.context_paths;
    if (in.session) c->session = in.session;
    if (in.stats) ++c->stats;
    if (in.connection) {
      c->connection = in.connection;
      if (!in.connection->connected) c->saw_disconnect = true;
      c->messages += in.connection->message + "\n";
    }
    if (done(*c)) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

FetcherOptions Fast() {
  FetcherOptions o;
  o.interval_s = 0.2;
  o.max_backoff_s = 0.4;
  return o;
}

// A session of `pid` started in the fake daemon by someone else (another pathtop, pathctl).
bool StartSessionOf(uint32_t pid, FakeDaemon* daemon, v1::Session* out) {
  v1::StartSessionRequest req;
  req.set_pid(pid);
  return daemon->service().StartSession(nullptr, &req, out).ok();
}

TEST(Fetcher, StartsASessionStreamsHotPathsAndDeletesItsSession) {
  std::string sock = TempSocket("start");
  FakeDaemon daemon(sock, 4242);
  ASSERT_TRUE(daemon.ok());
  TargetSpec target;
  target.pid = 4242;
  {
    Fetcher f(MakeGrpcClient("unix:" + sock), "unix:" + sock, target, Fast());
    f.Start();
    Collected c;
    ASSERT_TRUE(Collect(f, &c, [](const Collected& c) { return c.hot_paths && c.stats >= 2; }));
    ASSERT_TRUE(c.session);
    EXPECT_EQ(c.session->name(), "sessions/s1");
    EXPECT_EQ(c.hot_paths->session(), "sessions/s1");
    EXPECT_EQ(c.hot_paths->paths(0).start().function(), "hot_loop");
    EXPECT_GE(daemon.service().watch_calls.load(), 1);
    EXPECT_EQ(daemon.service().start_calls.load(), 1);
    // The CCT view is polled once chosen.
    f.SetView(View::kCct);
    ASSERT_TRUE(Collect(f, &c, [](const Collected& c) { return c.cct.has_value(); }));
    EXPECT_EQ(c.cct->nodes_size(), 6);
    // Enter on a tree node: that context's hot paths, asked for by its context id and pid.
    ContextPick pick;
    pick.node = 3 * pathtop_test::FakeProfiler::kContextIdOfNode;
    pick.pid = 4242;
    f.SetView(View::kContextPaths, pick);
    ASSERT_TRUE(Collect(f, &c, [](const Collected& c) { return c.context_paths.has_value(); }));
    EXPECT_EQ(daemon.service().last_context_node.load(), 300);
    EXPECT_EQ(daemon.service().last_context_pid.load(), 4242);
    EXPECT_EQ(c.context_paths->contexts_matched(), 1);
    EXPECT_EQ(c.context_paths->paths_size(), 1);
    EXPECT_EQ(daemon.service().session_count(), 1u);
    f.Stop();
  }
  // Deleted, not just stopped: a stopped session would still be listed and held in the quota.
  EXPECT_EQ(daemon.service().delete_calls.load(), 1);
  EXPECT_EQ(daemon.service().session_count(), 0u);
}

TEST(Fetcher, KeepLeavesItsSessionRunning) {
  std::string sock = TempSocket("keep");
  FakeDaemon daemon(sock, 4242);
  ASSERT_TRUE(daemon.ok());
  TargetSpec target;
  target.pid = 4242;
  FetcherOptions o = Fast();
  o.stop_owned_session = false;
  Fetcher f(MakeGrpcClient("unix:" + sock), "unix:" + sock, target, o);
  f.Start();
  Collected c;
  ASSERT_TRUE(Collect(f, &c, [](const Collected& c) { return c.hot_paths.has_value(); }));
  f.Stop();
  EXPECT_EQ(daemon.service().delete_calls.load(), 0);
  EXPECT_EQ(daemon.service().stop_calls.load(), 0);
  ASSERT_EQ(daemon.service().session_count(), 1u);
  EXPECT_EQ(daemon.service().sessions()[0].state(), v1::SESSION_STATE_RUNNING);
}

TEST(Fetcher, FollowsTheSessionStateUntilTheTargetExits) {
  std::string sock = TempSocket("exit");
  FakeDaemon daemon(sock, 4242);
  ASSERT_TRUE(daemon.ok());
  TargetSpec target;
  target.pid = 4242;
  Fetcher f(MakeGrpcClient("unix:" + sock), "unix:" + sock, target, Fast());
  f.Start();
  Collected c;
  ASSERT_TRUE(Collect(f, &c, [](const Collected& c) { return c.hot_paths.has_value(); }));
  ASSERT_EQ(c.session->state(), v1::SESSION_STATE_RUNNING);
  daemon.service().SetState("sessions/s1", v1::SESSION_STATE_TARGET_EXITED, 1234567);
  ASSERT_TRUE(Collect(f, &c, [](const Collected& c) {
    return c.session->state() == v1::SESSION_STATE_TARGET_EXITED;
  })) << "the session's state was not polled";
  EXPECT_EQ(google::protobuf::util::TimeUtil::TimestampToMilliseconds(c.session->end_time()),
            1234567);
  const int watches = daemon.service().watch_calls.load();
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));
  // The ended session's final report was had: no stream is asked for again and again.
  EXPECT_LE(daemon.service().watch_calls.load(), watches + 1);
  EXPECT_EQ(daemon.service().start_calls.load(), 1);  // an ended session is not replaced
  f.Stop();
  EXPECT_EQ(daemon.service().session_count(), 0u);  // its own, ended, is deleted too
}

TEST(Fetcher, JoinsARunningSessionAndLeavesItRunning) {
  std::string sock = TempSocket("join");
  FakeDaemon daemon(sock, 77);
  ASSERT_TRUE(daemon.ok());
  v1::Session existing;
  ASSERT_TRUE(StartSessionOf(77, &daemon, &existing));
  TargetSpec target;
  target.pid = 77;
  Fetcher f(MakeGrpcClient("unix:" + sock), "unix:" + sock, target, Fast());
  f.Start();
  Collected c;
  ASSERT_TRUE(Collect(f, &c, [](const Collected& c) { return c.hot_paths.has_value(); }));
  EXPECT_EQ(c.session->name(), existing.name());
  f.Stop();
  EXPECT_EQ(daemon.service().start_calls.load(), 1);  // only the test's own
  EXPECT_EQ(daemon.service().stop_calls.load(), 0);
  EXPECT_EQ(daemon.service().delete_calls.load(), 0);
}

// --session: a session that exists (an imported archive window: ended from the start) is shown
// as it is; pathtop starts none, and stops or deletes nothing. One the daemon does not hold is
// named in the problem shown.
TEST(Fetcher, ShowsANamedSessionAndNeverEndsIt) {
  std::string sock = TempSocket("named");
  FakeDaemon daemon(sock, 77);
  ASSERT_TRUE(daemon.ok());
  v1::Session existing;
  ASSERT_TRUE(StartSessionOf(77, &daemon, &existing));
  TargetSpec target;
  target.session = existing.name();
  Fetcher f(MakeGrpcClient("unix:" + sock), "unix:" + sock, target, Fast());
  f.Start();
  Collected c;
  ASSERT_TRUE(Collect(f, &c, [](const Collected& c) { return c.hot_paths.has_value(); }));
  EXPECT_EQ(c.session->name(), existing.name());
  f.Stop();
  EXPECT_EQ(daemon.service().start_calls.load(), 1);  // only the test's own
  EXPECT_EQ(daemon.service().stop_calls.load(), 0);
  EXPECT_EQ(daemon.service().delete_calls.load(), 0);

  target.session = "sessions/nosuch";
  Fetcher missing(MakeGrpcClient("unix:" + sock), "unix:" + sock, target, Fast());
  missing.Start();
  Collected m;
  ASSERT_TRUE(Collect(missing, &m, [](const Collected& c) {
    return c.messages.find("sessions/nosuch") != std::string::npos;
  })) << m.messages;
  missing.Stop();
  EXPECT_EQ(daemon.service().start_calls.load(), 1);
}

TEST(Fetcher, ANoSuchProcessRefusalIsShownAndRetried) {
  std::string sock = TempSocket("nopid");
  FakeDaemon daemon(sock, 77);
  TargetSpec target;
  target.pid = 78;
  Fetcher f(MakeGrpcClient("unix:" + sock), "unix:" + sock, target, Fast());
  f.Start();
  Collected c;
  ASSERT_TRUE(
      Collect(f, &c, [&](const Collected&) { return daemon.service().start_calls.load() >= 2; }));
  ASSERT_TRUE(c.connection);
  EXPECT_FALSE(c.connection->connected);
  EXPECT_NE(c.connection->message.find("no process 78"), std::string::npos);
  f.Stop();
  EXPECT_EQ(daemon.service().delete_calls.load(), 0);  // it started none
}

TEST(Fetcher, ReconnectsAfterTheDaemonRestartsAndStartsANewSession) {
  std::string sock = TempSocket("restart");
  auto daemon = std::make_unique<FakeDaemon>(sock, 4242);
  ASSERT_TRUE(daemon->ok());
  TargetSpec target;
  target.pid = 4242;
  Fetcher f(MakeGrpcClient("unix:" + sock), "unix:" + sock, target, Fast());
  f.Start();
  Collected c;
  ASSERT_TRUE(Collect(f, &c, [](const Collected& c) { return c.hot_paths.has_value(); }));

  daemon.reset();  // the daemon exits
  unlink(sock.c_str());
  ASSERT_TRUE(Collect(f, &c, [](const Collected& c) { return c.saw_disconnect; }));
  EXPECT_FALSE(c.connection->connected);
  EXPECT_GE(c.connection->attempt, 1);
  EXPECT_GT(c.connection->retry_in_s, 0);

  daemon = std::make_unique<FakeDaemon>(sock, 4242);  // and comes back, without sessions
  ASSERT_TRUE(daemon->ok());
  c.hot_paths.reset();
  ASSERT_TRUE(Collect(f, &c, [](const Collected& c) {
    return c.connection && c.connection->connected && c.hot_paths;
  }));
  EXPECT_TRUE(c.connection->reconnected);
  EXPECT_EQ(daemon->service().start_calls.load(), 1);
  EXPECT_EQ(c.hot_paths->session(), "sessions/s1");
  // Auto chose ptrace on the first daemon; the new session asks for ptrace, not auto again.
  EXPECT_EQ(daemon->service().last_start_source.load(), v1::SOURCE_CHOICE_PTRACE);
  EXPECT_NE(c.connection->message.find("re-created the session as s1, source ptrace as s1 had"),
            std::string::npos)
      << c.connection->message;
  f.Stop();
  EXPECT_EQ(daemon->service().session_count(), 0u);
}

// Restarts the daemon under a running fetcher; returns the new one once the fetcher has a
// session on it.
std::unique_ptr<FakeDaemon> Restart(std::unique_ptr<FakeDaemon> daemon, const std::string& sock,
                                    Fetcher& f, Collected* c, uint32_t pid) {
  daemon.reset();
  unlink(sock.c_str());
  EXPECT_TRUE(Collect(f, c, [](const Collected& c) { return c.saw_disconnect; }));
  daemon = std::make_unique<FakeDaemon>(sock, pid);
  c->session.reset();
  EXPECT_TRUE(Collect(f, c, [](const Collected& c) {
    return c.connection && c.connection->connected && c.session;
  }));
  return daemon;
}

TEST(Fetcher, ARestartKeepsTheSourceAskedFor) {
  std::string sock = TempSocket("source");
  auto daemon = std::make_unique<FakeDaemon>(sock, 4242);
  TargetSpec target;
  target.pid = 4242;
  FetcherOptions o = Fast();
  o.source = v1::SOURCE_CHOICE_NONE;
  Fetcher f(MakeGrpcClient("unix:" + sock), "unix:" + sock, target, o);
  f.Start();
  Collected c;
  ASSERT_TRUE(Collect(f, &c, [](const Collected& c) { return c.session.has_value(); }));
  EXPECT_EQ(c.session->source(), v1::BRANCH_SOURCE_NONE);
  daemon = Restart(std::move(daemon), sock, f, &c, 4242);
  EXPECT_EQ(daemon->service().last_start_source.load(), v1::SOURCE_CHOICE_NONE);
  ASSERT_TRUE(c.session);
  EXPECT_EQ(c.session->source(), v1::BRANCH_SOURCE_NONE);
  EXPECT_NE(c.messages.find("source none as s1 had"), std::string::npos) << c.messages;
  f.Stop();
}

// The case: pathtop joined a stacks-only session (pathctl start --source none) and was
// started without --source. After a restart the re-created session is stacks-only again, not
// the daemon's auto choice (ptrace here).
TEST(Fetcher, ARestartKeepsTheSourceOfAJoinedSession) {
  std::string sock = TempSocket("joinsrc");
  auto daemon = std::make_unique<FakeDaemon>(sock, 77);
  v1::StartSessionRequest req;
  req.set_pid(77);
  req.set_source(v1::SOURCE_CHOICE_NONE);
  v1::Session existing;
  ASSERT_TRUE(daemon->service().StartSession(nullptr, &req, &existing).ok());
  TargetSpec target;
  target.pid = 77;
  Fetcher f(MakeGrpcClient("unix:" + sock), "unix:" + sock, target, Fast());
  f.Start();
  Collected c;
  ASSERT_TRUE(Collect(f, &c, [](const Collected& c) { return c.session.has_value(); }));
  EXPECT_EQ(c.session->name(), existing.name());
  daemon = Restart(std::move(daemon), sock, f, &c, 77);
  EXPECT_EQ(daemon->service().start_calls.load(), 1);
  EXPECT_EQ(daemon->service().last_start_source.load(), v1::SOURCE_CHOICE_NONE);
  EXPECT_EQ(c.session->source(), v1::BRANCH_SOURCE_NONE);
  f.Stop();
  // Re-created by pathtop, so pathtop's own: deleted at exit.
  EXPECT_EQ(daemon->service().session_count(), 0u);
}

TEST(Fetcher, AnEndedSessionLostInARestartIsNotReplaced) {
  std::string sock = TempSocket("ended");
  auto daemon = std::make_unique<FakeDaemon>(sock, 4242);
  TargetSpec target;
  target.pid = 4242;
  Fetcher f(MakeGrpcClient("unix:" + sock), "unix:" + sock, target, Fast());
  f.Start();
  Collected c;
  ASSERT_TRUE(Collect(f, &c, [](const Collected& c) { return c.session.has_value(); }));
  daemon->service().SetState("sessions/s1", v1::SESSION_STATE_TARGET_EXITED, 1);
  ASSERT_TRUE(Collect(f, &c, [](const Collected& c) {
    return c.session->state() == v1::SESSION_STATE_TARGET_EXITED;
  }));
  daemon.reset();
  unlink(sock.c_str());
  ASSERT_TRUE(Collect(f, &c, [](const Collected& c) { return c.saw_disconnect; }));
  daemon = std::make_unique<FakeDaemon>(sock, 4242);
  ASSERT_TRUE(
      Collect(f, &c, [](const Collected& c) { return c.connection && c.connection->connected; }));
  EXPECT_NE(c.connection->message.find("session s1 had ended and went with the daemon restart"),
            std::string::npos)
      << c.connection->message;
  EXPECT_EQ(daemon->service().start_calls.load(), 0);
  f.Stop();
}

}  // namespace
}  // namespace pathtop
