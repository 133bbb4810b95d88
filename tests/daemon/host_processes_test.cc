// Selectors the daemon resolves from the host's /proc and cgroup tree: systemd unit names to
// their cgroup, on a cgroup tree laid out as systemd lays it out (made under a temporary
// directory, so the test needs neither systemd nor cgroup v2 on the host), and the process list
// read from a fake /proc.
#include "pathprof/daemon/host_processes.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace pathprof::daemon {
namespace {

namespace fs = std::filesystem;

class UnitCgroupTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("pathprof-cgroups-" + std::to_string(getpid()));
    for (const char* dir : {"system.slice/nginx.service", "system.slice/db.service/worker",
                            "user.slice/user-1000.slice/user@1000.service/app.slice/db.service",
                            "user.slice/user-1000.slice/user@1000.service/app.slice/editor.service",
                            "user.slice/user-1001.slice/user@1001.service/app.slice/editor.service",
                            "machine.slice/run-u7.scope"})
      fs::create_directories(root_ / dir);
  }
  void TearDown() override { fs::remove_all(root_); }
  fs::path root_;
};

TEST_F(UnitCgroupTest, ABareNameMeansItsServiceUnit) {
  auto cg = CgroupOfUnit("nginx", root_.string());
  ASSERT_TRUE(cg.ok()) << cg.status().ToString();
  EXPECT_EQ(*cg, "/system.slice/nginx.service");
  auto scope = CgroupOfUnit("run-u7.scope", root_.string());
  ASSERT_TRUE(scope.ok());
  EXPECT_EQ(*scope, "/machine.slice/run-u7.scope");
}

TEST_F(UnitCgroupTest, TheSystemUnitWinsOverAUsersUnitOfTheSameName) {
  auto cg = CgroupOfUnit("db.service", root_.string());
  ASSERT_TRUE(cg.ok());
  EXPECT_EQ(*cg, "/system.slice/db.service");  // not its child cgroup, not the user's
}

TEST_F(UnitCgroupTest, AmbiguousAndMissingUnitsAreClearErrors) {
  auto two = CgroupOfUnit("editor", root_.string());
  ASSERT_FALSE(two.ok());
  EXPECT_EQ(two.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(two.status().message().find("give the cgroup path"), std::string::npos);
  auto none = CgroupOfUnit("absent", root_.string());
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().code(), ErrorCode::kNotFound);
  EXPECT_NE(none.status().message().find("absent.service"), std::string::npos);
  for (const char* bad : {"", "../etc", "a/b", "x y", ".hidden"}) {
    auto r = CgroupOfUnit(bad, root_.string());
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), ErrorCode::kInvalidArgument) << bad;
  }
}

// A fake /proc with a kernel thread, a process running a deleted binary, and one named only by
// its comm (its executable unreadable to us, as another user's is without root).
class FakeProcTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("pathprof-fakeproc-" + std::to_string(getpid()));
    Process(2, "kthreadd", "", "");
    Process(100, "nginx", "/usr/sbin/nginx (deleted)", "nginx\0-g\0");
    Process(200, "worker", "", "worker\0");
  }
  void TearDown() override { fs::remove_all(root_); }
  void Process(int pid, const std::string& comm, const std::string& exe,
               const std::string& cmdline) {
    const fs::path dir = root_ / std::to_string(pid);
    fs::create_directories(dir);
    std::ofstream(dir / "stat") << pid << " (" << comm << ") S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 "
                                << "1 0 " << 1000 + pid << "\n";
    std::ofstream(dir / "comm") << comm << "\n";
    std::ofstream(dir / "cgroup") << "0::/system.slice/" << comm << ".service\n";
    std::ofstream(dir / "cmdline", std::ios::binary) << cmdline;
    if (!exe.empty()) fs::create_symlink(exe, dir / "exe");
  }
  fs::path root_;
};

TEST_F(FakeProcTest, KernelThreadsAreLeftOutAndNamesMatchCommOrExecutable) {
  const procfs::Procfs proc(root_.string());
  procfs::ProcessIdentityCache cache(proc, {});
  auto all = ListProcesses(cache);
  std::sort(all.begin(), all.end(), [](const auto& a, const auto& b) { return a.pid < b.pid; });
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].pid, 100u);
  EXPECT_EQ(all[0].executable, "/usr/sbin/nginx (deleted)");
  EXPECT_EQ(all[0].cgroup, "/system.slice/nginx.service");
  EXPECT_EQ(all[0].uid, getuid());  // the fake directories are ours
  EXPECT_EQ(all[1].comm, "worker");
  ASSERT_EQ(ProcessesNamed("nginx", cache).size(), 1u);   // " (deleted)" is not part of the name
  ASSERT_EQ(ProcessesNamed("worker", cache).size(), 1u);  // by comm
  EXPECT_TRUE(ProcessesNamed("kthreadd", cache).empty());
  EXPECT_GT(cache.stats().hits, 0u);  // the second and third listings read one file each
}

}  // namespace
}  // namespace pathprof::daemon
