// The real pathtop binary in a real terminal: a detached 80x24 tmux session, keys sent with
// `tmux send-keys`, the screen read with `tmux capture-pane -p`. The daemon is the in-test
// gRPC server (fake_daemon.h) on a temp socket, so the screens hold known values.
// Set PATHTOP_CAPTURE_DIR to keep each view's capture (docs/pathtop.md shows them).
#include <gtest/gtest.h>
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
    return "env TERM=xterm NO_COLOR=1 ASAN_OPTIONS=detect_leaks=0 " PATHPROF_BIN_DIR
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
  EXPECT_TRUE(Has(Line(s, 0), "session s1 running  source ptrace (no PMU in this VM)")) << s;
  EXPECT_TRUE(Has(Line(s, 2), "[1 Paths]")) << s;
  EXPECT_TRUE(Has(Line(s, 3), "SHARE%     EST  +-ERR LEN START")) << s;
  EXPECT_TRUE(Has(Line(s, 4), "62.0     620     31   3 hot_loop+0x10")) << s;
  s = tmux.WaitForText("stacks ");
  EXPECT_TRUE(Has(Line(s, 1), "| pathprofd ")) << s;
  EXPECT_TRUE(Has(Line(s, 1), "% 24.0M | drops 3 (broken-window")) << s;

  tmux.Keys("2");
  s = tmux.WaitForText("[2 Subpaths]");
  s = tmux.WaitForText("hot_loop+0x10 > +0x24 > +0x38 > +0x10");
  Keep("subpaths", s);
  EXPECT_TRUE(Has(Line(s, 4), "48.0    4.8k    310    4 hot_loop+0x10")) << s;

  tmux.Keys("3");
  s = tmux.WaitForText("rarely_called");
  Keep("cct", s);
  EXPECT_TRUE(Has(Line(s, 4), "- _start")) << s;
  EXPECT_TRUE(Has(Line(s, 6), "hot_loop")) << s;
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
  EXPECT_TRUE(Has(Line(s, 4), "75.0    9.0k      0 main+0x2c")) << s;

  tmux.Keys("5");
  s = tmux.WaitForText("hot data streams");
  Keep("methods", s);
  EXPECT_TRUE(Has(Line(s, 4), "62.0      62   75.0    9.0k hot_loop  loop.c:10")) << s;

  // Back on paths: sort by the start function, A to Z (checksum first), then filter.
  tmux.Keys("1");
  tmux.WaitForText("[1 Paths]");
  tmux.Keys("'>' '>' '>' '>'");
  s = tmux.WaitForText("sort START+");
  EXPECT_TRUE(Has(Line(s, 4), "checksum+0x8")) << s;
  tmux.Keys("/ m i x Enter");
  s = tmux.WaitForText("/mix");
  Keep("paths_filtered", s);
  EXPECT_TRUE(Has(Line(s, 4), "mix+0x0")) << s;
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

  tmux.Keys("q");
  for (int i = 0; i < 100 && tmux.Alive(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_FALSE(tmux.Alive()) << "pathtop did not exit on q";
  EXPECT_EQ(daemon.service().stop_calls.load(), 1);  // its own session, stopped on exit
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
  EXPECT_TRUE(Has(Line(s, 23), "DISCONNECTED unix:" + sock_)) << s;
  EXPECT_TRUE(Has(Line(s, 23), "retry")) << s;
  // The last answers stay on screen while disconnected.
  EXPECT_TRUE(Has(s, "hot_loop+0x10")) << s;

  daemon = std::make_unique<FakeDaemon>(sock_, 4242);
  s = tmux.WaitForText("reconnected unix:");
  EXPECT_TRUE(Has(Line(s, 23), "reconnected")) << s;
  EXPECT_EQ(daemon->service().start_calls.load(), 1);  // a new session on the new daemon
  tmux.Keys("q");
}

TEST_F(PathtopTui, PicksAProcessFromTheListAndFollowsResize) {
  FakeDaemon daemon(sock_, 4242);
  ASSERT_TRUE(daemon.ok());
  Tmux tmux(Command("--interval 0.5"));
  ASSERT_TRUE(tmux.started());
  std::string s = tmux.WaitForText("/usr/local/bin/loop");
  Keep("targets", s);
  EXPECT_TRUE(Has(Line(s, 4), "4242")) << s;
  tmux.Keys("Enter");
  s = tmux.WaitForText("hot_loop+0x10 > +0x24");
  EXPECT_TRUE(Has(Line(s, 0), "pid 4242")) << s;
  EXPECT_TRUE(Has(Line(s, 6), "checksum+0x8 > +0x14 > +0x30 > +~")) << s;

  tmux.Resize(120, 30);
  s = tmux.WaitFor([](const std::string& s) { return !Line(s, 29).empty(); });
  // The path cut at 80 columns is whole at 120, and the footer moved to the new last line.
  EXPECT_TRUE(Has(Line(s, 6), "checksum+0x8 > +0x14 > +0x30 > +0x44")) << s;
  EXPECT_FALSE(Has(Line(s, 6), "~")) << s;
  EXPECT_TRUE(Has(Line(s, 29), "?:help")) << s;
  tmux.Keys("q");
}

}  // namespace
