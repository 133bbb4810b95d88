// Hand-made branch events for the hwmodel tests.
#pragma once

#include <cstdint>
#include <ostream>
#include <vector>

#include "pathprof/core/branch.h"
#include "pathprof/hwmodel/path_stack.h"

namespace pathprof::hwmodel {
// Readable gtest failure messages.
inline void PrintTo(const PathDescriptor& p, std::ostream* os) {
  *os << FormatPathDescriptor(p);
}
}  // namespace pathprof::hwmodel

namespace pathprof::hwmodel::testing {

inline BranchEvent Cond(uint64_t from, uint64_t to, bool taken, uint16_t instructions = 0) {
  BranchEvent e;
  e.from = from;
  e.to = to;
  e.kind = BranchKind::kConditional;
  e.taken = taken;
  e.instructions = instructions;
  return e;
}
inline BranchEvent Of(BranchKind kind, uint64_t from, uint64_t to, uint16_t instructions = 0) {
  BranchEvent e;
  e.from = from;
  e.to = to;
  e.kind = kind;
  e.instructions = instructions;
  return e;
}
inline BranchEvent Jmp(uint64_t from, uint64_t to, uint16_t n = 0) {
  return Of(BranchKind::kDirectJump, from, to, n);
}
inline BranchEvent Call(uint64_t from, uint64_t to, uint16_t n = 0) {
  return Of(BranchKind::kDirectCall, from, to, n);
}
inline BranchEvent Ret(uint64_t from, uint64_t to, uint16_t n = 0) {
  return Of(BranchKind::kReturn, from, to, n);
}

inline PathDescriptor P(uint64_t start, uint8_t length, uint64_t outcomes) {
  return PathDescriptor{start, length, outcomes};
}

// Runs `events` through a fresh stack (one reset at the start); returns the emitted paths.
inline std::vector<CompletedPath> RunStack(PathStack& stack,
                                           const std::vector<BranchEvent>& events) {
  std::vector<CompletedPath> out;
  for (const BranchEvent& e : events) {
    stack.Process(e, [&out](const CompletedPath& c) { out.push_back(c); });
  }
  return out;
}

inline std::vector<PathDescriptor> Descriptors(const std::vector<CompletedPath>& paths) {
  std::vector<PathDescriptor> out;
  for (const CompletedPath& c : paths) out.push_back(c.path);
  return out;
}

}  // namespace pathprof::hwmodel::testing
