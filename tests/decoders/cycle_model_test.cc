// The cycle model against code whose timing is known from its dependencies: four multiplies in
// one chain take four latencies per run, four independent ones overlap. Runs the real llvm-mca
// (Debian's llvm package, installed by scripts/install-deps.sh).
#include "pathprof/decoders/cycle_model.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

namespace pathprof::decoders {
namespace {

// imul eax, eax (x4): each waits for the one before.
const std::vector<uint8_t> kChain = {0x0f, 0xaf, 0xc0, 0x0f, 0xaf, 0xc0,
                                     0x0f, 0xaf, 0xc0, 0x0f, 0xaf, 0xc0};
// imul eax, eax; imul ecx, ecx; imul edx, edx; imul esi, esi: four independent chains.
const std::vector<uint8_t> kIndependent = {0x0f, 0xaf, 0xc0, 0x0f, 0xaf, 0xc9,
                                           0x0f, 0xaf, 0xd2, 0x0f, 0xaf, 0xf6};

std::unique_ptr<CycleModel> Model() {
  auto m = CycleModel::Create();
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  return m.ok() ? std::move(*m) : nullptr;
}

TEST(CycleModel, ADependencyChainTakesLongerThanTheSameWorkInParallel) {
  auto m = Model();
  ASSERT_TRUE(m);
  auto chain = m->EstimateCode(kChain, 0x1000);
  auto independent = m->EstimateCode(kIndependent, 0x1000);
  ASSERT_TRUE(chain.ok()) << chain.status().ToString();
  ASSERT_TRUE(independent.ok()) << independent.status().ToString();
  // imul's latency is 3 cycles on every x86-64 core LLVM models, its throughput 1 per cycle.
  EXPECT_GE(*chain, 11.0);
  EXPECT_LE(*chain, 13.5);
  EXPECT_GT(*chain, 2.5 * *independent) << "chain " << *chain << " independent " << *independent;
}

// A loop whose body is `body` followed by `jne` back to its start, at 0x2000.
struct Loop {
  std::vector<uint8_t> code;
  uint64_t start = 0x2000, branch = 0;
  uint16_t instructions = 0;
  explicit Loop(const std::vector<uint8_t>& body) : code(body) {
    branch = start + code.size();
    instructions = static_cast<uint16_t>(body.size() / 3 + 1);
    const int8_t back = static_cast<int8_t>(-static_cast<int>(code.size() + 2));
    code.push_back(0x75);  // jne rel8
    code.push_back(static_cast<uint8_t>(back));
  }
  CodeReader reader() const {
    return [this](uint64_t a) -> std::span<const uint8_t> {
      if (a < start || a >= start + code.size()) return {};
      return std::span(code).subspan(static_cast<size_t>(a - start));
    };
  }
  BranchEvent Back() const {
    BranchEvent e;
    e.from = branch;
    e.to = start;
    e.kind = BranchKind::kConditional;
    e.taken = true;
    e.instructions = instructions;
    return e;
  }
};

TEST(CycleModel, BlockCyclesOfAWindowAreCachedPerBlock) {
  auto m = Model();
  ASSERT_TRUE(m);
  const Loop loop(kChain);
  const std::vector<BranchEvent> window(4, loop.Back());
  const std::vector<double> cycles = m->BlockCycles(window, loop.reader());
  ASSERT_EQ(cycles.size(), 4u);
  EXPECT_EQ(cycles[0], 0.0) << "the first block began before the window";
  EXPECT_GE(cycles[1], 11.0);
  EXPECT_EQ(cycles[1], cycles[2]);
  EXPECT_EQ(cycles[1], cycles[3]);
  EXPECT_EQ(m->stats().mca_runs, 1u);
  EXPECT_EQ(m->stats().blocks_estimated, 1u);
  // The same block again: from the cache, no llvm-mca run.
  EXPECT_EQ(m->BlockCycles(window, loop.reader()), cycles);
  EXPECT_EQ(m->stats().mca_runs, 1u);
  EXPECT_EQ(m->stats().cache_hits, 3u);
}

TEST(CycleModel, UnknownCodeHasNoDurationAndIsCounted) {
  auto m = Model();
  ASSERT_TRUE(m);
  const Loop loop(kIndependent);
  std::vector<BranchEvent> window(3, loop.Back());
  // Unreadable: nothing at the block's start.
  const std::vector<double> none =
      m->BlockCycles(window, [](uint64_t) { return std::span<const uint8_t>(); });
  EXPECT_EQ(none, std::vector<double>(3, 0.0));
  EXPECT_EQ(m->stats().unreadable_blocks, 1u);
  EXPECT_EQ(m->stats().mca_runs, 0u);
  // A count that does not end at the branch the event names: the walk and the event disagree.
  window[1].instructions = 3;
  window[2].instructions = 3;
  const std::vector<double> mismatch = m->BlockCycles(window, loop.reader());
  EXPECT_EQ(mismatch, std::vector<double>(3, 0.0));
  EXPECT_EQ(m->stats().unreadable_blocks, 2u);
}

TEST(CycleModel, MissingToolIsAClearError) {
  CycleModelOptions o;
  o.llvm_mca = "/nonexistent/llvm-mca";
  auto m = CycleModel::Create(o);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), ErrorCode::kUnavailable);
  EXPECT_NE(m.status().message().find("llvm"), std::string::npos) << m.status().message();
}

}  // namespace
}  // namespace pathprof::decoders
