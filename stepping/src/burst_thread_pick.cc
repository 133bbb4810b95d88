// Which thread the next burst interrupts: one found running, and only such a one. A sleeping
// thread has no instructions to step, and interrupting it wakes it from its system call: most
// calls restart unseen, but epoll_wait, sigtimedwait or a recv with a timeout return EINTR
// (interrupted_syscall.h restarts them, for the thread that falls asleep between this read and
// the interrupt). When no thread runs, the burst is skipped (skipped_no_thread).
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>

#include "burst_tracer_impl.h"
#include "pathprof/core/procfs.h"

namespace pathprof::stepping::burst {

namespace {

// The scheduler state letter of one thread ('R' running, 'S' sleeping, ...) and the CPU it last
// ran on; state 0 when it is gone.
struct TaskState {
  char state = 0;
  int cpu = -1;
};
// `*fd` is the thread's stat file, opened on first use and kept: at hundreds of bursts a second
// an open and close per pick cost more than the read (a read from offset 0 is always fresh).
TaskState ReadTaskState(pid_t pid, pid_t tid, decoders::UniqueFd* fd) {
  TaskState out;
  if (fd->get() < 0) {
    *fd = decoders::UniqueFd(procfs::Procfs::Host().OpenTask(pid, tid, "stat", O_RDONLY));
    if (fd->get() < 0) return out;
  }
  char buf[1024];
  const ssize_t n = pread(fd->get(), buf, sizeof buf, 0);
  if (n <= 0) return out;
  auto stat = procfs::ParseStat(std::string_view(buf, static_cast<size_t>(n)));
  if (!stat.ok()) return out;
  out.state = stat->state;
  out.cpu = stat->processor;
  return out;
}

}  // namespace

pid_t BurstTracer::PickThread(int* cpu) {
  std::vector<pid_t> tids;
  for (const auto& [tid, t] : threads_)
    if (!t.group_stopped) tids.push_back(tid);
  if (tids.empty()) return -1;
  std::sort(tids.begin(), tids.end());
  const uint64_t now = MonotonicNs();
  for (size_t i = 0; i < tids.size() && i < kMaxThreadsChecked; ++i) {
    const pid_t tid = tids[(rr_ + i) % tids.size()];
    Thread& thread = threads_[tid];
    if (now < thread.not_running_until_ns) continue;
    const TaskState s = ReadTaskState(options_.pid, tid, &thread.stat_fd);
    if (s.state == 'R') {
      thread.not_running_reads = 0;
      rr_ = (rr_ + i + 1) % tids.size();
      *cpu = s.cpu;
      return tid;
    }
    if (s.state != 0) {
      const unsigned doublings = std::min(thread.not_running_reads, kNotRunningMaxDoublings);
      thread.not_running_reads = doublings + 1;
      thread.not_running_until_ns = now + (kNotRunningFirstWaitNs << doublings);
    }
  }
  rr_ = (rr_ + 1) % tids.size();
  return -1;
}

}  // namespace pathprof::stepping::burst
