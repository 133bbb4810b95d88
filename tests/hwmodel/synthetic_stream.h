// A seeded synthetic branch stream shaped like a real program: a main loop with a diamond, a
// nested diamond, calls to a function with an inner loop and to a leaf with a diamond.
// Shared by the window-estimator test and bench/hwmodel_bench.cc.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "pathprof/core/branch.h"

namespace pathprof::hwmodel::testing {

class SyntheticStream {
 public:
  explicit SyntheticStream(uint64_t seed) : rng_(seed) {}

  // Appends whole main-loop iterations until at least `min_events` events exist.
  std::vector<BranchEvent> Generate(size_t min_events) {
    std::vector<BranchEvent> out;
    out.reserve(min_events + 64);
    while (out.size() < min_events) MainIteration(&out);
    return out;
  }

 private:
  bool Chance(uint32_t percent) { return rng_() % 100 < percent; }

  void Branch(std::vector<BranchEvent>* out, BranchKind kind, uint64_t from, uint64_t target,
              bool taken, uint16_t block) {
    BranchEvent e;
    e.from = from;
    e.kind = kind;
    e.taken = taken;
    e.to = taken ? target : from + 2;
    e.instructions = block;
    e.cycles = block + static_cast<uint32_t>(rng_() % 4);
    e.mispredicted = kind == BranchKind::kConditional && rng_() % 16 == 0;
    out->push_back(e);
  }
  void CondBranch(std::vector<BranchEvent>* out, uint64_t from, uint64_t target, bool taken,
                  uint16_t block) {
    Branch(out, BranchKind::kConditional, from, target, taken, block);
  }

  // main loop, header at 0x401000; the back-edge at 0x401100.
  void MainIteration(std::vector<BranchEvent>* out) {
    CondBranch(out, 0x401010, 0x401030, Chance(30), 4);  // diamond 1
    if (Chance(60)) {                                    // nested diamond
      CondBranch(out, 0x401040, 0x401060, true, 3);
      CondBranch(out, 0x401064, 0x401070, Chance(50), 2);
    } else {
      CondBranch(out, 0x401040, 0x401060, false, 3);
    }
    if (Chance(40)) {
      Branch(out, BranchKind::kDirectCall, 0x401080, 0x402000, true, 5);
      Function(out);
      Branch(out, BranchKind::kReturn, 0x402090, 0x401085, true, 2);
    }
    if (Chance(10)) {
      Branch(out, BranchKind::kDirectCall, 0x4010a0, 0x403000, true, 2);
      CondBranch(out, 0x403008, 0x403020, Chance(50), 3);
      Branch(out, BranchKind::kReturn, 0x403030, 0x4010a5, true, 2);
    }
    CondBranch(out, 0x4010c0, 0x4010e0, Chance(80), 3);
    CondBranch(out, 0x401100, 0x401000, true, 2);  // back-edge
  }

  // Inner loop of 1..3 iterations with a diamond in its body.
  void Function(std::vector<BranchEvent>* out) {
    const int iterations = 1 + static_cast<int>(rng_() % 3);
    for (int i = 0; i < iterations; ++i) {
      CondBranch(out, 0x402010, 0x402030, Chance(50), 6);
      CondBranch(out, 0x402050, 0x402000, i + 1 < iterations, 3);  // loop back-edge
    }
  }

  std::mt19937_64 rng_;
};

}  // namespace pathprof::hwmodel::testing
