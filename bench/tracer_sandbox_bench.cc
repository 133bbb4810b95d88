// What the tracer's seccomp filter (pathprof/stepping/helper_sandbox.h) adds to each system call
// it makes: the calls a burst tracer makes most (ptrace, wait4, ppoll, read, timer_settime,
// process_vm_readv, ioctl, pread64: ~20 per emulated window, traced with strace), timed in this
// process before and after it enters the same sandbox. The filter cannot be left, so the runs
// are in registration order: every call unfiltered, the sandbox entered, every call filtered.
// Each call is made to fail fast or do little (no tracee, an empty pipe, a bad fd), so what
// differs is the filter's share. Pin it: taskset -c 1 build/bin/tracer_sandbox_bench
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "pathprof/core/procfs.h"
#include "pathprof/stepping/helper_sandbox.h"

namespace {

int g_pipe[2] = {-1, -1};
int g_stat = -1;
timer_t g_timer{};
char g_buf[4096];

void Setup() {
  if (g_stat >= 0) return;
  if (pipe2(g_pipe, O_NONBLOCK | O_CLOEXEC) != 0) std::abort();
  g_stat = pathprof::procfs::Procfs::Host().Open(getpid(), "stat", O_RDONLY);
  sigevent ev{};
  ev.sigev_notify = SIGEV_NONE;
  if (g_stat < 0 || timer_create(CLOCK_MONOTONIC, &ev, &g_timer) != 0) std::abort();
}

// One of the tracer's calls, by its place in the strace count.
void Call(int which) {
  switch (which) {
    case 0:  // PTRACE_PEEKDATA of a process not ours: ESRCH
      benchmark::DoNotOptimize(ptrace(PTRACE_PEEKDATA, 1, nullptr, nullptr));
      break;
    case 1: {  // no child: ECHILD
      int st;
      benchmark::DoNotOptimize(waitpid(-1, &st, WNOHANG));
      break;
    }
    case 2: {  // nothing ready, no wait
      pollfd p{g_pipe[0], POLLIN, 0};
      const timespec zero{0, 0};
      benchmark::DoNotOptimize(ppoll(&p, 1, &zero, nullptr));
      break;
    }
    case 3:  // an empty non-blocking pipe: EAGAIN
      benchmark::DoNotOptimize(read(g_pipe[0], g_buf, 1));
      break;
    case 4: {  // disarm the timer
      itimerspec off{};
      benchmark::DoNotOptimize(timer_settime(g_timer, 0, &off, nullptr));
      break;
    }
    case 5: {  // 64 bytes of our own memory
      static char src[64], dst[64];
      iovec local{dst, sizeof dst}, remote{src, sizeof src};
      benchmark::DoNotOptimize(process_vm_readv(getpid(), &local, 1, &remote, 1, 0));
      break;
    }
    case 6:  // a bad fd: EBADF
      benchmark::DoNotOptimize(ioctl(-1, 0));
      break;
    case 7:  // a small /proc read
      benchmark::DoNotOptimize(pread(g_stat, g_buf, 64, 0));
      break;
  }
}
const char* kNames[] = {"ptrace",           "wait4", "ppoll",  "read", "timer_settime",
                        "process_vm_readv", "ioctl", "pread64"};

void BM_Call(benchmark::State& state) {
  Setup();
  const int which = static_cast<int>(state.range(0));
  for (auto _ : state) Call(which);
  state.SetLabel(kNames[which]);
}

void BM_EnterSandbox(benchmark::State& state) {
  for (auto _ : state) {
    const std::string error = pathprof::stepping::EnterHelperSandbox({});
    if (!error.empty()) state.SkipWithError(error.c_str());
  }
}

}  // namespace

BENCHMARK(BM_Call)->Name("unfiltered")->DenseRange(0, 7);
BENCHMARK(BM_EnterSandbox)->Iterations(1);
BENCHMARK(BM_Call)->Name("filtered")->DenseRange(0, 7);
BENCHMARK_MAIN();
