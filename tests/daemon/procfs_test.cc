// Selectors the daemon resolves from the host's /proc and cgroup tree: systemd unit names to
// their cgroup, on a cgroup tree laid out as systemd lays it out (made under a temporary
// directory, so the test needs neither systemd nor cgroup v2 on the host).
#include "pathprof/daemon/procfs.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

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

}  // namespace
}  // namespace pathprof::daemon
