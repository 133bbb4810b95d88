// The one table of live sources: which a session starts, what each needs from the host, how its
// branch windows are estimated and where it falls back to when it cannot start. Session::Start
// reads only this table; adding a source is one file (its LiveSource) and one row here
// (docs/pipeline.md, "Live sources").
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "pathprof/collectors/capabilities.h"
#include "pathprof/core/status.h"
#include "pathprof/pipeline/live_source.h"
#include "pathprof/pipeline/profile_store.h"
#include "pathprof/pipeline/session_config.h"

namespace pathprof::pipeline {

using LiveSourceFactory = std::function<std::unique_ptr<LiveSource>()>;

// One branch source.
struct BranchSourceRow {
  collectors::BranchSource kind;  // what --source names it and SessionInfo::source reports
  std::string_view label;         // how the auto reason names it ("PT unavailable: ...")
  // What it needs from the host (a HostCapabilities member); nullptr: nothing.
  const collectors::SourceCapability collectors::HostCapabilities::*needs;
  BranchWindows windows;  // how its targets' stores estimate hot paths
  LiveSourceFactory make;
  // Under auto, where a source that cannot start falls back to (kNone: stacks only).
  collectors::BranchSource fallback;
};

struct SourceTable {
  // The stack source: started with every session whose stack_hz is above 0, whatever the
  // branch source; where it cannot start the session runs without stacks and says why.
  LiveSourceFactory stacks;
  // The branch sources, auto's preference first.
  std::vector<BranchSourceRow> branches;

  const BranchSourceRow* Find(collectors::BranchSource kind) const;
  // Replaces the row of `row.kind`, or adds it last (tests put fakes in; new sources go in
  // DefaultSources()).
  void Set(BranchSourceRow row);
  // The branch source for `choice` on a host with `caps`, and why. An explicit choice the host
  // cannot honour is an error naming what is missing; kAuto takes the first row the host can
  // run, else kNone (stacks only), with the reasons.
  Result<collectors::BranchSource> Choose(SourceChoice choice,
                                          const collectors::HostCapabilities& caps,
                                          std::string* reason) const;
};

// Stacks: the eBPF sampler. Branches: PT > LBR > ptrace bursts; PT and LBR fall back to ptrace
// bursts, ptrace bursts to none.
const SourceTable& DefaultSources();

}  // namespace pathprof::pipeline
