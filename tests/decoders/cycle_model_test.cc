// The cycle model against code whose timing follows from its structure: dependency chains
// against the same work in parallel, a divide against adds, idioms that break a chain, a value
// carried through memory; and the model's bookkeeping: blocks cached, unreadable blocks and
// blocks without a fixed cost counted rather than guessed. No external tool is involved.
#include "pathprof/decoders/cycle_model.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace pathprof::decoders {
namespace {

using Bytes = std::vector<uint8_t>;

Bytes Concat(std::initializer_list<Bytes> parts) {
  Bytes out;
  for (const Bytes& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

// imul eax, eax (x4): each waits for the one before.
const Bytes kChain = {0x0f, 0xaf, 0xc0, 0x0f, 0xaf, 0xc0, 0x0f, 0xaf, 0xc0, 0x0f, 0xaf, 0xc0};
// imul eax, eax; imul ecx, ecx; imul edx, edx; imul esi, esi: four independent chains.
const Bytes kIndependent = {0x0f, 0xaf, 0xc0, 0x0f, 0xaf, 0xc9, 0x0f, 0xaf, 0xd2, 0x0f, 0xaf, 0xf6};
const Bytes kAddEaxEcx = {0x01, 0xc8};         // add eax, ecx
const Bytes kAddEdxEsi = {0x01, 0xf2};         // add edx, esi
const Bytes kAddEdiR8d = {0x44, 0x01, 0xc7};   // add edi, r8d
const Bytes kAddR9dR10d = {0x45, 0x01, 0xd1};  // add r9d, r10d
const Bytes kXorEdxEdx = {0x31, 0xd2};         // xor edx, edx
const Bytes kMovEaxEsi = {0x89, 0xf0};         // mov eax, esi
const Bytes kDivEcx = {0xf7, 0xf1};            // div ecx
const Bytes kOrEaxEax = {0x09, 0xc0};          // or eax, eax
const Bytes kXorEaxEax = {0x31, 0xc0};         // xor eax, eax
const Bytes kImulEaxEax = {0x0f, 0xaf, 0xc0};  // imul eax, eax
const Bytes kRepMovsb = {0xf3, 0xa4};          // rep movsb
// mov rax, [rip+0x100]; imul rax, rax; mov [rip+DISP], rax, at 0x1000: the store lands where
// the next iteration loads (DISP = 0xf5: both name 0x1107) or somewhere else.
Bytes LoadSquareStore(uint8_t store_disp) {
  return {0x48, 0x8b, 0x05, 0x00,       0x01, 0x00, 0x00,   // mov rax, [rip+0x100]
          0x48, 0x0f, 0xaf, 0xc0,                           // imul rax, rax
          0x48, 0x89, 0x05, store_disp, 0x00, 0x00, 0x00};  // mov [rip+disp], rax
}

std::unique_ptr<CycleModel> Model() {
  auto m = CycleModel::Create();
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  return m.ok() ? std::move(*m) : nullptr;
}

double Cycles(const CycleModel& m, const Bytes& code) {
  auto c = m.EstimateCode(code, 0x1000);
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  return c.ok() ? *c : -1;
}

TEST(CycleModel, ADependencyChainTakesLongerThanTheSameWorkInParallel) {
  auto m = Model();
  ASSERT_TRUE(m);
  const double chain = Cycles(*m, kChain);
  const double independent = Cycles(*m, kIndependent);
  // imul's latency is 3 cycles and one starts per cycle, on every current x86-64 core.
  EXPECT_GE(chain, 11.0);
  EXPECT_LE(chain, 13.5);
  EXPECT_GE(independent, 3.5) << "four multiplies on one multiplier";
  EXPECT_GT(chain, 2.5 * independent) << "chain " << chain << " independent " << independent;
  // The same with adds: four in one chain take four latencies; four on four registers overlap.
  const double add_chain = Cycles(*m, Concat({kAddEaxEcx, kAddEaxEcx, kAddEaxEcx, kAddEaxEcx}));
  const double add_parallel = Cycles(*m, Concat({kAddEaxEcx, kAddEdxEsi, kAddEdiR8d, kAddR9dR10d}));
  EXPECT_DOUBLE_EQ(add_chain, 4.0);
  EXPECT_LE(add_parallel, 1.0);
}

TEST(CycleModel, ADivideCostsMoreThanAdds) {
  auto m = Model();
  ASSERT_TRUE(m);
  // xor edx, edx; mov eax, esi; div ecx; add edi, r8d (independent iterations: the divider's
  // issue interval bounds them) against the same block with an add for the divide.
  const double divide = Cycles(*m, Concat({kXorEdxEdx, kMovEaxEsi, kDivEcx, kAddEdiR8d}));
  const double adds = Cycles(*m, Concat({kXorEdxEdx, kMovEaxEsi, kAddEaxEcx, kAddEdiR8d}));
  EXPECT_GE(divide, 5.0);
  EXPECT_GE(divide, 5 * adds) << "divide " << divide << " adds " << adds;
}

TEST(CycleModel, ZeroIdiomsBreakTheChainThatTheSameOperationWithInputsCarries) {
  auto m = Model();
  ASSERT_TRUE(m);
  // or eax, eax keeps eax: the two multiplies chain across iterations (1 + 3 + 3 cycles);
  // xor eax, eax zeroes it, so each iteration starts afresh and only the multiplier bounds.
  const double carried = Cycles(*m, Concat({kOrEaxEax, kImulEaxEax, kImulEaxEax}));
  const double broken = Cycles(*m, Concat({kXorEaxEax, kImulEaxEax, kImulEaxEax}));
  EXPECT_DOUBLE_EQ(carried, 7.0);
  EXPECT_LE(broken, 2.0);
}

TEST(CycleModel, AValueStoredAndLoadedBackCarriesItsChainThroughMemory) {
  auto m = Model();
  ASSERT_TRUE(m);
  // Stored where the next iteration loads: the multiply's latency chains through memory. The
  // load takes the store's value with no latency of its own (memory renaming, Zen 2 and later).
  const double through_memory = Cycles(*m, LoadSquareStore(0xf5));
  const double elsewhere = Cycles(*m, LoadSquareStore(0x00));
  EXPECT_DOUBLE_EQ(through_memory, 3.0);
  EXPECT_LE(elsewhere, 1.5);
  auto explained = m->ExplainCode(LoadSquareStore(0xf5), 0x1000);
  ASSERT_TRUE(explained.ok());
  EXPECT_TRUE(explained->through_memory);
}

TEST(CycleModel, MoveEliminationMakesCopiesFree) {
  auto m = Model();
  ASSERT_TRUE(m);
  // warm() of examples/hotloop: acc = acc * 33 + i as mov ecx, eax; shl ecx, 5; add eax, ecx;
  // add eax, edx. The copy is renamed away, so the chain is shl + add + add.
  const Bytes warm_chain = {0x89, 0xc1, 0xc1, 0xe1, 0x05, 0x01, 0xc8, 0x01, 0xd0};
  EXPECT_DOUBLE_EQ(Cycles(*m, warm_chain), 3.0);
}

TEST(CycleModel, CreateNeedsNoExternalTool) {
  const char* path = std::getenv("PATH");
  const std::string saved = path ? path : "";
  setenv("PATH", "/nonexistent", 1);
  auto m = CycleModel::Create();
  setenv("PATH", saved.c_str(), 1);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_GT(Cycles(**m, kChain), 0);
}

TEST(CycleModel, BadOptionsAreAClearError) {
  CycleModelOptions o;
  o.max_block_instructions = 0;
  auto m = CycleModel::Create(o);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(m.status().message().find("max_block_instructions"), std::string::npos)
      << m.status().message();
}

// A loop whose body is `body` followed by `jne` back to its start, at 0x2000.
struct Loop {
  Bytes code;
  uint64_t start = 0x2000, branch = 0;
  uint16_t instructions = 0;
  Loop(const Bytes& body, uint16_t body_instructions) : code(body) {
    branch = start + code.size();
    instructions = static_cast<uint16_t>(body_instructions + 1);
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

TEST(CycleModel, AWindowsRunsAreDecodedOnceAndTimedInTheOrderTheyRan) {
  auto m = Model();
  ASSERT_TRUE(m);
  const Loop loop(kChain, 4);
  const std::vector<BranchEvent> window(4, loop.Back());
  const std::vector<double> cycles = m->WindowDurations(window, loop.reader());
  ASSERT_EQ(cycles.size(), 4u);
  EXPECT_EQ(cycles[0], 0.0) << "the first block began before the window";
  // Four multiplies, each waiting for the one before, in every run; each run's first one
  // waits for the run before it.
  for (size_t i = 1; i < 4; ++i) EXPECT_GE(cycles[i], 12.0) << i;
  EXPECT_EQ(m->stats().blocks_estimated, 1u);
  EXPECT_EQ(m->stats().cache_hits, 2u);
  // What the cache holds, for the store's memory figure: one run of five instructions.
  EXPECT_GE(m->memory_bytes(), 5 * 20u);
  EXPECT_LE(m->memory_bytes(), 1024u);
  // The same window again: decoded from the cache, timed the same way.
  EXPECT_EQ(m->WindowDurations(window, loop.reader()), cycles);
  EXPECT_EQ(m->stats().blocks_estimated, 1u);
  EXPECT_EQ(m->stats().cache_hits, 5u);
}

TEST(CycleModel, BlocksEndingAtANotTakenBranchAreTimedWithTheBlocksAfterThem) {
  auto m = Model();
  ASSERT_TRUE(m);
  // hot() of examples/hotloop at 0x401690: add edx, ecx; add eax, 1; add ecx, 7;
  // mov [rip+sink_a], edx; cmp edi, eax; je (not taken) | test al, 3; jne (taken, back).
  const Bytes hot = {0x01, 0xca, 0x83, 0xc0, 0x01, 0x83, 0xc1, 0x07, 0x89, 0x15, 0x36,
                     0x4c, 0x0a, 0x00, 0x39, 0xc7, 0x74, 0x16, 0xa8, 0x03, 0x75, 0xea};
  const uint64_t start = 0x401690;
  const CodeReader reader = [&](uint64_t a) -> std::span<const uint8_t> {
    if (a < start || a >= start + hot.size()) return {};
    return std::span(hot).subspan(static_cast<size_t>(a - start));
  };
  BranchEvent enter, je, jne;
  enter.to = start;
  je.from = 0x4016a0;
  je.to = 0x4016a2;
  je.taken = false;
  je.instructions = 6;
  jne.from = 0x4016a4;
  jne.to = start;
  jne.instructions = 2;
  std::vector<BranchEvent> window = {enter};
  for (int i = 0; i < 12; ++i) {
    window.push_back(je);
    window.push_back(jne);
  }
  const std::vector<double> cycles = m->WindowDurations(window, reader);
  // Past the first iterations, the 8 instructions run in one cycle on the reference host (6
  // macro-ops, one taken branch, one-cycle chains); timed apart, each block would pay a cycle
  // for its own branch.
  for (size_t i = 9; i + 1 < window.size(); i += 2) {
    EXPECT_DOUBLE_EQ(cycles[i] + cycles[i + 1], 1.0) << i;
    EXPECT_DOUBLE_EQ(cycles[i], 3 * cycles[i + 1]) << "shared by instructions, 6 to 2";
  }
  EXPECT_EQ(m->stats().blocks_estimated, 1u);
}

// A caller that loads rax afresh and calls a function that chases a pointer through it (four
// times mov rax, [rax+8], then ret), and back round: each call's chain of four loads starts
// anew and overlaps the calls after it. The same caller without the load of rax hands every
// call the rax of the call before: the chains join. Timing each run as a loop of itself, the
// function would cost its four loads' latency both times; timed as the window ran, only where
// the trace carries the chain.
TEST(CycleModel, AChainCarriesFromRunToRunOnlyWhereTheWindowCarriesIt) {
  const uint64_t caller = 0x2000, function = 0x3000;
  const auto iteration_cycles = [&](const Bytes& set_up) {
    // caller: set_up (3 bytes); call function; jmp caller.
    const Bytes caller_code = Concat({set_up, {0xe8, 0xf8, 0x0f, 0x00, 0x00}, {0xeb, 0xf6}});
    const Bytes function_code = {0x48, 0x8b, 0x40, 0x08, 0x48, 0x8b, 0x40, 0x08, 0x48,
                                 0x8b, 0x40, 0x08, 0x48, 0x8b, 0x40, 0x08, 0xc3};
    const CodeReader reader = [&](uint64_t a) -> std::span<const uint8_t> {
      if (a >= caller && a < caller + caller_code.size())
        return std::span(caller_code).subspan(static_cast<size_t>(a - caller));
      if (a >= function && a < function + function_code.size())
        return std::span(function_code).subspan(static_cast<size_t>(a - function));
      return {};
    };
    BranchEvent enter, call, ret, jmp;
    enter.to = caller;
    call.from = caller + 3;
    call.to = function;
    call.instructions = 2;
    call.kind = BranchKind::kDirectCall;
    ret.from = function + 16;
    ret.to = caller + 8;
    ret.instructions = 5;
    ret.kind = BranchKind::kReturn;
    jmp.from = caller + 8;
    jmp.to = caller;
    jmp.instructions = 1;
    jmp.kind = BranchKind::kDirectJump;
    std::vector<BranchEvent> window = {enter};
    for (int i = 0; i < 12; ++i) window.insert(window.end(), {call, ret, jmp});
    auto m = Model();
    const std::vector<double> cycles = m->WindowDurations(window, reader);
    EXPECT_EQ(m->stats().blocks_estimated, 3u);
    EXPECT_EQ(m->stats().imputed_blocks, 0u);
    double last_six = 0;  // iterations 7 to 12
    for (size_t i = window.size() - 18; i < window.size(); ++i) last_six += cycles[i];
    return last_six / 6;
  };
  const Bytes kMovRaxRdi = {0x48, 0x89, 0xf8}, kMovRcxRdi = {0x48, 0x89, 0xf9};
  const double fresh = iteration_cycles(kMovRaxRdi);
  const double carried = iteration_cycles(kMovRcxRdi);
  EXPECT_GE(carried, 16.0) << "four loads of 4 cycles, each call after the one before";
  EXPECT_LE(fresh, 4.0) << "three taken branches an iteration, the chains overlapping";
}

TEST(CycleModel, TheCacheIsBoundedAndStartsOverWhenFull) {
  // Four distinct blocks: the same loop read from four starts, each one instruction shorter.
  Bytes body;
  for (int i = 0; i < 4; ++i) body = Concat({body, kAddEaxEcx});
  const Loop loop(body, 4);
  const auto four_blocks = [&](CycleModel* m) {
    for (uint16_t skip = 0; skip < 4; ++skip) {
      BranchEvent before = loop.Back();
      before.to = loop.start + 2u * skip;
      BranchEvent e = loop.Back();
      e.instructions = static_cast<uint16_t>(loop.instructions - skip);
      const std::vector<BranchEvent> window = {before, e};
      EXPECT_GT(m->WindowDurations(window, loop.reader())[1], 0);
    }
    EXPECT_EQ(m->stats().blocks_estimated, 4u);
    EXPECT_EQ(m->stats().imputed_blocks, 0u);
  };
  CycleModelOptions by_blocks;
  by_blocks.max_cached_blocks = 2;
  auto m = CycleModel::Create(by_blocks);
  ASSERT_TRUE(m.ok());
  four_blocks(m->get());
  EXPECT_EQ((*m)->stats().cache_resets, 1u) << "a third block would be over 2";
  // The same bound on the instructions held: blocks of 5, 4, 3 and 2 instructions; 5 + 4 and
  // then 4 + 3 + 2 would be over 8.
  CycleModelOptions by_instructions;
  by_instructions.max_cached_instructions = 8;
  m = CycleModel::Create(by_instructions);
  ASSERT_TRUE(m.ok());
  four_blocks(m->get());
  EXPECT_EQ((*m)->stats().cache_resets, 2u);
}

// A window longer than the cache may hold: the cache starts over in the middle of it, and the
// window is timed whole all the same (the runs timed before the reset are done with theirs).
TEST(CycleModel, AWindowLongerThanTheCacheIsTimedWholeAndTheCacheStaysBounded) {
  CycleModelOptions o;
  o.max_cached_instructions = 8;
  auto m = CycleModel::Create(o);
  ASSERT_TRUE(m.ok());
  Bytes body;
  for (int i = 0; i < 4; ++i) body = Concat({body, kAddEaxEcx});
  const Loop loop(body, 4);
  // The loop's block (5 instructions) entered at its four instructions in turn, over and over.
  std::vector<BranchEvent> window;
  for (int round = 0; round < 3; ++round)
    for (uint16_t skip = 0; skip < 4; ++skip) {
      BranchEvent before = loop.Back();
      before.to = loop.start + 2u * skip;
      BranchEvent e = loop.Back();
      e.instructions = static_cast<uint16_t>(loop.instructions - skip);
      if (window.empty()) window.push_back(before);
      window.back().to = before.to;
      window.push_back(e);
    }
  const std::vector<double> cycles = (*m)->WindowDurations(window, loop.reader());
  for (size_t i = 1; i < window.size(); ++i) EXPECT_GT(cycles[i], 0) << i;
  EXPECT_EQ((*m)->stats().imputed_blocks, 0u);
  EXPECT_GE((*m)->stats().cache_resets, 2u);
  EXPECT_LE((*m)->memory_bytes(), 1024u) << "never more than 8 instructions and one run";
}

TEST(CycleModel, UnknownCodeIsCountedAndGetsItsWindowsRate) {
  auto m = Model();
  ASSERT_TRUE(m);
  const Loop loop(kIndependent, 4);
  std::vector<BranchEvent> window(3, loop.Back());
  // Unreadable: nothing at the block's start. No block of any window timed yet: 1 cycle an
  // instruction.
  const std::vector<double> none =
      m->WindowDurations(window, [](uint64_t) { return std::span<const uint8_t>(); });
  EXPECT_EQ(none, std::vector<double>({0.0, 5.0, 5.0}));
  EXPECT_EQ(m->stats().unreadable_blocks, 1u) << "once: the second run is the cached verdict";
  EXPECT_EQ(m->stats().imputed_blocks, 2u);
  EXPECT_EQ(m->stats().blocks_estimated, 0u);
  // A count that does not end at the branch the event names: the walk and the event disagree.
  window[1].instructions = 3;
  window[2].instructions = 3;
  m->WindowDurations(window, loop.reader());
  EXPECT_EQ(m->stats().unreadable_blocks, 2u);
  EXPECT_EQ(m->stats().blocks_estimated, 0u);
}

TEST(CycleModel, ABlockWithoutAFixedCostIsCountedNotGuessed) {
  auto m = Model();
  ASSERT_TRUE(m);
  // rep movsb takes as long as rcx says: no figure in the table fits it. The window still
  // gives it a duration, at the mean cycles per instruction seen so far (1 with none), and
  // says so.
  const Loop loop(Concat({kAddEaxEcx, kRepMovsb}), 2);
  const std::vector<BranchEvent> window(3, loop.Back());
  const std::vector<double> durations = m->WindowDurations(window, loop.reader());
  EXPECT_EQ(durations[1], 1.0 * loop.instructions);
  EXPECT_EQ(m->stats().rejected_blocks, 1u);
  EXPECT_EQ(m->stats().imputed_blocks, 2u);
  EXPECT_EQ(m->stats().blocks_estimated, 0u);
  // EstimateCode names the instruction.
  auto code = m->EstimateCode(kRepMovsb, 0x1000);
  ASSERT_FALSE(code.ok());
  EXPECT_EQ(code.status().code(), ErrorCode::kUnsupported);
  EXPECT_NE(code.status().message().find("movsb"), std::string::npos) << code.status().message();
}

}  // namespace
}  // namespace pathprof::decoders
