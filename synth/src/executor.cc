#include "pathprof/synth/executor.h"

#include <algorithm>

#include "pathprof/core/pbs.h"

namespace pathprof::synth {
namespace {

constexpr uint32_t kMispredictPenalty = 20;
constexpr uint32_t kHalf = 0x80000000u;

}  // namespace

Executor::Executor(const Program& program, uint64_t seed)
    : program_(&program), rng_(seed ^ 0xe7ec07e5eedull) {
  frames_.push_back({0xffffffffu, 0, 0, 0});
  counters_.resize(program.functions.empty() ? 0 : program.functions[0].loops);
  current_ = program.functions.empty() ? 0 : program.functions[0].entry;
  correlation_threshold_ =
      static_cast<uint32_t>(std::min(program.spec.correlation * 4294967296.0, 4294967295.0));
}

uint64_t Executor::NextRandom() {
  // SplitMix64 (see rng.h): inlined here so the hot loop has no call.
  uint64_t z = (rng_ += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

void Executor::PushFrame(uint32_t function, uint32_t return_block) {
  const Frame& caller = frames_.back();
  uint32_t recursion = function == caller.function ? caller.recursion + 1 : 0;
  uint32_t base = static_cast<uint32_t>(counters_.size());
  frames_.push_back({return_block, function, base, recursion});
  counters_.resize(base + program_->functions[function].loops, LoopCounter{0, 0});
  ++stats_.calls;
  stats_.max_call_depth = std::max<uint64_t>(stats_.max_call_depth, frames_.size() - 1);
}

bool Executor::DecideConditional(const Block& b, bool* mispredicted) {
  bool taken = false, predicted = false;
  switch (b.mode) {
    case CondMode::kBiased:
      taken = Draw32() < b.threshold;
      predicted = b.threshold >= kHalf;
      break;
    case CondMode::kCorrelated:
      // A history-based predictor learns the correlation, so the repeat is predicted.
      predicted = last_outcome_ != b.invert;
      if (Draw32() < correlation_threshold_) {
        taken = predicted;
      } else {
        taken = Draw32() < b.threshold;
        predicted = b.threshold >= kHalf;
      }
      break;
    case CondMode::kLoopLatch: {
      LoopCounter& c = counters_[frames_.back().counter_base + b.loop_slot];
      if (c.iteration == 0) {
        const Loop& loop = program_->loops[b.function][b.loop_slot];
        uint32_t trips = loop.mean_trips;
        if (loop.jitter) trips = trips - loop.jitter + Draw32() % (2 * loop.jitter + 1);
        c.trips = std::max(1u, trips);
      }
      taken = ++c.iteration < c.trips;
      if (!taken) c.iteration = 0;
      predicted = true;
      break;
    }
    case CondMode::kRecursionGuard:
      taken = frames_.back().recursion >= program_->spec.max_recursion || Draw32() < b.threshold;
      predicted = b.threshold >= kHalf;
      break;
  }
  last_outcome_ = taken;
  *mispredicted = taken != predicted;
  return taken;
}

uint32_t Executor::Pick(const Table& t) {
  uint32_t d = Draw32();
  size_t i = 0, last = t.cumulative.size() - 1;
  while (i < last && d >= t.cumulative[i]) ++i;
  return static_cast<uint32_t>(i);
}

void Executor::Run(size_t n, std::vector<BranchEvent>* out) {
  size_t old = out->size();
  out->resize(old + n);
  Run(n, out->data() + old);
}

void Executor::Run(size_t n, BranchEvent* out) {
  if (program_->blocks.empty()) return;
  const Block* blocks = program_->blocks.data();
  const bool synth = program_->spec.synthesize_metrics;
  uint32_t cur = current_;
  uint32_t instructions = pending_instructions_;
  uint32_t stall = pending_stall_;
  for (size_t produced = 0; produced < n;) {
    const Block& b = blocks[cur];
    instructions += b.instructions;
    stall += b.stall_cycles;
    uint32_t next = cur + 1;
    bool taken = true, mispredicted = false;
    switch (b.term) {
      case Terminator::kFallThrough:
        cur = next;
        continue;
      case Terminator::kConditional:
        taken = DecideConditional(b, &mispredicted);
        if (taken) next = b.target;
        break;
      case Terminator::kJump:
        next = b.target;
        break;
      case Terminator::kCall:
        PushFrame(b.target, cur + 1);
        next = program_->functions[b.target].entry;
        break;
      case Terminator::kIndirectCall: {
        const Table& t = program_->tables[b.table];
        uint32_t i = Pick(t);
        mispredicted = i != 0;  // the predictor guesses the most popular target
        PushFrame(t.targets[i], cur + 1);
        next = program_->functions[t.targets[i]].entry;
        break;
      }
      case Terminator::kSwitch: {
        const Table& t = program_->tables[b.table];
        uint32_t i = Pick(t);
        mispredicted = i != 0;
        next = t.targets[i];
        break;
      }
      case Terminator::kReturn:
        if (frames_.size() > 1) {
          next = frames_.back().return_block;
          counters_.resize(frames_.back().counter_base);
          frames_.pop_back();
          ++stats_.returns;
        } else {
          next = program_->functions[0].entry;  // main returned: unreachable by construction
        }
        break;
    }
    BranchEvent& e = out[produced++];
    e.from = b.branch;
    e.to = blocks[next].start;
    e.kind = Program::KindOf(b.term);
    e.taken = taken;
    e.instructions = static_cast<uint16_t>(std::min<uint32_t>(instructions, 0xffff));
    if (synth) {
      e.mispredicted = mispredicted;
      e.cycles = instructions + stall + (mispredicted ? kMispredictPenalty : 0);
    } else {
      e.mispredicted = false;
      e.cycles = 0;
    }
    stats_.instructions += instructions;
    instructions = 0;
    stall = 0;
    cur = next;
  }
  stats_.branches += n;
  current_ = cur;
  pending_instructions_ = instructions;
  pending_stall_ = stall;
}

Result<SyntheticStream> SyntheticStream::Create(const WorkloadSpec& spec, uint32_t pid,
                                                uint32_t tid) {
  auto program = GenerateProgram(spec);
  if (!program.ok()) return program.status();
  SyntheticStream s;
  s.program_ = std::make_unique<Program>(std::move(program).value());
  s.executor_ = std::make_unique<Executor>(*s.program_, spec.seed);
  s.pid_ = pid;
  s.tid_ = tid;
  return s;
}

void SyntheticStream::NextBatch(size_t n, BranchBatch* batch) {
  batch->pid = pid_;
  batch->tid = tid_;
  batch->time_ns = executor_->stats().instructions;
  batch->gap_before = batches_++ == 0;
  batch->window = false;
  batch->events.resize(n);
  executor_->Run(n, batch->events.data());
}

Status WriteSyntheticPbs(const WorkloadSpec& spec, uint64_t branches, const std::string& path,
                         size_t batch_size) {
  if (batch_size == 0) return Error(ErrorCode::kInvalidArgument, "batch size must be positive");
  auto stream = SyntheticStream::Create(spec);
  if (!stream.ok()) return stream.status();
  auto writer = PbsWriter::Create(path);
  if (!writer.ok()) return writer.status();
  PATHPROF_RETURN_IF_ERROR(writer->Write(MetaRecord{"workload", spec.name}));
  PATHPROF_RETURN_IF_ERROR(writer->Write(MetaRecord{"seed", std::to_string(spec.seed)}));
  PATHPROF_RETURN_IF_ERROR(writer->Write(MetaRecord{"branches", std::to_string(branches)}));
  PATHPROF_RETURN_IF_ERROR(writer->Write(MetaRecord{"source", "pathprof synthetic program"}));
  BranchBatch batch;
  for (uint64_t done = 0; done < branches;) {
    size_t n = static_cast<size_t>(std::min<uint64_t>(batch_size, branches - done));
    stream->NextBatch(n, &batch);
    PATHPROF_RETURN_IF_ERROR(writer->Write(batch));
    done += n;
  }
  return writer->Close();
}

}  // namespace pathprof::synth
