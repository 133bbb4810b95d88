#include "pathprof/hwmodel/path_stack.h"

#include <algorithm>

namespace pathprof::hwmodel {

Result<PathStack> PathStack::Create(const PathStackConfig& config) {
  PATHPROF_RETURN_IF_ERROR(config.Validate());
  return PathStack(config);
}

PathStack::PathStack(const PathStackConfig& config) : config_(config), stack_(config.max_depth) {
  const OperationTable& table = config.table;
  const uint8_t call = table.Get(BranchClass::kCall);
  const uint8_t ret = table.Get(BranchClass::kReturn);
  // Call sites name frames only when the stack mirrors the program's frames.
  const bool frame_returns = config.repair_returns && (call & kOpPush) && !(call & kOpPop) &&
                             (ret & kOpPop) && !(ret & kOpPush);
  for (int kind = 0; kind < kBranchKindCount; ++kind) {
    for (int backward = 0; backward < 2; ++backward) {
      BranchEvent probe;
      probe.kind = static_cast<BranchKind>(kind);
      probe.taken = true;
      probe.from = backward ? 2 : 1;
      probe.to = backward ? 1 : 2;
      const BranchClass cls = ClassifyBranch(probe);
      uint8_t bits = table.Get(cls);
      if (cls == BranchClass::kReturn && frame_returns) bits |= kCheckReturn;
      if (cls == BranchClass::kFar) bits |= kFar;
      if (cls == BranchClass::kCall) bits |= kOpensFrame;
      if (probe.kind != BranchKind::kConditional) bits |= kUnconditional;
      decoded_[kind * 2 + backward] = bits;
      // The extension counter may change what calls, returns and back-edges do.
      const bool extendable = config.extension != ExtensionMode::kNone &&
                              (cls == BranchClass::kCall || cls == BranchClass::kReturn ||
                               cls == BranchClass::kBackward);
      plain_update_[kind * 2 + backward] = (bits & ~kUnconditional) == kOpUpdate && !extendable;
      slot_class_[kind * 2 + backward] = cls;
    }
  }
  StartEntry(&stack_[0], 0, 0, true, 0);
  depth_ = 1;
}

void PathStack::Reset() {
  stats_.gaps += 1;
  for (uint32_t i = 0; i < depth_; ++i) {
    const Entry& e = stack_[i];
    if (e.unknown_start) {
      // A frame entered before the gap that saw events: its path is partial at both ends.
      if (e.desc.length > 0 || e.instructions > 0) stats_.unknown_start += 1;
    } else {
      stats_.truncated += 1;
    }
  }
  taken_ = 0;
  StartEntry(&stack_[0], 0, 0, true, 0);
  depth_ = 1;
}

PathStack::Entry* PathStack::RepairForReturn(const BranchEvent& e) {
  // Search below the top for the frame this return goes back to (longjmp, exception unwind).
  for (uint32_t i = depth_ - 1; i-- > 0;) {
    if (ReturnMatches(stack_[i], e.to)) {
      const uint32_t skipped = depth_ - 1 - i;
      stats_.repairs += 1;
      stats_.repaired_frames += skipped;
      depth_ = i + 1;
      return &stack_[i];
    }
  }
  // No frame matches. A base frame (call site unknown) returning is expected after a gap and is
  // counted when the stack empties; anything else is a mismatch, and the top frame is popped.
  if (stack_[depth_ - 1].call_site != 0) stats_.return_mismatches += 1;
  return &stack_[depth_ - 1];
}

void PathStack::DropOldest() {
  stats_.overflow_dropped += 1;
  std::move(stack_.begin() + 1, stack_.begin() + depth_, stack_.begin());
  depth_ -= 1;
}

}  // namespace pathprof::hwmodel
