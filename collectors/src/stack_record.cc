#include "stack_record.h"

#include <linux/types.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstring>

#include "stack_sample.h"

namespace pathprof::collectors {
namespace {

// The snapshot behind the stack copy of `s` (`area`: the record's bytes from the stack on,
// `area_size` of them): every piece checked against the bytes the record holds, so that a record
// the ring cut short yields no piece outside it.
void ParseSnapshot(const stack_sample& s, const uint8_t* area, size_t area_size,
                   RawStackSample* out) {
  if (!(s.snapshot_flags & PATHPROF_SNAPSHOT_TAKEN)) return;
  const uint64_t stack_bytes = std::min<uint64_t>(s.stack_bytes, area_size);
  const uint64_t table_at = stack_bytes + uint64_t{s.snapshot_bytes};
  const uint64_t table_bytes = uint64_t{s.snapshot_pieces} * sizeof(snapshot_piece);
  RawSnapshot snap;
  snap.rflags = s.rflags;
  snap.fs_base = s.fs_base;
  snap.gs_base = s.gs_base;
  snap.orig_rax = s.orig_rax;
  snap.in_kernel = (s.snapshot_flags & PATHPROF_SNAPSHOT_IN_KERNEL) != 0;
  snap.has_mapping_sequence = (s.snapshot_flags & PATHPROF_SNAPSHOT_MM_SEQ) != 0;
  snap.mappings_changing = (s.snapshot_flags & PATHPROF_SNAPSHOT_MM_CHANGING) != 0;
  snap.mapping_sequence = s.mm_seq;
  snap.threads = s.threads;
  snap.stack_base = s.stack_base;
  snap.stack.assign(area, area + stack_bytes);
  if (table_at + table_bytes <= area_size) {
    snap.bytes.assign(area + stack_bytes, area + table_at);
    uint64_t offset = 0;
    for (uint32_t i = 0; i < s.snapshot_pieces; ++i) {
      snapshot_piece p;
      std::memcpy(&p, area + table_at + i * sizeof(p), sizeof(p));
      if (p.source & PATHPROF_SNAPSHOT_SOURCE_UNREADABLE) {  // no bytes behind it
        if (p.bytes == 0 || p.bytes > PATHPROF_STACK_PAGE || p.address + p.bytes < p.address) break;
        snap.unreadable.push_back({p.address, p.bytes});
        continue;
      }
      if (p.bytes == 0 || p.bytes > PATHPROF_STACK_PAGE || offset + p.bytes > snap.bytes.size() ||
          p.address + p.bytes < p.address)
        break;  // not what the sampler writes: the rest cannot be placed either
      // The sampler numbers its registers 0-6 (DWARF 0-6), 7-14 (DWARF 8-15), 15 (fs_base).
      const uint32_t source = p.source < 7    ? p.source
                              : p.source < 15 ? p.source + 1
                              : p.source < PATHPROF_SNAPSHOT_REGISTERS
                                  ? RawSnapshot::Piece::kFsBase
                                  : RawSnapshot::Piece::kHintPage;
      snap.pieces.push_back({p.address, static_cast<uint32_t>(offset), p.bytes, source});
      offset += p.bytes;
    }
  }
  out->snapshot = std::make_shared<const RawSnapshot>(std::move(snap));
}

}  // namespace

bool ParseStackRecord(const void* data, size_t size, RawStackSample* result) {
  constexpr size_t kWithoutCopy = offsetof(stack_sample, regs);
  if (size < kWithoutCopy) return false;
  const auto* s = static_cast<const stack_sample*>(data);
  RawStackSample& out = *result;
  out.pid = s->pid;
  out.tid = s->tid;
  out.cpu = s->cpu;
  out.time_ns = s->time_ns;
  out.period = s->period;
  out.root = s->root;
  out.hz = s->hz;
  out.cgroup_id = s->cgroup_id;
  out.exec_id = s->exec_id;
  out.plain_uid = s->plain_uid;
  out.comm.assign(s->comm, strnlen(s->comm, sizeof(s->comm)));
  auto frames = [](const __u64* ips, int bytes, std::vector<uint64_t>* v, int* err) {
    if (bytes < 0) {
      // bpf_get_stack's negative errno; anything past the kernel's errno range (INT_MIN cannot
      // even be negated) is no errno the program wrote: EINVAL.
      *err = bytes >= -4095 ? -bytes : EINVAL;
      return;
    }
    size_t n = std::min<size_t>(static_cast<size_t>(bytes) / 8, PATHPROF_MAX_FRAMES);
    v->assign(ips, ips + n);
  };
  frames(s->user, s->user_bytes, &out.user, &out.user_error);
  frames(s->kernel, s->kernel_bytes, &out.kernel, &out.kernel_error);
  // The record ends after the stack bytes copied, not at the struct's maximum.
  constexpr size_t kStackAt = offsetof(stack_sample, stack);
  if (size >= kStackAt && s->stack_bytes > 0) {
    const uint64_t sp = s->regs[7];
    const uint64_t copied = std::min<uint64_t>(s->stack_bytes, size - kStackAt);
    if (sp >= s->stack_base && sp - s->stack_base < copied) {
      out.regs.assign(s->regs, s->regs + PATHPROF_UNWIND_REGS);
      out.stack_start = sp;
      out.stack.assign(s->stack + (sp - s->stack_base), s->stack + copied);
    }
  }
  if (size >= kStackAt) {
    out.frames_walked = !(s->snapshot_flags & PATHPROF_SNAPSHOT_ONLY);
    out.stack_hz = s->stack_hz;
  }
  if (size >= kStackAt && s->stack_bytes > 0 && !out.regs.empty()) {
    ParseSnapshot(*s, static_cast<const uint8_t*>(data) + kStackAt, size - kStackAt, result);
  }
  return true;
}

}  // namespace pathprof::collectors
