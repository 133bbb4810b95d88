#include "pathprof/decoders/cycle_model.h"

#include <Zydis/Zydis.h>

#include "block_dataflow.h"
#include "loop_cycles.h"
#include "window_timer.h"
#include "zydis_decoder.h"

namespace pathprof::decoders {
namespace {

enum class Step { kAdded, kUnreadable, kNoFixedCost };

struct Decoded {
  Step step = Step::kUnreadable;
  uint8_t length = 0;
  bool is_branch = false;
  ZydisMnemonic mnemonic = ZYDIS_MNEMONIC_INVALID;
};

// Decodes the instruction at the start of `bytes` (at `address`) into `flow`.
Decoded AddInstruction(std::span<const uint8_t> bytes, uint64_t address, BlockDataflow* flow) {
  Decoded d;
  if (bytes.empty()) return d;
  ZydisDecodedInstruction insn;
  ZydisDecodedOperand operands[ZYDIS_MAX_OPERAND_COUNT];
  if (!ZYAN_SUCCESS(
          ZydisDecoderDecodeFull(&ZydisDecoder64(), bytes.data(), bytes.size(), &insn, operands)))
    return d;
  d.length = insn.length;
  d.mnemonic = insn.mnemonic;
  d.is_branch = insn.meta.branch_type != ZYDIS_BRANCH_TYPE_NONE;
  d.step = flow->Add(insn, operands, address) ? Step::kAdded : Step::kNoFixedCost;
  return d;
}

CycleEstimate ToEstimate(const LoopCycles& c) {
  return CycleEstimate{c.cycles, c.recurrence, c.front_end, c.units, c.busiest, c.through_memory};
}

}  // namespace

Result<std::unique_ptr<CycleModel>> CycleModel::Create(const CycleModelOptions& options) {
  if (options.max_block_instructions == 0 || options.max_cached_blocks == 0 ||
      options.max_cached_instructions == 0)
    return Error(ErrorCode::kInvalidArgument,
                 "cycle model: max_block_instructions, max_cached_blocks and "
                 "max_cached_instructions must be positive");
  return std::unique_ptr<CycleModel>(new CycleModel(options));
}

CycleModel::CycleModel(const CycleModelOptions& options)
    : options_(options), runs_(std::make_unique<TimedRuns>()) {}

CycleModel::~CycleModel() = default;

CycleModel::CachedRun CycleModel::DecodeRun(uint64_t start, std::span<const BranchEvent> run,
                                            const CodeReader& code) {
  uint32_t total = 0;
  for (const BranchEvent& e : run) total += e.instructions;
  if (total > options_.max_block_instructions) {
    ++stats_.unreadable_blocks;
    return {};
  }
  BlockDataflow flow;
  bool rejected = false;
  uint64_t address = start;
  for (const BranchEvent& e : run) {
    for (uint32_t i = 0; i < e.instructions; ++i) {
      const Decoded d = AddInstruction(code(address), address, &flow);
      // Each block must end at the branch its event names; otherwise the count and the code
      // disagree (code changed, or an instruction was misread) and the block is not this one.
      if (d.step == Step::kUnreadable || (i + 1 == e.instructions && address != e.from)) {
        ++stats_.unreadable_blocks;
        return {};
      }
      rejected |= d.step == Step::kNoFixedCost;  // keep walking: unreadable wins if both
      address += d.length;
    }
  }
  if (rejected) {
    ++stats_.rejected_blocks;
    return {};
  }
  flow.LinkStoresToLoads();
  ++stats_.blocks_estimated;
  const TimedRuns::Run added = runs_->Add(flow.ops());
  return {added.first_op, added.ops, true};
}

std::vector<double> CycleModel::WindowDurations(std::span<const BranchEvent> events,
                                                const CodeReader& code) {
  std::vector<double> cycles(events.size(), 0.0);
  WindowTimer timer(*runs_);
  timer.Start();
  double known_cycles = 0, known_instructions = 0;
  size_t missing = 0;
  for (size_t first = 1; first < events.size();) {
    // The run of blocks from here through the next taken branch: a not-taken branch falls
    // through into the next block, and the core runs the two as one stream of instructions
    // (hot() of examples/hotloop: 6 instructions to a not-taken je, then test and a taken jne,
    // 1 cycle together on the reference host, not one each).
    size_t last = first;
    while (last + 1 < events.size() && !events[last].taken) ++last;
    const std::span<const BranchEvent> run = events.subspan(first, last - first + 1);
    const uint64_t start = events[first - 1].to;
    const size_t run_first = first;
    first = last + 1;
    uint32_t total = 0;
    bool counted = true;
    for (const BranchEvent& e : run) {
      total += e.instructions;
      counted &= e.instructions > 0;
    }
    if (!counted) continue;  // an event without its instruction count: no duration
    const RunKey key{start, total};
    CachedRun cached;
    if (auto it = cache_.find(key); it != cache_.end()) {
      ++stats_.cache_hits;
      cached = it->second;
    } else {
      // Full: start over before this run is added, even mid-window (the runs timed so far are
      // done with their place in the cache), so that no window, however long, grows it past
      // its bounds by more than one run.
      if (cache_.size() >= options_.max_cached_blocks ||
          runs_->instructions() + total > options_.max_cached_instructions) {
        cache_.clear();
        runs_->Clear();
        ++stats_.cache_resets;
      }
      cached = DecodeRun(start, run, code);
      cache_.emplace(key, cached);
    }
    if (!cached.known) {
      missing += run.size();
      for (size_t i = 0; i < run.size(); ++i) cycles[run_first + i] = -1;  // imputed below
      continue;
    }
    const double c = timer.Add({cached.first_op, cached.ops}, run.back().taken);
    known_cycles += c;
    known_instructions += total;
    // Shared by instructions: the estimator uses sums of durations between taken branches.
    for (size_t i = 0; i < run.size(); ++i) cycles[run_first + i] = c * run[i].instructions / total;
  }
  cycles_seen_ += known_cycles;
  instructions_seen_ += known_instructions;
  // The map's nodes: the key and value, two pointers and the bucket's.
  memory_bytes_.store(
      runs_->memory_bytes() + cache_.size() * (sizeof(RunKey) + sizeof(CachedRun) + 24),
      std::memory_order_relaxed);
  if (missing == 0) return cycles;
  const double cpi = known_instructions > 0   ? known_cycles / known_instructions
                     : instructions_seen_ > 0 ? cycles_seen_ / instructions_seen_
                                              : 1.0;
  for (size_t i = 1; i < events.size(); ++i) {
    if (cycles[i] >= 0) continue;
    cycles[i] = cpi * events[i].instructions;
    ++stats_.imputed_blocks;
  }
  return cycles;
}

Result<CycleEstimate> CycleModel::ExplainCode(std::span<const uint8_t> code,
                                              uint64_t address) const {
  if (code.empty()) return Error(ErrorCode::kInvalidArgument, "cycle model: no code");
  BlockDataflow flow;
  bool loops_back = false;
  uint32_t count = 0;
  for (size_t at = 0; at < code.size(); ++count) {
    if (count == options_.max_block_instructions)
      return Error(ErrorCode::kInvalidArgument,
                   "cycle model: more than " + std::to_string(count) + " instructions");
    const Decoded d = AddInstruction(code.subspan(at), address + at, &flow);
    if (d.step == Step::kUnreadable)
      return Error(ErrorCode::kCorrupt,
                   "cycle model: undecodable instruction at offset " + std::to_string(at));
    if (d.step == Step::kNoFixedCost)
      return Error(ErrorCode::kUnsupported,
                   std::string("cycle model: '") + ZydisMnemonicGetString(d.mnemonic) +
                       "' at offset " + std::to_string(at) + " has no fixed cost");
    at += d.length;
    loops_back = d.is_branch && at == code.size();
  }
  flow.LinkStoresToLoads();
  return ToEstimate(TimeLoop(flow.ops(), loops_back));
}

Result<double> CycleModel::EstimateCode(std::span<const uint8_t> code, uint64_t address) const {
  PATHPROF_ASSIGN_OR_RETURN(CycleEstimate e, ExplainCode(code, address));
  return e.cycles;
}

}  // namespace pathprof::decoders
