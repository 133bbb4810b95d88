// Symbols for a stripped program from a real debuginfod server: Debian's `debuginfod` serves a
// directory holding the unstripped build, and the ImageStore, which has neither the program's
// recorded path nor a binary dir, fetches the executable and its debug info by build-id; the
// Symbolizer then names the stripped code with function, file and line. The server runs in a
// network namespace of this test's own with only loopback in it.
#include <gtest/gtest.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>

#include "common/run_command.h"
#include "pathprof/decoders/elf_image.h"
#include "pathprof/decoders/image_store.h"
#include "pathprof/decoders/symbolizer.h"

namespace pathprof::decoders {
namespace {

namespace fs = std::filesystem;

bool LoopbackUp() {
  const int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  ifreq ifr{};
  std::strncpy(ifr.ifr_name, "lo", IFNAMSIZ - 1);
  bool ok = ::ioctl(fd, SIOCGIFFLAGS, &ifr) == 0;
  ifr.ifr_flags = static_cast<short>(ifr.ifr_flags | IFF_UP);
  ok = ok && ::ioctl(fd, SIOCSIFFLAGS, &ifr) == 0;
  ::close(fd);
  return ok;
}

// debuginfod, started by this test and ended by its pid.
class Server {
 public:
  Server(const fs::path& serve, const fs::path& work) {
    pid_ = ::fork();
    if (pid_ == 0) {
      const std::string db = (work / "db.sqlite").string();
      const std::string log = (work / "debuginfod.log").string();
      std::FILE* out = std::freopen(log.c_str(), "w", stderr);
      (void)out;
      ::execlp("debuginfod", "debuginfod", "-F", "-p", "8002", "-d", db.c_str(), "-g", "0", "-c",
               "1", serve.c_str(), static_cast<char*>(nullptr));
      ::_exit(127);
    }
  }
  ~Server() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGTERM);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (::waitpid(pid_, nullptr, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() > deadline) {
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, nullptr, 0);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  bool started() const { return pid_ > 0; }

 private:
  pid_t pid_ = -1;
};

TEST(Debuginfod, StrippedProgramIsNamedFromTheServersDebugInfo) {
  if (pathprof::testing::RunCommand("command -v debuginfod").rc != 0)
    GTEST_SKIP() << "debuginfod (Debian package debuginfod) is not installed";
  if (::unshare(CLONE_NEWNET) != 0 || !LoopbackUp())
    GTEST_SKIP() << "cannot make a network namespace with loopback (needs CAP_SYS_ADMIN): "
                 << std::strerror(errno);
  char dir_template[] = "/tmp/pathprof-debuginfod-XXXXXX";
  const fs::path dir = ::mkdtemp(dir_template);
  fs::create_directories(dir / "serve");
  {
    std::FILE* f = std::fopen((dir / "t.c").c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fputs(
        "__attribute__((noinline)) static int hot(int x) {\n"
        "  int s = 1;\n"
        "  for (int i = 0; i < x; ++i) s = s * 3 + i;\n"
        "  return s;\n"
        "}\n"
        "int main(int argc, char** argv) { (void)argv; return hot(argc); }\n",
        f);
    std::fclose(f);
  }
  const std::string d = dir.string();
  const auto built = pathprof::testing::RunCommand("cc -O1 -g -o " + d + "/serve/t " + d +
                                                   "/t.c && strip -o " + d + "/t.stripped " + d +
                                                   "/serve/t 2>&1");
  if (built.rc != 0) GTEST_SKIP() << "no C toolchain to build the test program: " << built.out;
  const std::string nm = pathprof::testing::RunCommand("nm " + d + "/serve/t").out;
  const size_t at = nm.find(" t hot\n");
  ASSERT_NE(at, std::string::npos) << nm;
  const uint64_t hot = std::stoull(nm.substr(nm.rfind('\n', at) + 1, 16), nullptr, 16);
  auto stripped = ElfImage::Open(d + "/t.stripped");
  ASSERT_TRUE(stripped.ok()) << stripped.status().ToString();
  const std::string id = (*stripped)->build_id();
  ASSERT_FALSE(id.empty());

  Server server(dir / "serve", dir);
  ASSERT_TRUE(server.started());
  ::setenv("DEBUGINFOD_URLS", "http://127.0.0.1:8002", 1);
  ::setenv("DEBUGINFOD_TIMEOUT", "5", 1);
  ImageStoreOptions options;
  options.use_host_paths = false;  // only the server can know this program
  options.debug_dirs = {};
  // The server scans its directory after it starts: ask until it answers (a fresh client cache
  // each time, since libdebuginfod remembers misses).
  Result<std::shared_ptr<const ElfImage>> image = Status(ErrorCode::kNotFound, "not asked");
  std::unique_ptr<ImageStore> store;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  for (int attempt = 0; std::chrono::steady_clock::now() < deadline; ++attempt) {
    const fs::path cache = dir / ("cache-" + std::to_string(attempt));
    ::setenv("DEBUGINFOD_CACHE_PATH", cache.c_str(), 1);
    store = std::make_unique<ImageStore>(options);
    image = store->Get("/build/gone/t", id);
    if (image.ok()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
  ASSERT_TRUE(image.ok()) << image.status().ToString() << "\n"
                          << pathprof::testing::RunCommand("cat " + d + "/debuginfod.log").out;
  EXPECT_EQ((*image)->build_id(), id);
  const std::string debug_file = store->FindDebugFile(**image);
  EXPECT_FALSE(debug_file.empty()) << "no debug info fetched";
  EXPECT_EQ(store->stats().debuginfod_fetches, 2u);  // the executable, then its debug info

  // With the fetched debug info the stripped code gets its function, file and line.
  Symbolizer with_debug;
  auto named = with_debug.Symbolize(*stripped, hot + 2, debug_file);
  ASSERT_TRUE(named.ok()) << named.status().ToString();
  EXPECT_EQ(named->function, "hot");
  EXPECT_TRUE(named->file.ends_with("t.c")) << named->file;
  EXPECT_GE(named->line, 1);
  EXPECT_LE(named->line, 4);
  ::unsetenv("DEBUGINFOD_URLS");
  fs::remove_all(dir);
}

}  // namespace
}  // namespace pathprof::decoders
