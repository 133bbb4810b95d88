// Every /proc and /sys read goes through core (procfs.h, sysfs.h): no source file outside core/
// and tests/common names a path under either (the design's rule, docs/design.md §2), and the
// readers' descriptors do not leak into the programs a tracer forks and execs.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "pathprof/core/procfs.h"
#include "pathprof/core/sysfs.h"

namespace {

namespace fs = std::filesystem;

// Files that still name such a path, each with why. Keep it empty.
const std::set<std::string> kKnownExceptions = {};

bool Skipped(const fs::path& relative) {
  const std::string first = relative.begin()->string();
  // Build trees, hidden directories (.git), and the two places that own these paths.
  if (first.starts_with("build") || first.starts_with(".") || first == "core") return true;
  return relative.string().starts_with("tests/common/");
}

TEST(KernelFiles, NoSourceOutsideCoreNamesAProcOrSysPath) {
  const fs::path root = PATHPROF_SOURCE_DIR;
  // A string literal that starts a path under /proc or /sys (the needles are built so that
  // this file does not name one).
  const std::string quote(1, '"');
  const std::string proc = quote + "/proc" + "/", sys = quote + "/sys" + "/";
  auto names_one = [&](const std::string& line) {
    return line.find(proc) != std::string::npos || line.find(sys) != std::string::npos;
  };
  std::vector<std::string> found;
  size_t scanned = 0;
  for (auto it = fs::recursive_directory_iterator(root); it != fs::recursive_directory_iterator();
       ++it) {
    const fs::path relative = it->path().lexically_relative(root);
    if (it->is_directory()) {
      if (Skipped(relative)) it.disable_recursion_pending();
      continue;
    }
    const std::string ext = it->path().extension().string();
    if ((ext != ".cc" && ext != ".h") || Skipped(relative) ||
        kKnownExceptions.count(relative.string()))
      continue;
    ++scanned;
    std::ifstream in(it->path());
    int line_no = 0;
    for (std::string line; std::getline(in, line);) {
      ++line_no;
      if (names_one(line))
        found.push_back(relative.string() + ":" + std::to_string(line_no) + ": " + line);
    }
  }
  EXPECT_GT(scanned, 100u) << "the source tree was not found at " << root;
  std::string list;
  for (const std::string& f : found) list += f + "\n";
  EXPECT_TRUE(found.empty()) << "read these through core/procfs.h or core/sysfs.h:\n" << list;
}

TEST(KernelFiles, ProcfsOpenIsCloseOnExec) {
  const int fd = pathprof::procfs::Procfs::Host().Open(getpid(), "maps", O_RDONLY);
  ASSERT_GE(fd, 0);
  EXPECT_TRUE(fcntl(fd, F_GETFD) & FD_CLOEXEC);
  char c;
  EXPECT_EQ(read(fd, &c, 1), 1);
  close(fd);
  const int task = pathprof::procfs::Procfs::Host().OpenTask(getpid(), gettid(), "stat", O_RDONLY);
  ASSERT_GE(task, 0);
  EXPECT_TRUE(fcntl(task, F_GETFD) & FD_CLOEXEC);
  EXPECT_EQ(read(task, &c, 1), 1);
  close(task);
}

TEST(KernelFiles, SysfsReadsAFakeTree) {
  const fs::path dir = fs::temp_directory_path() / ("sysfs-test-" + std::to_string(getpid()));
  fs::create_directories(dir / "devices/system/cpu");
  std::ofstream(dir / "devices/system/cpu/online") << "0-3,5\n";
  std::ofstream(dir / "type") << "8\n";
  const pathprof::sysfs::Sysfs sys(dir.string());
  auto online = sys.Read("devices/system/cpu/online");
  ASSERT_TRUE(online.ok()) << online.status().ToString();
  EXPECT_EQ(*online, "0-3,5");
  EXPECT_EQ(sys.ReadInt("type", -1), 8);
  EXPECT_EQ(sys.ReadInt("/type", -1), 8);
  EXPECT_EQ(sys.ReadInt("missing", -1), -1);
  EXPECT_TRUE(sys.Exists("devices/system"));
  EXPECT_FALSE(sys.Exists("kernel/btf/vmlinux"));
  auto missing = sys.Read("kernel/btf/vmlinux");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), pathprof::ErrorCode::kNotFound);
  EXPECT_NE(missing.status().message().find(dir.string() + "/kernel/btf/vmlinux"),
            std::string::npos)
      << missing.status().message();
  auto bounded = sys.Read("devices/system/cpu/online", 2);
  ASSERT_FALSE(bounded.ok());
  EXPECT_EQ(bounded.status().code(), pathprof::ErrorCode::kResourceExhausted);
  fs::remove_all(dir);
}

}  // namespace
