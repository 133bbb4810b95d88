// The record the stack sampler writes into its ring buffer, shared by the eBPF program and
// user space. Plain fixed-size C types only.
#ifndef PATHPROF_BPF_STACK_SAMPLE_H
#define PATHPROF_BPF_STACK_SAMPLE_H

#define PATHPROF_MAX_FRAMES 127  // the kernel's default perf_event_max_stack
#define PATHPROF_MAX_TARGET_PIDS 4096

enum pathprof_counter {
  PATHPROF_COUNTER_EVENTS = 0,            // perf events that ran the program
  PATHPROF_COUNTER_IDLE,                  // the CPU was idle
  PATHPROF_COUNTER_FILTERED,              // not a target pid / cgroup
  PATHPROF_COUNTER_RINGBUF_FULL,          // lost: user space did not drain the ring buffer in time
  PATHPROF_COUNTER_USER_STACK_ERROR,      // bpf_get_stack failed on the user stack
  PATHPROF_COUNTER_KERNEL_STACK_ERROR,    // bpf_get_stack failed on the kernel stack
  PATHPROF_COUNTER_SUBMITTED,             // delivered to the ring buffer
  PATHPROF_COUNTER_FILTERED_CREDENTIALS,  // a target task whose credentials left the requester's
  PATHPROF_COUNTER_COUNT,
};

struct stack_sample {
  __u32 pid;
  __u32 tid;
  __u32 cpu;
  __s32 user_bytes;    // bytes of user[] filled, or a negative errno
  __s32 kernel_bytes;  // bytes of kernel[] filled, or a negative errno
  __u32 pad;
  __u64 time_ns;  // bpf_ktime_get_ns (CLOCK_MONOTONIC)
  __u64 period;
  char comm[16];
  __u64 user[PATHPROF_MAX_FRAMES];
  __u64 kernel[PATHPROF_MAX_FRAMES];
};

#endif
