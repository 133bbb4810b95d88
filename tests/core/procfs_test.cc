// The /proc reader: its parsers on real and hostile text, its reads against a fake tree (and the
// real /proc for this process), and the identity cache's hits, pid reuse and bounds.
#include "pathprof/core/procfs.h"

#include <gtest/gtest.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>

#include "pathprof/core/process_identity_cache.h"
#include "pathprof/core/procfs_lines.h"

namespace pathprof::procfs {
namespace {

namespace fs = std::filesystem;

constexpr const char* kStatus =
    "Name:\tmy prog\nUmask:\t0022\nState:\tS (sleeping)\nTgid:\t42\nNgid:\t0\nPid:\t43\n"
    "PPid:\t1\nTracerPid:\t7\nUid:\t1000\t1001\t1002\t1003\nGid:\t100\t101\t102\t103\n"
    "Groups:\t4 24 27 "
    "\nThreads:\t3\nSigCgt:\t0000000000004002\nCapEff:\t000001ffffffffff\nCapPrm:"
    "\t0000000000000001\nNSpid:\t42\t7\n";

// A stat line with the fields proc(5) numbers, comm holding spaces and parentheses.
std::string StatLine(const std::string& comm, uint64_t start, int cpu) {
  std::string s = "42 (" + comm + ") R 1 42 42 0 -1 4194304 100 0 0 0 11 22 0 0 20 0 3 0 " +
                  std::to_string(start);
  for (int field = 23; field < 39; ++field) s += " 0";
  return s + " " + std::to_string(cpu) + " 0 0\n";
}

TEST(ProcfsParse, StatusFieldsAndTheFourIds) {
  auto s = ParseStatus(kStatus);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->name, "my prog");
  EXPECT_EQ(s->state, 'S');
  EXPECT_EQ(s->tgid, 42);
  EXPECT_EQ(s->ppid, 1);
  EXPECT_EQ(s->tracer_pid, 7);
  EXPECT_EQ(s->uid[0], 1000u);
  EXPECT_EQ(s->uid[3], 1003u);
  EXPECT_EQ(s->gid[2], 102u);
  EXPECT_EQ(s->threads, 3u);
  EXPECT_EQ(s->groups, (std::vector<gid_t>{4, 24, 27}));
  EXPECT_EQ(s->signals_caught, 0x4002u);  // signals 2 and 15
  EXPECT_EQ(s->cap_effective, 0x1ffffffffffu);
  EXPECT_EQ(s->cap_permitted, 1u);
  EXPECT_TRUE(s->capabilities_known);
  EXPECT_EQ(s->innermost_pid, 7);  // pid 7 in its container's pid namespace
  EXPECT_EQ(StatusField(kStatus, "Umask").value_or("?"), "0022");
  EXPECT_FALSE(StatusField(kStatus, "Pi").has_value());  // a prefix of "Pid" is not "Pid"
}

TEST(ProcfsParse, StatRestartsAfterTheLastParenthesis) {
  auto s = ParseStat(StatLine("a) b (c", 123456, 5));
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->comm, "a) b (c");
  EXPECT_EQ(s->state, 'R');
  EXPECT_EQ(s->ppid, 1);
  EXPECT_EQ(s->utime_ticks, 11u);
  EXPECT_EQ(s->stime_ticks, 22u);
  EXPECT_EQ(s->start_ticks, 123456u);
  EXPECT_EQ(s->processor, 5);
}

TEST(ProcfsParse, BrokenTextIsCorruptNeverAThrow) {
  EXPECT_EQ(ParseStatus("Name:\tx\n").status().code(), ErrorCode::kCorrupt);
  std::string bad_uid = kStatus;
  bad_uid.replace(bad_uid.find("1000"), 4, "10x0");
  auto s = ParseStatus(bad_uid);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("'Uid:'"), std::string::npos) << s.status().message();
  EXPECT_EQ(ParseStat("42 (x) R 1 2").status().code(), ErrorCode::kCorrupt);
  EXPECT_EQ(ParseStat("no parenthesis").status().code(), ErrorCode::kCorrupt);
  EXPECT_EQ(ParseStat("42 (x)").status().code(), ErrorCode::kCorrupt);
  std::mt19937 rng(5);
  const std::string good = StatLine("w", 9, 1);
  for (int i = 0; i < 5000; ++i) {
    std::string t = i % 2 ? good : std::string(kStatus);
    t.resize(rng() % (t.size() + 1));
    for (int k = 0; k < 3 && !t.empty(); ++k) t[rng() % t.size()] = static_cast<char>(rng());
    (void)ParseStat(t);
    (void)ParseStatus(t);
    (void)CgroupV2Path(t);
  }
}

TEST(ProcfsParse, CgroupV2PathIsTheZeroLine) {
  EXPECT_EQ(CgroupV2Path("12:pids:/x\n0::/system.slice/a.service\n"), "/system.slice/a.service");
  EXPECT_EQ(CgroupV2Path("12:pids:/x\n"), "");
}

// A fake /proc: one process (42, two threads) and a sysctl.
class FakeProcfs : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("fake-proc-" + std::to_string(getpid()));
    fs::remove_all(root_);
    Write("42/status", kStatus);
    Write("42/stat", StatLine("my prog", 1000, 1));
    Write("42/comm", "my prog\n");
    Write("42/cgroup", "0::/system.slice/my.service\n");
    Write("42/cmdline", std::string("my\0prog\0", 8));
    fs::create_symlink("/usr/bin/my-prog", root_ / "42/exe");
    fs::create_directories(root_ / "42/ns");
    fs::create_symlink("mnt:[4026531841]", root_ / "42/ns/mnt");
    Write("42/task/42/stat", StatLine("my prog", 1000, 0));
    Write("42/task/43/stat", StatLine("worker", 1000, 1));
    Write("sys/kernel/perf_event_paranoid", "2\n");
    Write("self/status", "not a pid");  // not numeric: never listed
  }
  void TearDown() override { fs::remove_all(root_); }
  void Write(const std::string& rel, const std::string& text) {
    fs::create_directories((root_ / rel).parent_path());
    std::ofstream(root_ / rel, std::ios::binary) << text;
  }
  fs::path root_;
};

TEST_F(FakeProcfs, ReadsEachFileOfAProcess) {
  const Procfs p(root_.string());
  EXPECT_EQ(p.Path(42, "maps"), root_.string() + "/42/maps");
  EXPECT_EQ(p.TaskPath(42, 43, "stat"), root_.string() + "/42/task/43/stat");
  EXPECT_EQ(p.GlobalPath("sys/kernel/ns_last_pid"), (root_ / "sys/kernel/ns_last_pid").string());
  EXPECT_EQ(p.ReadStatus(42)->tracer_pid, 7);
  EXPECT_EQ(p.ReadStat(42)->start_ticks, 1000u);
  EXPECT_EQ(p.ReadTaskStat(42, 43)->comm, "worker");
  EXPECT_EQ(*p.Comm(42), "my prog");
  EXPECT_EQ(*p.Executable(42), "/usr/bin/my-prog");
  EXPECT_EQ(*p.Cgroup(42), "/system.slice/my.service");
  EXPECT_EQ(*p.Namespace(42, "mnt"), "mnt:[4026531841]");
  EXPECT_EQ(*p.ReadGlobal("sys/kernel/perf_event_paranoid"), "2");
  EXPECT_EQ(p.ReadSysctlInt("sys/kernel/perf_event_paranoid", 9), 2);
  EXPECT_EQ(p.ReadSysctlInt("sys/kernel/absent", 9), 9);
  EXPECT_FALSE(p.HasEmptyCommandLine(42));
  EXPECT_EQ(p.Pids(), std::vector<pid_t>{42});
  auto tasks = p.Tasks(42);
  std::sort(tasks.begin(), tasks.end());
  EXPECT_EQ(tasks, (std::vector<pid_t>{42, 43}));
  EXPECT_EQ(p.Tasks(42, 1).size(), 1u);  // bounded

  auto gone = p.ReadStatus(77);
  ASSERT_FALSE(gone.ok());
  EXPECT_EQ(gone.status().code(), ErrorCode::kNotFound);
  EXPECT_NE(gone.status().message().find("/77/status"), std::string::npos);
  auto big = p.Read(42, "status", 16);
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.status().code(), ErrorCode::kResourceExhausted);
  Write("42/status", "garbage");
  auto corrupt = p.ReadStatus(42);
  ASSERT_FALSE(corrupt.ok());
  EXPECT_EQ(corrupt.status().code(), ErrorCode::kCorrupt);
  EXPECT_NE(corrupt.status().message().find("/42/status"), std::string::npos);
}

TEST(Procfs, ReadsThisProcessFromTheRealProc) {
  const Procfs& p = Procfs::Host();
  auto s = p.ReadStatus(getpid());
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->uid[0], getuid());
  EXPECT_EQ(s->tgid, getpid());
  auto stat = p.ReadStat(getpid());
  ASSERT_TRUE(stat.ok()) << stat.status().ToString();
  EXPECT_EQ(stat->ppid, getppid());
  EXPECT_GE(stat->processor, 0);
  const auto tasks = p.Tasks(getpid());
  EXPECT_NE(std::find(tasks.begin(), tasks.end(), static_cast<pid_t>(syscall(SYS_gettid))),
            tasks.end());
  char self[4096] = {};
  ASSERT_GT(readlink(p.Path(getpid(), "exe").c_str(), self, sizeof self - 1), 0);
  EXPECT_EQ(*p.Executable(getpid()), self);
}

TEST_F(FakeProcfs, TheCacheReadsOnceAndNeverLendsAReusedPidItsPredecessor) {
  const Procfs p(root_.string());
  ProcessIdentityCache cache(p, {.max_entries = 8, .max_age = std::chrono::hours(1)});
  auto a = cache.Get(42);
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(a->executable, "/usr/bin/my-prog");
  EXPECT_EQ(a->cgroup, "/system.slice/my.service");
  EXPECT_FALSE(a->kernel_thread);
  // The process moved cgroup: within max_age, with the same start time, the cache answers.
  Write("42/cgroup", "0::/elsewhere\n");
  EXPECT_EQ(cache.Get(42)->cgroup, "/system.slice/my.service");
  EXPECT_EQ(cache.stats().hits, 1u);
  // An exec (same start time, another command name): read again.
  Write("42/stat", StatLine("exec'd", 1000, 0));
  Write("42/comm", "exec'd\n");
  fs::remove(root_ / "42/exe");
  fs::create_symlink("/usr/bin/other", root_ / "42/exe");
  EXPECT_EQ(cache.Get(42)->executable, "/usr/bin/other");
  EXPECT_EQ(cache.stats().misses, 2u);
  // Pid 42 is a new process (another start time): read again.
  Write("42/stat", StatLine("new one", 2000, 0));
  Write("42/comm", "new one\n");
  auto b = cache.Get(42);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->comm, "new one");
  EXPECT_EQ(b->cgroup, "/elsewhere");
  EXPECT_EQ(cache.stats().misses, 3u);
  // Gone: not found, nothing cached lent.
  fs::remove_all(root_ / "42");
  EXPECT_EQ(cache.Get(42).status().code(), ErrorCode::kNotFound);
  EXPECT_TRUE(cache.All().empty());
}

// A file is read whole however many reads it takes (kallsyms is megabytes), and one byte past
// the bound is refused, naming the file.
TEST_F(FakeProcfs, AGlobalFileIsReadWholeUpToItsBound) {
  std::string big;
  for (int i = 0; big.size() < 200000; ++i)
    big += std::to_string(i) + " T symbol_" + std::to_string(i) + "\n";
  Write("kallsyms", big);
  const Procfs p(root_.string());
  auto whole = p.ReadGlobal("kallsyms", big.size());
  ASSERT_TRUE(whole.ok()) << whole.status().ToString();
  const std::string trimmed = big.substr(0, big.size() - 1);  // ReadGlobal drops the last newline
  EXPECT_EQ(whole->size(), trimmed.size());
  EXPECT_TRUE(*whole == trimmed) << "the bytes read differ from the file's";
  auto over = p.ReadGlobal("kallsyms", big.size() - 1);
  ASSERT_FALSE(over.ok());
  EXPECT_EQ(over.status().code(), pathprof::ErrorCode::kResourceExhausted);
  EXPECT_NE(over.status().ToString().find("kallsyms"), std::string::npos)
      << over.status().ToString();
}

// Line by line, a file is the same lines however its reads cut them: lines of 1 to 900 bytes
// across many 64 KiB reads, an empty line, and a last line without its newline.
TEST_F(FakeProcfs, AGlobalFileReadLineByLineIsEveryLineWhole) {
  std::vector<std::string> lines;
  std::string text;
  std::mt19937 random(7);
  while (text.size() < 300000) {
    std::string line(1 + random() % 900, 'a' + static_cast<char>(lines.size() % 26));
    if (lines.size() == 100) line.clear();
    text += line + "\n";
    lines.push_back(line);
  }
  text += "last line, no newline";
  lines.push_back("last line, no newline");
  Write("kallsyms", text);
  const Procfs p(root_.string());
  std::vector<std::string> seen;
  const Status read = ForEachGlobalLine(p, "kallsyms", text.size(), 1000,
                                        [&](std::string_view l) { seen.emplace_back(l); });
  ASSERT_TRUE(read.ok()) << read.ToString();
  ASSERT_EQ(seen.size(), lines.size());
  for (size_t i = 0; i < lines.size(); ++i) ASSERT_EQ(seen[i], lines[i]) << "line " << i;
}

// The bounds hold and each error names the file: a byte past max_bytes, a line past
// max_line_bytes, a file that is not there.
TEST_F(FakeProcfs, AGlobalFileReadLineByLineIsBounded) {
  const std::string text = std::string(100000, 'x') + "\n" + std::string(10, 'y') + "\n";
  Write("kallsyms", text);
  const Procfs p(root_.string());
  auto ignore = [](std::string_view) {};
  const Status over = ForEachGlobalLine(p, "kallsyms", text.size() - 1, 200000, ignore);
  EXPECT_EQ(over.code(), ErrorCode::kResourceExhausted) << over.ToString();
  EXPECT_NE(over.ToString().find("kallsyms"), std::string::npos) << over.ToString();
  size_t handed = 0;
  const Status long_line =
      ForEachGlobalLine(p, "kallsyms", text.size(), 4096, [&](std::string_view) { ++handed; });
  EXPECT_EQ(long_line.code(), ErrorCode::kCorrupt) << long_line.ToString();
  EXPECT_NE(long_line.ToString().find("kallsyms"), std::string::npos) << long_line.ToString();
  EXPECT_EQ(handed, 0u) << "no part of the long line is handed out as a line";
  const Status missing = ForEachGlobalLine(p, "no-such-file", 1 << 20, 4096, ignore);
  EXPECT_EQ(missing.code(), ErrorCode::kNotFound) << missing.ToString();
  const Status exact = ForEachGlobalLine(p, "kallsyms", text.size(), 100000, ignore);
  EXPECT_TRUE(exact.ok()) << exact.ToString();
}

TEST_F(FakeProcfs, TheCacheIsBoundedAndAgesOut) {
  for (int pid = 100; pid < 110; ++pid) {
    Write(std::to_string(pid) + "/stat", StatLine("p", 5, 0));
    Write(std::to_string(pid) + "/comm", "p\n");
  }
  const Procfs p(root_.string());
  ProcessIdentityCache small(p, {.max_entries = 4, .max_age = std::chrono::hours(1)});
  EXPECT_EQ(small.All().size(), 11u);  // 42 and 100..109
  EXPECT_EQ(small.stats().entries, 4u);
  EXPECT_EQ(small.stats().evictions, 7u);
  ProcessIdentityCache ageless(p, {.max_entries = 64, .max_age = std::chrono::milliseconds(0)});
  (void)ageless.Get(42);
  (void)ageless.Get(42);
  EXPECT_EQ(ageless.stats().hits, 0u);
  EXPECT_EQ(ageless.stats().misses, 2u);
}

}  // namespace
}  // namespace pathprof::procfs
