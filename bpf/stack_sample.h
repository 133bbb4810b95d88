// The record the stack sampler writes into its ring buffer, shared by the eBPF program and
// user space. Plain fixed-size C types only.
#ifndef PATHPROF_BPF_STACK_SAMPLE_H
#define PATHPROF_BPF_STACK_SAMPLE_H

#define PATHPROF_MAX_FRAMES 127  // the kernel's default perf_event_max_stack
#define PATHPROF_MAX_TARGET_PIDS 4096
// Pages of user stack copied per sample for unwinding with DWARF CFI in user space, starting at
// the page that holds the stack pointer. perf's --call-graph dwarf copies 8 KiB by default;
// frames of -O2 C programs rarely take more than a few hundred bytes, but deep recursions and
// big locals (Debian's sqlite3) need more. Each target chooses 1..PATHPROF_STACK_COPY_MAX_PAGES
// (stack_target.stack_pages); a record in the ring is as long as what was copied.
#define PATHPROF_STACK_COPY_MAX_PAGES 16
#define PATHPROF_STACK_PAGE 4096
#define PATHPROF_UNWIND_REGS \
  17  // x86-64 DWARF registers 0-16: rax rdx rcx rbx rsi rdi rbp rsp r8-r15 rip
#define PATHPROF_KEEP_ALL 0xffffffffu       // stack_target.keep: every sample of the target
#define PATHPROF_UID_NOT_PLAIN 0xffffffffu  // stack_sample.plain_uid: uids differ, or capabilities
#define PATHPROF_EVERY_PROCESS 0u           // the targets key that stands for every process

// A snapshot (for windows emulated later from the sample, with no stop): besides the stack copy,
// the bytes around what each register points at and the process's hint pages, each a piece of
// the record. Registers: the 15 general-purpose ones but rsp (the stack copy holds it) and
// fs_base; each range is cut at most once by a page boundary, so two pieces at most.
#define PATHPROF_SNAPSHOT_REGISTERS 16
#define PATHPROF_SNAPSHOT_MAX_RANGE 4096  // stack_target.register_below + register_above
#define PATHPROF_SNAPSHOT_MAX_HINT_PAGES 64
#define PATHPROF_SNAPSHOT_MAX_PIECES \
  (2 * PATHPROF_SNAPSHOT_REGISTERS + PATHPROF_SNAPSHOT_MAX_HINT_PAGES)
// The bytes of the pieces in one record at most (a target's snapshot_max_bytes is at most this).
#define PATHPROF_SNAPSHOT_MAX_BYTES                            \
  (PATHPROF_SNAPSHOT_REGISTERS * PATHPROF_SNAPSHOT_MAX_RANGE + \
   PATHPROF_SNAPSHOT_MAX_HINT_PAGES * PATHPROF_STACK_PAGE)
// stack_sample.snapshot_flags. TAKEN: the record carries a snapshot. IN_KERNEL: sampled in a
// system call or an interrupt: the registers are the user ones saved on entry, and the window
// starts where the thread returns. ONLY: taken for its snapshot alone, no frames walked
// (stack_keep).
#define PATHPROF_SNAPSHOT_TAKEN 1
#define PATHPROF_SNAPSHOT_IN_KERNEL 2
#define PATHPROF_SNAPSHOT_ONLY 4
// MM_SEQ: mm_seq holds the process's mapping sequence (the kernel's mm_lock_seq, which moves
// at every change of the mappings; kernels 6.4 and later). MM_CHANGING: a change of the
// mappings was under way at the sample (the mapping lock held for writing, or the sequence
// moved while the snapshot was copied): what the mappings permit at that instant is unknown.
#define PATHPROF_SNAPSHOT_MM_SEQ 8
#define PATHPROF_SNAPSHOT_MM_CHANGING 16

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
  PATHPROF_COUNTER_THINNED,               // a target sampled slower than the events run
  PATHPROF_COUNTER_SNAPSHOTS,             // records carrying a snapshot
  PATHPROF_COUNTER_SNAPSHOT_CUT,          // a snapshot's pieces left out: snapshot_max_bytes
  PATHPROF_COUNTER_SNAPSHOT_HINT_UNREADABLE,   // a hint page no longer mapped (or not readable)
  PATHPROF_COUNTER_SNAPSHOT_RANGE_UNREADABLE,  // a register's bytes unreadable: not an address
  PATHPROF_COUNTER_VERIFY_SIGNALS,             // verify mode: signals sent after a snapshot
  PATHPROF_COUNTER_VERIFY_SIGNAL_FAILED,       // ... that bpf_send_signal_thread refused
  PATHPROF_COUNTER_COUNT,
};

// What the one sampler of the host does for one process, set by user space from every session
// that wants it (key: its pid; PATHPROF_EVERY_PROCESS: any process without an entry of its own).
struct stack_target {
  __u32 root;  // the pid the sessions asked for; a followed child keeps its ancestor's
  __u32 hz;    // the rate the target is sampled at (the events' rate, thinned by keep)
  __u32 keep;  // a sample is kept when bpf_get_prandom_u32() < keep; PATHPROF_KEEP_ALL: always
  __u32 only_uid;
  __u64 cgroup_id;       // 0: any cgroup
  __u8 confined;         // only tasks whose every uid is only_uid and that hold no capability
  __u8 kernel_stacks;    // copy the kernel stack too
  __u8 stack_pages;      // user stack pages copied for DWARF unwinding (0: none)
  __u8 follow_children;  // a fork adds the child with this entry (same root)
  // Snapshot (0: none; needs stack_pages): register_below + register_above bytes around what
  // each register holds (at most PATHPROF_SNAPSHOT_MAX_RANGE), up to hint_pages of the
  // process's snapshot_hints entry, and at most snapshot_max_bytes of pieces in all.
  __u8 snapshot;
  __u8 hint_pages;
  __u16 register_below;
  __u16 register_above;
  // Verify mode: after a snapshot is submitted, this signal goes to the sampled thread, so that
  // a ptrace tracer stops it at the instruction the snapshot holds (0: none).
  __u8 verify_signal;
  __u8 pad;
  __u32 snapshot_max_bytes;
  // With a snapshot: the frames (user walk, kernel stack) are taken when bpf_get_prandom_u32()
  // < stack_keep (PATHPROF_KEEP_ALL: always), so that a target sampled fast for its snapshots
  // pays for frames only at the rate stack subscriptions want them (stack_hz).
  __u32 stack_keep;
  __u32 stack_hz;
};

// The data pages user space asks the sampler to copy with each snapshot of a process (key: its
// pid), learned from the pages earlier windows of it read.
struct snapshot_hints {
  __u32 count;
  __u32 pad;
  __u64 page[PATHPROF_SNAPSHOT_MAX_HINT_PAGES];  // page addresses (4 KiB aligned)
};

// One piece of a snapshot: `bytes` bytes of the process at `address`.
struct snapshot_piece {
  __u64 address;
  __u32 bytes;
  __u32 source;  // 0..PATHPROF_SNAPSHOT_REGISTERS-1: that register's range; else a hint page
};
#define PATHPROF_SNAPSHOT_SOURCE_HINT 0xffu
// Or'ed into a piece's source: the range could not be read at the sample (unmapped, no access,
// or not present) and the piece holds no bytes: the thread might have faulted there too.
#define PATHPROF_SNAPSHOT_SOURCE_UNREADABLE 0x100u

// Losses and deliveries of one root's samples (a per-CPU hash keyed by stack_target.root), so
// that each session is told its own, not the host's.
struct target_counters {
  __u64 submitted;
  __u64 ringbuf_full;
  __u64 filtered_credentials;
  __u64 stack_copy_failed;
  __u64 stack_copy_short;
  __u64 snapshot_cut;
  __u64 snapshot_hint_unreadable;
};

struct stack_sample {
  __u32 pid;
  __u32 tid;
  __u32 cpu;
  __s32 user_bytes;    // bytes of user[] filled, or a negative errno
  __s32 kernel_bytes;  // bytes of kernel[] filled, or a negative errno
  __u32 root;          // the target entry's root: the pid a session asked for (0: every process)
  __u64 time_ns;       // bpf_ktime_get_ns (CLOCK_MONOTONIC)
  __u64 period;
  __u64 cgroup_id;  // the task's cgroup v2 id
  __u64 exec_id;    // the task's exec count (self_exec_id): another program after a change
  __u32 hz;         // the rate this target was sampled at
  __u32 plain_uid;  // the uid when uid, euid, suid and fsuid agree and no capability is held
  char comm[16];
  __u64 user[PATHPROF_MAX_FRAMES];
  __u64 kernel[PATHPROF_MAX_FRAMES];
  // Filled only when the target's stack is copied; the record then ends after the stack bytes
  // copied, otherwise before regs.
  __u64 regs[PATHPROF_UNWIND_REGS];  // user registers in DWARF numbering
  __u64 stack_base;                  // user address of stack[0] (page of the stack pointer)
  __u32 stack_bytes;                 // bytes of stack[] filled
  __u32 pad2;
  // Filled only for a snapshot: the flags register, the thread's fs and gs bases, the system
  // call the sample interrupted (orig_rax; -1: none) and PATHPROF_SNAPSHOT_* flags.
  __u64 rflags;
  __u64 fs_base;
  __u64 gs_base;
  __u64 orig_rax;
  __u32 snapshot_flags;
  // The snapshot's pieces follow the stack bytes copied: snapshot_bytes bytes of them, then
  // snapshot_pieces struct snapshot_piece entries saying what they are, in that order.
  __u32 snapshot_pieces;
  __u32 snapshot_bytes;
  __u32 stack_hz;  // the rate of the samples with frames (PATHPROF_SNAPSHOT_ONLY not set)
  __u32 mm_seq;    // PATHPROF_SNAPSHOT_MM_SEQ: the mapping sequence at the sample
  __u32 threads;   // the process's threads at the sample (signal->nr_threads)
  __u8 stack[PATHPROF_STACK_COPY_MAX_PAGES * PATHPROF_STACK_PAGE];
  // Room for the snapshot's pieces and table after a full stack copy; the table is built in
  // piece_table (never sent from there) and copied behind the pieces.
  __u8 snapshot_area[PATHPROF_SNAPSHOT_MAX_BYTES +
                     PATHPROF_SNAPSHOT_MAX_PIECES * sizeof(struct snapshot_piece)];
  struct snapshot_piece piece_table[PATHPROF_SNAPSHOT_MAX_PIECES];
};

#endif
