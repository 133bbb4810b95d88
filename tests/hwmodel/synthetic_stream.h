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

// A larger program for benchmarks: `functions` functions of random shape (seeded). Each has a
// loop of 1..8 iterations whose body is a chain of 1..4 diamonds (biased, some nested) and, with
// some probability, a call to a higher-numbered function (so calls nest without recursion).
// Gives hundreds to thousands of distinct Ball-Larus paths.
class SyntheticProgram {
 public:
  SyntheticProgram(uint64_t seed, int functions) : rng_(seed) {
    for (int f = 0; f < functions; ++f) {
      Function fn;
      fn.base = 0x500000 + 0x1000 * static_cast<uint64_t>(f);
      fn.max_iterations = 1 + static_cast<int>(rng_() % 8);
      const int diamonds = 1 + static_cast<int>(rng_() % 4);
      for (int d = 0; d < diamonds; ++d) {
        fn.bias.push_back(static_cast<uint32_t>(5 + rng_() % 90));
        fn.nested.push_back(rng_() % 3 == 0);
      }
      fn.call_percent = f + 1 < functions ? static_cast<uint32_t>(rng_() % 40) : 0;
      functions_.push_back(fn);
    }
  }

  std::vector<BranchEvent> Generate(size_t min_events) {
    std::vector<BranchEvent> out;
    out.reserve(min_events + 4096);
    while (out.size() < min_events) Run(&out, 0, 0);
    return out;
  }

 private:
  struct Function {
    uint64_t base = 0;
    int max_iterations = 1;
    std::vector<uint32_t> bias;
    std::vector<bool> nested;
    uint32_t call_percent = 0;
  };

  void Emit(std::vector<BranchEvent>* out, BranchKind kind, uint64_t from, uint64_t target,
            bool taken, uint16_t block) {
    BranchEvent e;
    e.from = from;
    e.to = taken ? target : from + 2;
    e.kind = kind;
    e.taken = taken;
    e.instructions = block;
    e.cycles = block + static_cast<uint32_t>(rng_() & 3);
    e.mispredicted = kind == BranchKind::kConditional && (rng_() & 15) == 0;
    out->push_back(e);
  }

  void Run(std::vector<BranchEvent>* out, int f, int depth) {
    const Function& fn = functions_[static_cast<size_t>(f)];
    const int iterations = 1 + static_cast<int>(rng_() % static_cast<uint64_t>(fn.max_iterations));
    for (int i = 0; i < iterations; ++i) {
      uint64_t pc = fn.base + 0x10;
      for (size_t d = 0; d < fn.bias.size(); ++d, pc += 0x40) {
        const bool taken = rng_() % 100 < fn.bias[d];
        Emit(out, BranchKind::kConditional, pc, pc + 0x20, taken, 4);
        if (fn.nested[d] && !taken) {
          Emit(out, BranchKind::kConditional, pc + 0x8, pc + 0x20, rng_() % 2 == 0, 2);
        }
      }
      if (depth < 6 && rng_() % 100 < fn.call_percent) {
        const int callee =
            f + 1 + static_cast<int>(rng_() % static_cast<uint64_t>(functions_.size() - f - 1));
        const uint64_t callee_base = functions_[static_cast<size_t>(callee)].base;
        Emit(out, BranchKind::kDirectCall, pc, callee_base, true, 3);
        Run(out, callee, depth + 1);
        Emit(out, BranchKind::kReturn, callee_base + 0xff0, pc + 5, true, 2);
      }
      Emit(out, BranchKind::kConditional, pc + 0x10, fn.base, i + 1 < iterations, 2);
    }
    if (depth == 0) {
      // The outermost function runs in an endless outer loop.
      Emit(out, BranchKind::kDirectJump, fn.base + 0xf00, fn.base, true, 1);
    }
  }

  std::mt19937_64 rng_;
  std::vector<Function> functions_;
};

}  // namespace pathprof::hwmodel::testing
