#include "pathprof/synth/program.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "rng.h"

namespace pathprof::synth {
namespace {

constexpr uint64_t kTextStart = 0x401000;
constexpr uint32_t kMaxFunctions = 100000;
constexpr uint32_t kNone = std::numeric_limits<uint32_t>::max();

uint32_t ProbabilityThreshold(double p) {
  p = std::clamp(p, 0.0, 1.0);
  double t = std::round(p * 4294967296.0);
  return t >= 4294967295.0 ? 0xffffffffu : static_cast<uint32_t>(t);
}

// Byte length of the branch instruction that ends a block, as x86-64 encodes it most often.
uint32_t BranchBytes(Terminator t, SplitMix& rng) {
  switch (t) {
    case Terminator::kFallThrough:
      return 0;
    case Terminator::kConditional:
      return rng.Below(2) ? 2 : 6;  // jcc rel8 / rel32
    case Terminator::kJump:
      return rng.Below(2) ? 2 : 5;  // jmp rel8 / rel32
    case Terminator::kCall:
      return 5;  // call rel32
    case Terminator::kIndirectCall:
      return 2 + rng.Below(5);  // call *reg / *mem
    case Terminator::kSwitch:
      return 7;  // jmp *table(,%rax,8)
    case Terminator::kReturn:
      return 1;  // ret
  }
  return 0;
}

enum class Statement { kPlain, kDiamond, kLoop, kCall, kIndirectCall, kSwitch, kRecursion };

class Builder {
 public:
  explicit Builder(const WorkloadSpec& spec) : spec_(spec), rng_(spec.seed ^ 0x5e7d5eedull) {
    p_.spec = spec;
  }

  Program Build() {
    AssignLevels();
    p_.loops.resize(spec_.functions);
    for (fn_ = 0; fn_ < spec_.functions; ++fn_) {
      Function& f = p_.functions[fn_];
      f.entry = static_cast<uint32_t>(p_.blocks.size());
      if (fn_ == 0) {
        BuildMain();
      } else {
        NewBlock(Terminator::kFallThrough);  // prologue
        Region(0, /*top=*/true);
        NewBlock(Terminator::kReturn);
      }
      f.block_count = static_cast<uint32_t>(p_.blocks.size()) - f.entry;
      f.loops = static_cast<uint32_t>(p_.loops[fn_].size());
    }
    Layout();
    return std::move(p_);
  }

 private:
  void AssignLevels() {
    p_.functions.resize(spec_.functions);
    p_.functions[0].name = "main";
    uint32_t levels = spec_.functions > 1 ? std::max(1u, spec_.call_levels) : 0;
    levels = std::min(levels, spec_.functions - 1);
    by_level_.assign(levels + 1, {});
    by_level_[0].push_back(0);
    for (uint32_t i = 1; i < spec_.functions; ++i) {
      // Round-robin first so that every level has a function, then spread evenly.
      uint32_t level = 1 + (i - 1) % levels;
      Function& f = p_.functions[i];
      f.level = level;
      f.name = "fn" + std::to_string(i) + "_L" + std::to_string(level);
      f.recursive = rng_.Uniform() < spec_.recursive_fraction;
      by_level_[level].push_back(i);
    }
  }

  bool HasCallees() const { return p_.functions[fn_].level + 1 < by_level_.size(); }
  uint32_t RandomCallee() {
    const auto& next = by_level_[p_.functions[fn_].level + 1];
    return next[rng_.Below(static_cast<uint32_t>(next.size()))];
  }

  uint32_t NewBlock(Terminator t) {
    Block b;
    b.function = fn_;
    b.term = t;
    // 2-7 instructions of 1-7 bytes (x86-64 averages near 4), the branch included.
    uint32_t body = 1 + rng_.Below(6);
    uint32_t bytes = 0;
    for (uint32_t i = 0; i < body; ++i) bytes += 1 + rng_.Below(4) + rng_.Below(4);
    uint32_t branch_bytes = BranchBytes(t, rng_);
    b.instructions = static_cast<uint16_t>(body + (branch_bytes ? 1 : 0));
    // One block in ten misses in the cache: a deterministic stall when synthesizing cycles.
    if (rng_.Below(10) == 0) b.stall_cycles = static_cast<uint16_t>(20 + rng_.Below(180));
    sizes_.push_back({bytes, branch_bytes});
    p_.blocks.push_back(b);
    return static_cast<uint32_t>(p_.blocks.size() - 1);
  }

  void BuildMain() {
    NewBlock(Terminator::kFallThrough);
    uint32_t header = NewBlock(Terminator::kFallThrough);
    if (spec_.main_dispatch > 0 && HasCallees()) {
      const auto& level1 = by_level_[1];
      uint32_t n = std::min<uint32_t>(spec_.main_dispatch, static_cast<uint32_t>(level1.size()));
      std::vector<uint32_t> targets(level1.begin(), level1.begin() + n);
      uint32_t icall = NewBlock(Terminator::kIndirectCall);
      p_.blocks[icall].table = NewTable(std::move(targets));
      NewBlock(Terminator::kFallThrough);
    }
    Region(0, /*top=*/true);
    uint32_t latch = NewBlock(Terminator::kJump);
    p_.blocks[latch].target = header;
    NewBlock(Terminator::kReturn);  // never reached: main loops forever
  }

  uint32_t NewTable(std::vector<uint32_t> targets) {
    Table t;
    std::vector<double> w(targets.size());
    double sum = 0;
    for (size_t i = 0; i < w.size(); ++i)
      sum += w[i] = std::pow(static_cast<double>(i + 1), -spec_.zipf);
    double acc = 0;
    for (size_t i = 0; i < w.size(); ++i) {
      acc += w[i];
      t.cumulative.push_back(i + 1 == w.size() ? 0xffffffffu : ProbabilityThreshold(acc / sum));
    }
    t.targets = std::move(targets);
    p_.tables.push_back(std::move(t));
    return static_cast<uint32_t>(p_.tables.size() - 1);
  }

  uint32_t AroundMean(uint32_t mean) {
    // Uniform in [mean/2, mean*3/2] (at least 0).
    uint32_t lo = mean / 2, span = mean + 1;
    return lo + rng_.Below(span);
  }

  void Region(uint32_t nesting, bool top) {
    NewBlock(Terminator::kFallThrough);
    std::vector<Statement> stmts;
    uint32_t diamonds = AroundMean(spec_.diamonds);
    for (uint32_t i = 0; i < diamonds; ++i) stmts.push_back(Statement::kDiamond);
    uint32_t others = std::max(1u, AroundMean(spec_.statements));
    for (uint32_t i = 0; i < others; ++i) {
      double u = rng_.Uniform();
      Statement s = Statement::kPlain;
      if ((u -= spec_.loop_prob) < 0) {
        s = nesting < spec_.max_loop_nesting ? Statement::kLoop : Statement::kPlain;
      } else if ((u -= spec_.call_prob) < 0) {
        s = Statement::kCall;
      } else if ((u -= spec_.indirect_call_prob) < 0) {
        s = Statement::kIndirectCall;
      } else if ((u -= spec_.switch_prob) < 0) {
        s = Statement::kSwitch;
      }
      stmts.push_back(s);
    }
    if (top && p_.functions[fn_].recursive) stmts.push_back(Statement::kRecursion);
    for (size_t i = stmts.size(); i > 1; --i)
      std::swap(stmts[i - 1], stmts[rng_.Below(static_cast<uint32_t>(i))]);
    for (Statement s : stmts) Emit(s, nesting);
  }

  void Emit(Statement s, uint32_t nesting) {
    switch (s) {
      case Statement::kPlain:
        NewBlock(Terminator::kFallThrough);
        return;
      case Statement::kDiamond:
        Diamond();
        return;
      case Statement::kLoop:
        LoopStatement(nesting);
        return;
      case Statement::kCall:
        if (!HasCallees()) return Emit(Statement::kPlain, nesting);
        p_.blocks[NewBlock(Terminator::kCall)].target = RandomCallee();
        NewBlock(Terminator::kFallThrough);  // the return address starts a block
        return;
      case Statement::kIndirectCall: {
        if (!HasCallees()) return Emit(Statement::kPlain, nesting);
        std::vector<uint32_t> targets;
        for (uint32_t i = 0; i < std::max(1u, spec_.indirect_targets); ++i)
          targets.push_back(RandomCallee());
        uint32_t b = NewBlock(Terminator::kIndirectCall);
        p_.blocks[b].table = NewTable(std::move(targets));
        NewBlock(Terminator::kFallThrough);
        return;
      }
      case Statement::kSwitch:
        Switch();
        return;
      case Statement::kRecursion:
        Recursion();
        return;
    }
  }

  void SetBias(uint32_t b) {
    double bias = 0.5 * std::pow(rng_.Uniform(), spec_.skew);
    p_.blocks[b].threshold = ProbabilityThreshold(rng_.Below(2) ? bias : 1.0 - bias);
  }

  void Diamond() {
    uint32_t cond = NewBlock(Terminator::kConditional);
    SetBias(cond);
    if (rng_.Uniform() < spec_.correlation) {
      p_.blocks[cond].mode = CondMode::kCorrelated;
      p_.blocks[cond].invert = rng_.Below(2);
    }
    if (rng_.Below(2)) {  // if-then-else: taken goes to the else part
      uint32_t then_end = NewBlock(Terminator::kJump);
      uint32_t else_start = NewBlock(Terminator::kFallThrough);
      uint32_t join = NewBlock(Terminator::kFallThrough);
      p_.blocks[cond].target = else_start;
      p_.blocks[then_end].target = join;
    } else {  // if-then: taken skips the then part
      NewBlock(Terminator::kFallThrough);
      p_.blocks[cond].target = NewBlock(Terminator::kFallThrough);
    }
  }

  void LoopStatement(uint32_t nesting) {
    uint32_t header = NewBlock(Terminator::kFallThrough);
    Region(nesting + 1, false);
    uint32_t latch = NewBlock(Terminator::kConditional);
    Block& b = p_.blocks[latch];
    b.mode = CondMode::kLoopLatch;
    b.target = header;
    b.loop_slot = static_cast<uint32_t>(p_.loops[fn_].size());
    Loop loop;
    loop.mean_trips = std::max(1u, AroundMean(spec_.mean_trip_count));
    // Half the loops run a fixed count (array walks), half vary around it (searches).
    loop.jitter = rng_.Below(2) ? loop.mean_trips / 3 : 0;
    p_.loops[fn_].push_back(loop);
    NewBlock(Terminator::kFallThrough);  // loop exit
  }

  void Switch() {
    uint32_t sw = NewBlock(Terminator::kSwitch);
    std::vector<uint32_t> cases, jumps;
    uint32_t n = std::max(2u, spec_.switch_cases);
    for (uint32_t i = 0; i < n; ++i) {
      cases.push_back(static_cast<uint32_t>(p_.blocks.size()));
      if (i + 1 < n) {
        jumps.push_back(NewBlock(Terminator::kJump));  // break
      } else {
        NewBlock(Terminator::kFallThrough);  // the last case falls into the join
      }
    }
    uint32_t join = NewBlock(Terminator::kFallThrough);
    for (uint32_t j : jumps) p_.blocks[j].target = join;
    // Case popularity follows the Zipf law over a shuffled case order.
    for (size_t i = cases.size(); i > 1; --i)
      std::swap(cases[i - 1], cases[rng_.Below(static_cast<uint32_t>(i))]);
    p_.blocks[sw].table = NewTable(std::move(cases));
  }

  void Recursion() {
    uint32_t guard = NewBlock(Terminator::kConditional);
    Block& g = p_.blocks[guard];
    g.mode = CondMode::kRecursionGuard;
    // Taken = skip the recursive call; recurse 40-70% of the time below the bound.
    g.threshold = ProbabilityThreshold(0.3 + 0.3 * rng_.Uniform());
    p_.blocks[NewBlock(Terminator::kCall)].target = fn_;
    p_.blocks[guard].target = NewBlock(Terminator::kFallThrough);
  }

  void Layout() {
    uint64_t addr = kTextStart;
    p_.text_start = addr;
    uint32_t fn = kNone;
    for (size_t i = 0; i < p_.blocks.size(); ++i) {
      Block& b = p_.blocks[i];
      if (b.function != fn) {
        fn = b.function;
        addr = (addr + 15) & ~uint64_t{15};  // functions are 16-byte aligned
      }
      b.start = addr;
      addr += sizes_[i].body + sizes_[i].branch;
      b.end = addr;
      b.branch = sizes_[i].branch ? b.end - sizes_[i].branch : 0;
    }
    p_.text_end = addr;
  }

  struct Size {
    uint32_t body;
    uint32_t branch;
  };
  const WorkloadSpec& spec_;
  SplitMix rng_;
  Program p_;
  std::vector<std::vector<uint32_t>> by_level_;
  std::vector<Size> sizes_;
  uint32_t fn_ = 0;
};

Status Validate(const WorkloadSpec& s) {
  auto bad = [&](const std::string& what) {
    return Error(ErrorCode::kInvalidArgument, "synthetic workload '" + s.name + "': " + what);
  };
  if (s.functions < 1 || s.functions > kMaxFunctions)
    return bad("functions must be in [1, " + std::to_string(kMaxFunctions) + "]");
  for (double p : {s.call_prob, s.indirect_call_prob, s.recursive_fraction, s.loop_prob,
                   s.switch_prob, s.correlation})
    if (!(p >= 0.0 && p <= 1.0)) return bad("probabilities must be in [0, 1]");
  if (s.loop_prob + s.call_prob + s.indirect_call_prob + s.switch_prob > 1.0)
    return bad("loop, call, indirect call and switch probabilities must add up to at most 1");
  if (!(s.skew >= 0.0 && s.skew <= 64.0)) return bad("skew must be in [0, 64]");
  if (!(s.zipf >= 0.0 && s.zipf <= 16.0)) return bad("zipf must be in [0, 16]");
  if (s.statements > 64 || s.diamonds > 64) return bad("statements and diamonds must be <= 64");
  if (s.max_loop_nesting > 8) return bad("max_loop_nesting must be <= 8");
  if (s.mean_trip_count > 1000000) return bad("mean_trip_count must be <= 1000000");
  if (s.indirect_targets > 1024 || s.switch_cases > 1024 || s.main_dispatch > kMaxFunctions)
    return bad("tables must have at most 1024 entries");
  if (s.call_levels > 64 || s.max_recursion > 1024)
    return bad("call_levels <= 64, max_recursion <= 1024");
  return Status::Ok();
}

}  // namespace

int64_t Program::BlockAt(uint64_t address) const {
  auto it = std::upper_bound(blocks.begin(), blocks.end(), address,
                             [](uint64_t a, const Block& b) { return a < b.start; });
  if (it == blocks.begin()) return -1;
  --it;
  if (address >= it->end) return -1;
  return it - blocks.begin();
}

BranchKind Program::KindOf(Terminator t) {
  switch (t) {
    case Terminator::kConditional:
      return BranchKind::kConditional;
    case Terminator::kJump:
      return BranchKind::kDirectJump;
    case Terminator::kCall:
      return BranchKind::kDirectCall;
    case Terminator::kIndirectCall:
      return BranchKind::kIndirectCall;
    case Terminator::kSwitch:
      return BranchKind::kIndirectJump;
    case Terminator::kReturn:
      return BranchKind::kReturn;
    case Terminator::kFallThrough:
      break;
  }
  return BranchKind::kUnknown;
}

Result<Program> GenerateProgram(const WorkloadSpec& spec) {
  PATHPROF_RETURN_IF_ERROR(Validate(spec));
  return Builder(spec).Build();
}

}  // namespace pathprof::synth
