#include "snapshot_emulation.h"

#include <time.h>

#include <algorithm>

#include "pathprof/core/clock.h"
#include "record_guest.h"

namespace pathprof::collectors {

namespace {

uint64_t ThreadCpuNs() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000u + static_cast<uint64_t>(ts.tv_nsec);
}

// How often a process's mappings are read again (a miss re-reads sooner).
constexpr uint64_t kRefreshNs = 1'000'000'000;
// ... when the samples carry the mapping sequence and the maps as read describe the sample:
// any change of the mappings moves the sequence and makes them read again within
// ProcessImage::kMissRefreshNs, so the periodic read only bounds how long they are trusted
// (with 50 processes sampled, reading each one's maps every second took ~1% of a core).
constexpr uint64_t kDescribedRefreshNs = 10'000'000'000;

}  // namespace

// What is kept of one process.
struct SnapshotEmulation::Process {
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

SnapshotEmulation::SnapshotEmulation(const EmulationSettings& settings, ProcessAccess& access,
                                     HintSink hints)
    : settings_(settings), access_(access), hints_(std::move(hints)) {}

SnapshotEmulation::~SnapshotEmulation() = default;

void SnapshotEmulation::Forget(uint32_t pid) {
  processes_.erase(pid);
  access_.Forget(static_cast<pid_t>(pid));
}

SnapshotEmulation::Process& SnapshotEmulation::ProcessOf(uint32_t pid, uint64_t now_ns,
                                                         SampleOutcome* out) {
  if (processes_.find(pid) == processes_.end() && processes_.size() >= settings_.max_processes &&
      !processes_.empty()) {
    out->evicted_pid = EvictOldest();
    out->evicted = true;
  }
  std::unique_ptr<Process>& slot = processes_[pid];
  if (!slot) {
    slot = std::make_unique<Process>();
    slot->image = std::make_unique<ProcessImage>(static_cast<pid_t>(pid), access_);
    emulator::EmulatorLimits limits;
    limits.window_taken = settings_.window_taken;
    limits.max_stable_pages = settings_.max_stable_pages;
    limits.max_decoded = settings_.max_decoded;
    slot->emulator = std::make_unique<emulator::WindowEmulator>(limits);
  }
  slot->last_sample_ns = now_ns;
  return *slot;
}

// The process whose last sample is oldest (a linear scan: max_processes is small, and this runs
// once per process that arrives past it).
uint32_t SnapshotEmulation::EvictOldest() {
  auto oldest = processes_.begin();
  for (auto it = processes_.begin(); it != processes_.end(); ++it)
    if (it->second->last_sample_ns < oldest->second->last_sample_ns) oldest = it;
  if (!oldest->second->hints_set.empty()) hints_(oldest->first, {});
  const uint32_t pid = oldest->first;
  Forget(pid);
  return pid;
}

void SnapshotEmulation::ObserveAhead(const std::vector<RawStackSample>& samples) {
  for (const RawStackSample& s : samples) {
    if (!s.snapshot || !s.snapshot->has_mapping_sequence || s.snapshot->mappings_changing) continue;
    auto it = processes_.find(s.pid);
    if (it == processes_.end() || it->second->exec_id != s.exec_id) continue;
    it->second->image->ObserveSequence(s.time_ns, s.snapshot->mapping_sequence);
  }
}

SampleOutcome SnapshotEmulation::Emulate(const RawStackSample& sample) {
  const uint64_t t0 = ThreadCpuNs();
  SampleOutcome out;
  if (auto it = processes_.find(sample.pid);
      it != processes_.end() && it->second->exec_id != sample.exec_id) {
    // Another program since the last sample: the image (whose maps are re-read once a second)
    // and the decoded instructions may be the old program's at the same addresses.
    Forget(sample.pid);
    hints_(sample.pid, {});  // the old program's pages
    out.exec = true;
  }
  const uint64_t now = MonotonicNs();
  Process& p = ProcessOf(sample.pid, now, &out);
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
    const std::optional<uint32_t> threads = access_.Threads(static_cast<pid_t>(sample.pid));
    p.threads_share_memory = !threads || *threads != 1;
  }
  out.image = p.image->stats();
  SnapshotStart start;
  if (!StartFromSample(sample, *p.image, &start)) {
    out.kind = SampleOutcome::Kind::kNoSnapshot;
    return out;
  }
  if (start.in_mapping_syscall) {
    out.kind = SampleOutcome::Kind::kInMappingSyscall;
    return out;
  }
  RecordGuest guest(sample, start, *p.image);
  emulator::EmulatedWindow w = p.emulator->Run(start.state, guest, p.threads_share_memory);
  LearnHints(sample.pid, p, guest.wanted_copies(), guest.unknown_pages(), w.end);
  out.kind = SampleOutcome::Kind::kWindow;
  out.in_syscall = start.in_syscall;
  out.taken = w.taken;
  out.end = w.end;
  out.events = std::move(w.events);
  out.image = p.image->stats();
  out.emulate_ns = ThreadCpuNs() - t0;
  return out;
}

// The pages to ask the sampler for: read-only mappings' pages that are not their file's, until
// the image has a copy; then, with learn_hints, the pages whose unknown bytes ended windows.
void SnapshotEmulation::LearnHints(uint32_t pid, Process& p, const std::vector<uint64_t>& wanted,
                                   const std::vector<uint64_t>& unknown,
                                   emulator::EmulationEnd end) {
  const uint32_t room = settings_.hint_pages;
  if (room == 0) return;
  for (uint64_t page : wanted)
    if (std::find(p.once.begin(), p.once.end(), page) == p.once.end()) p.once.push_back(page);
  p.once.erase(std::remove_if(p.once.begin(), p.once.end(),
                              [&](uint64_t page) { return !p.image->WantsCopy(page); }),
               p.once.end());
  if (settings_.learn_hints && end == emulator::EmulationEnd::kNotInSnapshot)
    for (uint64_t page : unknown) {
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
  hints_(pid, hints);
}

}  // namespace pathprof::collectors
