// Continuous mode: a thread that, every window_s, profiles each configured series (a systemd
// unit, a cgroup, an executable name, or every process) with a low-rate session of its own,
// exports the window as pprof with the series' labels, stores it in a fleet::ProfileArchive
// (bounded disk) and hands it to the configured fleet::Pushers. Config: ContinuousConfig.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "pathprof/core/status.h"
#include "pathprof/daemon/config.h"
#include "pathprof/daemon/host_processes.h"
#include "pathprof/fleet/archive.h"
#include "pathprof/fleet/push_queue.h"
#include "pathprof/fleet/window.h"
#include "pathprof/pipeline/process_match.h"
#include "pathprof/pipeline/session_manager.h"
#include "pathprof/v1/profiler.pb.h"

namespace pathprof::daemon {

// One selector of the config and what it resolved to this period.
struct Series {
  pipeline::ProcessMatch match;  // the selector (at most one field set; none: every process)
  std::vector<uint32_t> pids;    // what it matched at the window's start
  fleet::WindowIdentity identity;
};

// Resolves the selectors over `processes` (every process when there is none) with
// pipeline::ProcessMatch's rule; the identity's executable and build_id are filled when every
// process of the series runs the same executable.
std::vector<Series> ResolveSeries(const ContinuousConfig& config,
                                  const std::vector<ProcessEntry>& processes,
                                  const std::string& host);

class ContinuousProfiler {
 public:
  // Opens the archive and the push sinks; starts nothing yet. `images` says how images are read
  // and where they are held (the daemon passes its sessions' cache, so both share one bound),
  // `where` where libdw reads them (the daemon: its sandboxed helper).
  static Result<std::unique_ptr<ContinuousProfiler>> Create(
      const ContinuousConfig& config, const collectors::HostCapabilities& caps,
      const decoders::ImageStoreOptions& images = {},
      pipeline::SymbolizeIn where = pipeline::SymbolizeIn::kThisProcess);
  ~ContinuousProfiler();  // Stop()

  void Start();
  // Ends the current window early (it is still exported and archived), then drains the pushers
  // for up to 2 s. Idempotent.
  void Stop();

  // For GetStats and /metrics. Without `details` (a non-admin's GetStats, /metrics) each sink
  // is named by its kind alone ("pyroscope", not its URL) and no error text is given: the
  // backends' addresses and what they answered are the admin's.
  void FillStats(v1::ContinuousStats* out, bool details) const;

 private:
  ContinuousProfiler() = default;
  void Run();
  void Window(int64_t start_ns);

  ContinuousConfig config_;
  collectors::HostCapabilities caps_;
  std::shared_ptr<pipeline::SymbolService> symbols_;
  // Source snapshot: one budget of windows for the host, shared by every series' session.
  std::shared_ptr<collectors::WindowBudget> window_budget_;
  double snapshot_hz_ = 1;  // the snapshot source's rate per CPU, from the budget
  // The host sampler, kept loaded from one window's end to the next one's start (Run's thread
  // only).
  std::shared_ptr<const void> sampler_kept_;
  std::string host_;
  std::vector<std::unique_ptr<fleet::Pusher>> pushers_;

  mutable std::mutex mu_;  // guards archive_ and the counters below
  std::unique_ptr<fleet::ProfileArchive> archive_;
  uint64_t exported_ = 0, failed_start_ = 0, failed_export_ = 0, empty_series_ = 0,
           pids_over_limit_ = 0,
           branches_failed_ = 0;  // a window's .pbs that could not be built
  std::string last_error_;
  std::map<std::string, std::string> build_ids_;  // executable -> GNU build-id, read once

  std::mutex stop_mu_;
  std::condition_variable stop_cv_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace pathprof::daemon
