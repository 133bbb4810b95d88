// The fetcher against a real gRPC server on a real Unix socket (the in-test fake daemon):
// starting and joining sessions, the WatchHotPaths stream, polling a view, and reconnecting
// after the daemon restarts.
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
  std::optional<v1::Session> session;
  std::optional<ConnectionState> connection;
  int stats = 0;
  bool saw_disconnect = false;
};

bool Collect(Fetcher& f, Collected* c, const std::function<bool(const Collected&)>& done) {
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < until) {
    Inbox in = f.Take();
    if (in.hot_paths) c->hot_paths = in.hot_paths;
    if (in.cct) c->cct = in.cct;
    if (in.session) c->session = in.session;
    if (in.stats) ++c->stats;
    if (in.connection) {
      c->connection = in.connection;
      if (!in.connection->connected) c->saw_disconnect = true;
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

TEST(Fetcher, StartsASessionStreamsHotPathsAndStopsItsSession) {
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
    EXPECT_EQ(c.session->id(), "s1");
    EXPECT_EQ(c.hot_paths->session_id(), "s1");
    EXPECT_EQ(c.hot_paths->paths(0).start().function(), "hot_loop");
    EXPECT_GE(daemon.service().watch_calls.load(), 1);
    EXPECT_EQ(daemon.service().start_calls.load(), 1);
    // The CCT view is polled once chosen.
    f.SetView(View::kCct);
    ASSERT_TRUE(Collect(f, &c, [](const Collected& c) { return c.cct.has_value(); }));
    EXPECT_EQ(c.cct->nodes_size(), 6);
    f.Stop();
  }
  EXPECT_EQ(daemon.service().stop_calls.load(), 1);
}

TEST(Fetcher, JoinsARunningSessionAndLeavesItRunning) {
  std::string sock = TempSocket("join");
  FakeDaemon daemon(sock, 77);
  ASSERT_TRUE(daemon.ok());
  v1::StartSessionRequest req;
  req.set_pid(77);
  v1::Session existing;
  ASSERT_TRUE(daemon.service().StartSession(nullptr, &req, &existing).ok());
  TargetSpec target;
  target.pid = 77;
  Fetcher f(MakeGrpcClient("unix:" + sock), "unix:" + sock, target, Fast());
  f.Start();
  Collected c;
  ASSERT_TRUE(Collect(f, &c, [](const Collected& c) { return c.hot_paths.has_value(); }));
  EXPECT_EQ(c.session->id(), existing.id());
  f.Stop();
  EXPECT_EQ(daemon.service().start_calls.load(), 1);  // only the test's own
  EXPECT_EQ(daemon.service().stop_calls.load(), 0);
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
  EXPECT_EQ(c.hot_paths->session_id(), "s1");
  f.Stop();
}

}  // namespace
}  // namespace pathtop
