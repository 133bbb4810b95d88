// The table of live sources (source_table.h) and the choice of a branch source from it.
#include "pathprof/pipeline/source_table.h"

#include <algorithm>

#include "pathprof/pipeline/session.h"

namespace pathprof::pipeline {

// Each source's factory, defined in its own file (live_source_*.cc).
std::unique_ptr<LiveSource> MakeStackSource();
std::unique_ptr<LiveSource> MakePtraceBurstSource();
std::unique_ptr<LiveSource> MakeLbrSource();
std::unique_ptr<LiveSource> MakePtSource();
std::unique_ptr<LiveSource> MakeSnapshotSource();
std::unique_ptr<LiveSource> MakeHybridSource();

namespace {

using collectors::BranchSource;
using collectors::HostCapabilities;

std::string ShortDetail(const std::string& detail) {
  return detail.size() > 160 ? detail.substr(0, 157) + "..." : detail;
}

bool Available(const BranchSourceRow& row, const HostCapabilities& caps) {
  return row.needs == nullptr || (caps.*row.needs).available;
}

}  // namespace

const SourceTable& DefaultSources() {
  static const SourceTable table{
      MakeStackSource,
      {
          // kind, label, needs, windows, factory, fallback
          {BranchSource::kIntelPt, "PT", &HostCapabilities::intel_pt, BranchWindows::kNone,
           MakePtSource, BranchSource::kPtraceBursts},
          {BranchSource::kLbr, "LBR", &HostCapabilities::lbr, BranchWindows::kTakenBranches,
           MakeLbrSource, BranchSource::kPtraceBursts},
          // Where ptrace cannot attach (another tracer holds the target, Yama), windows come
          // from the sampler's snapshots instead.
          {BranchSource::kPtraceBursts, "ptrace", &HostCapabilities::ptrace, BranchWindows::kTime,
           MakePtraceBurstSource, BranchSource::kSnapshot},
          {BranchSource::kSnapshot, "snapshot", &HostCapabilities::snapshot,
           BranchWindows::kTimeRagged, MakeSnapshotSource, BranchSource::kNone},
          // Never auto's choice (snapshot comes first): asked for, it stops the threads of the
          // processes whose snapshot windows end too early. Its stores start as the snapshot
          // source's; each process's is re-weighted when judged (live_source_hybrid.cc).
          {BranchSource::kHybrid, "hybrid", &HostCapabilities::snapshot, BranchWindows::kTimeRagged,
           MakeHybridSource, BranchSource::kNone},
      }};
  return table;
}

const BranchSourceRow* SourceTable::Find(BranchSource kind) const {
  auto it = std::find_if(branches.begin(), branches.end(),
                         [&](const BranchSourceRow& row) { return row.kind == kind; });
  return it == branches.end() ? nullptr : &*it;
}

void SourceTable::Set(BranchSourceRow row) {
  auto it = std::find_if(branches.begin(), branches.end(),
                         [&](const BranchSourceRow& r) { return r.kind == row.kind; });
  if (it != branches.end())
    *it = std::move(row);
  else
    branches.push_back(std::move(row));
}

Result<BranchSource> SourceTable::Choose(SourceChoice choice, const HostCapabilities& caps,
                                         std::string* reason) const {
  if (choice == SourceChoice::kNone) {
    *reason = "asked for (stacks only)";
    return BranchSource::kNone;
  }
  if (choice != SourceChoice::kAuto) {
    const BranchSource kind = SecondOf(kSourceChoiceSources, choice).value_or(BranchSource::kNone);
    const std::string name(collectors::BranchSourceName(kind));
    const BranchSourceRow* row = Find(kind);
    if (row == nullptr)
      return Status(ErrorCode::kUnavailable, name + " was asked for but this build has no such " +
                                                 "source (use --source auto)");
    if (!Available(*row, caps))
      return Status(ErrorCode::kUnavailable, name + " was asked for but is not available here: " +
                                                 (caps.*row->needs).detail +
                                                 " (use --source auto to take the best available)");
    *reason = "asked for";
    return kind;
  }
  // Auto: the first row the host can run; each one passed over says why.
  std::string why;
  for (const BranchSourceRow& row : branches) {
    if (Available(row, caps)) {
      *reason = "auto (best available)" + why;
      return row.kind;
    }
    why += "; " + std::string(row.label) + " unavailable: " + ShortDetail((caps.*row.needs).detail);
  }
  *reason = "auto (best available)" + why;
  return BranchSource::kNone;
}

Result<BranchSource> ChooseBranchSource(SourceChoice choice, const HostCapabilities& caps,
                                        std::string* reason) {
  return DefaultSources().Choose(choice, caps, reason);
}

}  // namespace pathprof::pipeline
