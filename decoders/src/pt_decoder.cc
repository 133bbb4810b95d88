#include "pathprof/decoders/pt_decoder.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>

#include "pathprof/core/hex.h"
#include "pathprof/decoders/x86_branch.h"
#include "pt_internal.h"

namespace pathprof::decoders {
namespace {

bool IsDirect(BranchKind k) {
  return k == BranchKind::kDirectJump || k == BranchKind::kDirectCall;
}

}  // namespace

Result<std::unique_ptr<PtBranchDecoder>> PtBranchDecoder::Create(std::span<const uint8_t> trace,
                                                                 const PtDecoderConfig& config,
                                                                 std::shared_ptr<PtImage> image,
                                                                 uint32_t pid, uint32_t tid,
                                                                 PtDecodeOptions options) {
  if (!image) return Error(ErrorCode::kInvalidArgument, "PT decoder: no image given");
  pt_config cfg = MakeLibiptConfig(config, trace);
  std::unique_ptr<PtBranchDecoder> d(new PtBranchDecoder());
  d->decoder_ = pt_blk_alloc_decoder(&cfg);
  if (!d->decoder_)
    return Error(ErrorCode::kInvalidArgument, "libipt refused the PT decoder configuration");
  int err = pt_blk_set_image(d->decoder_, image->raw());
  if (err < 0)
    return Error(ErrorCode::kInternal,
                 std::string("libipt: cannot set the image: ") + pt_errstr(pt_errcode(err)));
  d->slots_ = image->block_slots().data();
  d->image_ = std::move(image);
  d->options_ = options;
  d->batch_.pid = pid;
  d->batch_.tid = tid;
  d->batch_.gap_before = true;
  d->options_.batch_events = std::max<size_t>(1, d->options_.batch_events);
  d->events_ = std::make_unique<BranchEvent[]>(d->options_.batch_events);
  d->out_ = d->events_.get();
  d->out_end_ = d->out_ + d->options_.batch_events;
  return d;
}

PtBranchDecoder::~PtBranchDecoder() {
  if (decoder_) pt_blk_free_decoder(decoder_);
}

void PtBranchDecoder::RecordError(int code, uint64_t offset, std::string reason) {
  ++stats_.errors;
  ++stats_.errors_by_code[code];
  if (stats_.first_errors.size() < PtDecodeStats::kMaxKeptErrors)
    stats_.first_errors.push_back(PtDecodeError{offset, code, std::move(reason)});
}

Status PtBranchDecoder::Decode(const std::function<Status(BranchBatch&&)>& on_batch) {
  on_batch_ = &on_batch;
  uint64_t last_fail_offset = UINT64_MAX;
  for (;;) {
    int status = pt_blk_sync_forward(decoder_);
    if (status < 0) {
      if (status == -pte_eos) break;
      uint64_t off = 0;
      pt_blk_get_offset(decoder_, &off);
      RecordError(pt_errcode(status), off,
                  std::string("cannot synchronize: ") + pt_errstr(pt_errcode(status)));
      if (off == last_fail_offset) break;  // no progress: give up rather than spin
      last_fail_offset = off;
      continue;
    }
    ++stats_.syncs;
    MarkGap();
    if (options_.continue_from) {
      // The previous piece stopped at this PSB+'s address: the stream goes on without a gap.
      uint64_t sync = 0;
      pt_blk_get_sync_offset(decoder_, &sync);
      if (sync == 0 && !(status & pts_ip_suppressed)) {
        batch_.gap_before = false;
        insns_ = options_.continue_from->instructions;
        last_ip_ = options_.continue_from->ip;
      }
      options_.continue_from.reset();
    }
    status = DecodeFromSync(status);
    if (!sink_status_.ok()) return sink_status_;
    if (status == -pte_eos) break;
    uint64_t off = 0;
    pt_blk_get_offset(decoder_, &off);
    const int code = pt_errcode(status);
    std::string reason = pt_errstr(static_cast<pt_error_code>(code));
    if (code == pte_nomap)
      reason = "no image for address " + HexAddress(last_ip_) +
               ": the trace runs code that is not in the image (add the process's mappings, "
               "e.g. from its .pbs ImageRecords or perf MMAP2 records)";
    RecordError(code, off, std::move(reason));
    MarkGap();
  }
  if (handoff_) {
    if (out_ != events_.get()) HandOver();  // the next piece goes on from here: no gap
  } else {
    // Whatever is still pending has no known outcome: count it rather than guess.
    MarkGap();
  }
  on_batch_ = nullptr;
  return sink_status_;
}

int PtBranchDecoder::DecodeFromSync(int status) {
  for (;;) {
    while (status & pts_event_pending) {
      pt_event ev;
      status = pt_blk_event(decoder_, &ev, sizeof ev);
      if (status < 0) return status;
      HandleEvent(ev);
      if (handoff_) return -pte_eos;
    }
    pt_block block;
    status = pt_blk_next(decoder_, &block, sizeof block);
    if (block.ninsn > 0) HandleBlock(block);
    if (!sink_status_.ok()) [[unlikely]]
      return -pte_internal;
    if (status < 0) return status;
  }
}

[[gnu::always_inline]] inline const PtBlockSlot& PtBranchDecoder::Summarize(const pt_block& block) {
  const uint64_t key = block.ip ^ (static_cast<uint64_t>(block.ninsn) << 48);
  PtBlockSlot& slot = slots_[(key * 0x9E3779B97F4A7C15ull) >> (64 - kPtBlockSlotsLog2)];
  if (slot.key == key) [[likely]]
    return slot;
  ++stats_.block_slot_misses;
  auto [it, inserted] = image_->block_summaries().try_emplace(key);
  if (inserted) Walk(block, it->second);
  const PtBlockSummary& s = it->second;
  slot.key = key;
  slot.inner = s.inner.data();  // the map's nodes (and their vectors) never move
  slot.inner_count = static_cast<uint32_t>(s.inner.size());
  slot.tail_insns = s.tail_insns;
  slot.last_kind = s.last_kind;
  slot.last_ip = s.last_ip;
  using End = PtBlockSlot::End;
  slot.end = !s.ok               ? End::kUnwalkable
             : !s.last_is_branch ? End::kFallThrough
             : s.last_direct     ? End::kDirect
                                 : End::kPending;
  slot.after = slot.end == End::kDirect ? s.last_target : s.last_next;
  slot.pending_next = s.last_kind == BranchKind::kConditional ? s.last_next : ~0ull;
  return slot;
}

[[gnu::noinline]] const PtBlockSummary& PtBranchDecoder::Walk(const pt_block& block,
                                                              PtBlockSummary& s) {
  uint64_t ip = block.ip;
  uint32_t count = 0;
  for (uint32_t i = 0; i < block.ninsn; ++i) {
    const bool last = i + 1 == block.ninsn;
    uint8_t buf[kX86MaxInstructionLength];
    int n = image_->cache().Read(block.isid, ip, buf, sizeof buf);
    X86Instruction insn;
    bool decoded = false;
    if (last && block.truncated) {
      decoded = DecodeX86Fast(block.raw, block.size, ip, &insn);
    } else if (n > 0) {
      decoded = DecodeX86Fast(buf, static_cast<size_t>(n), ip, &insn);
    }
    if (!decoded) return s;  // s.ok stays false
    ++count;
    if (last) {
      if (ip != block.end_ip) return s;
      s.tail_insns = count;
      s.last_ip = ip;
      s.last_next = insn.next();
      s.last_is_branch = insn.is_branch;
      s.last_kind = insn.kind;
      s.last_direct = insn.has_direct_target && IsDirect(insn.kind);
      s.last_target = insn.direct_target;
      s.ok = true;
      return s;
    }
    if (insn.is_branch) {
      // libipt follows only direct jumps and calls inside a block.
      if (!IsDirect(insn.kind) || !insn.has_direct_target) return s;
      s.inner.push_back(PtBlockSummary::Inner{ip, insn.direct_target, insn.kind, count});
      count = 0;
      ip = insn.direct_target;
    } else {
      ip = insn.next();
    }
  }
  return s;
}

[[gnu::always_inline]] inline void PtBranchDecoder::Emit(uint64_t from, uint64_t to,
                                                         BranchKind kind, bool taken) {
  BranchEvent* e = out_;
  e->from = from;
  e->to = to;
  e->cycles = 0;
  e->instructions = static_cast<uint16_t>(insns_ > 0xffff ? 0xffff : insns_);
  e->kind = kind;
  e->taken = taken;
  e->mispredicted = false;
  insns_ = 0;
  if (++out_ == out_end_) [[unlikely]]
    FlushFull();
}

[[gnu::always_inline]] inline void PtBranchDecoder::Resolve(uint64_t next_ip) {
  last_ip_ = next_ip;
  if (!pending_.valid) return;
  pending_.valid = false;
  // pending_.next is ~0 (never an instruction address) for all but conditionals: always taken.
  Emit(pending_.from, next_ip, pending_.kind, next_ip != pending_.next);
}

[[gnu::always_inline]] inline void PtBranchDecoder::HandleBlock(const pt_block& block) {
  ++stats_.blocks;
  stats_.instructions += block.ninsn;
  Resolve(block.ip);
  const PtBlockSlot& s = Summarize(block);
  if (s.end == PtBlockSlot::End::kUnwalkable) [[unlikely]] {
    ++stats_.walk_mismatches;
    last_ip_ = block.end_ip;
    MarkGap();
    return;
  }
  for (uint32_t i = 0; i < s.inner_count; ++i) {
    const PtBlockSummary::Inner& b = s.inner[i];
    insns_ += b.insns;
    Emit(b.from, b.to, b.kind, true);
  }
  insns_ += s.tail_insns;
  last_ip_ = s.after;
  if (s.end == PtBlockSlot::End::kDirect) {
    Emit(s.last_ip, s.after, s.last_kind, true);
  } else if (s.end == PtBlockSlot::End::kPending) {
    pending_ = Pending{true, s.last_ip, s.pending_next, s.last_kind};
  }
}

void PtBranchDecoder::HandleEvent(const pt_event& ev) {
  if (ev.status_update) {
    // PSB+ restating what we already know, bound to where execution was at the PSB (libipt
    // proceeds to that address first). At the PSB that starts the next piece, stop there.
    if (options_.stop_at_psb == UINT64_MAX || ev.ip_suppressed) return;
    const uint64_t* ip = ev.type == ptev_exec_mode ? &ev.variant.exec_mode.ip
                         : ev.type == ptev_tsx     ? &ev.variant.tsx.ip
                                                   : nullptr;
    uint64_t offset = 0;
    pt_blk_get_offset(decoder_, &offset);
    if (ip != nullptr && offset > options_.stop_at_psb) StopAtPsb(*ip);
    return;
  }
  switch (ev.type) {
    case ptev_enabled: {
      const uint64_t ip = ev.variant.enabled.ip;
      const bool was_disabled = disabled_;
      disabled_ = false;
      if (pending_.valid && pending_.kind == BranchKind::kFarTransfer && was_disabled) {
        Resolve(ip);  // back from a syscall
        return;
      }
      if (async_from_valid_) {
        async_from_valid_ = false;
        last_ip_ = ip;
        if (ip == async_from_) return;  // interrupted and resumed in place
        ++stats_.async_transfers;
        Emit(async_from_, ip, BranchKind::kFarTransfer, true);
        return;
      }
      MarkGap();
      last_ip_ = ip;
      return;
    }
    case ptev_disabled:
      disabled_ = true;
      if (pending_.valid && pending_.kind != BranchKind::kFarTransfer) {
        ++stats_.unresolved;
        pending_.valid = false;
      }
      return;
    case ptev_async_disabled:
      disabled_ = true;
      Resolve(ev.variant.async_disabled.at);
      async_from_valid_ = true;
      async_from_ = ev.variant.async_disabled.at;
      return;
    case ptev_async_branch:
      Resolve(ev.variant.async_branch.from);
      ++stats_.async_transfers;
      last_ip_ = ev.variant.async_branch.to;
      Emit(ev.variant.async_branch.from, ev.variant.async_branch.to, BranchKind::kFarTransfer,
           true);
      return;
    case ptev_overflow:
      ++stats_.overflows;
      MarkGap();
      return;
    default:
      return;  // timing, paging, mode, power events carry no branch
  }
}

// Copies what was written into batch_ and hands it over; batch_ is left empty.
void PtBranchDecoder::HandOver() {
  const size_t n = static_cast<size_t>(out_ - events_.get());
  stats_.branches += n;
  batch_.events.assign(events_.get(), out_);
  out_ = events_.get();
  BranchBatch out = std::move(batch_);
  batch_ = BranchBatch{};
  batch_.pid = out.pid;
  batch_.tid = out.tid;
  if (sink_status_.ok()) sink_status_ = (*on_batch_)(std::move(out));
}

[[gnu::noinline]] void PtBranchDecoder::FlushFull() {
  HandOver();
  batch_.gap_before = false;
}

void PtBranchDecoder::StopAtPsb(uint64_t ip) {
  // The branch that ended the last block (if any) went to `ip`: its outcome is known.
  Resolve(ip);
  handoff_ = PtHandoff{ip, insns_};
}

void PtBranchDecoder::MarkGap() {
  if (pending_.valid) ++stats_.unresolved;
  pending_.valid = false;
  async_from_valid_ = false;
  disabled_ = false;
  insns_ = 0;
  if (out_ != events_.get()) {
    HandOver();
    ++stats_.gaps;
  }
  batch_.gap_before = true;
}

std::optional<size_t> PtPsbPlusEnd(std::span<const uint8_t> trace, size_t psb,
                                   const PtDecoderConfig& config) {
  if (psb >= trace.size()) return std::nullopt;
  pt_config cfg = MakeLibiptConfig(config, trace);
  pt_packet_decoder* dec = pt_pkt_alloc_decoder(&cfg);
  if (!dec) return std::nullopt;
  std::optional<size_t> end;
  if (pt_pkt_sync_set(dec, psb) >= 0) {
    pt_packet packet;
    // A PSB+ holds a handful of packets (PSB, TSC, TMA, CBR, PIP, VMCS, MODE x2, FUP, PSBEND).
    for (int i = 0; i < 32 && pt_pkt_next(dec, &packet, sizeof packet) >= 0; ++i) {
      if (i == 0 && packet.type != ppt_psb) break;
      if (packet.type != ppt_psbend) continue;
      uint64_t off = 0;
      pt_pkt_get_offset(dec, &off);
      end = static_cast<size_t>(off);
      break;
    }
  }
  pt_pkt_free_decoder(dec);
  return end;
}

PtPacketStats CountPtPackets(std::span<const uint8_t> trace, const PtDecoderConfig& config) {
  PtPacketStats stats;
  pt_config cfg = MakeLibiptConfig(config, trace);
  pt_packet_decoder* dec = pt_pkt_alloc_decoder(&cfg);
  if (!dec) {
    stats.errors = 1;
    stats.first_errors.push_back({0, pte_invalid, "libipt refused the packet decoder config"});
    return stats;
  }
  for (;;) {
    int status = pt_pkt_sync_forward(dec);
    if (status < 0) break;  // no further PSB
    ++stats.syncs;
    for (;;) {
      pt_packet packet;
      status = pt_pkt_next(dec, &packet, sizeof packet);
      if (status < 0) break;
      ++stats.packets_by_type[packet.type];
      if (packet.type == ppt_pad) {
        ++stats.pads;
      } else {
        ++stats.packets;
      }
    }
    if (status == -pte_eos) break;
    uint64_t off = 0;
    pt_pkt_get_offset(dec, &off);
    ++stats.errors;
    if (stats.first_errors.size() < PtDecodeStats::kMaxKeptErrors)
      stats.first_errors.push_back({off, pt_errcode(status), pt_errstr(pt_errcode(status))});
  }
  pt_pkt_free_decoder(dec);
  return stats;
}

}  // namespace pathprof::decoders
