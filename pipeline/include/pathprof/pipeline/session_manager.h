// The sessions of one process (pathprofd, or pathctl run with one session): start, stop, list,
// get, bounded in number; ended sessions are dropped after their retention period. Thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "pathprof/collectors/capabilities.h"
#include "pathprof/core/status.h"
#include "pathprof/pipeline/offline_analysis.h"
#include "pathprof/pipeline/session.h"
#include "pathprof/pipeline/symbol_service.h"

namespace pathprof::pipeline {

struct SessionManagerOptions {
  size_t max_sessions = 16;  // running plus retained; Start beyond it is kResourceExhausted
  // The probe; empty: collectors::ProbeHostCapabilities() once at construction.
  bool probe_capabilities = true;
  // How images are read for symbolization; its cache is shared by every session (and may be
  // shared further, e.g. with the daemon's continuous mode).
  decoders::ImageStoreOptions images;
  // Where libdw reads the images (symbol_service.h): the daemon's is the sandboxed helper.
  SymbolizeIn symbolize_in = SymbolizeIn::kThisProcess;
};

class SessionManager {
 public:
  explicit SessionManager(SessionManagerOptions options = {});
  // Tests (or a daemon with a cached probe) may pass the capabilities to use.
  SessionManager(SessionManagerOptions options, collectors::HostCapabilities caps);
  ~SessionManager();  // stops every session

  const collectors::HostCapabilities& capabilities() const { return caps_; }
  // The symbol service every session of this manager shares (its image cache's counts).
  const SymbolService& symbols() const { return *symbols_; }

  Result<std::shared_ptr<Session>> Start(SessionConfig config);
  // A session over a recording (perf.data or .pbs at `path`, read through AnalyzeFile): ended
  // from the start, queried like any other, counted against max_sessions and dropped after
  // options.config.retention_s like an ended session. `warnings`: see SessionFromRecording.
  Result<std::shared_ptr<Session>> Import(const std::string& path, const AnalyzeOptions& options,
                                          std::vector<std::string>* warnings = nullptr);
  // Stops and returns the final info; kNotFound for an unknown id.
  Result<SessionInfo> Stop(const std::string& id);
  // Stops it if it runs and forgets it (its profiles go when the last reader lets go).
  Result<SessionInfo> Delete(const std::string& id);
  std::vector<SessionInfo> List() const;
  // nullptr for an unknown (or expired) id.
  std::shared_ptr<Session> Get(const std::string& id) const;
  // Sessions profiling `pid`.
  std::vector<std::string> SessionsFor(uint32_t pid) const;
  // Stops every running session, all at once (each within its own ~1 s bound); returns how many
  // were running.
  size_t StopAll();
  // Drops ended sessions past their retention; returns how many. Start calls it too.
  size_t ReapExpired();

 private:
  // A new session id, or kResourceExhausted at max_sessions.
  Result<std::string> NextId();

  SessionManagerOptions options_;
  collectors::HostCapabilities caps_;
  std::shared_ptr<SymbolService> symbols_;
  mutable std::mutex mu_;
  std::vector<std::shared_ptr<Session>> sessions_;
  uint64_t next_id_ = 1;
};

}  // namespace pathprof::pipeline
