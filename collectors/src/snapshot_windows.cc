#include "pathprof/collectors/snapshot_windows.h"

#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "emulator_client.h"
#include "pathprof/collectors/shared_stack_sampler.h"
#include "pathprof/core/clock.h"
#include "pathprof/stepping/helper_process.h"
#include "process_access.h"
#include "process_image.h"
#include "snapshot_emulation.h"

namespace pathprof::collectors {

namespace {

uint64_t ThreadCpuNs() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000u + static_cast<uint64_t>(ts.tv_nsec);
}

// How long Flush waits for the worker to empty its queue at most.
constexpr std::chrono::seconds kFlushDeadline{5};
// Samples the worker takes from the queue at once, and how long it waits for that many: each
// batch is one exchange with the emulator helper (whose wake-ups, one per sample, were a
// collector's largest cost after the emulation). Windows are consumed at a session's or a
// continuous window's end, so the wait delays nothing anyone sees.
constexpr size_t kBatch = 64;
constexpr std::chrono::milliseconds kBatchWait{50};
constexpr size_t kMaxSent = 4096;

}  // namespace

struct SnapshotWindowCollector::Impl {
  SnapshotWindowOptions options;
  WindowSink on_window;
  std::function<void(const RawStackSample&)> on_stack;
  std::unique_ptr<StackSubscription> subscription;

  // The emulation (worker thread only): in the helper, or with emulate_in_this_process here.
  EmulatorHelperOptions helper_options;
  std::unique_ptr<EmulatorClient> helper;
  uint32_t helper_starts = 0;
  std::unique_ptr<DirectProcessAccess> local_access;
  std::unique_ptr<SnapshotEmulation> local;
  const uint32_t self = static_cast<uint32_t>(getpid());
  std::atomic<pid_t> helper_pid{-1};

  mutable std::mutex mu;  // the queue, the stats, `gone`
  std::condition_variable work_cv, idle_cv;
  std::deque<RawStackSample> queue;
  std::set<uint32_t> gone;        // processes to forget
  std::set<uint32_t> not_wanted;  // processes whose windows come from elsewhere
  std::set<uint32_t> sent;        // processes some batch had (at most kMaxSent)
  bool stop = false;
  bool busy = false;
  bool flushing = false;  // Flush waits: no batch waits for more samples
  bool stopping = false;  // Stop was called: no sample is taken
  size_t in_worker = 0;   // samples taken from the queue and not yet accounted
  bool ready = false;     // `subscription` is set: the worker may use it
  SnapshotWindowStats stats;
  std::map<uint32_t, ProcessImage::Stats> image_stats;
  std::thread worker;

  void OnSample(const RawStackSample& s) {
    if (on_stack) on_stack(s);
    std::lock_guard<std::mutex> lock(mu);
    ++stats.samples;
    if (!s.snapshot) {
      ++stats.no_snapshot;
      return;
    }
    // Every process: this one's samples and its helpers' (the emulator among them) are no one's
    // windows.
    if (stopping) {
      ++stats.after_stop;
      return;
    }
    if (s.pid == self || stepping::IsOwnHelper(static_cast<pid_t>(s.pid))) {
      ++stats.own_process;
      return;
    }
    if (not_wanted.contains(s.pid)) {
      ++stats.not_wanted;
      return;
    }
    if (queue.size() >= options.queue_samples) {
      ++stats.dropped_queue_full;
      return;
    }
    if (options.budget) {
      switch (options.budget->Take(MonotonicNs())) {
        case WindowBudget::Refusal::kCount:
          ++stats.budget_count;
          return;
        case WindowBudget::Refusal::kCpu:
          ++stats.budget_cpu;
          return;
        case WindowBudget::Refusal::kNone:
          break;
      }
    }
    queue.push_back(s);
    work_cv.notify_one();
  }

  void Work() {
    std::unique_lock<std::mutex> lock(mu);
    for (;;) {
      work_cv.wait(lock, [&] { return stop || (ready && (!queue.empty() || !gone.empty())); });
      // A process's first sample goes at once: the helper reads its maps then, and the samples
      // taken after that read are what let it trust the read (ProcessImage::Describes).
      if (!local && !stop && gone.empty() && !HasNewProcess())
        work_cv.wait_for(lock, kBatchWait,
                         [&] { return stop || flushing || queue.size() >= kBatch; });
      std::set<uint32_t> forget;
      forget.swap(gone);
      for (uint32_t pid : forget) {
        image_stats.erase(pid);
        sent.erase(pid);
      }
      if (stop) return;
      std::vector<RawStackSample> batch;
      in_worker = 0;
      while (!queue.empty() && batch.size() < kBatch) {
        // Bounded: forgetting whom it sent to costs a batch that does not wait, no more.
        if (sent.size() >= kMaxSent) sent.clear();
        sent.insert(queue.front().pid);
        batch.push_back(std::move(queue.front()));
        queue.pop_front();
        ++in_worker;
      }
      busy = true;
      lock.unlock();
      Forget(forget);
      if (!batch.empty()) Emulate(batch);
      lock.lock();
      in_worker = 0;
      busy = false;
      if (queue.empty()) idle_cv.notify_all();
    }
  }

  // Whether a queued sample is of a process no batch has had yet (mu held).
  bool HasNewProcess() {
    for (const RawStackSample& s : queue)
      if (sent.count(s.pid) == 0) return true;
    return false;
  }

  void Forget(const std::set<uint32_t>& pids) {
    for (uint32_t pid : pids) {
      if (local) local->Forget(pid);
      if (helper && !helper->failed()) helper->Forget(pid);
    }
  }

  void SetHints(uint32_t pid, const std::vector<uint64_t>& pages) {
    (void)subscription->SetHintPages(pid, pages);
  }

  // The helper, started again after a failure while max_emulator_starts allows; null when none
  // is left (its failure is in the stats).
  EmulatorClient* Helper() {
    if (helper && !helper->failed()) return helper.get();
    if (helper) {
      std::lock_guard<std::mutex> lock(mu);
      ++stats.emulator_failures;
      stats.emulator_failure = helper->failure();
    }
    helper.reset();
    helper_pid = -1;
    if (helper_starts >= options.max_emulator_starts) {
      std::lock_guard<std::mutex> lock(mu);
      stats.emulator_exhausted = true;
      return nullptr;
    }
    ++helper_starts;
    auto started = EmulatorClient::Start(helper_options);
    if (!started.ok()) {
      std::lock_guard<std::mutex> lock(mu);
      ++stats.emulator_failures;
      stats.emulator_failure = started.status().message();
      return nullptr;
    }
    helper = std::move(*started);
    helper_pid = helper->pid();
    return helper.get();
  }

  void Emulate(const std::vector<RawStackSample>& batch) {
    if (local) {
      local->ObserveAhead(batch);
      for (const RawStackSample& s : batch) {
        SampleOutcome o = local->Emulate(s);
        if (options.budget) options.budget->Spent(o.emulate_ns);
        Account(s, std::move(o));
      }
      return;
    }
    const uint64_t t0 = ThreadCpuNs();
    size_t done = 0;
    uint64_t helper_ns = 0;
    if (EmulatorClient* h = Helper()) {
      std::vector<const RawStackSample*> samples;
      for (const RawStackSample& s : batch) samples.push_back(&s);
      (void)h->Run(
          samples,
          [&](size_t i, SampleOutcome&& o) {
            helper_ns += std::min<uint64_t>(o.emulate_ns, 1'000'000'000);
            Account(batch[i], std::move(o));
            ++done;
          },
          [&](uint32_t pid, const std::vector<uint64_t>& pages) { SetHints(pid, pages); });
    }
    // The budget's CPU: the helper's on the samples and this thread's on handing them over.
    if (options.budget) options.budget->Spent(helper_ns + (ThreadCpuNs() - t0));
    if (done < batch.size()) {
      std::lock_guard<std::mutex> lock(mu);
      stats.lost_emulator_gone += batch.size() - done;
      in_worker = 0;
    }
  }

  void Account(const RawStackSample& sample, SampleOutcome&& o) {
    {
      std::lock_guard<std::mutex> lock(mu);
      if (in_worker > 0) --in_worker;
      stats.execs += o.exec;
      if (o.evicted) {
        ++stats.processes_evicted;
        image_stats.erase(o.evicted_pid);
      }
      image_stats[sample.pid] = o.image;
      switch (o.kind) {
        case SampleOutcome::Kind::kNoSnapshot:
          ++stats.no_snapshot;
          return;
        case SampleOutcome::Kind::kInMappingSyscall:
          ++stats.in_mapping_syscall;
          return;
        case SampleOutcome::Kind::kWindow:
          break;
      }
      ++stats.windows;
      stats.in_syscall += o.in_syscall;
      stats.taken += o.taken;
      stats.emulate_ns += o.emulate_ns;
      ++stats.ends[static_cast<size_t>(o.end)];
    }
    if (o.events.empty()) return;
    BranchBatch batch;
    batch.pid = sample.pid;
    batch.tid = sample.tid;
    batch.time_ns = sample.time_ns;
    batch.gap_before = true;
    batch.window = true;
    batch.events = std::move(o.events);
    batch.stack.regs = sample.regs;
    batch.stack.stack_start = sample.stack_start;
    batch.stack.stack = sample.stack;
    on_window(batch);
  }
};

SnapshotWindowCollector::SnapshotWindowCollector(std::unique_ptr<Impl> impl)
    : impl_(std::move(impl)) {}

Result<std::unique_ptr<SnapshotWindowCollector>> SnapshotWindowCollector::Start(
    const SnapshotWindowOptions& options, WindowSink on_window,
    std::function<void(const RawStackSample&)> on_stack) {
  if (options.window_taken == 0 || options.window_taken > 4096)
    return Error(
        ErrorCode::kInvalidArgument,
        "snapshot windows of " + std::to_string(options.window_taken) + " taken branches: 1..4096");
  if (options.queue_samples == 0)
    return Error(ErrorCode::kInvalidArgument, "a snapshot queue of 0 samples");
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  impl->options.snapshot.enabled = true;
  EmulationSettings settings;
  settings.window_taken = options.window_taken;
  settings.hint_pages = options.snapshot.hint_pages;
  settings.learn_hints = options.learn_hints;
  settings.max_processes = static_cast<uint32_t>(std::min<size_t>(options.max_processes, 1u << 20));
  settings.max_stable_pages = options.max_stable_pages;
  settings.max_decoded = options.max_decoded;
  Impl* raw = impl.get();
  if (options.emulate_in_this_process) {
    raw->local_access = std::make_unique<DirectProcessAccess>(options.open_as);
    raw->local = std::make_unique<SnapshotEmulation>(
        settings, *raw->local_access,
        [raw](uint32_t pid, const std::vector<uint64_t>& pages) { raw->SetHints(pid, pages); });
  } else {
    raw->helper_options.settings = settings;
    raw->helper_options.open_as = options.open_as;
    raw->helper_options.run_as = options.open_as;
    // Started now, so that a session without one fails at its start, saying why.
    ++raw->helper_starts;
    PATHPROF_ASSIGN_OR_RETURN(raw->helper, EmulatorClient::Start(raw->helper_options));
    raw->helper_pid = raw->helper->pid();
  }
  impl->on_window = std::move(on_window);
  impl->on_stack = std::move(on_stack);
  StackSubscriptionSettings ss;
  ss.pids = options.pids;
  ss.frequency_hz = options.frequency_hz;
  ss.kernel_stacks = false;
  ss.only_uid = options.only_uid;
  ss.stack_copy_bytes = options.stack_copy_bytes;
  ss.follow_children = options.follow_children;
  ss.snapshot = impl->options.snapshot;
  // The worker starts before the subscription, which may call OnSample at once.
  raw->worker = std::thread([raw] { raw->Work(); });
  auto sub = StackSubscription::Start(ss, [raw](const RawStackSample& s) { raw->OnSample(s); });
  if (!sub.ok()) {
    {
      std::lock_guard<std::mutex> lock(raw->mu);
      raw->stop = true;
    }
    raw->work_cv.notify_all();
    raw->worker.join();
    return sub.status();
  }
  {
    std::lock_guard<std::mutex> lock(raw->mu);
    raw->subscription = std::move(*sub);
    raw->ready = true;
  }
  raw->work_cv.notify_all();
  return std::unique_ptr<SnapshotWindowCollector>(new SnapshotWindowCollector(std::move(impl)));
}

SnapshotWindowCollector::~SnapshotWindowCollector() {
  // The worker first (it may be asking the subscription for hint pages), then the subscription:
  // samples it still routes are queued and never emulated.
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    impl_->stop = true;
  }
  impl_->work_cv.notify_all();
  impl_->worker.join();
  impl_->subscription.reset();
}

Status SnapshotWindowCollector::AddPid(uint32_t pid) {
  return impl_->subscription->AddPid(pid);
}

Status SnapshotWindowCollector::RemovePid(uint32_t pid) {
  const Status st = impl_->subscription->RemovePid(pid);
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    impl_->gone.insert(pid);
    impl_->not_wanted.erase(pid);
  }
  impl_->work_cv.notify_all();
  return st;
}

Status SnapshotWindowCollector::SetWindowsWanted(uint32_t pid, bool wanted) {
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    if (wanted) {
      impl_->not_wanted.erase(pid);
      return Status::Ok();
    }
    if (impl_->not_wanted.size() >= impl_->options.max_processes &&
        !impl_->not_wanted.contains(pid))
      return Status(ErrorCode::kResourceExhausted,
                    "snapshot windows: already " + std::to_string(impl_->not_wanted.size()) +
                        " processes take their windows elsewhere (max_processes)");
    impl_->not_wanted.insert(pid);
    impl_->gone.insert(pid);  // what was kept of it serves no window now
  }
  impl_->work_cv.notify_all();
  return Status::Ok();
}

void SnapshotWindowCollector::Flush() {
  impl_->subscription->Flush();
  std::unique_lock<std::mutex> lock(impl_->mu);
  impl_->flushing = true;
  impl_->work_cv.notify_all();
  // Bounded: a queue of queue_samples windows takes well under this; a worker stuck longer
  // (a host that starves it) leaves the rest queued, emulated later or dropped at destruction.
  (void)impl_->idle_cv.wait_for(lock, kFlushDeadline,
                                [&] { return impl_->queue.empty() && !impl_->busy; });
  impl_->flushing = false;
}

pid_t SnapshotWindowCollector::emulator_pid() const {
  return impl_->helper_pid;
}

void SnapshotWindowCollector::Stop() {
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    impl_->stopping = true;
  }
  Flush();
}

SnapshotWindowStats SnapshotWindowCollector::stats() const {
  const StackSubscriptionStats sub = impl_->subscription->stats();
  std::lock_guard<std::mutex> lock(impl_->mu);
  SnapshotWindowStats out = impl_->stats;
  out.queued = impl_->queue.size() + impl_->in_worker;
  out.snapshots_cut = sub.snapshots_cut;
  out.snapshot_hints_unreadable = sub.snapshot_hints_unreadable;
  out.ringbuf_full = sub.ringbuf_full;
  for (const auto& [pid, st] : impl_->image_stats) {
    out.image_pages_from_files += st.file_pages + st.vdso_pages;
    out.image_pages_written += st.written_pages;
    out.image_pages_adopted += st.adopted;
  }
  return out;
}

}  // namespace pathprof::collectors
