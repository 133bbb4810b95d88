#include "emulator_client.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "pathprof/core/procfs.h"
#include "pathprof/decoders/address_space.h"
#include "pathprof/stepping/helper_process.h"
#include "pathprof/stepping/helper_sandbox.h"

namespace pathprof::collectors {

namespace wire = emulator_wire;

namespace {

// How long the helper has to start and enter its sandbox, and to exit once its socket closes.
constexpr int kStartTimeoutMs = 10'000;
constexpr int kExitTimeoutMs = 2'000;

}  // namespace

Result<std::string> EmulatorHelperPath() {
  stepping::HelperLocation where;
  where.name = "pathprof-emulator";
  where.env_var = "PATHPROF_EMULATOR";
#ifdef PATHPROF_EMULATOR_INSTALL_PATH
  where.install_path = PATHPROF_EMULATOR_INSTALL_PATH;
#endif
#ifdef PATHPROF_EMULATOR_BUILD_PATH
  where.build_path = PATHPROF_EMULATOR_BUILD_PATH;
#endif
  where.purpose = "the snapshot windows' emulator helper";
  return stepping::FindHelper(where);
}

Result<std::unique_ptr<EmulatorClient>> EmulatorClient::Start(
    const EmulatorHelperOptions& options) {
  PATHPROF_ASSIGN_OR_RETURN(const std::string path, EmulatorHelperPath());
  std::vector<std::string> args;
  std::optional<decoders::FileCredentials> run_as = options.run_as;
  if (!run_as && stepping::HoldsPrivilege()) {
    decoders::FileCredentials nobody;
    stepping::NobodyIdentity(&nobody.uid, &nobody.gid);
    run_as = nobody;
  }
  if (run_as) {
    args = {"--uid", std::to_string(run_as->uid), "--gid", std::to_string(run_as->gid)};
  }
  // The helper's own deadline, past ours (whole seconds, 2 s later): it ends a helper we cannot
  // kill (we are no root and hold no CAP_KILL, it became nobody) after we gave up on it.
  args.push_back("--sample-deadline-s");
  args.push_back(std::to_string((std::max(options.sample_timeout_ms, 0) + 999) / 1000 + 2));
  int pair[2] = {-1, -1};
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0)
    return Error(ErrorCode::kResourceExhausted,
                 std::string("emulator helper: socketpair failed: ") + std::strerror(errno));
  auto pid = stepping::SpawnHelper(path, args, {pair[1]});
  close(pair[1]);
  if (!pid.ok()) {
    close(pair[0]);
    return WithContext(pid.status(), "emulator helper");
  }
  std::unique_ptr<EmulatorClient> c(new EmulatorClient());
  c->options_ = options;
  c->pid_ = *pid;
  c->pidfd_ = static_cast<int>(syscall(SYS_pidfd_open, *pid, 0));
  c->sock_ = pair[0];
  c->reader_ = std::make_unique<wire::MessageReader>(c->sock_);
  const wire::Settings settings = wire::SettingsFor(options.settings);
  if (!wire::Send(c->sock_, wire::Type::kSettings, &settings, sizeof settings))
    return c->Fail("the emulator helper closed its socket at its start");
  wire::Header h{};
  std::vector<uint8_t> payload;
  const wire::ReceiveResult r = c->reader_->Next(kStartTimeoutMs, &h, &payload);
  if (r == wire::ReceiveResult::kMessage && h.type == wire::Type::kReady) return c;
  if (r == wire::ReceiveResult::kMessage && h.type == wire::Type::kError)
    return c->Fail(
        std::string(payload.begin(), payload.begin() + std::min<size_t>(payload.size(), 1024)));
  return c->Fail(r == wire::ReceiveResult::kTimeout ? "the emulator helper did not start in 10 s"
                                                    : "the emulator helper did not start");
}

EmulatorClient::~EmulatorClient() {
  if (sock_ >= 0) close(sock_);  // the helper sees EOF and exits
  if (pid_ > 0) (void)stepping::ReapHelper(pid_, pidfd_, kExitTimeoutMs);
  if (pidfd_ >= 0) close(pidfd_);
}

Status EmulatorClient::Fail(const std::string& why) {
  if (failure_.empty()) {
    failure_ = why;
    if (sock_ >= 0) {
      close(sock_);
      sock_ = -1;
    }
    if (pid_ > 0) {
      const int status = stepping::ReapHelper(pid_, pidfd_, kExitTimeoutMs);
      failure_ += " (the helper " + stepping::DescribeHelperExit(status) + ")";
      pid_ = -1;
    }
  }
  return Error(ErrorCode::kUnavailable, "snapshot windows' emulator: " + failure_);
}

void EmulatorClient::Forget(uint32_t pid) {
  if (failed()) return;
  if (!wire::Send(sock_, wire::Type::kForget, &pid, sizeof pid))
    (void)Fail("the emulator helper's socket closed");
}

// Opens what the helper asks for, only for `allowed_pid` (the sample it is emulating): a
// helper taken over by the code it interprets may ask for anything, so what it gets is a
// descriptor the session could have read anyway (the process's maps and pagemap; a mapped file
// through its map_files entry only, which the kernel resolves to the inode mapped there, never
// by a path the helper names).
void EmulatorClient::ServeOpen(const std::vector<uint8_t>& payload, uint32_t allowed_pid) {
  wire::OpenRequest r{};
  int32_t error = 0;
  decoders::UniqueFd fd;
  if (payload.size() != sizeof r) {
    error = EINVAL;
  } else {
    std::memcpy(&r, payload.data(), sizeof r);
    if (r.pid != allowed_pid || r.pid == 0) error = EPERM;
  }
  const pid_t pid = static_cast<pid_t>(r.pid);
  if (error == 0) {
    switch (r.what) {
      case wire::OpenWhat::kMaps:
      case wire::OpenWhat::kPagemap: {
        const int raw = procfs::Procfs::Host().Open(
            pid, r.what == wire::OpenWhat::kMaps ? "maps" : "pagemap", O_RDONLY);
        if (raw < 0)
          error = errno;
        else
          fd = decoders::UniqueFd(raw);
        break;
      }
      case wire::OpenWhat::kMapped: {
        constexpr uint64_t kPage = 4096;
        if (r.start >= r.end || (r.start | r.end) % kPage != 0 ||
            decoders::IsKernelAddress(r.end)) {
          error = EINVAL;
          break;
        }
        decoders::Mapping m;
        m.start = r.start;
        m.len = r.end - r.start;
        m.inode = 0;  // the map_files entry or nothing: no path
        auto opened = decoders::OpenMappedFile(pid, m, options_.open_as);
        struct stat st {};
        if (!opened.ok()) {
          error = opened.status().code() == ErrorCode::kPermission ? EACCES : ENOENT;
        } else if (fstat(opened->get(), &st) != 0 || st.st_ino != r.inode ||
                   st.st_dev != r.device) {
          error = ESTALE;  // another file is mapped there now than the helper's maps say
        } else {
          fd = std::move(*opened);
        }
        break;
      }
      default:
        error = EINVAL;
    }
  }
  if (!wire::Send(sock_, wire::Type::kOpened, &error, sizeof error, error == 0 ? fd.get() : -1))
    (void)Fail("the emulator helper's socket closed");
}

Status EmulatorClient::Run(const std::vector<const RawStackSample*>& samples,
                           const std::function<void(size_t, SampleOutcome&&)>& done,
                           const HintSink& hints) {
  if (failed()) return Error(ErrorCode::kUnavailable, "snapshot windows' emulator: " + failure_);
  const uint32_t max_events = 64 * options_.settings.window_taken + 64;
  for (size_t first = 0; first < samples.size(); first += wire::kMaxBatch) {
    const size_t end = std::min<size_t>(samples.size(), first + wire::kMaxBatch);
    const std::vector<const RawStackSample*> batch(samples.begin() + first, samples.begin() + end);
    wire::EncodeSamples(batch, &batch_bytes_);
    if (!wire::Send(sock_, wire::Type::kSamples, batch_bytes_))
      return Fail("the emulator helper's socket closed");
    // The helper works through the batch in order: the sample it is on is the one after the
    // outcomes it has sent, and its requests may name only that sample's process.
    size_t next = first;
    while (next < end) {
      wire::Header h{};
      std::vector<uint8_t> payload;
      const wire::ReceiveResult r = reader_->Next(options_.sample_timeout_ms, &h, &payload);
      if (r == wire::ReceiveResult::kTimeout)
        return Fail("the emulator helper took over " +
                    std::to_string(options_.sample_timeout_ms / 1000) + " s on one sample");
      if (r != wire::ReceiveResult::kMessage) return Fail("the emulator helper's socket closed");
      const uint32_t pid = samples[next]->pid;
      if (h.type == wire::Type::kOpen) {
        ServeOpen(payload, pid);
        if (failed()) return Fail(failure_);
        continue;
      }
      if (h.type == wire::Type::kHints) {
        uint32_t hinted = 0;
        std::vector<uint64_t> pages;
        // Its own pid's pages, or another's emptied (a process it forgot to make room).
        if (!wire::DecodeHints(payload, options_.settings.hint_pages, &hinted, &pages) ||
            (hinted != pid && !pages.empty()))
          return Fail("the emulator helper sent malformed hint pages");
        hints(hinted, pages);
        continue;
      }
      if (h.type == wire::Type::kOutcome) {
        SampleOutcome o;
        if (!wire::DecodeOutcome(payload, max_events, &o))
          return Fail("the emulator helper sent a malformed window");
        done(next, std::move(o));
        ++next;
        continue;
      }
      return Fail("the emulator helper sent an unexpected message");
    }
  }
  return Status();
}

}  // namespace pathprof::collectors
