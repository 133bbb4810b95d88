#include "pathprof/collectors/snapshot_windows.h"

#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "pathprof/collectors/shared_stack_sampler.h"
#include "pathprof/core/clock.h"
#include "pathprof/core/procfs.h"
#include "process_image.h"
#include "record_guest.h"

namespace pathprof::collectors {

namespace {

uint64_t ThreadCpuNs() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000u + static_cast<uint64_t>(ts.tv_nsec);
}

// How long Flush waits for the worker to empty its queue at most.
constexpr std::chrono::seconds kFlushDeadline{5};

// How often a process's mappings and thread count are read again (a miss re-reads sooner).
constexpr uint64_t kRefreshNs = 1'000'000'000;
// ... when the samples carry the mapping sequence and the maps as read describe the sample:
// any change of the mappings moves the sequence and makes them read again within
// ProcessImage::kMissRefreshNs, so the periodic read only bounds how long they are trusted
// (with 50 processes sampled, reading each one's maps every second took ~1% of a core).
constexpr uint64_t kDescribedRefreshNs = 10'000'000'000;

}  // namespace

struct SnapshotWindowCollector::Impl {
  SnapshotWindowOptions options;
  WindowSink on_window;
  std::function<void(const RawStackSample&)> on_stack;
  std::unique_ptr<StackSubscription> subscription;

  // What the worker keeps of one process (worker thread only).
  struct Process {
    std::unique_ptr<ProcessImage> image;
    std::unique_ptr<emulator::WindowEmulator> emulator;
    uint64_t exec_id = 0;               // the program the image and decodes are of
    bool threads_share_memory = false;  // more than one thread: windows end at atomics
    uint64_t threads_read_ns = 0;
    std::vector<uint64_t> once;     // pages to copy once (RELRO)
    std::vector<uint64_t> learned;  // data pages whose unknown bytes ended windows
    std::vector<uint64_t> hints_set;
    uint64_t last_sample_ns = 0;  // for max_processes: the oldest goes first
  };
  std::map<uint32_t, Process> processes;
  const uint32_t self = static_cast<uint32_t>(getpid());

  mutable std::mutex mu;  // the queue, the stats, `gone`
  std::condition_variable work_cv, idle_cv;
  std::deque<RawStackSample> queue;
  std::set<uint32_t> gone;  // processes to forget
  bool stop = false;
  bool busy = false;
  bool ready = false;  // `subscription` is set: the worker may use it
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
    if (s.pid == self) {  // every process: this one's own samples are no one's windows
      ++stats.own_process;
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
      for (uint32_t pid : gone) {
        processes.erase(pid);
        image_stats.erase(pid);
      }
      gone.clear();
      if (stop) return;
      if (queue.empty()) continue;
      RawStackSample sample = std::move(queue.front());
      queue.pop_front();
      busy = true;
      lock.unlock();
      Emulate(sample);
      lock.lock();
      busy = false;
      if (queue.empty()) idle_cv.notify_all();
    }
  }

  Process& ProcessOf(uint32_t pid, uint64_t now_ns) {
    if (processes.find(pid) == processes.end() && processes.size() >= options.max_processes &&
        !processes.empty())
      EvictOldest();
    Process& p = processes[pid];
    p.last_sample_ns = now_ns;
    if (!p.image) {
      p.image = std::make_unique<ProcessImage>(static_cast<pid_t>(pid), options.open_as);
      emulator::EmulatorLimits limits;
      limits.window_taken = options.window_taken;
      limits.max_stable_pages = options.max_stable_pages;
      limits.max_decoded = options.max_decoded;
      p.emulator = std::make_unique<emulator::WindowEmulator>(limits);
    }
    return p;
  }

  // The process whose last sample is oldest (a linear scan: max_processes is small, and this
  // runs once per process that arrives past it).
  void EvictOldest() {
    auto oldest = processes.begin();
    for (auto it = processes.begin(); it != processes.end(); ++it)
      if (it->second.last_sample_ns < oldest->second.last_sample_ns) oldest = it;
    if (!oldest->second.hints_set.empty()) (void)subscription->SetHintPages(oldest->first, {});
    {
      std::lock_guard<std::mutex> lock(mu);
      ++stats.processes_evicted;
      image_stats.erase(oldest->first);
    }
    processes.erase(oldest);
  }

  void Emulate(const RawStackSample& sample) {
    const uint64_t t0 = ThreadCpuNs();
    if (auto it = processes.find(sample.pid);
        it != processes.end() && it->second.exec_id != sample.exec_id) {
      // Another program since the last sample: the image (whose maps are re-read once a second)
      // and the decoded instructions may be the old program's at the same addresses.
      processes.erase(it);
      (void)subscription->SetHintPages(sample.pid, {});  // the old program's pages
      std::lock_guard<std::mutex> lock(mu);
      ++stats.execs;
    }
    const uint64_t now = MonotonicNs();
    Process& p = ProcessOf(sample.pid, now);
    p.exec_id = sample.exec_id;
    const bool sequenced = sample.snapshot && sample.snapshot->has_mapping_sequence;
    if (sample.snapshot ? p.image->RefreshForSample(*sample.snapshot, sample.time_ns, now,
                                                    sequenced ? kDescribedRefreshNs : kRefreshNs)
                        : p.image->Refresh(now, kRefreshNs))
      p.emulator->Reset();
    if (sample.snapshot && sample.snapshot->threads != 0) {
      p.threads_share_memory = sample.snapshot->threads != 1;  // the count at the sample
    } else if (p.threads_read_ns == 0 || now - p.threads_read_ns >= kRefreshNs) {
      p.threads_read_ns = now;
      auto status = procfs::Procfs::Host().ReadStatus(static_cast<pid_t>(sample.pid));
      p.threads_share_memory = !status.ok() || status->threads != 1;
    }
    SnapshotStart start;
    if (!StartFromSample(sample, *p.image, &start)) {
      std::lock_guard<std::mutex> lock(mu);
      ++stats.no_snapshot;
      return;
    }
    if (start.in_mapping_syscall) {
      std::lock_guard<std::mutex> lock(mu);
      ++stats.in_mapping_syscall;
      return;
    }
    RecordGuest guest(sample, start, *p.image);
    emulator::EmulatedWindow w = p.emulator->Run(start.state, guest, p.threads_share_memory);
    LearnHints(sample.pid, p, guest, w.end);
    const uint64_t spent = ThreadCpuNs() - t0;
    if (options.budget) options.budget->Spent(spent);
    {
      std::lock_guard<std::mutex> lock(mu);
      ++stats.windows;
      stats.in_syscall += start.in_syscall;
      stats.taken += w.taken;
      stats.emulate_ns += spent;
      ++stats.ends[static_cast<size_t>(w.end)];
      image_stats[sample.pid] = p.image->stats();
    }
    if (w.events.empty()) return;
    BranchBatch batch;
    batch.pid = sample.pid;
    batch.tid = sample.tid;
    batch.time_ns = sample.time_ns;
    batch.gap_before = true;
    batch.window = true;
    batch.events = std::move(w.events);
    batch.stack.regs = sample.regs;
    batch.stack.stack_start = sample.stack_start;
    batch.stack.stack = sample.stack;
    on_window(batch);
  }

  // The pages to ask the sampler for: read-only mappings' pages that are not their file's, until
  // the image has a copy; then, with learn_hints, the pages whose unknown bytes ended windows.
  void LearnHints(uint32_t pid, Process& p, const RecordGuest& guest, emulator::EmulationEnd end) {
    const uint32_t room = options.snapshot.hint_pages;
    if (room == 0) return;
    for (uint64_t page : guest.wanted_copies())
      if (std::find(p.once.begin(), p.once.end(), page) == p.once.end()) p.once.push_back(page);
    p.once.erase(std::remove_if(p.once.begin(), p.once.end(),
                                [&](uint64_t page) { return !p.image->WantsCopy(page); }),
                 p.once.end());
    if (options.learn_hints && end == emulator::EmulationEnd::kNotInSnapshot)
      for (uint64_t page : guest.unknown_pages()) {
        p.learned.erase(std::remove(p.learned.begin(), p.learned.end(), page), p.learned.end());
        p.learned.insert(p.learned.begin(), page);
      }
    if (p.learned.size() > room) p.learned.resize(room);
    std::vector<uint64_t> hints(p.once.begin(),
                                p.once.begin() + std::min<size_t>(p.once.size(), room));
    for (uint64_t page : p.learned)
      if (hints.size() < room) hints.push_back(page);
    if (hints == p.hints_set) return;
    p.hints_set = hints;
    (void)subscription->SetHintPages(pid, hints);
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
  Impl* raw = impl.get();
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
  }
  impl_->work_cv.notify_all();
  return st;
}

void SnapshotWindowCollector::Flush() {
  impl_->subscription->Flush();
  std::unique_lock<std::mutex> lock(impl_->mu);
  // Bounded: a queue of queue_samples windows takes well under this; a worker stuck longer
  // (a host that starves it) leaves the rest queued, emulated later or dropped at destruction.
  (void)impl_->idle_cv.wait_for(lock, kFlushDeadline,
                                [&] { return impl_->queue.empty() && !impl_->busy; });
}

SnapshotWindowStats SnapshotWindowCollector::stats() const {
  const StackSubscriptionStats sub = impl_->subscription->stats();
  std::lock_guard<std::mutex> lock(impl_->mu);
  SnapshotWindowStats out = impl_->stats;
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
