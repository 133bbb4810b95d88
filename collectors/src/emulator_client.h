// The collector's side of the emulator helper (pathprof-emulator, collectors/helper/): starts it
// with a socket on its fd 3, hands it samples, serves its requests to open what it reads of a
// process (the maps, pagemap and mapped files of the sample's pid only, with the session's
// rights: a confined requester's for files), and reads back one outcome per sample. The helper
// runs as an unprivileged identity in a seccomp sandbox (helper_sandbox.h): an emulator flaw
// that a profiled program's code reaches ends that helper, not this process. Everything it
// sends is parsed as hostile (emulator_wire.h), and every wait on it is bounded.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "emulator_wire.h"
#include "pathprof/core/status.h"
#include "pathprof/decoders/mapped_file.h"
#include "snapshot_emulation.h"

namespace pathprof::collectors {

struct EmulatorHelperOptions {
  EmulationSettings settings;
  // The rights the mapped files are opened with (a confined session's requester); nullopt:
  // this process's own.
  std::optional<decoders::FileCredentials> open_as;
  // The identity the helper runs as: nullopt takes nobody's when this process is root or holds
  // capabilities (stepping::HoldsPrivilege), else stays this process's user.
  std::optional<decoders::FileCredentials> run_as;
  // How long one sample may take in the helper before it is taken for hung and killed.
  int sample_timeout_ms = 10'000;
};

class EmulatorClient {
 public:
  // Starts the helper and waits (bounded) for it to say it is sandboxed and ready.
  static Result<std::unique_ptr<EmulatorClient>> Start(const EmulatorHelperOptions& options);
  ~EmulatorClient();  // closes the socket, waits for the helper (bounded), kills it if need be
  EmulatorClient(const EmulatorClient&) = delete;
  EmulatorClient& operator=(const EmulatorClient&) = delete;

  using HintSink = SnapshotEmulation::HintSink;
  // Emulates `samples` in order, in batches of up to emulator_wire::kMaxBatch: `done(i,
  // outcome)` for each. An error when the helper died,
  // hung or broke the protocol: the samples without an outcome are lost (the caller counts
  // them), and this client is of no further use (`failure()` says why).
  Status Run(const std::vector<const RawStackSample*>& samples,
             const std::function<void(size_t, SampleOutcome&&)>& done, const HintSink& hints);
  void Forget(uint32_t pid);

  pid_t pid() const { return pid_; }
  bool failed() const { return !failure_.empty(); }
  const std::string& failure() const { return failure_; }

  struct Impl;

 private:
  EmulatorClient() = default;
  // Marks the helper failed; its exit status joins `why` once it is reaped.
  Status Fail(const std::string& why);
  void ServeOpen(const std::vector<uint8_t>& payload, uint32_t allowed_pid);

  EmulatorHelperOptions options_;
  pid_t pid_ = -1;
  int pidfd_ = -1;
  int sock_ = -1;
  std::string failure_;
  std::unique_ptr<emulator_wire::MessageReader> reader_;
  std::vector<uint8_t> batch_bytes_;  // the batch being sent; its capacity kept
};

// Where pathprof-emulator is looked for ($PATHPROF_EMULATOR, beside the running executable,
// the installed path, the build's bin/).
Result<std::string> EmulatorHelperPath();

}  // namespace pathprof::collectors
