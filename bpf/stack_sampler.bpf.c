// SPDX-License-Identifier: GPL-2.0
// Stack sampler: a perf_event program (cpu-clock or cycles, one event per CPU, shared by every
// session of the host) that copies the user and kernel stacks of the interrupted task into one
// ring buffer. What it does for a task is its process's entry in `targets`, which user space
// keeps from the sessions that want that process: filtering happens in the kernel, and each
// record names its entry's root so user space routes it to those sessions. bpf_get_stack writes
// the frames straight into the record, so there is no STACK_TRACE map to fill up or to collide
// in; every sample that cannot be delivered is counted by reason, per root too.
#include "vmlinux.h"

#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "stack_sample.h"

char LICENSE[] SEC("license") = "GPL";

struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, PATHPROF_MAX_TARGET_PIDS);
  __type(key, __u32);
  __type(value, struct stack_target);
} targets SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_HASH);
  __uint(max_entries, PATHPROF_MAX_TARGET_PIDS);
  __type(key, __u32);
  __type(value, struct target_counters);
} root_counters SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_RINGBUF);
  __uint(max_entries, 4 * 1024 * 1024);
} samples SEC(".maps");

// One record under construction per CPU (user space sizes it to the possible CPUs). A record is
// as long as the stack it copied, which only bpf_ringbuf_output can submit: bpf_ringbuf_reserve
// takes a size the verifier knows as a constant, and targets ask for different copies. A
// perf_event program does not nest on its CPU, so the slot is never shared.
struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct stack_sample);
} scratch SEC(".maps");

// Per process: the data pages its snapshots also copy (user space learns them from windows).
struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, PATHPROF_MAX_TARGET_PIDS);
  __type(key, __u32);
  __type(value, struct snapshot_hints);
} snapshot_hints SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, PATHPROF_COUNTER_COUNT);
  __type(key, __u32);
  __type(value, __u64);
} counters SEC(".maps");

static __always_inline void count_by(__u32 which, __u64 n) {
  __u64* c = bpf_map_lookup_elem(&counters, &which);
  if (c) *c += n;
}

static __always_inline void count(__u32 which) {
  count_by(which, 1);
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
// Returns the bytes copied.
static __always_inline __u32 copy_user_stack_pages(struct stack_sample* s, __u32 pages,
                                                   struct target_counters* rc) {
  s->stack_bytes = 0;
  s->stack_base = 0;
  if (!copy_user_registers(s) || s->regs[7] == 0) {
    count(PATHPROF_COUNTER_STACK_COPY_FAILED);
    if (rc) rc->stack_copy_failed += 1;
    return 0;
  }
  const __u64 base = s->regs[7] & ~(__u64)(PATHPROF_STACK_PAGE - 1);
  s->stack_base = base;
  __u32 copied = 0;
  // A bounded loop (Linux 5.3+): the verifier walks its 16 iterations.
  for (int i = 0; i < PATHPROF_STACK_COPY_MAX_PAGES; ++i) {
    if (i >= pages) break;
    if (bpf_probe_read_user(s->stack + i * PATHPROF_STACK_PAGE, PATHPROF_STACK_PAGE,
                            (const void*)(base + (__u64)i * PATHPROF_STACK_PAGE)) != 0) {
      if (i == 0) {
        count(PATHPROF_COUNTER_STACK_COPY_FAILED);
        if (rc) rc->stack_copy_failed += 1;
      } else {
        count(PATHPROF_COUNTER_STACK_COPY_SHORT);
        if (rc) rc->stack_copy_short += 1;
      }
      break;
    }
    copied = (i + 1) * PATHPROF_STACK_PAGE;
  }
  s->stack_bytes = copied;
  return copied;
}

// The bytes after the fixed part of a record: the stack copy, then a snapshot's pieces.
#define RECORD_AREA \
  (sizeof(((struct stack_sample*)0)->stack) + sizeof(((struct stack_sample*)0)->snapshot_area))
#define USER_ADDRESS_END 0x0000800000000000ull

// What the snapshot's loops share: bpf_loop callbacks, so the verifier walks each body as a
// loop of its own rather than 16 x 32 unrolled copies (those went past its million
// instructions). The counters live in a map value, not on the stack: loaded from there they are
// unknown to the verifier at each iteration, so its walk of a callback converges (on the stack
// it tracked `at` exactly and walked every value it took).
struct snapshot_work {
  __u64 below, above;        // the register range
  __u64 stack_lo, stack_hi;  // what the stack copy holds
  __u32 at;                  // bytes of the record area filled
  __u32 pieces;
  __u32 limit;  // the record area's bytes at most
  __u32 hint_count;
  __u32 range_unreadable, hint_unreadable;
  __u32 cut;
  __u32 pad;
  __u64 lo, hi;  // the register range being clipped to new bytes
};

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct snapshot_work);
} snapshot_work SEC(".maps");

struct snapshot_state {
  struct stack_sample* s;
  struct snapshot_work* w;
  const struct snapshot_hints* hints;
};

enum snapshot_copy_result { COPIED, UNREADABLE, CUT };

// Copies [address, address + bytes), within one page, behind the record's bytes so far as its
// next piece.
static __always_inline enum snapshot_copy_result snapshot_copy(struct snapshot_state* st,
                                                               __u64 address, __u32 bytes,
                                                               __u32 source) {
  struct stack_sample* s = st->s;
  const __u32 o = st->w->at, p = st->w->pieces;
  // The mask is for the verifier: it must see the size bounded in the register passed, which
  // the compiler may not take from the comparison below.
  bytes &= 2 * PATHPROF_STACK_PAGE - 1;
  if (bytes == 0 || bytes > PATHPROF_STACK_PAGE) return UNREADABLE;
  if (o > RECORD_AREA - 2 * PATHPROF_STACK_PAGE || o + bytes > st->w->limit ||
      p >= PATHPROF_SNAPSHOT_MAX_PIECES)
    return CUT;
  if (bpf_probe_read_user(s->stack + o, bytes, (const void*)address) != 0) {
    // Said without bytes, so that a window that reaches it ends there rather than reading on
    // (the page may have been made inaccessible a moment ago, as the thread would find).
    s->piece_table[p].address = address;
    s->piece_table[p].bytes = bytes;
    s->piece_table[p].source = source | PATHPROF_SNAPSHOT_SOURCE_UNREADABLE;
    st->w->pieces = p + 1;
    return UNREADABLE;
  }
  s->piece_table[p].address = address;
  s->piece_table[p].bytes = bytes;
  s->piece_table[p].source = source;
  st->w->at = o + bytes;
  st->w->pieces = p + 1;
  return COPIED;
}

// [lo, hi) less piece j's bytes where that piece covers either end of it.
static long clip_to_piece(__u64 index, void* data) {
  struct snapshot_state* st = data;
  const __u32 j = (__u32)index;
  // Register pieces come first, at most 2 x 16 of them (the mask is for the verifier).
  if (j >= st->w->pieces || j >= 2 * PATHPROF_SNAPSHOT_REGISTERS) return 1;
  const struct snapshot_piece* p = &st->s->piece_table[j & (2 * PATHPROF_SNAPSHOT_REGISTERS - 1)];
  const __u64 plo = p->address, phi = plo + p->bytes;
  if (plo <= st->w->lo && st->w->lo < phi) st->w->lo = phi;
  if (plo < st->w->hi && st->w->hi <= phi) st->w->hi = plo;
  return 0;
}

// The range around register i (the sampler's numbering: DWARF 0-6, 8-15, then fs_base), less
// what an earlier piece holds where that piece covers either end of it (a range that holds an
// earlier one whole is copied whole: rare, and only bytes), in at most two pieces (it is at most
// a page long).
static long copy_register_range(__u64 index, void* data) {
  struct snapshot_state* st = data;
  struct stack_sample* s = st->s;
  const __u32 i = (__u32)index;
  if (i >= PATHPROF_SNAPSHOT_REGISTERS || st->w->cut) return 1;
  const __u64 v = i < 7 ? s->regs[i & 15] : i < 15 ? s->regs[(i + 1) & 15] : s->fs_base;
  if (v < st->w->below + PATHPROF_STACK_PAGE || v >= USER_ADDRESS_END - st->w->above) return 0;
  __u64 lo = v - st->w->below, hi = v + st->w->above;
  if (lo >= st->w->stack_lo && hi <= st->w->stack_hi) return 0;
  st->w->lo = lo;
  st->w->hi = hi;
  bpf_loop(2 * PATHPROF_SNAPSHOT_REGISTERS, clip_to_piece, st, 0);
  lo = st->w->lo;
  hi = st->w->hi;
  for (int k = 0; k < 2 && lo < hi; ++k) {
    const __u64 page_end = (lo | (PATHPROF_STACK_PAGE - 1)) + 1;
    const __u64 end = hi < page_end ? hi : page_end;
    const enum snapshot_copy_result got = snapshot_copy(st, lo, (__u32)(end - lo), i);
    if (got == CUT) {
      st->w->cut = 1;
      return 1;
    }
    if (got == UNREADABLE) st->w->range_unreadable += 1;
    lo = end;
  }
  return 0;
}

static long copy_hint_page(__u64 index, void* data) {
  struct snapshot_state* st = data;
  const __u32 i = (__u32)index;
  if (i >= PATHPROF_SNAPSHOT_MAX_HINT_PAGES || i >= st->w->hint_count || st->w->cut || !st->hints)
    return 1;
  // The mask, as in snapshot_copy, is for the verifier (64 is a power of two).
  const __u64 page = st->hints->page[i & (PATHPROF_SNAPSHOT_MAX_HINT_PAGES - 1)] &
                     ~(__u64)(PATHPROF_STACK_PAGE - 1);
  if (page >= st->w->stack_lo && page < st->w->stack_hi) return 0;
  const enum snapshot_copy_result got =
      snapshot_copy(st, page, PATHPROF_STACK_PAGE, PATHPROF_SNAPSHOT_SOURCE_HINT);
  if (got == CUT) {
    st->w->cut = 1;
    return 1;
  }
  if (got == UNREADABLE) st->w->hint_unreadable += 1;
  return 0;
}

// The process's mapping sequence (mm_lock_seq), whose type changed: a seqcount_t since Linux
// 6.13 (odd while the mappings are being changed), an int from 6.4 (moved when a change ends).
// Both flavours are named here so that CO-RE finds whichever the running kernel has, and older
// kernels, without either, load the program too.
struct seqcount___pathprof {
  unsigned int sequence;
} __attribute__((preserve_access_index));
struct mm_struct___seqcount {
  struct seqcount___pathprof mm_lock_seq;
} __attribute__((preserve_access_index));
struct mm_struct___int_seq {
  int mm_lock_seq;
} __attribute__((preserve_access_index));

// PATHPROF_SNAPSHOT_MM_* flags, and the sequence in *seq: a record says which state of the
// mappings its bytes were copied in, so that user space can tell whether its view of the
// mappings (read from /proc/PID/maps at another time) describes that state.
// Plain loads through the task's BTF pointer (no probe-read helper calls: this runs twice in
// every snapshot sample).
static __always_inline __u32 mapping_state(struct task_struct* task, __u32* seq) {
  struct mm_struct* mm = task->mm;
  if (!mm) return 0;
  __u32 flags = 0;
  if (bpf_core_field_exists(((struct mm_struct___seqcount*)mm)->mm_lock_seq)) {
    *seq = ((struct mm_struct___seqcount*)mm)->mm_lock_seq.sequence;
    flags = PATHPROF_SNAPSHOT_MM_SEQ | (*seq & 1 ? PATHPROF_SNAPSHOT_MM_CHANGING : 0);
  } else if (bpf_core_field_exists(((struct mm_struct___int_seq*)mm)->mm_lock_seq)) {
    *seq = (__u32)((struct mm_struct___int_seq*)mm)->mm_lock_seq;
    flags = PATHPROF_SNAPSHOT_MM_SEQ;
  }
  // RWSEM_WRITER_LOCKED: another thread holds the mapping lock for writing (mid-mprotect).
  if (mm->mmap_lock.count.counter & 1) flags |= PATHPROF_SNAPSHOT_MM_CHANGING;
  return flags;
}

// The snapshot part of a record, after the stack copy: rflags, the fs and gs bases, the bytes
// around what each register points at, then the process's hint pages, up to the target's
// bounds; every piece left out for a bound is counted. Returns the bytes added to the record.
static __always_inline __u32 copy_snapshot(struct bpf_perf_event_data* ctx, struct stack_sample* s,
                                           const struct stack_target* t, __u32 pid,
                                           struct target_counters* rc) {
  struct task_struct* task = bpf_get_current_task_btf();
  struct pt_regs* r = (struct pt_regs*)bpf_task_pt_regs(task);
  s->rflags = r ? BPF_CORE_READ(r, flags) : 0;
  s->orig_rax = r ? BPF_CORE_READ(r, orig_ax) : (__u64)-1;
  s->fs_base = BPF_CORE_READ(task, thread.fsbase);
  s->gs_base = BPF_CORE_READ(task, thread.gsbase);
  // The interrupted instruction's address says the mode (a context read of regs.cs is
  // refused: it is two bytes of a union on kernels with FRED).
  __u32 seq_before = 0;
  s->snapshot_flags = PATHPROF_SNAPSHOT_TAKEN |
                      (ctx->regs.ip >= USER_ADDRESS_END ? PATHPROF_SNAPSHOT_IN_KERNEL : 0) |
                      mapping_state(task, &seq_before);
  s->mm_seq = seq_before;
  // Whether other threads share the memory (an atomic's result may then depend on them).
  s->threads = task->signal ? task->signal->nr_threads : 0;
  count(PATHPROF_COUNTER_SNAPSHOTS);

  const __u32 zero = 0;
  struct snapshot_work* w = bpf_map_lookup_elem(&snapshot_work, &zero);
  if (!w) return 0;
  __builtin_memset(w, 0, sizeof(*w));
  struct snapshot_state st = {};
  st.s = s;
  st.w = w;
  w->at = s->stack_bytes;
  if (w->at > sizeof(s->stack)) w->at = sizeof(s->stack);
  __u32 max_bytes = t->snapshot_max_bytes;
  if (max_bytes > PATHPROF_SNAPSHOT_MAX_BYTES) max_bytes = PATHPROF_SNAPSHOT_MAX_BYTES;
  w->limit = w->at + max_bytes;
  w->stack_lo = s->stack_base;
  w->stack_hi = s->stack_base + s->stack_bytes;
  w->below = t->register_below;
  w->above = t->register_above;
  if (w->below + w->above > 0 && w->below + w->above <= PATHPROF_SNAPSHOT_MAX_RANGE)
    bpf_loop(PATHPROF_SNAPSHOT_REGISTERS, copy_register_range, &st, 0);
  if (t->hint_pages && !w->cut) {
    st.hints = bpf_map_lookup_elem(&snapshot_hints, &pid);
    if (st.hints) {
      w->hint_count = st.hints->count < t->hint_pages ? st.hints->count : t->hint_pages;
      bpf_loop(PATHPROF_SNAPSHOT_MAX_HINT_PAGES, copy_hint_page, &st, 0);
    }
  }
  count_by(PATHPROF_COUNTER_SNAPSHOT_RANGE_UNREADABLE, w->range_unreadable);
  count_by(PATHPROF_COUNTER_SNAPSHOT_HINT_UNREADABLE, w->hint_unreadable);
  if (rc) rc->snapshot_hint_unreadable += w->hint_unreadable;
  if (w->cut) {
    count(PATHPROF_COUNTER_SNAPSHOT_CUT);
    if (rc) rc->snapshot_cut += 1;
  }
  // A change of the mappings that began or ended while the pieces were copied.
  __u32 seq_after = 0;
  if ((mapping_state(task, &seq_after) & PATHPROF_SNAPSHOT_MM_CHANGING) || seq_after != seq_before)
    s->snapshot_flags |= PATHPROF_SNAPSHOT_MM_CHANGING;
  // The piece table goes behind the pieces' bytes.
  __u32 o = w->at, pieces = w->pieces;
  if (o > RECORD_AREA - sizeof(s->piece_table)) o = RECORD_AREA - sizeof(s->piece_table);
  if (pieces > PATHPROF_SNAPSHOT_MAX_PIECES) pieces = PATHPROF_SNAPSHOT_MAX_PIECES;
  const __u32 table = pieces * sizeof(struct snapshot_piece);
  if (bpf_probe_read_kernel(s->stack + o, table, s->piece_table) != 0) pieces = 0;
  s->snapshot_bytes = o - s->stack_bytes;
  s->snapshot_pieces = pieces;
  return s->snapshot_bytes + pieces * sizeof(struct snapshot_piece);
}

SEC("tp_btf/sched_process_fork")
int BPF_PROG(follow_fork, struct task_struct* parent, struct task_struct* child) {
  __u32 parent_tgid = parent->tgid, child_tgid = child->tgid;
  // A new thread shares its parent's tgid; only a new process needs adding.
  if (parent_tgid == child_tgid) return 0;
  struct stack_target* t = bpf_map_lookup_elem(&targets, &parent_tgid);
  if (!t || !t->follow_children) return 0;
  struct stack_target inherited = *t;  // same root: the child's samples go to the same sessions
  if (bpf_map_update_elem(&targets, &child_tgid, &inherited, BPF_NOEXIST) == 0)
    count(PATHPROF_COUNTER_FOLLOWED_CHILDREN);
  return 0;
}

// The task's uid when its real, effective, saved and filesystem uids agree and it holds no
// capability; PATHPROF_UID_NOT_PLAIN otherwise (after an exec of a setuid program, say).
static __always_inline __u32 plain_uid(void) {
  struct task_struct* task = (struct task_struct*)bpf_get_current_task();
  const struct cred* cred = BPF_CORE_READ(task, cred);
  // kernel_cap_t is 8 bytes whether it is a u64 (6.3+) or two u32s (before).
  __u64 caps = 0;
  bpf_core_read(&caps, sizeof(caps), &cred->cap_effective);
  const __u32 uid = BPF_CORE_READ(cred, uid.val);
  if (BPF_CORE_READ(cred, euid.val) != uid || BPF_CORE_READ(cred, suid.val) != uid ||
      BPF_CORE_READ(cred, fsuid.val) != uid || caps != 0)
    return PATHPROF_UID_NOT_PLAIN;
  return uid;
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
  struct stack_target* t = bpf_map_lookup_elem(&targets, &pid);
  if (!t) {
    __u32 every = PATHPROF_EVERY_PROCESS;
    t = bpf_map_lookup_elem(&targets, &every);
  }
  if (!t) {
    count(PATHPROF_COUNTER_FILTERED);
    return 0;
  }
  const __u64 cgroup_id = bpf_get_current_cgroup_id();
  if (t->cgroup_id && cgroup_id != t->cgroup_id) {
    count(PATHPROF_COUNTER_FILTERED);
    return 0;
  }
  if (t->keep != PATHPROF_KEEP_ALL && bpf_get_prandom_u32() >= t->keep) {
    count(PATHPROF_COUNTER_THINNED);
    return 0;
  }
  const __u32 root = t->root;
  struct target_counters* rc = bpf_map_lookup_elem(&root_counters, &root);
  // A non-admin's target: a task whose credentials are not plainly the requester's (it exec'd a
  // setuid program) is not sampled from then on.
  const __u32 uid = plain_uid();
  if (t->confined && uid != t->only_uid) {
    count(PATHPROF_COUNTER_FILTERED_CREDENTIALS);
    if (rc) rc->filtered_credentials += 1;
    return 0;
  }
  __u32 cpu = bpf_get_smp_processor_id();
  struct stack_sample* s = bpf_map_lookup_elem(&scratch, &cpu);
  if (!s) return 0;
  s->pid = pid;
  s->tid = tid;
  s->cpu = cpu;
  s->root = root;
  s->time_ns = bpf_ktime_get_ns();
  s->period = ctx->sample_period;
  s->cgroup_id = cgroup_id;
  s->exec_id = BPF_CORE_READ(bpf_get_current_task_btf(), self_exec_id);
  s->hz = t->hz;
  s->plain_uid = uid;
  bpf_get_current_comm(s->comm, sizeof(s->comm));
  // A sample taken for its snapshot alone walks no frames (the walks cost several
  // microseconds; the snapshot's window needs only the registers and the stack copy).
  const bool frames =
      !t->snapshot || t->stack_keep == PATHPROF_KEEP_ALL || bpf_get_prandom_u32() < t->stack_keep;
  s->user_bytes = frames ? bpf_get_stack(ctx, s->user, sizeof(s->user), BPF_F_USER_STACK) : 0;
  if (s->user_bytes < 0) count(PATHPROF_COUNTER_USER_STACK_ERROR);
  s->kernel_bytes =
      frames && t->kernel_stacks ? bpf_get_stack(ctx, s->kernel, sizeof(s->kernel), 0) : 0;
  if (s->kernel_bytes < 0) count(PATHPROF_COUNTER_KERNEL_STACK_ERROR);
  __u64 size = __builtin_offsetof(struct stack_sample, regs);
  s->snapshot_flags = 0;
  s->snapshot_pieces = 0;
  s->snapshot_bytes = 0;
  if (t->stack_pages > 0) {
    size = __builtin_offsetof(struct stack_sample, stack) +
           copy_user_stack_pages(s, t->stack_pages, rc);
    if (t->snapshot && s->stack_bytes > 0) size += copy_snapshot(ctx, s, t, pid, rc);
    // In the record's fixed part whenever the stack is copied (as every snapshot target's is).
    if (!frames) s->snapshot_flags |= PATHPROF_SNAPSHOT_ONLY;
    s->stack_hz = t->stack_hz;
  }
  if (size > sizeof(struct stack_sample)) size = sizeof(struct stack_sample);
  // The reader drains the ring at its poll interval (50 ms) and is woken early only when the ring
  // is an eighth full: a wake-up per sample cost the reader two context switches per sample
  // (about a tenth of pathctl's CPU on a 100 Hz run).
  const __u64 wake_at = bpf_ringbuf_query(&samples, BPF_RB_RING_SIZE) / 8;
  const __u64 flags = bpf_ringbuf_query(&samples, BPF_RB_AVAIL_DATA) + size >= wake_at
                          ? BPF_RB_FORCE_WAKEUP
                          : BPF_RB_NO_WAKEUP;
  if (bpf_ringbuf_output(&samples, s, size, flags) != 0) {
    count(PATHPROF_COUNTER_RINGBUF_FULL);
    if (rc) rc->ringbuf_full += 1;
    return 0;
  }
  count(PATHPROF_COUNTER_SUBMITTED);
  if (rc) rc->submitted += 1;
  if (t->verify_signal && (s->snapshot_flags & PATHPROF_SNAPSHOT_TAKEN))
    count(bpf_send_signal_thread(t->verify_signal) == 0 ? PATHPROF_COUNTER_VERIFY_SIGNALS
                                                        : PATHPROF_COUNTER_VERIFY_SIGNAL_FAILED);
  return 0;
}
