// pathprof-import: the process the daemon's imports are decoded in (recording_import.h).
//   pathprof-import [--uid U --gid G] [--deadline-ms MS] [--binary-dir DIR] NAME
// Its fd 3 is the recording (opened by the daemon with the requester's rights), its fd 4 the
// pipe to the daemon. A recording and the binaries it names are anybody's bytes: the perf.data
// and .pbs readers, the ELF reader, the x86 decoder and libipt run here, not in the daemon. So
// before it reads a byte it becomes uid U and gid G when given (no groups, no capabilities) and
// enters its sandbox (stepping's helper_sandbox.h: read-only opens, no exec, no sockets, no new
// processes); then it decodes NAME's bytes into import_wire frames. It ends itself at its
// deadline, whatever the code it runs does: a daemon that is no root and lacks CAP_KILL cannot
// kill a helper that became another user. Not meant to be run by hand.
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "../src/import_wire.h"
#include "../src/recording_decode.h"
#include "pathprof/stepping/helper_sandbox.h"

namespace {

namespace pp = pathprof::pipeline;
namespace wire = pathprof::pipeline::import_wire;

constexpr int kRecordingFd = 3;
constexpr int kPipeFd = 4;
constexpr int kExitUsage = 2;

// The decode's batches, as frames on the pipe.
class PipeSink final : public pp::RecordingSink {
 public:
  explicit PipeSink(wire::Writer& writer) : writer_(writer) {}
  pathprof::Status Begin(pp::BranchWindows windows,
                         const std::map<uint32_t, pp::RecordedProcess>& processes) override {
    return Sent(writer_.Write(wire::BeginFrame{.windows = windows, .processes = processes}));
  }
  pathprof::Status Add(const pathprof::BranchBatch& batch) override {
    return Sent(writer_.WriteBatch(batch));
  }

 private:
  pathprof::Status Sent(bool ok) {
    if (ok) return pathprof::Status::Ok();
    if (writer_.too_large())  // the decode fails, and the daemon is told why
      return pathprof::Status(pathprof::ErrorCode::kResourceExhausted,
                              "the recording's processes and mappings make a frame over " +
                                  std::to_string(wire::kMaxFrameBytes >> 20) + " MiB");
    // The daemon closed the pipe (it gave up on this import): nothing left to do.
    std::_Exit(0);
  }
  wire::Writer& writer_;
};

int Usage() {
  std::fprintf(stderr,
               "pathprof-import: usage: pathprof-import [--uid U --gid G] [--deadline-ms MS] "
               "[--binary-dir DIR] NAME (fd 3: the recording, fd 4: the pipe to the daemon)\n");
  return kExitUsage;
}

// SIGKILL at `ms` of wall time, and no more CPU time than that: set before the sandbox, which
// refuses timer_settime and timer_delete, and without CAP_SYS_RESOURCE the limit cannot be
// raised again. Empty on success.
std::string ArmDeadline(uint32_t ms) {
  sigevent ev{};
  ev.sigev_notify = SIGEV_SIGNAL;
  ev.sigev_signo = SIGKILL;
  timer_t timer;
  if (timer_create(CLOCK_MONOTONIC, &ev, &timer) != 0)
    return std::string("timer_create: ") + std::strerror(errno);
  itimerspec at{};
  at.it_value.tv_sec = ms / 1000;
  at.it_value.tv_nsec = static_cast<long>(ms % 1000) * 1'000'000;
  if (timer_settime(timer, 0, &at, nullptr) != 0)
    return std::string("timer_settime: ") + std::strerror(errno);
  const rlim_t cpu_s = ms / 1000 + 1;
  const rlimit cpu{cpu_s, cpu_s};
  if (setrlimit(RLIMIT_CPU, &cpu) != 0) return std::string("RLIMIT_CPU: ") + std::strerror(errno);
  return "";
}

}  // namespace

int main(int argc, char** argv) {
  signal(SIGPIPE, SIG_IGN);  // a daemon gone away is seen as EPIPE, not death
  (void)prctl(PR_SET_PDEATHSIG, SIGKILL);
  uint32_t uid = 0, gid = 0, deadline_ms = 0;
  bool drop = false;
  pp::AnalyzeOptions options;
  std::string name;
  for (int i = 1; i < argc; ++i) {
    const std::string key = argv[i];
    if (key == "--uid" || key == "--gid") {
      if (i + 1 >= argc ||
          !pathprof::stepping::ParseHelperNumber(argv[i + 1], key == "--uid" ? &uid : &gid))
        return Usage();
      drop = true;
      ++i;
    } else if (key == "--deadline-ms") {
      if (i + 1 >= argc || !pathprof::stepping::ParseHelperNumber(argv[i + 1], &deadline_ms) ||
          deadline_ms == 0)
        return Usage();
      ++i;
    } else if (key == "--binary-dir") {
      if (i + 1 >= argc) return Usage();
      options.binary_dir = argv[++i];
    } else if (name.empty() && !key.starts_with("--")) {
      name = key;
    } else {
      return Usage();
    }
  }
  if (name.empty()) return Usage();
  wire::Writer writer(kPipeFd);
  auto fail = [&writer](pathprof::ErrorCode code, const std::string& why) {
    (void)writer.Write(pathprof::Status(code, why));
    return 1;
  };
  if (drop) {
    if (const std::string e = pathprof::stepping::DropIdentity(uid, gid); !e.empty())
      return fail(pathprof::ErrorCode::kPermission,
                  "the import helper could not become uid " + std::to_string(uid) + ": " + e);
  }
  // Again: the uid change cleared the parent-death signal.
  (void)prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (deadline_ms > 0) {
    if (const std::string e = ArmDeadline(deadline_ms); !e.empty())
      return fail(pathprof::ErrorCode::kInternal,
                  "the import helper could not arm its deadline: " + e);
  }
  pathprof::stepping::SandboxPolicy policy;
  policy.role = pathprof::stepping::SandboxRole::kImporter;
  if (const std::string e = pathprof::stepping::EnterHelperSandbox(policy); !e.empty())
    return fail(pathprof::ErrorCode::kInternal,
                "the import helper could not enter its sandbox: " + e);
#ifndef NDEBUG
  // Tests only: what an exploit of a parser would do, once the recording is being read.
  pathprof::stepping::SimulateExploit(std::getenv("PATHPROF_IMPORT_FAULT"));
#endif
  PipeSink sink(writer);
  auto summary = pp::DecodeRecording(name, kRecordingFd, options, &sink);
  if (!summary.ok()) return fail(summary.status().code(), summary.status().message());
  return writer.Write(std::move(*summary)) ? 0 : 1;
}
