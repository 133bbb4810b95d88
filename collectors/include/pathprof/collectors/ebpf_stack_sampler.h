// The eBPF stack sampler: a perf_event program on every online CPU (cycles where a PMU exists,
// cpu-clock otherwise) copies user and kernel stacks into one ring buffer; this class loads it,
// keeps its in-kernel targets (what to do for each process), and drains the ring buffer into a
// callback. A process holds one sampler for every session (shared_stack_sampler.h routes it).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "pathprof/core/status.h"

namespace pathprof::collectors {

// What a sample copied for emulating a window from it later, with no stop (a target's
// SnapshotSettings): the registers the stack record lacks, and pieces of the address space.
struct RawSnapshot {
  uint64_t rflags = 0;
  uint64_t fs_base = 0, gs_base = 0;
  uint64_t orig_rax = ~uint64_t{0};  // the system call the sample interrupted; ~0: none
  // Sampled in the kernel (a system call, an interrupt): the registers are those saved on entry
  // from user space, so a window starts where the thread returns to it.
  bool in_kernel = false;
  // The process's mapping sequence at the sample (the kernel's mm_lock_seq: equal values, no
  // change of the mappings between them), when the kernel has one; mappings_changing: a change
  // was under way meanwhile, so what they permitted then is not known.
  bool has_mapping_sequence = false;
  bool mappings_changing = false;
  uint32_t mapping_sequence = 0;
  uint32_t threads = 0;        // the process's threads at the sample; 0: not known
  uint64_t stack_base = 0;     // the stack copy: bytes [stack_base, + stack.size()), whole
  std::vector<uint8_t> stack;  // pages from the one holding the stack pointer
  struct Piece {
    uint64_t address = 0;
    uint32_t offset = 0;  // into bytes
    uint32_t size = 0;
    // Where it came from: the range around a general-purpose register (its DWARF number, 0-15
    // but 7, rsp), around fs_base (kFsBase), or a hint page (kHintPage).
    static constexpr uint32_t kFsBase = 0xfe;
    static constexpr uint32_t kHintPage = 0xff;
    uint32_t source = 0;
  };
  std::vector<Piece> pieces;  // in the order copied: register ranges, then hint pages
  std::vector<uint8_t> bytes;
  // Ranges the sampler could not read at the sample (unmapped, inaccessible or not present at
  // that instant): the thread may fault there, so a window must not read or write them.
  struct Range {
    uint64_t address = 0;
    uint32_t size = 0;
  };
  std::vector<Range> unreadable;
};

struct RawStackSample {
  uint32_t pid = 0;
  uint32_t tid = 0;
  uint32_t cpu = 0;
  uint64_t time_ns = 0;  // CLOCK_MONOTONIC
  uint64_t period = 0;
  uint32_t root = 0;       // the target the sample was taken for (a followed child's ancestor)
  uint32_t hz = 0;         // the rate that target was sampled at
  uint64_t cgroup_id = 0;  // the task's cgroup v2 id
  // The task's exec count (the kernel's self_exec_id): a change means another program, whose
  // mappings nothing kept of the process before may describe.
  uint64_t exec_id = 0;
  // The task's uid when its real, effective, saved and filesystem uids agree and it holds no
  // capability; kUidNotPlain otherwise.
  uint32_t plain_uid = 0;
  std::string comm;
  std::vector<uint64_t> user;    // leaf first
  std::vector<uint64_t> kernel;  // leaf first
  // False for a sample of a snapshot target taken for its snapshot alone: no frames were walked
  // (StackTarget::stack_hz says how often they are); stack subscribers never see it.
  bool frames_walked = true;
  uint32_t stack_hz = 0;  // with a snapshot target: the rate of the samples with frames
  int user_error = 0;     // errno from bpf_get_stack, 0 if the stack was read
  int kernel_error = 0;
  // With EbpfSamplerConfig::copy_user_stacks: the user registers (x86-64 DWARF numbering, 16 =
  // the instruction pointer) and the user stack from the stack pointer up, for unwinding with
  // DWARF CFI where frame pointers are missing. Empty when not copied or unreadable.
  std::vector<uint64_t> regs;
  uint64_t stack_start = 0;  // user address of stack[0] (the stack pointer)
  std::vector<uint8_t> stack;
  // With a target's SnapshotSettings. Shared: the one sampler routes a record to every
  // subscription of its process, and only the snapshot's are handed this part.
  std::shared_ptr<const RawSnapshot> snapshot;
};

// The stack copy's bounds (whole 4 KiB pages): perf's --call-graph dwarf,SIZE takes up to 64 KiB
// too. 16 KiB reaches main in -O2 C programs; deep recursions need more.
inline constexpr uint32_t kMinStackCopyBytes = 4096;
inline constexpr uint32_t kMaxStackCopyBytes = 65536;
inline constexpr uint32_t kDefaultStackCopyBytes = 16384;
inline constexpr uint32_t kUidNotPlain = 0xffffffffu;
// The one check of each bound, with the message every caller gives.
Status CheckStackFrequency(int hz);           // 1..100000 Hz
Status CheckStackCopyBytes(uint32_t bytes);   // kMinStackCopyBytes..kMaxStackCopyBytes
inline constexpr uint32_t kEveryProcess = 0;  // the target that stands for every process

// A snapshot with each sample of a target, for windows emulated from it later (no stop). The
// defaults are what docs/performance.md "Snapshot windows" measured to fit the sample's cost
// budget: 1 KiB around each register, and up to 8 hint pages, which the snapshot source fills
// only with pages to copy once (a read-only mapping's pages that are not its file's: RELRO)
// until it has them; data pages learned for every sample cost a 4 KiB copy each.
struct SnapshotSettings {
  bool enabled = false;  // needs a stack copy (StackTarget::stack_copy_bytes)
  uint32_t register_below = 256, register_above = 768;  // sum at most kMaxSnapshotRange
  uint32_t hint_pages = 8;         // of the process's SetHintPages pages, at most kMaxHintPages
  uint32_t max_bytes = 64 * 1024;  // pieces per record at most (kMaxSnapshotBytes); the rest cut
  // Verify mode (tests, benchmarks): the sampled thread also gets this signal after each
  // snapshot, so that a ptrace tracer of it stops at the very instruction the snapshot holds
  // and can compare a stop-and-emulate window with the snapshot's. 0: none.
  int verify_signal = 0;
};
inline constexpr uint32_t kMaxSnapshotRange = 4096;
inline constexpr uint32_t kMaxHintPages = 64;
inline constexpr uint32_t kMaxSnapshotBytes = 16 * 4096 + kMaxHintPages * 4096;
Status CheckSnapshotSettings(const SnapshotSettings& s);

// What the sampler does for one process (or, for kEveryProcess, any process without a target of
// its own).
struct StackTarget {
  uint32_t root = 0;  // reported with its samples: the pid a session asked for
  int hz = 99;        // at most the sampler's rate: the events' samples are thinned to it
  bool kernel_stacks = true;
  // Set: only tasks whose uids are all this one and that hold no capability (a non-admin's
  // target), decided in the kernel at each sample.
  std::optional<uint32_t> only_uid;
  uint32_t stack_copy_bytes = 0;  // user stack copied for DWARF unwinding; 0: none
  bool follow_children = false;   // a fork adds the child with this target (same root)
  uint64_t cgroup_id = 0;         // 0: any cgroup
  SnapshotSettings snapshot;
  // With a snapshot: frames (the user walk, the kernel stack) only at this rate, the rest of
  // the samples taken for their snapshot alone (RawStackSample::frames_walked). 0: every sample.
  int stack_hz = 0;
};

// Losses and deliveries of one root's samples.
struct StackTargetCounters {
  uint64_t submitted = 0;
  uint64_t ringbuf_full = 0;
  uint64_t filtered_credentials = 0;
  uint64_t stack_copies_failed = 0;
  uint64_t stack_copies_short = 0;
  uint64_t snapshots_cut = 0;              // snapshots that left pieces out (max_bytes)
  uint64_t snapshot_hints_unreadable = 0;  // hint pages no longer mapped at a sample
};

// The sampler's events and ring, and the targets it starts with: every pid (or every process when
// pids is empty) gets the target these fields describe.
struct EbpfSamplerConfig {
  int frequency_hz = 99;
  uint32_t ring_bytes = 0;     // 0: a second of this config's samples from every CPU, 4-64 MiB
  std::vector<uint32_t> pids;  // empty: every process (unless cgroup_id is set)
  uint64_t cgroup_id = 0;      // 0: any cgroup; else the cgroup v2 id (inode of its directory)
  bool kernel_stacks = true;
  bool prefer_cycles = true;  // use the hardware cycles event when the host has a PMU
  // Set: only tasks whose real, effective, saved and filesystem uids are all this one and that
  // hold no capability are sampled, decided in the kernel at each sample (a non-admin's session).
  std::optional<uint32_t> only_uid;
  // Copy registers and the top of the user stack with each sample (perf's --call-graph dwarf),
  // for programs built without frame pointers: stack_copy_bytes rounded up to whole pages from
  // the stack pointer's page, so SIZE - 4 KiB to SIZE above the stack pointer.
  bool copy_user_stacks = false;
  uint32_t stack_copy_bytes = kDefaultStackCopyBytes;
  // A target's fork adds the child to the pid filter, in the kernel, before the child runs.
  bool follow_children = false;
  SnapshotSettings snapshot;  // with copy_user_stacks
  int stack_hz = 0;           // with a snapshot: StackTarget::stack_hz
};

struct EbpfSamplerStats {
  uint64_t events = 0;                      // times the program ran
  uint64_t idle = 0;                        // ... on an idle CPU
  uint64_t filtered = 0;                    // ... on a task that is not a target
  uint64_t filtered_credentials = 0;        // ... on a target whose credentials left only_uid
  uint64_t ringbuf_full = 0;                // lost: the ring buffer was full
  uint64_t user_stack_errors = 0;           // delivered without a user stack
  uint64_t kernel_stack_errors = 0;         // delivered without a kernel stack
  uint64_t submitted = 0;                   // written into the ring buffer
  uint64_t delivered = 0;                   // handed to the callback
  uint64_t stack_copies_short = 0;          // the stack's top came before the copy's end
  uint64_t stack_copies_failed = 0;         // no user registers or stack bytes could be read
  uint64_t followed_children = 0;           // processes added to the filter by a target's fork
  uint64_t thinned = 0;                     // ... on a target sampled slower than the events run
  uint64_t snapshots = 0;                   // records that carry a snapshot
  uint64_t snapshots_cut = 0;               // ... that left pieces out (max_bytes)
  uint64_t snapshot_hints_unreadable = 0;   // hint pages not mapped at the sample
  uint64_t snapshot_ranges_unreadable = 0;  // register ranges unreadable (not an address)
  uint64_t verify_signals = 0;              // verify mode: signals sent
  uint64_t verify_signals_failed = 0;       // ... refused by the kernel
  int cpus_attached = 0;
  int cpus_skipped = 0;  // online but perf_event_open failed (reason in warnings)
  std::string event;     // "cycles" or "cpu-clock"
  std::vector<std::string> warnings;
};

class EbpfStackSampler {
 public:
  // Loads and attaches. Fails with kPermission / kUnavailable and a message naming the missing
  // capability (CAP_BPF, CAP_PERFMON), BTF or kernel feature.
  static Result<std::unique_ptr<EbpfStackSampler>> Start(const EbpfSamplerConfig& config);
  // The ring Start makes for `config` when its ring_bytes is 0.
  static Result<uint32_t> RingBytesFor(const EbpfSamplerConfig& config);
  ~EbpfStackSampler();
  EbpfStackSampler(const EbpfStackSampler&) = delete;
  EbpfStackSampler& operator=(const EbpfStackSampler&) = delete;

  // The config's target for pid (root = pid).
  Status AddPid(uint32_t pid);
  // pid's own target (children it passed its target to keep theirs).
  Status RemovePid(uint32_t pid);

  // Sets what is done for pid (kEveryProcess: any process without its own target); a root's
  // counters start at zero the first time it is named.
  Status SetTarget(uint32_t pid, const StackTarget& target);
  // Removes every target whose root is `root` (its own and its followed children's) and the
  // root's counters.
  Status RemoveRoot(uint32_t root);
  // The data pages every snapshot of pid copies (the first SnapshotSettings::hint_pages of
  // them), replacing those set before; at most kMaxHintPages. Empty: none.
  Status SetHintPages(uint32_t pid, const std::vector<uint64_t>& pages);
  // The targets in the kernel now, children added by forks included.
  std::vector<std::pair<uint32_t, StackTarget>> Targets() const;
  StackTargetCounters CountersOf(uint32_t root) const;
  // The events' rate on every CPU; targets are thinned from it (SetTarget again after a change).
  Status SetFrequency(int hz);
  int frequency_hz() const;

  using Sink = std::function<void(const RawStackSample&)>;
  // Waits timeout_ms, or less when the ring buffer fills to an eighth (the BPF program wakes
  // the reader only then), and hands every sample in it to `sink`; returns how many.
  Result<int> Poll(int timeout_ms, const Sink& sink);
  // Drains what is already in the ring buffer without waiting.
  Result<int> Drain(const Sink& sink);
  // For callers that multiplex several sources on their own epoll loop: it is ready only when
  // the ring is an eighth full, so such a caller drains on a timer of its own too.
  int epoll_fd() const;

  EbpfSamplerStats stats() const;

 private:
  struct Impl;
  explicit EbpfStackSampler(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace pathprof::collectors
