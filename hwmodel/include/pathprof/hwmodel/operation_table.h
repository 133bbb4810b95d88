// The Path Profiler Control Register (thesis ch. 5.2): per branch class, which path-stack
// operations apply, plus the extension-counter options; and the classification of a retired
// branch into those classes.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "pathprof/core/branch.h"
#include "pathprof/core/status.h"
#include "pathprof/hwmodel/path_descriptor.h"

namespace pathprof::hwmodel {

// The five classes of table 5.1, plus kFar for syscalls/interrupts, which the thesis (a user-mode
// Alpha simulator) never sees. Default for kFar: update-count only, so a syscall neither breaks
// nor lengthens the interrupted path (the kernel returns to the next instruction).
enum class BranchClass : uint8_t {
  kCall = 0,
  kReturn,
  kForward,
  kBackward,
  kIndirect,
  kFar,
};
inline constexpr int kBranchClassCount = 6;

std::string_view BranchClassName(BranchClass c);

// Classification, as the hardware decodes a retiring branch:
//  - direct and indirect calls: kCall; returns: kReturn;
//  - indirect jumps and kUnknown (target set unknown): kIndirect;
//  - far transfers (syscall, interrupt, exception): kFar;
//  - conditional branches and direct jumps: kBackward when taken and to <= from, else kForward
//    (a not-taken conditional is a forward branch with outcome 0).
inline BranchClass ClassifyBranch(const BranchEvent& e) {
  switch (e.kind) {
    case BranchKind::kConditional:
    case BranchKind::kDirectJump:
      return e.IsBackward() ? BranchClass::kBackward : BranchClass::kForward;
    case BranchKind::kDirectCall:
    case BranchKind::kIndirectCall:
      return BranchClass::kCall;
    case BranchKind::kReturn:
      return BranchClass::kReturn;
    case BranchKind::kFarTransfer:
      return BranchClass::kFar;
    case BranchKind::kIndirectJump:
    case BranchKind::kUnknown:
      return BranchClass::kIndirect;
  }
  return BranchClass::kIndirect;
}

// Outcome bit recorded by path_stack_update: 1 for taken or unconditional, 0 for not taken.
inline uint64_t OutcomeBit(const BranchEvent& e) {
  return (e.kind != BranchKind::kConditional || e.taken) ? 1 : 0;
}

// Operation bits. Applied in the fixed order of the thesis: update or update-count, then pop,
// then push. update and update-count are mutually exclusive.
enum Op : uint8_t {
  kOpNone = 0,
  kOpUpdate = 1,
  kOpUpdateCount = 2,
  kOpPop = 4,
  kOpPush = 8,
};

struct OperationTable {
  std::array<uint8_t, kBranchClassCount> ops{};  // indexed by BranchClass

  uint8_t Get(BranchClass c) const { return ops[static_cast<int>(c)]; }
  void Set(BranchClass c, uint8_t op_bits) { ops[static_cast<int>(c)] = op_bits; }
  // Rejects update together with update-count, and unknown bits.
  Status Validate() const;
  bool operator==(const OperationTable&) const = default;
};

// Which branches the extension counter lets a path span (thesis ch. 5.2, "extended paths").
enum class ExtensionMode : uint8_t {
  kNone = 0,
  kLoops,  // backward branches: while counter < max, only update and increment the counter
  kCalls,  // calls: while counter < max, update and increment; returns with counter > 0:
           // update and decrement; otherwise the table's operations apply
};

// What the path stack does when a push meets a full stack.
enum class OverflowPolicy : uint8_t {
  kDropOldest = 0,  // the bottom entry is discarded (counted), as "ignoring older entries"
};

struct PathStackConfig {
  OperationTable table;
  ExtensionMode extension = ExtensionMode::kNone;
  uint8_t max_extension = 0;                        // N of extended:loops:N / extended:calls:N
  uint8_t max_path_length = kDefaultMaxPathLength;  // 1..64; a longer path is split
  uint16_t max_depth = 32;                          // path stack entries, >= 1
  OverflowPolicy overflow = OverflowPolicy::kDropOldest;
  // A return matches the frame pushed by a call at `from` when from < to <= from + this.
  uint8_t return_match_bytes = 16;
  // Whether returns are checked against the call sites on the stack (longjmp/exception repair).
  // Only meaningful for tables where calls push without popping and returns pop without pushing.
  bool repair_returns = true;

  Status Validate() const;
  bool operator==(const PathStackConfig&) const = default;
};

// Table 5.1: acyclic intra-procedural (Ball-Larus style) paths ending at backward branches.
PathStackConfig BallLarusPreset();
// Table 5.2: the pieces of a Whole Program Path (BL paths that also end at calls and returns).
PathStackConfig WholeProgramPathPreset();
// Table 5.1 with the extension counter: paths spanning up to n back-edges / n calls.
PathStackConfig ExtendedLoopsPreset(uint8_t n);
PathStackConfig ExtendedCallsPreset(uint8_t n);

// Parses "bl", "wpp", "extended:loops:N", "extended:calls:N" (N in 1..255), optionally followed
// by ",maxlen=L" and/or ",depth=D". The error names the bad spec and lists what is accepted.
Result<PathStackConfig> ParsePathStackConfig(std::string_view spec);
// The canonical spec of a configuration built by the presets (inverse of the parser); "custom"
// when the table is not one of the presets.
std::string PathStackConfigName(const PathStackConfig& config);

}  // namespace pathprof::hwmodel
