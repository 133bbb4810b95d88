// Where `pathctl sim` gets its branches: a bundled synthetic workload (with knob overrides) or a
// recorded .pbs stream, cut to --branches. Shared by the path engine run (cmd_sim.cc) and the
// stream profiles (sim_stream_profiles.cc).
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <variant>

#include "pathctl/command.h"
#include "pathprof/core/pbs.h"
#include "pathprof/synth/executor.h"
#include "pathprof/synth/workload.h"

namespace pathctl {

inline constexpr size_t kChunk = 1 << 20;  // events per batch pulled from a synthetic stream

// Overrides of a bundled workload's knobs (pathprof::synth::WorkloadSpec), to explore harder or
// easier variants: --functions N --diamonds N --skew X --correlation X --zipf X --call-levels N.
inline void ApplyKnobs(Args& args, pathprof::synth::WorkloadSpec* s) {
  // A knob not given keeps the workload's own value.
  if (args.Has("functions")) s->functions = static_cast<uint32_t>(args.Int("functions"));
  if (args.Has("diamonds")) s->diamonds = static_cast<uint32_t>(args.Int("diamonds"));
  if (args.Has("call-levels")) s->call_levels = static_cast<uint32_t>(args.Int("call-levels"));
  if (args.Has("skew")) s->skew = args.Double("skew");
  if (args.Has("correlation")) s->correlation = args.Double("correlation");
  if (args.Has("zipf")) s->zipf = args.Double("zipf");
}

// Where the branches come from: a synthetic program or a .pbs file, cut to at most `limit`.
class Source {
 public:
  static pathprof::Result<std::unique_ptr<Source>> Open(Args& args, std::string* description) {
    auto s = std::unique_ptr<Source>(new Source);
    s->limit_ = static_cast<uint64_t>(args.Int("branches"));
    std::string pbs = args.Get("pbs");
    std::string name = args.Get("workload", "branchy");
    auto seed = static_cast<uint64_t>(args.Int("seed"));
    if (!pbs.empty()) {
      if (args.Has("workload"))
        return pathprof::Error(pathprof::ErrorCode::kInvalidArgument,
                               "give either --workload or --pbs, not both");
      if (!args.Has("branches")) s->limit_ = 0;  // a file: all of it unless told otherwise
      auto reader = pathprof::PbsReader::Open(pbs);
      if (!reader.ok()) return reader.status();
      s->reader_ = std::make_unique<pathprof::PbsReader>(std::move(reader).value());
      *description = "pbs " + pbs;
      return s;
    }
    auto spec = pathprof::synth::BundledWorkload(name, seed);
    if (!spec.ok()) return spec.status();
    ApplyKnobs(args, &spec.value());
    auto stream = pathprof::synth::SyntheticStream::Create(*spec);
    if (!stream.ok()) return stream.status();
    s->stream_ = std::make_unique<pathprof::synth::SyntheticStream>(std::move(stream).value());
    *description = "workload " + name + " seed " + std::to_string(spec->seed);
    return s;
  }

  // The next batch, or false at the end.
  pathprof::Result<bool> Next(pathprof::BranchBatch* batch) {
    if (limit_ && delivered_ >= limit_) return false;
    if (stream_) {
      size_t n = static_cast<size_t>(std::min<uint64_t>(kChunk, limit_ - delivered_));
      stream_->NextBatch(n, batch);
    } else {
      for (;;) {
        pathprof::PbsRecord rec;
        auto more = reader_->Next(&rec);
        if (!more.ok()) return more.status();
        if (!*more) return false;
        if (auto* b = std::get_if<pathprof::BranchBatch>(&rec)) {
          *batch = std::move(*b);
          break;
        }
      }
      if (limit_ && batch->events.size() > limit_ - delivered_)
        batch->events.resize(limit_ - delivered_);
    }
    delivered_ += batch->events.size();
    return true;
  }

 private:
  Source() = default;
  uint64_t limit_ = 0;
  uint64_t delivered_ = 0;
  std::unique_ptr<pathprof::synth::SyntheticStream> stream_;
  std::unique_ptr<pathprof::PbsReader> reader_;
};

}  // namespace pathctl
