#include "pathprof/decoders/cycle_model.h"

#include <Zydis/Zydis.h>

#include <cmath>
#include <limits>

#include "block_dataflow.h"
#include "loop_cycles.h"
#include "zydis_decoder.h"

namespace pathprof::decoders {
namespace {

constexpr double kUnknown = std::numeric_limits<double>::quiet_NaN();

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

// The run (from `start`) ends at a taken branch back to its own start: a loop of itself.
bool LoopsBack(uint64_t start, std::span<const BranchEvent> run) {
  return run.back().taken && run.back().to == start;
}

CycleEstimate ToEstimate(const LoopCycles& c) {
  return CycleEstimate{c.cycles, c.recurrence, c.front_end, c.units, c.busiest, c.through_memory};
}

}  // namespace

Result<std::unique_ptr<CycleModel>> CycleModel::Create(const CycleModelOptions& options) {
  if (options.max_block_instructions == 0 || options.max_cached_blocks == 0)
    return Error(ErrorCode::kInvalidArgument,
                 "cycle model: max_block_instructions and max_cached_blocks must be positive");
  return std::unique_ptr<CycleModel>(new CycleModel(options));
}

CycleModel::~CycleModel() = default;

double CycleModel::EstimateRun(uint64_t start, std::span<const BranchEvent> run,
                               const CodeReader& code) {
  uint32_t total = 0;
  for (const BranchEvent& e : run) total += e.instructions;
  if (total > options_.max_block_instructions) {
    ++stats_.unreadable_blocks;
    return kUnknown;
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
        return kUnknown;
      }
      rejected |= d.step == Step::kNoFixedCost;  // keep walking: unreadable wins if both
      address += d.length;
    }
  }
  if (rejected) {
    ++stats_.rejected_blocks;
    return kUnknown;
  }
  flow.LinkStoresToLoads();
  ++stats_.blocks_estimated;
  // Ending at a taken branch, the run pays the front end's one taken branch a cycle.
  const LoopCycles c = TimeLoop(flow.ops(), /*loops_back=*/run.back().taken);
  // Only a run that branches back to its own start is a loop whose dependency chain carries
  // from one run to the next. Any other run's next execution takes its inputs from the code
  // between, so a chain through it (a pointer it loads and overwrites, as a function that
  // reloads a field into the register it came in) is no recurrence: timed as a loop it cost
  // zstd -19's cost function 10 cycles where its throughput is 1, and the windows holding it
  // half the weight they should have had (docs/profiles.md, "Only loops carry a chain").
  return LoopsBack(start, run) ? c.cycles : std::max(c.front_end, c.units);
}

std::vector<double> CycleModel::BlockCycles(std::span<const BranchEvent> events,
                                            const CodeReader& code) {
  std::vector<double> cycles(events.size(), 0.0);
  if (cache_.size() > options_.max_cached_blocks) {
    cache_.clear();
    ++stats_.cache_resets;
  }
  for (size_t first = 1; first < events.size();) {
    // The run of blocks from here through the next taken branch: a not-taken branch falls
    // through into the next block, and the core runs the two as one stream of instructions
    // (hot() of examples/hotloop: 6 instructions to a not-taken je, then test and a taken jne,
    // 1 cycle together on the reference host, not one each).
    size_t last = first;
    while (last + 1 < events.size() && !events[last].taken) ++last;
    const std::span<const BranchEvent> run = events.subspan(first, last - first + 1);
    const uint64_t start = events[first - 1].to;
    first = last + 1;
    uint32_t total = 0;
    bool counted = true;
    for (const BranchEvent& e : run) {
      total += e.instructions;
      counted &= e.instructions > 0;
    }
    if (!counted) continue;  // an event without its instruction count: no duration
    const RunKey key{start, total, run.back().taken, LoopsBack(start, run)};
    double c;
    if (auto it = cache_.find(key); it != cache_.end()) {
      ++stats_.cache_hits;
      c = it->second;
    } else {
      c = EstimateRun(start, run, code);
      cache_.emplace(key, c);
    }
    if (std::isnan(c)) continue;
    // Shared by instructions: the estimator uses sums of durations between taken branches.
    for (size_t i = 0; i < run.size(); ++i)
      cycles[last + 1 - run.size() + i] = c * run[i].instructions / total;
  }
  return cycles;
}

std::vector<double> CycleModel::WindowDurations(std::span<const BranchEvent> events,
                                                const CodeReader& code) {
  std::vector<double> cycles = BlockCycles(events, code);
  double known_cycles = 0, known_instructions = 0;
  size_t missing = 0;
  for (size_t i = 1; i < events.size(); ++i) {
    if (events[i].instructions == 0) continue;
    if (cycles[i] > 0) {
      known_cycles += cycles[i];
      known_instructions += events[i].instructions;
    } else {
      ++missing;
    }
  }
  cycles_seen_ += known_cycles;
  instructions_seen_ += known_instructions;
  if (missing == 0) return cycles;
  const double cpi = known_instructions > 0   ? known_cycles / known_instructions
                     : instructions_seen_ > 0 ? cycles_seen_ / instructions_seen_
                                              : 1.0;
  for (size_t i = 1; i < events.size(); ++i) {
    if (events[i].instructions == 0 || cycles[i] > 0) continue;
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
