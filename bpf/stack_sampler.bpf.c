// SPDX-License-Identifier: GPL-2.0
// Stack sampler: a perf_event program (cpu-clock or cycles, one event per CPU) that copies the
// user and kernel stacks of the interrupted task into a ring buffer. bpf_get_stack writes the
// frames straight into the reserved record, so there is no STACK_TRACE map to fill up or to
// collide in; every sample that cannot be delivered is counted by reason.
#include "vmlinux.h"

#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "stack_sample.h"

char LICENSE[] SEC("license") = "GPL";

// Set from user space before load (rodata): filtering happens in the kernel.
const volatile bool filter_by_pid = false;
const volatile __u64 filter_cgroup_id = 0;  // 0: any cgroup
const volatile bool want_kernel_stacks = true;
// A non-admin's session: sample only tasks whose every uid is this one and that hold no
// capability, so that a target that execs a setuid program is not sampled from then on.
const volatile bool filter_by_uid = false;
const volatile __u32 filter_uid = 0;

struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, PATHPROF_MAX_TARGET_PIDS);
  __type(key, __u32);
  __type(value, __u8);
} target_pids SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_RINGBUF);
  __uint(max_entries, 4 * 1024 * 1024);
} samples SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, PATHPROF_COUNTER_COUNT);
  __type(key, __u32);
  __type(value, __u64);
} counters SEC(".maps");

static __always_inline void count(__u32 which) {
  __u64* c = bpf_map_lookup_elem(&counters, &which);
  if (c) *c += 1;
}

SEC("perf_event")
int sample_stack(struct bpf_perf_event_data* ctx) {
  __u64 id = bpf_get_current_pid_tgid();
  __u32 pid = id >> 32, tid = (__u32)id;
  count(PATHPROF_COUNTER_EVENTS);
  if (pid == 0) {  // the idle task
    count(PATHPROF_COUNTER_IDLE);
    return 0;
  }
  if (filter_by_pid && !bpf_map_lookup_elem(&target_pids, &pid)) {
    count(PATHPROF_COUNTER_FILTERED);
    return 0;
  }
  if (filter_cgroup_id && bpf_get_current_cgroup_id() != filter_cgroup_id) {
    count(PATHPROF_COUNTER_FILTERED);
    return 0;
  }
  if (filter_by_uid) {
    struct task_struct* task = (struct task_struct*)bpf_get_current_task();
    const struct cred* cred = BPF_CORE_READ(task, cred);
    // kernel_cap_t is 8 bytes whether it is a u64 (6.3+) or two u32s (before).
    __u64 caps = 0;
    bpf_core_read(&caps, sizeof(caps), &cred->cap_effective);
    if (BPF_CORE_READ(cred, uid.val) != filter_uid || BPF_CORE_READ(cred, euid.val) != filter_uid ||
        BPF_CORE_READ(cred, suid.val) != filter_uid ||
        BPF_CORE_READ(cred, fsuid.val) != filter_uid || caps != 0) {
      count(PATHPROF_COUNTER_FILTERED_CREDENTIALS);
      return 0;
    }
  }
  struct stack_sample* s = bpf_ringbuf_reserve(&samples, sizeof(*s), 0);
  if (!s) {
    count(PATHPROF_COUNTER_RINGBUF_FULL);
    return 0;
  }
  s->pid = pid;
  s->tid = tid;
  s->cpu = bpf_get_smp_processor_id();
  s->time_ns = bpf_ktime_get_ns();
  s->period = ctx->sample_period;
  bpf_get_current_comm(s->comm, sizeof(s->comm));
  s->user_bytes = bpf_get_stack(ctx, s->user, sizeof(s->user), BPF_F_USER_STACK);
  if (s->user_bytes < 0) count(PATHPROF_COUNTER_USER_STACK_ERROR);
  s->kernel_bytes = want_kernel_stacks ? bpf_get_stack(ctx, s->kernel, sizeof(s->kernel), 0) : 0;
  if (s->kernel_bytes < 0) count(PATHPROF_COUNTER_KERNEL_STACK_ERROR);
  bpf_ringbuf_submit(s, 0);
  count(PATHPROF_COUNTER_SUBMITTED);
  return 0;
}
