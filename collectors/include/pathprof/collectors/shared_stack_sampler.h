// One eBPF stack sampler for the whole process (the daemon: the whole host), shared by every
// session: one perf event per CPU and one ring buffer, however many sessions sample stacks.
// Each session subscribes with what it wants; the sampler's targets are the union of what the
// subscriptions want of each process (the highest rate, the largest stack copy, kernel stacks
// if any asks), and each record is routed to the subscriptions of its root, thinned to each
// one's rate and cut to what it asked for. The sampler opens with the first subscription and
// closes with the last.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "pathprof/collectors/ebpf_stack_sampler.h"
#include "pathprof/core/status.h"

namespace pathprof::collectors {

struct StackSubscriptionSettings {
  std::vector<uint32_t> pids;  // empty: every process (of cgroup_id, when set)
  uint64_t cgroup_id = 0;
  int frequency_hz = 99;
  bool kernel_stacks = true;
  // A non-admin's subscription: only samples of tasks whose uids are all this one and that hold
  // no capability reach it (decided in the kernel at each sample).
  std::optional<uint32_t> only_uid;
  uint32_t stack_copy_bytes = 0;  // 0: no user stack copy (frame pointers only)
  bool follow_children = false;   // a target's fork adds the child, in the kernel
  // A snapshot with each sample (for windows emulated from it: collectors/snapshot_windows.h);
  // needs a stack copy. Only the subscriptions that ask for one are handed it.
  SnapshotSettings snapshot;
};

struct StackSubscriptionStats {
  uint64_t delivered = 0;             // handed to this subscription's sink
  uint64_t ringbuf_full = 0;          // its targets' samples lost to a full ring
  uint64_t filtered_credentials = 0;  // its targets' samples after they left only_uid
  uint64_t stack_copies_failed = 0;
  uint64_t stack_copies_short = 0;
  uint64_t snapshots_cut = 0;              // snapshots that left pieces out (their byte cap)
  uint64_t snapshot_hints_unreadable = 0;  // hint pages no longer mapped at a sample
  std::string event;                       // "cycles" or "cpu-clock"
  int sampler_hz = 0;     // the host sampler's rate now (the highest any subscription asks)
  int subscriptions = 0;  // on the host sampler now, this one included
  int cpus_attached = 0;
};

class StackSubscription {
 public:
  using Sink = EbpfStackSampler::Sink;
  // Joins the process's sampler (opening it if this is the first subscription). `sink` is called
  // from the sampler's reader thread, one sample at a time, until this subscription is destroyed;
  // it must not subscribe or unsubscribe. Fails as EbpfStackSampler::Start does.
  static Result<std::unique_ptr<StackSubscription>> Start(const StackSubscriptionSettings& settings,
                                                          Sink sink);
  ~StackSubscription();  // returns once the sink can no longer be called
  StackSubscription(const StackSubscription&) = delete;
  StackSubscription& operator=(const StackSubscription&) = delete;

  // Adds or removes a process of this subscription (a descendant found in /proc, an exit).
  Status AddPid(uint32_t pid);
  Status RemovePid(uint32_t pid);
  // The pages each snapshot of `pid` also copies (EbpfStackSampler::SetHintPages): the last
  // subscription to set them for a process decides.
  Status SetHintPages(uint32_t pid, const std::vector<uint64_t>& pages);
  // Hands every sample already in the ring to its subscriptions before returning.
  void Flush();
  StackSubscriptionStats stats() const;

  // Keeps the process's sampler loaded while the result is held, though no subscription holds
  // it meanwhile (it then samples no process, at 1 Hz): a caller that ends its subscriptions
  // and starts new ones at once (the daemon's continuous windows) does not unload and reload
  // the BPF program each time (the kernel's verifier and libbpf's reading of kernel symbols
  // took ~15% of the daemon's CPU with 10 s windows). Null when no sampler is loaded now.
  static std::shared_ptr<const void> KeepHostSampler();

  struct Host;  // the process's one sampler, its reader thread and the routing table
  struct Member;

 private:
  StackSubscription(std::shared_ptr<Host> host, std::shared_ptr<Member> member);
  std::shared_ptr<Host> host_;
  std::shared_ptr<Member> member_;
};

}  // namespace pathprof::collectors
