// The real pathtop binary in a real terminal: a detached 80x24 tmux session, keys sent with
// `tmux send-keys`, the screen read with `tmux capture-pane -p`. The daemon is the in-test
// gRPC server (fake_daemon.h) on a temp socket, so the screens hold known values.
// Set PATHTOP_CAPTURE_DIR to keep each view's capture (docs/pathtop.md shows them).
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <string>
#include <thread>

#include "fake_daemon.h"
#include "tmux_session.h"

namespace {

using pathtop_test::FakeDaemon;
namespace v1 = ::pathprof::v1;
using namespace pathtop_test;

class PathtopTui : public ::testing::Test {
 protected:
  void SetUp() override {
    if (Sh("command -v tmux").empty())
      GTEST_SKIP() << "tmux is not installed (scripts/install-deps.sh)";
    sock_ = "/tmp/pathtop_tui_" + std::to_string(getpid()) + ".sock";
    unlink(sock_.c_str());
  }
  void TearDown() override { unlink(sock_.c_str()); }

  std::string Command(const std::string& args) const {
    // Leak checking is for the unit tests; ncurses keeps its screen buffers until exit.
    // `exec`: the pane's process is pathtop itself, so a test can signal it by pid.
    return "exec env TERM=xterm NO_COLOR=1 ASAN_OPTIONS=detect_leaks=0 " PATHPROF_BIN_DIR
           "/pathtop --socket " +
           sock_ + " " + args;
  }
  std::string sock_;
};

TEST_F(PathtopTui, ViewsSortFilterAndQuitIn80x24) {
  FakeDaemon daemon(sock_, 4242);
  ASSERT_TRUE(daemon.ok());
  Tmux tmux(Command("--pid 4242 --interval 0.5"));
  ASSERT_TRUE(tmux.started());

  std::string s = tmux.WaitForText("hot_loop+0x10 > +0x24");
  Keep("paths", s);
  ASSERT_TRUE(Has(s, "hot_loop+0x10 > +0x24 > +0x38")) << s;
  // One header line: the daemon's reason for the source is on the details screen (`i`). The
  // fake daemon's pid 4242 may be a real process of this host, whose name pathtop then shows
  // after it ("pid 4242 (bash)": seen once in make test).
  const std::string header = Line(s, 0);
  EXPECT_TRUE(header.starts_with("pid 4242  ") || header.starts_with("pid 4242 (")) << s;
  EXPECT_TRUE(Has(header, "  s1 running  ptrace")) << s;
  EXPECT_FALSE(Has(Line(s, 0), "no PMU")) << s;
  EXPECT_TRUE(Has(s, "[1 Paths]")) << s;
  EXPECT_TRUE(Has(Row(s, -1), "SHARE%     EST  +-ERR LEN START")) << s;  // the column header
  EXPECT_TRUE(Has(Row(s, 0), "62.0     620     31   3 hot_loop+0x10")) << s;
  s = tmux.WaitForText("stacks ");
  // Drops come before the rates that are fine; the daemon's own CPU and RSS last.
  EXPECT_TRUE(Has(Line(s, 0), "/s  drops 3  stacks ")) << s;
  EXPECT_FALSE(Has(Line(s, 0), "~")) << s;  // what does not fit is left out, not cut
  EXPECT_TRUE(Has(Line(s, 1), "[1 Paths]")) << s;

  tmux.Keys("2");
  s = tmux.WaitForText("[2 Subpaths]");
  s = tmux.WaitForText("hot_loop+0x10 > +0x24 > +0x38 > +0x10");
  Keep("subpaths", s);
  EXPECT_TRUE(Has(Row(s, 0), "48.0    4.8k    310    4 hot_loop+0x10")) << s;

  tmux.Keys("3");
  s = tmux.WaitForText("rarely_called");
  Keep("cct", s);
  EXPECT_TRUE(Has(Row(s, 0), "- _start")) << s;
  EXPECT_TRUE(Has(Row(s, 2), "hot_loop")) << s;
  // Select mix (4 rows down) and close it: checksum disappears.
  tmux.Keys("Down Down Down Left");
  s = tmux.WaitFor([](const std::string& s) { return !Has(s, "checksum"); });
  EXPECT_TRUE(Has(s, "+ mix")) << s;
  tmux.Keys("Right");
  s = tmux.WaitForText("checksum");
  EXPECT_TRUE(Has(s, "- mix")) << s;

  tmux.Keys("4");
  s = tmux.WaitForText("main+0x2c");
  Keep("callpairs", s);
  EXPECT_TRUE(Has(Row(s, 0), "75.0    9.0k      0 main+0x2c")) << s;

  tmux.Keys("5");
  s = tmux.WaitForText("hot data streams");
  Keep("methods", s);
  // The note fits the line; the daemon's whole reason is on the help screen.
  EXPECT_TRUE(Has(s, "hot data streams: not built from branch traces (? says why)")) << s;
  EXPECT_TRUE(Has(Row(s, 0), "62.0      62   75.0    9.0k hot_loop  loop.c:10")) << s;

  // Back on paths: sort by the start function, A to Z (checksum first), then filter.
  tmux.Keys("1");
  tmux.WaitForText("[1 Paths]");
  tmux.Keys("'>' '>' '>' '>'");
  s = tmux.WaitForText("sort START+");
  EXPECT_TRUE(Has(Row(s, 0), "checksum+0x8")) << s;
  tmux.Keys("/ m i x Enter");
  s = tmux.WaitForText("/mix");
  Keep("paths_filtered", s);
  EXPECT_TRUE(Has(Row(s, 0), "mix+0x0")) << s;
  EXPECT_FALSE(Has(s, "hot_loop")) << s;
  tmux.Keys("Escape");
  s = tmux.WaitForText("hot_loop");

  tmux.Keys("p");
  s = tmux.WaitForText("PAUSED");
  tmux.Keys("?");
  s = tmux.WaitForText("Press any key to return.");
  Keep("help", s);
  tmux.Keys("Space");
  tmux.WaitFor([](const std::string& s) { return !Has(s, "Press any key"); });

  EXPECT_EQ(daemon.service().session_count(), 1u);
  tmux.Keys("q");
  EXPECT_TRUE(tmux.WaitForExit()) << "pathtop did not exit on q";
  // Its own session, deleted on exit: the daemon lists none.
  EXPECT_EQ(daemon.service().delete_calls.load(), 1);
  EXPECT_EQ(daemon.service().session_count(), 0u);
}

TEST_F(PathtopTui, SaysWhenTheDaemonIsGoneAndReconnects) {
  auto daemon = std::make_unique<FakeDaemon>(sock_, 4242);
  ASSERT_TRUE(daemon->ok());
  Tmux tmux(Command("--pid 4242 --interval 0.5"));
  ASSERT_TRUE(tmux.started());
  std::string s = tmux.WaitForText("hot_loop+0x10 > +0x24");
  ASSERT_TRUE(Has(s, "hot_loop")) << s;

  daemon.reset();
  unlink(sock_.c_str());
  s = tmux.WaitForText("DISCONNECTED");
  Keep("disconnected", s);
  // The footer wraps the reason over the bottom lines.
  EXPECT_TRUE(Has(Bottom(s, 4), "DISCONNECTED unix:" + sock_)) << s;
  EXPECT_TRUE(Has(Bottom(s, 4), "retry")) << s;
  // The last answers stay on screen while disconnected.
  EXPECT_TRUE(Has(s, "hot_loop+0x10")) << s;

  daemon = std::make_unique<FakeDaemon>(sock_, 4242);
  s = tmux.WaitForText("reconnected unix:");
  Keep("reconnected", s);
  EXPECT_TRUE(Has(Bottom(s, 2), "reconnected")) << s;
  // It says what it did: a new session, with the source the lost one had.
  EXPECT_TRUE(Has(Bottom(s, 2), "re-created the session as s1, source ptrace as s1 had")) << s;
  EXPECT_EQ(daemon->service().start_calls.load(), 1);  // a new session on the new daemon
  EXPECT_EQ(daemon->service().last_start_source.load(), v1::SOURCE_CHOICE_PTRACE);
  tmux.Keys("q");
  EXPECT_TRUE(tmux.WaitForExit());
}

// Without --socket, $PATHPROF_SOCKET names the daemon, as it does for pathctl: pathtop used to
// try /run/pathprof/pathprofd.sock and show DISCONNECTED.
TEST_F(PathtopTui, FindsTheDaemonThroughPathprofSocket) {
  FakeDaemon daemon(sock_, 4242);
  ASSERT_TRUE(daemon.ok());
  Tmux tmux("exec env TERM=xterm NO_COLOR=1 ASAN_OPTIONS=detect_leaks=0 PATHPROF_SOCKET=" + sock_ +
            " " PATHPROF_BIN_DIR "/pathtop --pid 4242 --interval 0.5");
  ASSERT_TRUE(tmux.started());
  const std::string s = tmux.WaitForText("hot_loop+0x10 > +0x24");
  EXPECT_TRUE(Has(s, "hot_loop+0x10 > +0x24")) << s;
  EXPECT_FALSE(Has(s, "DISCONNECTED")) << s;
  EXPECT_EQ(daemon.service().start_calls.load(), 1);
  tmux.Keys("q");
  EXPECT_TRUE(tmux.WaitForExit());
}

TEST_F(PathtopTui, PicksAProcessFromTheListAndFollowsResize) {
  FakeDaemon daemon(sock_, 4242);
  ASSERT_TRUE(daemon.ok());
  Tmux tmux(Command("--interval 0.5"));
  ASSERT_TRUE(tmux.started());
  std::string s = tmux.WaitForText("/usr/local/bin/loop");
  Keep("targets", s);
  EXPECT_TRUE(Has(Row(s, 0), "4242")) << s;
  tmux.Keys("Enter");
  s = tmux.WaitForText("hot_loop+0x10 > +0x24");
  EXPECT_TRUE(Has(Line(s, 0), "pid 4242")) << s;
  EXPECT_TRUE(Has(Row(s, 2), "checksum+0x8 > +0x14 > +0x30 > +~")) << s;

  tmux.Resize(120, 30);
  s = tmux.WaitFor([](const std::string& s) { return !Line(s, 29).empty(); });
  // The path cut at 80 columns is whole at 120, and the footer moved to the new last line.
  EXPECT_TRUE(Has(Row(s, 2), "checksum+0x8 > +0x14 > +0x30 > +0x44")) << s;
  EXPECT_FALSE(Has(Row(s, 2), "~")) << s;
  EXPECT_TRUE(Has(Line(s, 29), "?:help")) << s;
  tmux.Keys("q");
}

TEST_F(PathtopTui, AStacksOnlySessionShowsWhatArrives) {
  FakeDaemon daemon(sock_, 4242);
  ASSERT_TRUE(daemon.ok());
  Tmux tmux(Command("--pid 4242 --interval 0.5 --source none"));
  ASSERT_TRUE(tmux.started());
  // The fake's stack counter grows 99 per GetStats: a rate, not "nothing profiled".
  std::string s = tmux.WaitForText(" stacks/s); see views 3 and 5");
  Keep("stacks_only", s);
  EXPECT_TRUE(Has(Line(s, 0), "s1 running  stacks only")) << s;
  EXPECT_TRUE(Has(Row(s, 0), "no hot paths: stacks-only session (")) << s;
  EXPECT_TRUE(Has(Row(s, 0), " stacks/s); see views 3 and 5")) << s;
  EXPECT_FALSE(Has(s, "nothing profiled")) << s;
  EXPECT_EQ(daemon.service().last_start_source.load(), v1::SOURCE_CHOICE_NONE);
  tmux.Keys("q");
  EXPECT_TRUE(tmux.WaitForExit());
}

TEST_F(PathtopTui, MarksAnExitedTarget) {
  FakeDaemon daemon(sock_, 4242);
  ASSERT_TRUE(daemon.ok());
  Tmux tmux(Command("--pid 4242 --interval 0.5"));
  ASSERT_TRUE(tmux.started());
  std::string s = tmux.WaitForText("hot_loop+0x10 > +0x24");
  ASSERT_TRUE(Has(Line(s, 0), "s1 running")) << s;
  const int64_t now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                             std::chrono::system_clock::now().time_since_epoch())
                             .count();
  daemon.service().SetState("sessions/s1", v1::SESSION_STATE_TARGET_EXITED, now_ms - 5000);
  s = tmux.WaitFor([](const std::string& s) { return Has(Line(s, 0), "exited"); });
  Keep("exited", s);
  EXPECT_TRUE(Has(Line(s, 0), "s1 exited ")) << s;
  EXPECT_FALSE(Has(Line(s, 0), "running")) << s;
  EXPECT_TRUE(Has(Line(s, 0), "s ago: the profile as it ended")) << s;
  EXPECT_TRUE(Has(s, "hot_loop+0x10 > +0x24")) << s;  // the last profile stays
  tmux.Keys("q");
  EXPECT_TRUE(tmux.WaitForExit());
  EXPECT_EQ(daemon.service().session_count(), 0u);
}

TEST_F(PathtopTui, FunctionKeysSearchFilterTreeSortAndQuit) {
  FakeDaemon daemon(sock_, 4242);
  ASSERT_TRUE(daemon.ok());
  Tmux tmux(Command("--pid 4242 --interval 0.5"));
  ASSERT_TRUE(tmux.started());
  std::string s = tmux.WaitForText("hot_loop+0x10 > +0x24");
  // F3: search; the selection (reverse video) moves to the checksum row, nothing is hidden.
  tmux.Keys("F3 c h e c k");
  s = tmux.WaitForText("search: check_");
  EXPECT_TRUE(Has(s, "hot_loop+0x10")) << s;
  std::string attrs = tmux.CaptureWithAttributes();
  size_t at = attrs.find("checksum+0x8  ");
  ASSERT_NE(at, std::string::npos) << attrs;
  size_t line_start = attrs.rfind('\n', at);
  EXPECT_NE(attrs.substr(line_start, at - line_start).find("\x1b[7m"), std::string::npos) << attrs;
  tmux.Keys("Enter");
  // F4: the filter, as `/`.
  tmux.Keys("F4 m i x Enter");
  s = tmux.WaitForText("/mix");
  EXPECT_FALSE(Has(s, "hot_loop+0x10")) << s;
  tmux.Keys("Escape");
  // F6: the next sort column; F5: the tree and back.
  tmux.Keys("F6");
  s = tmux.WaitForText("sort EST-");
  EXPECT_TRUE(Has(s, "sort EST-")) << s;
  tmux.Keys("F5");
  s = tmux.WaitForText("[3 CCT]");
  EXPECT_TRUE(Has(s, "[3 CCT]")) << s;
  tmux.Keys("F5");
  s = tmux.WaitForText("[1 Paths]");
  EXPECT_TRUE(Has(s, "[1 Paths]")) << s;
  // F1: help naming the F-keys.
  tmux.Keys("F1");
  s = tmux.WaitForText("Press any key to return.");
  Keep("help", s);
  EXPECT_TRUE(Has(s, "F3          search")) << s;
  tmux.Keys("Space");
  tmux.WaitFor([](const std::string& s) { return !Has(s, "Press any key"); });
  // F10 quits, even with the filter being typed.
  tmux.Keys("/ F10");
  EXPECT_TRUE(tmux.WaitForExit()) << "pathtop did not exit on F10";
  EXPECT_EQ(daemon.service().session_count(), 0u);
}

// The flame graph (6), a calling context's hot paths (Enter in the tree) and the header in
// full (i), in a real terminal. The fake's tree: _start > main > hot_loop 62%, mix 30% (>
// checksum 9%), rarely_called 3%.
TEST_F(PathtopTui, FlameGraphContextPathsAndDetails) {
  FakeDaemon daemon(sock_, 4242);
  ASSERT_TRUE(daemon.ok());
  Tmux tmux(Command("--pid 4242 --interval 0.5"));
  ASSERT_TRUE(tmux.started());
  std::string s = tmux.WaitForText("hot_loop+0x10 > +0x24");
  tmux.Keys("6");
  s = tmux.WaitForText("[hot_loop 62.0%");
  Keep("flame", s);
  EXPECT_TRUE(Has(Line(s, 1), "[6 Flame]")) << s;
  EXPECT_TRUE(Has(Line(s, 2), "all  total 100.0%")) << s;
  EXPECT_TRUE(Has(Line(s, 3), ">all 100.0%")) << s;
  EXPECT_TRUE(Has(Line(s, 4), "[_start 100.0%")) << s;
  // 62% of 80 columns: hot_loop ends at column 50 (rounded from 49.6), mix starts there.
  EXPECT_EQ(Line(s, 6).find("[hot_loop 62.0%"), 0u) << s;
  EXPECT_EQ(Line(s, 6).find("[mix 30.0%"), 50u) << s;
  // checksum's 9% is 7 columns: too narrow for its share, its name shows cut.
  EXPECT_EQ(Line(s, 7).find("[chec~]"), 50u) << s;
  // The selected frame is painted in reverse video (a span of its line), the others not: the
  // last attribute change before each (tmux writes one only where the attribute changes).
  const std::string attrs = tmux.CaptureWithAttributes();
  auto attribute_before = [&](const std::string& text) {
    const size_t at = attrs.find(text);
    if (at == std::string::npos) return std::string("not on screen");
    const size_t esc = attrs.rfind("\x1b[", at);
    return esc == std::string::npos ? std::string()
                                    : attrs.substr(esc, attrs.find('m', esc) - esc + 1);
  };
  EXPECT_EQ(attribute_before(">all 100.0%"), "\x1b[7m") << attrs;
  EXPECT_NE(attribute_before("[_start 100.0%"), "\x1b[7m") << attrs;
  EXPECT_NE(attribute_before("[_start 100.0%"), "not on screen") << attrs;

  tmux.Keys("/ c h e c k");
  s = tmux.WaitForText("search: check_");
  Keep("flame_search", s);
  EXPECT_TRUE(Has(Bottom(s, 1), "1 frames, 9.0% of the total")) << s;
  EXPECT_TRUE(Has(Line(s, 7), "[*che~]")) << s;
  tmux.Keys("Enter Down Down Down Enter");
  // The whole zoomed frame, not only its header: the rows below are drawn after it.
  s = tmux.WaitFor([](const std::string& s) {
    return Has(Line(s, 1), "zoom hot_loop") && Has(Line(s, 6), ">hot_loop 62.0%") &&
           !Has(s, "[mix ");
  });
  Keep("flame_zoomed", s);
  EXPECT_EQ(Line(s, 6).find(">hot_loop 62.0%"), 0u) << s;
  EXPECT_EQ(Line(s, 6).back(), '<') << s;
  EXPECT_FALSE(Has(s, "[mix ")) << s;
  EXPECT_TRUE(Has(Line(s, 2), "hot_loop  total 62.0%  self 62.0%")) << s;

  tmux.Keys("3");
  s = tmux.WaitForText("[3 CCT]");
  tmux.Keys("Down Down Enter");
  s = tmux.WaitFor([](const std::string& s) {
    return Has(s, "[3 paths: hot_loop]") && Has(s, "_start > main > hot_loop: 40 windows");
  });
  Keep("context", s);
  EXPECT_TRUE(Has(Row(s, 0), "hot_loop+0x10 > +0x24 > +0x38")) << s;
  EXPECT_TRUE(Row(s, 1).find_first_not_of(' ') == std::string::npos) << s;  // one path only
  EXPECT_EQ(daemon.service().last_context_node.load(),
            3 * pathtop_test::FakeProfiler::kContextIdOfNode);
  tmux.Keys("Escape");
  s = tmux.WaitForText("[3 CCT]");

  tmux.Keys("i");
  // The view's last line, not its title: a screen caught while pathtop paints it had the title
  // and not yet the drops line (a fresh clone's run, 2026-12-05).
  s = tmux.WaitFor(
      [](const std::string& s) { return Has(s, "the header in full") && Has(s, "drops "); });
  Keep("details", s);
  EXPECT_TRUE(Has(s, "branches   ptrace: no PMU in this VM")) << s;
  EXPECT_TRUE(Has(s, "drops      3 (largest: broken-window 3)")) << s;
  tmux.Keys("q");
  EXPECT_TRUE(tmux.WaitForExit());
}

TEST_F(PathtopTui, ASignalEndsItLikeQ) {
  FakeDaemon daemon(sock_, 4242);
  ASSERT_TRUE(daemon.ok());
  Tmux tmux(Command("--pid 4242 --interval 0.5"));
  ASSERT_TRUE(tmux.started());
  std::string s = tmux.WaitForText("hot_loop+0x10 > +0x24");
  ASSERT_EQ(daemon.service().session_count(), 1u);
  const pid_t pid = tmux.PanePid();
  ASSERT_GT(pid, 1);
  // The pane's process is the pathtop this test started (exec in Command()).
  ASSERT_NE(Sh("cat /proc/" + std::to_string(pid) + "/comm").find("pathtop"), std::string::npos);
  kill(pid, SIGTERM);
  EXPECT_TRUE(tmux.WaitForExit()) << "pathtop did not end on SIGTERM";
  EXPECT_EQ(daemon.service().delete_calls.load(), 1);
  EXPECT_EQ(daemon.service().session_count(), 0u);
}

}  // namespace
