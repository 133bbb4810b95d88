// The record the stack sampler writes into its ring buffer, shared by the eBPF program and
// user space. Plain fixed-size C types only.
#ifndef PATHPROF_BPF_STACK_SAMPLE_H
#define PATHPROF_BPF_STACK_SAMPLE_H

#define PATHPROF_MAX_FRAMES 127  // the kernel's default perf_event_max_stack
#define PATHPROF_MAX_TARGET_PIDS 4096
// Pages of user stack copied per sample for unwinding with DWARF CFI in user space, starting at
// the page that holds the stack pointer (so 12-16 KiB above it by default). perf's
// --call-graph dwarf copies 8 KiB by default; frames of -O2 C programs rarely take more than a
// few hundred bytes, but deep recursions and big locals (Debian's sqlite3) need more. A session
// chooses 1..PATHPROF_STACK_COPY_MAX_PAGES (the sampler's stack_copy_pages); the record in the
// ring is as long as that copy, not the maximum.
#define PATHPROF_STACK_COPY_PAGES 4
#define PATHPROF_STACK_COPY_MAX_PAGES 16
#define PATHPROF_STACK_PAGE 4096
#define PATHPROF_UNWIND_REGS \
  17  // x86-64 DWARF registers 0-16: rax rdx rcx rbx rsi rdi rbp rsp r8-r15 rip

enum pathprof_counter {
  PATHPROF_COUNTER_EVENTS = 0,            // perf events that ran the program
  PATHPROF_COUNTER_IDLE,                  // the CPU was idle
  PATHPROF_COUNTER_FILTERED,              // not a target pid / cgroup
  PATHPROF_COUNTER_RINGBUF_FULL,          // lost: user space did not drain the ring buffer in time
  PATHPROF_COUNTER_USER_STACK_ERROR,      // bpf_get_stack failed on the user stack
  PATHPROF_COUNTER_KERNEL_STACK_ERROR,    // bpf_get_stack failed on the kernel stack
  PATHPROF_COUNTER_SUBMITTED,             // delivered to the ring buffer
  PATHPROF_COUNTER_FILTERED_CREDENTIALS,  // a target task whose credentials left the requester's
  PATHPROF_COUNTER_STACK_COPY_SHORT,      // fewer stack pages readable than asked (top of stack)
  PATHPROF_COUNTER_STACK_COPY_FAILED,     // no user stack bytes or registers could be read
  PATHPROF_COUNTER_FOLLOWED_CHILDREN,     // processes added to the filter by a target's fork
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
  // Filled only when the sampler copies stacks (copy_user_stack); the record is then reserved
  // with this tail up to the stack pages copied (record_bytes), otherwise without it.
  __u64 regs[PATHPROF_UNWIND_REGS];  // user registers in DWARF numbering
  __u64 stack_base;                  // user address of stack[0] (page of the stack pointer)
  __u32 stack_bytes;                 // bytes of stack[] filled
  __u32 pad2;
  __u8 stack[PATHPROF_STACK_COPY_MAX_PAGES * PATHPROF_STACK_PAGE];
};

#endif
