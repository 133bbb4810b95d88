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
// Copy the user registers and the top of the user stack for DWARF unwinding in user space:
// stack_copy_pages pages from the stack pointer's, in records of record_bytes (set together by
// user space: offsetof(stack) + the pages, or offsetof(regs) without a copy). Read-only data
// the verifier sees as constants, so the reservation has a fixed size and every page written
// is proved inside it.
const volatile bool copy_user_stack = false;
const volatile __u32 stack_copy_pages = PATHPROF_STACK_COPY_PAGES;
const volatile __u32 record_bytes = __builtin_offsetof(struct stack_sample, regs);
// A target's fork adds the child to target_pids (process trees: sh -c, make -j, workers).
const volatile bool follow_children = false;

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

// The user registers of the interrupted task, whatever mode the sample interrupted: the frame
// the kernel saved on entry from user space (bpf_task_pt_regs), in DWARF register order.
static __always_inline bool copy_user_registers(struct stack_sample* s) {
  struct task_struct* task = bpf_get_current_task_btf();
  struct pt_regs* r = (struct pt_regs*)bpf_task_pt_regs(task);
  if (!r) return false;
  s->regs[0] = BPF_CORE_READ(r, ax);
  s->regs[1] = BPF_CORE_READ(r, dx);
  s->regs[2] = BPF_CORE_READ(r, cx);
  s->regs[3] = BPF_CORE_READ(r, bx);
  s->regs[4] = BPF_CORE_READ(r, si);
  s->regs[5] = BPF_CORE_READ(r, di);
  s->regs[6] = BPF_CORE_READ(r, bp);
  s->regs[7] = BPF_CORE_READ(r, sp);
  s->regs[8] = BPF_CORE_READ(r, r8);
  s->regs[9] = BPF_CORE_READ(r, r9);
  s->regs[10] = BPF_CORE_READ(r, r10);
  s->regs[11] = BPF_CORE_READ(r, r11);
  s->regs[12] = BPF_CORE_READ(r, r12);
  s->regs[13] = BPF_CORE_READ(r, r13);
  s->regs[14] = BPF_CORE_READ(r, r14);
  s->regs[15] = BPF_CORE_READ(r, r15);
  s->regs[16] = BPF_CORE_READ(r, ip);
  return true;
}

// Whole pages from the one holding the stack pointer upwards, so that every read has a constant
// size and offset; stops at the first page that cannot be read (the top of the stack mapping).
static __always_inline void copy_user_stack_pages(struct stack_sample* s) {
  s->stack_bytes = 0;
  s->stack_base = 0;
  if (!copy_user_registers(s) || s->regs[7] == 0) {
    count(PATHPROF_COUNTER_STACK_COPY_FAILED);
    return;
  }
  const __u64 base = s->regs[7] & ~(__u64)(PATHPROF_STACK_PAGE - 1);
  s->stack_base = base;
#pragma unroll
  for (int i = 0; i < PATHPROF_STACK_COPY_MAX_PAGES; ++i) {
    if (i >= stack_copy_pages) break;
    if (bpf_probe_read_user(s->stack + i * PATHPROF_STACK_PAGE, PATHPROF_STACK_PAGE,
                            (const void*)(base + (__u64)i * PATHPROF_STACK_PAGE)) != 0) {
      if (i == 0)
        count(PATHPROF_COUNTER_STACK_COPY_FAILED);
      else
        count(PATHPROF_COUNTER_STACK_COPY_SHORT);
      return;
    }
    s->stack_bytes = (i + 1) * PATHPROF_STACK_PAGE;
  }
}

SEC("tp_btf/sched_process_fork")
int BPF_PROG(follow_fork, struct task_struct* parent, struct task_struct* child) {
  if (!follow_children) return 0;
  __u32 parent_tgid = parent->tgid, child_tgid = child->tgid;
  // A new thread shares its parent's tgid; only a new process needs adding.
  if (parent_tgid == child_tgid || !bpf_map_lookup_elem(&target_pids, &parent_tgid)) return 0;
  __u8 descendant = 2;
  if (bpf_map_update_elem(&target_pids, &child_tgid, &descendant, BPF_NOEXIST) == 0)
    count(PATHPROF_COUNTER_FOLLOWED_CHILDREN);
  return 0;
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
  struct stack_sample* s = bpf_ringbuf_reserve(&samples, record_bytes, 0);
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
  if (copy_user_stack) copy_user_stack_pages(s);
  // The reader drains the ring at its poll interval (50 ms) and is woken early only when the ring
  // is an eighth full: a wake-up per sample cost the reader two context switches per sample
  // (about a tenth of pathctl's CPU on a 100 Hz run), and the ring holds a second of samples.
  const __u64 wake_at = bpf_ringbuf_query(&samples, BPF_RB_RING_SIZE) / 8;
  bpf_ringbuf_submit(s, bpf_ringbuf_query(&samples, BPF_RB_AVAIL_DATA) >= wake_at
                            ? BPF_RB_FORCE_WAKEUP
                            : BPF_RB_NO_WAKEUP);
  count(PATHPROF_COUNTER_SUBMITTED);
  return 0;
}
