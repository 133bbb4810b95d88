// pathprof-emulator: the process snapshot windows are emulated in (emulator_client.h).
//   pathprof-emulator [--uid U --gid G] [--sample-deadline-s S]
// Runs on its fd 3, a Unix socket to the collector that started it: it receives samples and
// answers each with the window emulated from it (snapshot_emulation.h). It interprets code
// somebody else chose, so before its first message it becomes uid U and gid G when given (no
// groups, no capabilities) and enters its sandbox (stepping's helper_sandbox.h): from then on it
// opens nothing. What it reads of a process (its maps, pagemap, mapped files) the collector
// opens for it, on request, and passes as descriptors. With a deadline S, a batch of samples that
// goes S seconds without a message to or from the collector ends the helper (SIGALRM): a
// collector that is not root and holds no CAP_KILL (the packaged daemon) cannot kill a helper
// that became nobody, so a hung helper must end itself. Not meant to be run by hand.
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>

#include "../src/emulator_wire.h"
#include "../src/process_access.h"
#include "../src/process_image.h"
#include "../src/snapshot_emulation.h"
#include "pathprof/stepping/helper_sandbox.h"

namespace {

namespace pc = pathprof::collectors;
namespace wire = pathprof::collectors::emulator_wire;

constexpr int kSocketFd = 3;
constexpr int kExitUsage = 2;
// How long an open request waits for the collector's answer (the collector gives a helper
// 10 s a message: emulator_client.h).
constexpr int kAnswerTimeoutMs = 30'000;
// The maps of a process, as text, at most (a process with ~500,000 mappings).
constexpr size_t kMaxMapsBytes = 64u << 20;

// Seconds a batch may go without a message before the helper ends itself; 0: no deadline.
unsigned sample_deadline_s = 0;

void RearmDeadline() {
  if (sample_deadline_s != 0) alarm(sample_deadline_s);
}

// What goes to the collector, held until it must go: before an open request (the collector
// tells which sample the helper is on by the outcomes it has) and at a batch's end.
class Outbox {
 public:
  void Add(wire::Type type, const std::vector<uint8_t>& payload) {
    wire::Append(type, payload.data(), static_cast<uint32_t>(payload.size()), &bytes_);
  }
  void Flush() {
    if (bytes_.empty()) return;
    if (!wire::SendBytes(kSocketFd, bytes_)) std::_Exit(0);  // the collector is gone
    bytes_.clear();
  }

 private:
  std::vector<uint8_t> bytes_;
};

// A process's maps, pagemap and files, each a descriptor the collector opened on request. The
// collector answers only for the pid of the sample being emulated.
class BrokeredAccess final : public pc::ProcessAccess {
 public:
  BrokeredAccess(int sock, Outbox& outbox) : sock_(sock), outbox_(outbox) {}

  pathprof::Result<pathprof::decoders::AddressSpace> ReadMaps(pid_t pid) override {
    auto it = maps_.find(pid);
    if (it == maps_.end()) {
      PATHPROF_ASSIGN_OR_RETURN(auto fd, Open(wire::OpenWhat::kMaps, pid, nullptr));
      it = maps_.emplace(pid, std::move(fd)).first;
    }
    // Read from the start each time: /proc/PID/maps, opened once, shows the mappings now.
    std::string text;
    char buf[64 << 10];
    if (lseek(it->second.get(), 0, SEEK_SET) != 0)
      return pathprof::Error(pathprof::ErrorCode::kUnavailable, "maps: lseek failed");
    for (;;) {
      const ssize_t n = read(it->second.get(), buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0)
        return pathprof::Error(pathprof::ErrorCode::kUnavailable,
                               std::string("maps: ") + std::strerror(errno));
      if (n == 0) break;
      text.append(buf, static_cast<size_t>(n));
      if (text.size() > kMaxMapsBytes)
        return pathprof::Error(pathprof::ErrorCode::kResourceExhausted, "maps over 64 MiB");
    }
    auto space = pathprof::decoders::ParseProcMaps(text);
    if (space.ok()) space->set_access(pathprof::decoders::FileAccess{pid, std::nullopt});
    return space;
  }
  pathprof::Result<pathprof::decoders::UniqueFd> OpenPagemap(pid_t pid) override {
    return Open(wire::OpenWhat::kPagemap, pid, nullptr);
  }
  pathprof::Result<pathprof::decoders::UniqueFd> OpenMapped(
      pid_t pid, const pathprof::decoders::Mapping& m) override {
    return Open(wire::OpenWhat::kMapped, pid, &m);
  }
  std::optional<uint32_t> Threads(pid_t) override { return std::nullopt; }
  void Forget(pid_t pid) override { maps_.erase(pid); }

 private:
  pathprof::Result<pathprof::decoders::UniqueFd> Open(wire::OpenWhat what, pid_t pid,
                                                      const pathprof::decoders::Mapping* m) {
    wire::OpenRequest r{};
    r.what = what;
    r.pid = static_cast<uint32_t>(pid);
    if (m != nullptr) {
      r.start = m->start;
      r.end = m->end();
      r.device = m->device;
      r.inode = m->inode;
    }
    outbox_.Flush();
    if (!wire::Send(sock_, wire::Type::kOpen, &r, sizeof r)) std::_Exit(0);  // collector gone
    // The collector's clock on this helper starts again with each message it gets.
    RearmDeadline();
    wire::Header h{};
    std::vector<uint8_t> payload;
    int fd = -1;
    // The collector answers at once; one that does not within kAnswerTimeoutMs is stuck, and
    // its own timeout on this helper has ended the exchange already.
    if (wire::Receive(sock_, kAnswerTimeoutMs, &h, &payload, &fd) !=
            wire::ReceiveResult::kMessage ||
        h.type != wire::Type::kOpened || payload.size() != sizeof(int32_t))
      std::_Exit(0);
    RearmDeadline();
    pathprof::decoders::UniqueFd owned(fd);
    int32_t error = 0;
    std::memcpy(&error, payload.data(), sizeof error);
    if (error != 0 || owned.get() < 0)
      return pathprof::Error(pathprof::ErrorCode::kUnavailable,
                             std::string("the collector could not open it: ") +
                                 std::strerror(error != 0 ? error : EBADF));
    return owned;
  }

  int sock_;
  Outbox& outbox_;
  std::map<pid_t, pathprof::decoders::UniqueFd> maps_;
};

int Fail(const std::string& why) {
  (void)wire::Send(kSocketFd, wire::Type::kError, why.data(), static_cast<uint32_t>(why.size()));
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  signal(SIGPIPE, SIG_IGN);  // a collector gone away is seen as EPIPE, not death
  (void)prctl(PR_SET_PDEATHSIG, SIGKILL);
  uint32_t uid = 0, gid = 0, deadline = 0;
  bool drop = false;
  for (int i = 1; i < argc; i += 2) {
    const std::string key = argv[i];
    uint32_t* to = key == "--uid"                 ? &uid
                   : key == "--gid"               ? &gid
                   : key == "--sample-deadline-s" ? &deadline
                                                  : nullptr;
    if (to == nullptr || i + 1 >= argc || !pathprof::stepping::ParseHelperNumber(argv[i + 1], to)) {
      std::fprintf(stderr,
                   "pathprof-emulator: usage: pathprof-emulator [--uid U --gid G] "
                   "[--sample-deadline-s S]\n");
      return kExitUsage;
    }
    drop = drop || to != &deadline;
  }
  sample_deadline_s = deadline;
  const char* fault = std::getenv("PATHPROF_EMULATOR_FAULT");
  pc::ProcessImage::LoadShared();  // this process's vdso: read before the sandbox opens nothing
  if (drop) {
    if (const std::string e = pathprof::stepping::DropIdentity(uid, gid); !e.empty())
      return Fail("the emulator could not become uid " + std::to_string(uid) + ": " + e);
  }
  // Again: the uid change cleared the parent-death signal.
  (void)prctl(PR_SET_PDEATHSIG, SIGKILL);
  pathprof::stepping::SandboxPolicy policy;
  policy.role = pathprof::stepping::SandboxRole::kEmulator;
  if (const std::string e = pathprof::stepping::EnterHelperSandbox(policy); !e.empty())
    return Fail("the emulator could not enter its sandbox: " + e);

  wire::Header h{};
  std::vector<uint8_t> payload;
  int fd = -1;
  if (wire::Receive(kSocketFd, -1, &h, &payload, &fd) != wire::ReceiveResult::kMessage ||
      h.type != wire::Type::kSettings || payload.size() != sizeof(wire::Settings))
    return Fail("no settings");
  if (fd >= 0) close(fd);
  wire::Settings settings;
  std::memcpy(&settings, payload.data(), sizeof settings);
  const wire::Settings ours;
  if (settings.version != ours.version || settings.event_size != ours.event_size ||
      settings.image_stats_size != ours.image_stats_size)
    return Fail("the collector speaks another version of the protocol (another build?)");
  Outbox outbox;
  BrokeredAccess access(kSocketFd, outbox);
  pc::SnapshotEmulation emulation(wire::FromSettings(settings), access,
                                  [&outbox](uint32_t pid, const std::vector<uint64_t>& pages) {
                                    outbox.Add(wire::Type::kHints, wire::EncodeHints(pid, pages));
                                  });
  std::vector<pathprof::collectors::RawStackSample> samples;
  if (!wire::Send(kSocketFd, wire::Type::kReady, nullptr, 0)) return 0;
  for (;;) {
    const wire::ReceiveResult r = wire::Receive(kSocketFd, -1, &h, &payload, &fd);
    if (r != wire::ReceiveResult::kMessage) return 0;  // the collector is gone
    if (fd >= 0) close(fd);                            // nothing it sends unasked has one
    if (h.type == wire::Type::kForget && payload.size() == sizeof(uint32_t)) {
      uint32_t pid = 0;
      std::memcpy(&pid, payload.data(), sizeof pid);
      emulation.Forget(pid);
      continue;
    }
    if (h.type != wire::Type::kSamples) return Fail("an unexpected message");
    RearmDeadline();
    if (!wire::DecodeSamples(payload, &samples)) return Fail("a malformed batch of samples");
#ifndef NDEBUG
    // Tests only: what an exploit would do, at the first sample.
    pathprof::stepping::SimulateExploit(fault);
#else
    (void)fault;
#endif
    emulation.ObserveAhead(samples);
    for (const pathprof::collectors::RawStackSample& sample : samples)
      outbox.Add(wire::Type::kOutcome, wire::EncodeOutcome(emulation.Emulate(sample)));
    outbox.Flush();
    alarm(0);  // waiting for the next batch has no deadline: the collector's death ends it
  }
}
