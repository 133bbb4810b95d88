#include "pathprof/core/branch.h"

#include <array>

namespace pathprof {
namespace {
constexpr std::array<std::string_view, kBranchKindCount> kNames = {
    "cond", "jmp", "ijmp", "call", "icall", "ret", "far", "unknown"};
}

std::string_view BranchKindName(BranchKind kind) {
  auto i = static_cast<size_t>(kind);
  return i < kNames.size() ? kNames[i] : "unknown";
}

bool ParseBranchKind(std::string_view name, BranchKind* out) {
  for (size_t i = 0; i < kNames.size(); ++i) {
    if (kNames[i] == name) {
      *out = static_cast<BranchKind>(i);
      return true;
    }
  }
  return false;
}

}  // namespace pathprof
