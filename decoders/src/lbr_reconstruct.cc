#include "pathprof/decoders/lbr_reconstruct.h"

#include <algorithm>

#include "pathprof/decoders/address_space.h"
#include "pathprof/decoders/x86_branch.h"

namespace pathprof::decoders {

std::string_view LbrEntryDropName(LbrEntryDrop r) {
  switch (r) {
    case LbrEntryDrop::kZeroAddress:
      return "zero_address";
    case LbrEntryDrop::kDuplicateEntry:
      return "duplicate_entry";
    case LbrEntryDrop::kNoCode:
      return "no_code";
    case LbrEntryDrop::kNotABranch:
      return "not_a_branch";
    case LbrEntryDrop::kTargetMismatch:
      return "target_mismatch";
    case LbrEntryDrop::kCallStackMode:
      return "call_stack_mode";
    case LbrEntryDrop::kCount:
      break;
  }
  return "?";
}

std::string_view LbrRangeBreakName(LbrRangeBreak r) {
  switch (r) {
    case LbrRangeBreak::kUnconditionalInRange:
      return "unconditional_in_range";
    case LbrRangeBreak::kLeavesImage:
      return "leaves_image";
    case LbrRangeBreak::kUserKernelCross:
      return "user_kernel_cross";
    case LbrRangeBreak::kBackwards:
      return "backwards";
    case LbrRangeBreak::kTooLong:
      return "too_long";
    case LbrRangeBreak::kMisaligned:
      return "misaligned";
    case LbrRangeBreak::kDecodeError:
      return "decode_error";
    case LbrRangeBreak::kNoCode:
      return "no_code";
    case LbrRangeBreak::kEndpointDropped:
      return "endpoint_dropped";
    case LbrRangeBreak::kCount:
      break;
  }
  return "?";
}

uint64_t LbrStats::entries_dropped_total() const {
  uint64_t t = 0;
  for (uint64_t v : entries_dropped) t += v;
  return t;
}

uint64_t LbrStats::ranges_broken_total() const {
  uint64_t t = 0;
  for (uint64_t v : ranges_broken) t += v;
  return t;
}

void LbrStats::Merge(const LbrStats& o) {
  samples += o.samples;
  entries += o.entries;
  entries_emitted += o.entries_emitted;
  for (size_t i = 0; i < entries_dropped.size(); ++i) entries_dropped[i] += o.entries_dropped[i];
  ranges += o.ranges;
  ranges_walked += o.ranges_walked;
  for (size_t i = 0; i < ranges_broken.size(); ++i) ranges_broken[i] += o.ranges_broken[i];
  not_taken_emitted += o.not_taken_emitted;
  async_transfers += o.async_transfers;
  batches += o.batches;
  events += o.events;
  instructions += o.instructions;
  perf_style_instructions += o.perf_style_instructions;
}

namespace {

template <typename Fn>
void ForEachField(const LbrStats& s, Fn fn) {
  fn("samples", s.samples);
  fn("entries", s.entries);
  fn("entries_emitted", s.entries_emitted);
  for (size_t i = 0; i < s.entries_dropped.size(); ++i) {
    fn("entries_dropped." + std::string(LbrEntryDropName(static_cast<LbrEntryDrop>(i))),
       s.entries_dropped[i]);
  }
  fn("ranges", s.ranges);
  fn("ranges_walked", s.ranges_walked);
  for (size_t i = 0; i < s.ranges_broken.size(); ++i) {
    fn("ranges_broken." + std::string(LbrRangeBreakName(static_cast<LbrRangeBreak>(i))),
       s.ranges_broken[i]);
  }
  fn("not_taken_emitted", s.not_taken_emitted);
  fn("async_transfers", s.async_transfers);
  fn("batches", s.batches);
  fn("events", s.events);
  fn("instructions", s.instructions);
  fn("perf_style_instructions", s.perf_style_instructions);
}

}  // namespace

std::string LbrStats::ToString() const {
  std::string out;
  ForEachField(*this, [&](const std::string& name, uint64_t v) {
    out += name + " " + std::to_string(v) + "\n";
  });
  return out;
}

std::string LbrStats::ToJson() const {
  std::string out = "{";
  bool first = true;
  ForEachField(*this, [&](const std::string& name, uint64_t v) {
    if (!first) out += ",";
    first = false;
    out += "\"" + name + "\":" + std::to_string(v);
  });
  return out + "}";
}

LbrReconstructor::Classified LbrReconstructor::Classify(uint32_t pid, const LbrEntry& e) {
  Classified c;
  auto drop = [&](LbrEntryDrop why) {
    ++stats_.entries_dropped[static_cast<size_t>(why)];
    return c;
  };
  if (e.from == 0 || e.to == 0) return drop(LbrEntryDrop::kZeroAddress);
  const CodeRegion* region = code_->Find(pid, e.from);
  if (region == nullptr) return drop(LbrEntryDrop::kNoCode);
  X86Instruction insn;
  if (!region->cache->DecodeAt(e.from - region->bias, &insn)) {
    return drop(LbrEntryDrop::kNotABranch);
  }
  if (!insn.is_branch) {
    // An interrupt or fault is recorded with the interrupted instruction as its source; it is
    // recognisable by entering the kernel from user space.
    if (!IsKernelAddress(e.from) && IsKernelAddress(e.to)) {
      c.ok = true;
      c.async = true;
      c.kind = BranchKind::kFarTransfer;
      return c;
    }
    return drop(LbrEntryDrop::kNotABranch);
  }
  if (insn.has_direct_target && insn.direct_target + region->bias != e.to) {
    return drop(LbrEntryDrop::kTargetMismatch);
  }
  c.ok = true;
  c.kind = insn.kind;
  return c;
}

uint32_t LbrReconstructor::TailInstructions(uint32_t pid, uint64_t start, uint64_t ip) {
  // Mirrors perf script's final block: from the newest target up to the sampled ip, stopping
  // at the first other branch; a backwards ip scans 128 bytes. Counted only, never emitted.
  auto only_ip = [&]() -> uint32_t { return code_->Find(pid, ip) != nullptr ? 1 : 0; };
  if (start == 0 || ip == 0) return 0;
  uint64_t end = ip < start ? start + 128 : ip;
  if (IsKernelAddress(start) != IsKernelAddress(end)) return only_ip();
  if (end - start > BranchCache::kMaxScanBytes) return only_ip();
  const CodeRegion* region = code_->Find(pid, start);
  if (region == nullptr) return only_ip();
  uint32_t count = 0;
  uint64_t va = start - region->bias;
  const uint64_t vend = end - region->bias;
  const uint64_t vip = ip - region->bias;
  while (va <= vend) {
    ++count;
    X86Instruction insn;
    if (!region->cache->DecodeAt(va, &insn)) break;
    if (insn.is_branch && va != vip) break;
    va += insn.length;
  }
  return count;
}

void LbrReconstructor::Reconstruct(const LbrSample& sample, std::vector<BranchBatch>* out) {
  ++stats_.samples;
  const size_t n = sample.entries.size();
  stats_.entries += n;
  if (sample.call_stack_mode) {
    stats_.entries_dropped[static_cast<size_t>(LbrEntryDrop::kCallStackMode)] += n;
    return;
  }
  std::span<const LbrEntry> entries = sample.entries;
  if (options_.drop_duplicate_newest && n >= 2 && entries[0].from == entries[1].from &&
      entries[0].to == entries[1].to) {
    ++stats_.entries_dropped[static_cast<size_t>(LbrEntryDrop::kDuplicateEntry)];
    entries = entries.subspan(1);
  }
  const size_t count = entries.size();
  if (count == 0) return;

  BranchBatch batch;
  auto flush = [&]() {
    if (batch.events.empty()) return;
    stats_.events += batch.events.size();
    ++stats_.batches;
    out->push_back(std::move(batch));
    batch = BranchBatch();
  };
  auto start_batch_if_empty = [&]() {
    if (!batch.events.empty()) return;
    batch.pid = sample.pid;
    batch.tid = sample.tid;
    batch.time_ns = sample.time_ns;
    batch.gap_before = true;
    batch.window = true;
  };
  auto brk = [&](LbrRangeBreak why) {
    ++stats_.ranges_broken[static_cast<size_t>(why)];
    flush();
  };

  const LbrEntry* prev = nullptr;
  bool prev_ok = false;
  for (size_t k = 0; k < count; ++k) {
    const LbrEntry& e = entries[count - 1 - k];  // chronological
    const Classified c = Classify(sample.pid, e);
    uint16_t block_instructions = 0;
    if (k == 0) {
      if (e.from != 0 && code_->Find(sample.pid, e.from) != nullptr) {
        ++stats_.perf_style_instructions;  // perf prints the oldest source alone
      }
    } else {
      ++stats_.ranges;
      const uint64_t a = prev->to, b = e.from;
      size_t rollback = batch.events.size();
      uint64_t block_not_taken = 0;
      LbrRangeBreak why = LbrRangeBreak::kCount;
      uint64_t total = 0;
      const CodeRegion* region = nullptr;
      if (!prev_ok || !c.ok) {
        why = LbrRangeBreak::kEndpointDropped;
      } else if (IsKernelAddress(a) != IsKernelAddress(b)) {
        why = LbrRangeBreak::kUserKernelCross;
      } else if ((region = code_->Find(sample.pid, a)) == nullptr) {
        why = LbrRangeBreak::kNoCode;
      } else if (!region->Contains(b)) {
        why = b < a ? LbrRangeBreak::kBackwards : LbrRangeBreak::kLeavesImage;
      } else if (b < a) {
        why = LbrRangeBreak::kBackwards;
      } else if (b - a > BranchCache::kMaxScanBytes) {
        why = LbrRangeBreak::kTooLong;
      } else {
        BranchCache* cache = region->cache;
        uint64_t va = a - region->bias;
        const uint64_t vb = b - region->bias;
        while (true) {
          const BranchSite& site = cache->NextBranch(va);
          if (site.scan != BranchScan::kOk) {
            why = site.scan == BranchScan::kInvalidBytes ? LbrRangeBreak::kDecodeError
                  : site.scan == BranchScan::kTooLong    ? LbrRangeBreak::kTooLong
                                                         : LbrRangeBreak::kLeavesImage;
            break;
          }
          if (site.address == vb) {
            total += site.instructions;
            block_instructions =
                static_cast<uint16_t>(std::min<uint32_t>(site.instructions, 0xffff));
            break;
          }
          if (site.address > vb) {
            const uint32_t to_b = c.async ? cache->InstructionsTo(va, vb) : 0;
            if (to_b == 0) {
              why = LbrRangeBreak::kMisaligned;
            } else {
              total += to_b;
              block_instructions = static_cast<uint16_t>(std::min<uint32_t>(to_b, 0xffff));
            }
            break;
          }
          if (site.kind != BranchKind::kConditional) {
            why = LbrRangeBreak::kUnconditionalInRange;
            break;
          }
          start_batch_if_empty();
          BranchEvent nt;
          nt.from = site.address + region->bias;
          nt.to = site.next() + region->bias;
          nt.kind = BranchKind::kConditional;
          nt.taken = false;
          nt.instructions = static_cast<uint16_t>(std::min<uint32_t>(site.instructions, 0xffff));
          batch.events.push_back(nt);
          ++block_not_taken;
          total += site.instructions;
          va = site.next();
        }
      }
      if (why != LbrRangeBreak::kCount) {
        batch.events.resize(std::min(rollback, batch.events.size()));
        brk(why);
      } else {
        ++stats_.ranges_walked;
        stats_.not_taken_emitted += block_not_taken;
        stats_.instructions += total;
        stats_.perf_style_instructions += total;
      }
    }
    if (c.ok) {
      start_batch_if_empty();
      BranchEvent ev;
      ev.from = e.from;
      ev.to = e.to;
      ev.cycles = e.cycles;
      ev.mispredicted = e.mispredicted;
      ev.kind = c.kind;
      ev.taken = true;
      ev.instructions = block_instructions;
      batch.events.push_back(ev);
      ++stats_.entries_emitted;
      if (c.async) ++stats_.async_transfers;
    }
    prev = &e;
    prev_ok = c.ok;
  }
  flush();
  if (entries[0].from != sample.ip) {
    stats_.perf_style_instructions += TailInstructions(sample.pid, entries[0].to, sample.ip);
  }
}

}  // namespace pathprof::decoders
