// The path detector (thesis ch. 5.2): a bounded stack of partially built paths, driven by the
// operation table, fed retired branches, emitting completed paths to a sink.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <type_traits>
#include <vector>

#include "pathprof/core/branch.h"
#include "pathprof/core/status.h"
#include "pathprof/hwmodel/operation_table.h"
#include "pathprof/hwmodel/path_descriptor.h"

namespace pathprof::hwmodel {

// Where nothing a caller might care about is silently lost: every path that is not emitted is
// counted in one of these.
struct PathStackStats {
  uint64_t events = 0;
  uint64_t gaps = 0;               // resets (gap_before batches and explicit Reset calls)
  uint64_t paths = 0;              // completed paths handed to the sink
  uint64_t splits = 0;             // of those, paths cut because they reached max_path_length
  uint64_t unknown_start = 0;      // popped paths that began before the last gap (not emitted)
  uint64_t truncated = 0;          // paths still open at a gap or Flush (not emitted)
  uint64_t overflow_dropped = 0;   // bottom entries discarded by a push onto a full stack
  uint64_t return_mismatches = 0;  // returns matching no call site on the stack (popped anyway)
  uint64_t returns_past_base = 0;  // returns out of a frame entered before the last gap
  uint64_t repairs = 0;            // returns that matched a deeper frame (longjmp, exceptions)
  uint64_t repaired_frames = 0;    // frames skipped by those repairs (their paths not emitted)
  uint64_t far_transfers = 0;

  bool operator==(const PathStackStats&) const = default;
};

// Virtual sink, for callers off the hot path. Hot loops pass a lambda to Process instead.
class PathSink {
 public:
  virtual ~PathSink() = default;
  virtual void OnPath(const CompletedPath& path) = 0;
};

// Semantics beyond the thesis' text:
//  - Start: after construction and every Reset the stack holds one entry whose start is unknown
//    (the frame the stream begins in). Paths that began before the gap are never emitted.
//  - Overflow (push onto max_depth entries): the bottom entry is discarded (overflow_dropped);
//    the returns that would have reached it find the stack empty (returns_past_base).
//  - Returns (when calls push and returns pop): each entry pushed by a call records the call's
//    `from`; a new path in the same frame (pop+push) inherits it. A return matches an entry when
//    from < to <= from + return_match_bytes. No match on top but a deeper match (longjmp,
//    exception unwinding): the entries above it are discarded (repairs, repaired_frames) and
//    the return pops the matching frame's path, as recorded up to its call. No match anywhere:
//    counted (return_mismatches) and the top is popped as usual.
//  - Far transfers use the table's kFar row (update-count by default).
class PathStack {
 public:
  // Fails when the configuration does not validate.
  static Result<PathStack> Create(const PathStackConfig& config);

  const PathStackConfig& config() const { return config_; }
  const PathStackStats& stats() const { return stats_; }
  int depth() const { return static_cast<int>(depth_); }

  // Drops every open path (counted as truncated / unknown_start) and restarts with one entry
  // whose start is unknown. Called for every batch with gap_before.
  void Reset();
  // End of stream: same as Reset. Open paths are not emitted: their end is unknown.
  void Flush() { Reset(); }

  // Processes one retired branch; each completed path goes to `sink`: a callable taking
  // `const CompletedPath&` (inlined: the fast way) or a PathSink (one virtual call per path).
  // Returns the operations performed (Op bits; a length split adds pop and push), for the
  // branch-queue cost model.
  template <typename Sink>
  uint8_t Process(const BranchEvent& e, Sink&& sink);

  // Processes events in order, as Process does for each; faster in bulk (the stream counters
  // stay in registers).
  template <typename Sink>
  void ProcessEvents(std::span<const BranchEvent> events, Sink&& sink);

  // Resets at gap_before, then processes every event.
  template <typename Sink>
  void ProcessBatch(const BranchBatch& batch, Sink&& sink) {
    if (batch.gap_before) Reset();
    ProcessEvents(batch.events, sink);
  }

 private:
  struct Entry {
    PathDescriptor desc;
    uint64_t call_site = 0;    // `from` of the call that opened this frame; 0 = unknown
    uint64_t first_taken = 0;  // see CompletedPath::first_taken
    // instructions and cycles are not adjacent on purpose: adjacent, the compiler adds them
    // with one 16-byte load, which cannot be store-forwarded from StartEntry's 8-byte stores
    // and stalls the first event of every path.
    uint64_t instructions = 0;
    uint32_t mispredictions = 0;
    uint8_t extension = 0;  // the thesis' path extension counter
    bool unknown_start = false;
    uint64_t cycles = 0;
  };

  explicit PathStack(const PathStackConfig& config);

  void StartEntry(Entry* entry, uint64_t start, uint64_t call_site, bool unknown_start,
                  uint64_t taken) {
    // Field by field, each store the size of the later loads (see Entry).
    entry->desc.start = start;
    entry->desc.length = 0;
    entry->desc.outcomes = 0;
    entry->call_site = call_site;
    entry->first_taken = taken;
    entry->instructions = 0;
    entry->mispredictions = 0;
    entry->extension = 0;
    entry->unknown_start = unknown_start;
    entry->cycles = 0;
  }
  bool ReturnMatches(const Entry& entry, uint64_t to) const {
    return entry.call_site != 0 && to > entry.call_site &&
           to - entry.call_site <= config_.return_match_bytes;
  }
  // Rare paths, out of line: a return not matching the top frame, a push onto a full stack.
  Entry* RepairForReturn(const BranchEvent& e);
  void DropOldest();

  // One event, given the taken-branch ordinal up to and including it.
  template <typename Sink>
  uint8_t Step(const BranchEvent& e, uint64_t taken, Sink& sink);

  template <typename Sink>
  void Emit(const Entry& entry, const BranchEvent& e, uint64_t taken, Sink& sink) {
    if (entry.unknown_start) {
      stats_.unknown_start += 1;
      return;
    }
    CompletedPath done;
    done.path = entry.desc;
    done.metrics.count = 1;
    done.metrics.instructions = entry.instructions;
    done.metrics.cycles = entry.cycles;
    done.metrics.mispredictions = entry.mispredictions;
    done.first_taken = entry.first_taken;
    done.last_taken = e.taken ? taken : taken + 1;
    stats_.paths += 1;
    if constexpr (std::is_base_of_v<PathSink, std::remove_cvref_t<Sink>>) {
      sink.OnPath(done);
    } else {
      sink(static_cast<const CompletedPath&>(done));
    }
  }

  static constexpr uintptr_t kPrefetchBytes = 64 * sizeof(BranchEvent);
  // Bits of decoded_ above the four Op bits.
  static constexpr uint8_t kOpMask = 0x0F;
  static constexpr uint8_t kCheckReturn = 0x10;    // a return that pops a frame: match it
  static constexpr uint8_t kFar = 0x20;            // far transfer (counted)
  static constexpr uint8_t kOpensFrame = 0x40;     // a call: a pushed entry records its call site
  static constexpr uint8_t kUnconditional = 0x80;  // outcome bit is 1 whatever `taken` says

  // Extension counter rules (thesis ch. 5.2) applied to the decoded operations.
  uint8_t Extend(uint8_t ops, BranchClass cls, Entry* top) const {
    if (config_.extension == ExtensionMode::kLoops) {
      if (cls == BranchClass::kBackward && top->extension < config_.max_extension) {
        top->extension += 1;
        return kOpUpdate;
      }
    } else if (cls == BranchClass::kCall) {
      if (top->extension < config_.max_extension) {
        top->extension += 1;
        return kOpUpdate | kUnconditional;
      }
    } else if (cls == BranchClass::kReturn && top->extension > 0) {
      top->extension -= 1;
      return kOpUpdate | kUnconditional;
    }
    return ops;
  }

  PathStackConfig config_;
  // Per (BranchKind, backward) slot: the PPCR operations plus the flags above, and the class.
  std::array<uint8_t, kBranchKindCount * 2> decoded_{};
  std::array<BranchClass, kBranchKindCount * 2> slot_class_{};
  // Slots whose only effect is path_stack_update of the top entry (the bulk loop's fast path).
  std::array<bool, kBranchKindCount * 2> plain_update_{};
  uint32_t depth_ = 0;
  uint64_t taken_ = 0;  // taken branches since the last reset
  std::vector<Entry> stack_;
  PathStackStats stats_;
};

template <typename Sink>
inline void PathStack::ProcessEvents(std::span<const BranchEvent> events, Sink&& sink) {
  // Plain updates (forward branches: most events) touch only the top entry's path and metrics.
  // Those live in registers here and go back to the entry before any other operation, so the
  // common case carries no dependency through memory from one event to the next.
  uint64_t taken = taken_;
  const uint32_t max_length = config_.max_path_length;
  Entry* top = &stack_[depth_ - 1];
  uint64_t outcomes = top->desc.outcomes;
  uint32_t length = top->desc.length;
  uint64_t instructions = top->instructions;
  uint64_t cycles = top->cycles;
  uint32_t mispredictions = top->mispredictions;
  const BranchEvent* p = events.data();
  const BranchEvent* const end = p + events.size();
  for (; p != end; ++p) {
    // The loop is too slow for the hardware prefetcher to run far enough ahead on its own.
    __builtin_prefetch(
        reinterpret_cast<const void*>(reinterpret_cast<uintptr_t>(p) + kPrefetchBytes));
    const uint32_t taken_bit = p->taken ? 1 : 0;
    taken += taken_bit;
    const uint32_t slot = (static_cast<uint32_t>(p->kind) & (kBranchKindCount - 1)) * 2 +
                          (taken_bit & static_cast<uint32_t>(p->to <= p->from));
    const uint8_t ops = decoded_[slot];
    const bool plain_update = plain_update_[slot];
    if (plain_update) {
      instructions += p->instructions;
      cycles += p->cycles;
      mispredictions += p->mispredicted ? 1 : 0;
      outcomes |= uint64_t{taken_bit | (ops >> 7)} << length;
      length += 1;
      if (length < max_length) [[likely]]
        continue;
    }
    top->desc.outcomes = outcomes;
    top->desc.length = static_cast<uint8_t>(length);
    top->instructions = instructions;
    top->cycles = cycles;
    top->mispredictions = mispredictions;
    if (plain_update) {
      // The path is full: split, as Step does.
      Emit(*top, *p, taken, sink);
      stats_.splits += 1;
      StartEntry(top, p->to, top->call_site, false, taken);
    } else {
      Step(*p, taken, sink);
      top = &stack_[depth_ - 1];
    }
    outcomes = top->desc.outcomes;
    length = top->desc.length;
    instructions = top->instructions;
    cycles = top->cycles;
    mispredictions = top->mispredictions;
  }
  top->desc.outcomes = outcomes;
  top->desc.length = static_cast<uint8_t>(length);
  top->instructions = instructions;
  top->cycles = cycles;
  top->mispredictions = mispredictions;
  taken_ = taken;
  stats_.events += events.size();
}

template <typename Sink>
inline uint8_t PathStack::Process(const BranchEvent& e, Sink&& sink) {
  stats_.events += 1;
  taken_ += e.taken ? 1 : 0;
  return Step(e, taken_, sink);
}

template <typename Sink>
inline uint8_t PathStack::Step(const BranchEvent& e, uint64_t taken, Sink& sink) {
  // One table lookup replaces classification and the PPCR decode: the hot loop branches only
  // on what the operations themselves need.
  const uint32_t slot = (static_cast<uint32_t>(e.kind) & (kBranchKindCount - 1)) * 2 +
                        (static_cast<uint32_t>(e.taken) & static_cast<uint32_t>(e.to <= e.from));
  uint8_t ops = decoded_[slot];
  Entry* top = &stack_[depth_ - 1];

  if (config_.extension != ExtensionMode::kNone) [[unlikely]] {
    ops = Extend(ops, slot_class_[slot], top);
  }
  if (ops & (kCheckReturn | kFar)) [[unlikely]] {
    if ((ops & kCheckReturn) && !ReturnMatches(*top, e.to)) top = RepairForReturn(e);
    if (ops & kFar) stats_.far_transfers += 1;
  }

  top->instructions += e.instructions;
  top->cycles += e.cycles;
  top->mispredictions += e.mispredicted ? 1 : 0;

  uint8_t performed = ops & kOpMask;
  const uint64_t update = ops & kOpUpdate;
  const uint64_t outcome = (e.taken ? 1 : 0) | ((ops & kUnconditional) ? 1 : 0);
  top->desc.outcomes |= (outcome & update) << top->desc.length;
  top->desc.length += static_cast<uint8_t>(update);
  if (top->desc.length >= config_.max_path_length && update && !(ops & kOpPop)) [[unlikely]] {
    // Split: the full path ends with this branch; a new one starts at its target.
    Emit(*top, e, taken, sink);
    stats_.splits += 1;
    StartEntry(top, e.to, top->call_site, false, taken);
    performed |= kOpPop | kOpPush;
  }
  if (ops & (kOpPop | kOpPush)) {
    uint64_t call_site = 0;
    if (ops & kOpPop) {
      Emit(*top, e, taken, sink);
      call_site = top->call_site;  // a new path in the same frame keeps the frame's call site
      depth_ -= 1;
    }
    if (ops & kOpPush) {
      if (depth_ == config_.max_depth) [[unlikely]]
        DropOldest();
      if (ops & kOpensFrame) call_site = e.from;
      StartEntry(&stack_[depth_], e.to, call_site, false, taken);
      depth_ += 1;
    } else if (depth_ == 0) {
      // Returned out of the bottom frame: the caller's path began before what we saw.
      stats_.returns_past_base += 1;
      StartEntry(&stack_[0], 0, 0, true, taken);
      depth_ = 1;
    }
  }
  return performed;
}

}  // namespace pathprof::hwmodel
