// The emulator against the CPU on random blocks of the instructions it claims
// (differential_harness.h): a short run from fixed seeds catches a regression in any of them;
// bench/emulator_differential_bench runs the same at scale (docs/performance.md).
#include <gtest/gtest.h>

#include <string>

#include "differential_harness.h"

namespace pathprof::emulator::differential {
namespace {

TEST(Differential, RandomBlocksMatchTheCpu) {
  if (const std::string missing = MissingCpuFeatures(); !missing.empty())
    GTEST_SKIP() << "this CPU lacks what the drawn instructions need:" << missing;
  Totals t;
  // About 100,000 instructions: each claimed mnemonic drawn ~1,000 times.
  for (uint64_t seed : {11u, 12u})
    ASSERT_TRUE(RunBlocks(t.instructions + 50'000, seed, t)) << "cannot map the arena";
  std::string diverged;
  for (const auto& [name, blocks] : t.divergences)
    diverged += name + " (" + std::to_string(blocks) + " blocks) ";
  for (const std::string& e : t.examples) diverged += "e.g. " + e + " ";
  EXPECT_TRUE(t.divergences.empty()) << diverged;
  // Every drawn instruction is one the emulator claims and this CPU runs: no block may end
  // early or fault natively, or it was not compared.
  std::string early;
  for (const auto& [why, blocks] : t.early_ends)
    early += why + " (" + std::to_string(blocks) + ") ";
  EXPECT_TRUE(t.early_ends.empty()) << early;
  std::string faults;
  for (const auto& [insn, blocks] : t.faults_by)
    faults += insn + " (" + std::to_string(blocks) + ") ";
  EXPECT_EQ(t.native_faults, 0u) << faults;
  EXPECT_EQ(t.compared_blocks, t.blocks);
  // Tracking unknown bytes on the same blocks: no disagreement between two poisons or with the
  // whole window, and the probes get past some unknowns (tracking does not just end at once).
  std::string tracked;
  for (const auto& [name, blocks] : t.tracked_disagreements)
    tracked += name + " (" + std::to_string(blocks) + " blocks) ";
  EXPECT_TRUE(t.tracked_disagreements.empty()) << tracked;
  EXPECT_EQ(t.tracked_blocks, t.compared_blocks);
  EXPECT_GT(t.tracked_taken, t.tracked_blocks);
  // Each class was drawn.
  for (ZydisMnemonic mn : Classes())
    EXPECT_GT(t.generated[std::string(MnemonicName(static_cast<uint16_t>(mn)))], 0u)
        << MnemonicName(static_cast<uint16_t>(mn));
}

}  // namespace
}  // namespace pathprof::emulator::differential
