// One profiling session: a set of target processes, the live sources that watch them (eBPF
// stacks, one branch source; live_source.h, source_table.h), the pipeline threads and one
// ProfileStore per process. Maps onto pathprof.v1.Session and answers every per-session query of
// the service by merging its stores.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "pathprof/collectors/capabilities.h"
#include "pathprof/core/status.h"
#include "pathprof/decoders/branch_profile_export.h"
#include "pathprof/pipeline/profile_store.h"
#include "pathprof/pipeline/results.h"
#include "pathprof/pipeline/session_config.h"
#include "pathprof/pipeline/source_table.h"
#include "pathprof/pipeline/symbol_service.h"

namespace pathprof::pipeline {

enum class SessionState : uint8_t {
  kRunning = 0,
  kStopped,       // stopped by a client or its duration ended
  kTargetExited,  // every target exited; profiles kept for the retention period
  kFailed,        // see SessionInfo::error
};
// Their words (printouts, the daemon's metrics); api/ maps them to pathprof.v1.SessionState.
inline constexpr EnumWords<SessionState, 4> kSessionStateWords{{
    {SessionState::kRunning, "running"},
    {SessionState::kStopped, "stopped"},
    {SessionState::kTargetExited, "target-exited"},
    {SessionState::kFailed, "failed"},
}};
std::string_view SessionStateName(SessionState s);

struct SessionInfo {
  std::string id;
  std::vector<uint32_t> pids;
  SessionState state = SessionState::kRunning;
  collectors::BranchSource source = collectors::BranchSource::kNone;  // what is in use
  // Why `source`, without its word (every reader prints that beside it), and the step mode of
  // ptrace bursts: e.g. "auto (best available); PT unavailable: ...; LBR unavailable: ...; step
  // mode emulate (auto: the step probe's choice, see pathctl caps)".
  std::string source_reason;
  bool stacks = false;        // eBPF stack sampling is running
  std::string stacks_reason;  // why not, when it is not
  int64_t started_unix_ms = 0;
  int64_t stopped_unix_ms = 0;  // 0 while running
  std::string error;
  uint32_t owner_uid = 0;
  SessionConfig config;
};

// Picks the branch source for `choice` on a host with `caps` from DefaultSources(), and says why
// (SourceTable::Choose). An explicit choice the host cannot honour is an error naming what is
// missing; kAuto takes PT > LBR > ptrace and falls back to kNone (stacks only) with the reasons.
Result<collectors::BranchSource> ChooseBranchSource(SourceChoice choice,
                                                    const collectors::HostCapabilities& caps,
                                                    std::string* reason);

class Session {
 public:
  // Validates the config, checks every pid exists, starts the sources `table` names and the
  // pipeline threads. A branch source that fails to start (e.g. the process is already traced)
  // fails the session when it was asked for explicitly; under kAuto the table's fallback is
  // taken and the failure is reported in source_reason.
  static Result<std::unique_ptr<Session>> Start(std::string id, SessionConfig config,
                                                const collectors::HostCapabilities& caps,
                                                std::shared_ptr<SymbolService> symbols,
                                                const SourceTable& table = DefaultSources());
  // A session over what a recording held (pipeline::AnalyzeFile's stores): no collectors, ended
  // from the start (kStopped), one store per recorded process. The daemon's ImportRecording and
  // pathctl's queries of a recording (analyze --query) both answer from one, so a query of the
  // same recording gives the same answer either way.
  static std::unique_ptr<Session> FromRecording(
      std::string id, SessionConfig config, std::shared_ptr<SymbolService> symbols,
      std::map<uint32_t, std::unique_ptr<ProfileStore>> stores, std::string source_reason);
  ~Session();  // Stop()
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  const std::string& id() const;
  SessionInfo Info() const;

  // Detaches every collector, applies what is queued, keeps the profiles. Idempotent.
  void Stop();
  // A non-admin's session (config.confine_to_uid): reads its targets' credentials now and, if
  // one holds more than its requester, stops collecting (within the control loop's 50 ms) and
  // says why in SessionInfo::error. The daemon calls it before answering every query.
  void RecheckConfinement();
  // Process `pid` has exec'd a new image (a tracer reports it; a caller that started the
  // session on a forked child before its exec says so): its mappings and identity are re-read.
  // A held process (HoldUntilExec) records from `exec_monotonic_ns` (0: now) on.
  void NoteExec(uint32_t pid, uint64_t exec_monotonic_ns = 0);
  // Process `pid` is a command forked and held before its exec: nothing of it is recorded
  // until NoteExec (ProfileStore::HoldUntilExec says why).
  void HoldUntilExec(uint32_t pid);
  // Blocks until the session is no longer running (duration over, every target exited, stopped)
  // or `timeout_ms` passes; returns true when it ended.
  bool WaitEnded(int timeout_ms);
  // True once stopped/exited and the retention period has passed (the manager drops it then).
  bool Expired(int64_t now_unix_ms) const;

  // Per-process stores (including exited targets within retention).
  std::vector<std::shared_ptr<const ProfileStore>> Stores() const;
  std::shared_ptr<const ProfileStore> Store(uint32_t pid) const;

  // Merged over the session's processes (each entry carries its pid; shares are of the total).
  HotPathsResult HotPaths(const HotPathsQuery& query) const;
  HotSubpathsResult HotSubpaths(const HotSubpathsQuery& query) const;
  CallingContextTree Cct(const CctQuery& query) const;
  HotCallPairsResult HotCallPairs(uint32_t top_k) const;
  HotMethodsResult HotMethods(uint32_t top_k) const;
  std::vector<TargetStats> Stats() const;

  // Saves the current path set as a named baseline; returns how many paths it holds.
  Result<uint64_t> SaveBaseline(const std::string& name);
  // Paths seen now that the named baseline never saw (kNotFound for an unknown name).
  Result<ResidualPathsResult> ResidualPaths(const std::string& baseline, uint32_t top_k) const;

  // A gzip-compressed pprof profile.proto of the stack samples (and path counts as a second
  // sample type when `include_paths`). Without `kernel_addresses`, kernel stacks become one
  // "[kernel]" frame with no address (kernel_frames.h).
  Result<std::string> ExportPprof(bool include_paths, bool kernel_addresses = true) const;

  // The newest branch windows of one process (`pid`) or of all (0), as an optimizer profile
  // (decoders/branch_profile_export.h). For fdata without a binary: the first target's
  // executable. kUnavailable when no window has arrived yet.
  struct BranchProfile {
    std::string data;
    decoders::BranchProfileSummary summary;
  };
  Result<BranchProfile> ExportBranchProfile(decoders::BranchProfileRequest request,
                                            uint32_t pid) const;

  // Every process's newest branch windows as one recording (.pbs contents), at most
  // `max_events` branches in all, for continuous mode's archive: where the processes hold more,
  // each keeps its newest windows in proportion to the branches it holds (the share it had of the
  // session's windows). Only the images those windows touch go with them, each with its build-id
  // read now (with the session's image access), while the files are still mapped. Meta records
  // say how many windows were kept, how many the stores held (each keeps its newest
  // SessionConfig::export_branch_events branches) and how many the session took, and each
  // process's executable (`executable.PID`).
  struct ArchivedBranches {
    PbsContents recording;
    uint64_t windows_kept = 0;   // in `recording`
    uint64_t windows_held = 0;   // in the stores' buffers
    uint64_t windows_taken = 0;  // by the session (TargetStats::windows)
  };
  ArchivedBranches BranchesForArchive(uint64_t max_events) const;

 private:
  struct Impl;
  explicit Session(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace pathprof::pipeline
