// pathprof-symbolizer: the process the daemon's symbolization and stack unwinding run in
// (symbolizer_client.h). A profiled binary's symbol table, DWARF and CFI are its owner's bytes,
// and libdw reads them here, not in the daemon:
//   pathprof-symbolizer [--uid U --gid G] [--max-image-bytes N] [--request-deadline-s S]
// Its fd 3 is a Unix socket to the daemon. Before it reads a byte it becomes uid U and gid G when
// given (no groups, no capabilities) and enters its sandbox (stepping's helper_sandbox.h: its
// socket, the descriptors it is handed, read-only opens for DWARF supplements; no exec, no
// sockets, no new processes); then it answers symbol_wire requests until the daemon closes the
// socket. A request it has not answered in S seconds ends it (SIGALRM's default action): a
// daemon that is no root and lacks CAP_KILL cannot kill a helper that became nobody, so a parse
// that loops ends by itself. Not meant to be run by hand.
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "../src/symbol_wire.h"
#include "pathprof/decoders/cfi_unwinder.h"
#include "pathprof/decoders/mapped_file.h"
#include "pathprof/decoders/symbolizer.h"
#include "pathprof/stepping/helper_sandbox.h"
#include "pathprof/stepping/helper_socket.h"
#include "symbol_wire.pb.h"

namespace {

namespace wire = pathprof::pipeline::symbol_wire;
namespace pb = pathprof::pipeline::symbol_wire::pb;
namespace dec = pathprof::decoders;

constexpr int kSocketFd = 3;
constexpr int kExitUsage = 2;
// Images held at once: the daemon forgets what its cache evicts, so this only bounds a daemon
// that forgot to.
constexpr size_t kMaxImages = 4096;
// Mappings an unwind request may hand over as known.
constexpr size_t kMaxKnownMappings = 64;

struct HeldImage {
  std::shared_ptr<const dec::ElfImage> image;
  std::string debug_name;
  dec::UniqueFd debug_fd;
};

class Server {
 public:
  Server(uint64_t max_image_bytes, uint32_t request_deadline_s)
      : max_image_bytes_(max_image_bytes), request_deadline_s_(request_deadline_s) {}

  // Answers requests until the daemon closes the socket (0) or breaks the protocol (1).
  int Run() {
    for (;;) {
      pathprof::stepping::MessageHeader h{};
      int raw_fd = -1;
      const auto r = pathprof::stepping::ReceiveMessage(kSocketFd, -1, wire::kMaxPayload, &h,
                                                        &payload_, &raw_fd);
      dec::UniqueFd fd(raw_fd);
      if (r == pathprof::stepping::ReceiveResult::kEof) return 0;
      if (r != pathprof::stepping::ReceiveResult::kMessage) return 1;
      // Armed while a request is worked on, not while waiting for the next one.
      alarm(request_deadline_s_);
#ifndef NDEBUG
      // Tests only: what an exploit of libdw would do, once a binary's bytes are being read.
      if (h.type == static_cast<uint32_t>(wire::Type::kSymbolize) ||
          h.type == static_cast<uint32_t>(wire::Type::kUnwind))
        pathprof::stepping::SimulateExploit(std::getenv("PATHPROF_SYMBOLIZER_FAULT"));
#endif
      switch (static_cast<wire::Type>(h.type)) {
        case wire::Type::kImage:
          if (!AddImage(std::move(fd))) return 1;
          break;
        case wire::Type::kDebugFile:
          if (!AddDebugFile(std::move(fd))) return 1;
          break;
        case wire::Type::kSymbolize:
          if (!Symbolize()) return 1;
          break;
        case wire::Type::kUnwind:
          if (!Unwind()) return 1;
          break;
        case wire::Type::kForget:
          if (!Forget()) return 1;
          break;
        default:
          return 1;
      }
      alarm(0);
    }
  }

 private:
  template <typename Message>
  bool Parse(Message* m) {
    return m->ParseFromArray(payload_.data(), static_cast<int>(payload_.size()));
  }

  static bool Send(wire::Type type, const std::string& bytes) {
    if (pathprof::stepping::SendMessage(kSocketFd, static_cast<uint32_t>(type), bytes.data(),
                                        static_cast<uint32_t>(bytes.size())))
      return true;
    std::_Exit(0);  // the daemon is gone
  }

  bool AddImage(dec::UniqueFd fd) {
    pb::Image m;
    if (fd.get() < 0 || !Parse(&m) || m.id() == 0 || images_.size() >= kMaxImages) return false;
    HeldImage held;
    // An image that does not read or parse stays unknown: its requests are answered kNotFound.
    if (auto image = dec::ElfImage::Read(fd.get(), m.name(), max_image_bytes_); image.ok())
      held.image = *image;
    images_[m.id()] = std::move(held);
    return true;
  }

  bool AddDebugFile(dec::UniqueFd fd) {
    pb::DebugFile m;
    if (fd.get() < 0 || !Parse(&m)) return false;
    auto it = images_.find(m.id());
    if (it == images_.end()) return false;
    it->second.debug_name = m.name();
    it->second.debug_fd = std::move(fd);
    return true;
  }

  bool Symbolize() {
    pb::SymbolizeRequest q;
    if (!Parse(&q)) return false;
    auto it = images_.find(q.image());
    pathprof::Result<dec::Symbolization> answer =
        pathprof::Error(pathprof::ErrorCode::kNotFound, "symbolizer: no readable image");
    if (it != images_.end() && it->second.image != nullptr) {
      const HeldImage& h = it->second;
      answer = q.lines()
                   ? symbolizer_->Symbolize(h.image, q.vaddr(), h.debug_name, h.debug_fd.get())
                   : symbolizer_->FunctionOf(h.image, q.vaddr(), h.debug_name, h.debug_fd.get());
    }
    return Send(wire::Type::kSymbol, wire::EncodeSymbol(answer));
  }

  bool Unwind() {
    pb::UnwindRequest q;
    if (!Parse(&q) || q.regs_size() != dec::kDwarfRegisterCount || q.max_frames() == 0 ||
        q.max_frames() > wire::kMaxUnwindFrames)
      return false;
    const std::vector<uint64_t> regs(q.regs().begin(), q.regs().end());
    const std::string& stack = q.stack();
    // The daemon answers each address with its mapping's range: asked once per mapping.
    struct Known {
      uint64_t start, end;
      dec::UnwindImage at;
    };
    std::vector<Known> known;
    // What earlier unwinds of this process learnt, checked by the daemon: not asked again.
    for (const pb::ImageAnswer& a : q.known()) {
      auto it = images_.find(a.image());
      if (known.size() >= kMaxKnownMappings || it == images_.end() || a.start() >= a.end())
        continue;
      known.push_back({a.start(), a.end(), {it->second.image, a.bias()}});
    }
    bool broken = false;
    auto image_at = [&](uint64_t address) -> dec::UnwindImage {
      if (broken) return {};  // the daemon broke the protocol: finish without asking
      for (const Known& k : known)
        if (address >= k.start && address < k.end) return k.at;
      pb::ImageQuestion question;
      question.set_address(address);
      Send(wire::Type::kImageQuestion, question.SerializeAsString());
      pathprof::stepping::MessageHeader h{};
      int raw_fd = -1;
      pb::ImageAnswer a;
      for (;;) {  // the images it names come first
        const auto r = pathprof::stepping::ReceiveMessage(kSocketFd, -1, wire::kMaxPayload, &h,
                                                          &payload_, &raw_fd);
        dec::UniqueFd fd(raw_fd);
        raw_fd = -1;
        if (r != pathprof::stepping::ReceiveResult::kMessage) std::_Exit(0);
        if (h.type == static_cast<uint32_t>(wire::Type::kImage)) {
          if (!AddImage(std::move(fd))) broken = true;
          continue;
        }
        if (h.type != static_cast<uint32_t>(wire::Type::kImageAnswer) || !Parse(&a)) broken = true;
        break;
      }
      Known k{a.start(), a.end(), {}};
      if (auto it = images_.find(a.image()); it != images_.end() && !broken) {
        k.at.image = it->second.image;
        k.at.bias = a.bias();
      }
      if (k.start <= address && address < k.end) known.push_back(k);
      return k.at;
    };
    const dec::UnwindResult out = unwinder_->Unwind(
        regs, q.stack_start(),
        std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(stack.data()), stack.size()),
        image_at, q.max_frames());
    if (broken) return false;
    return Send(wire::Type::kUnwound, wire::EncodeUnwound(out));
  }

  bool Forget() {
    pb::Forget m;
    if (!Parse(&m)) return false;
    if (m.all()) {
      images_.clear();
      symbolizer_ = std::make_unique<dec::Symbolizer>();
      unwinder_ = std::make_unique<dec::CfiUnwinder>();
      return true;
    }
    for (uint64_t id : m.images()) {
      auto it = images_.find(id);
      if (it == images_.end()) continue;
      symbolizer_->Forget(it->second.image.get());
      unwinder_->Forget(it->second.image.get());
      images_.erase(it);
    }
    return true;
  }

  uint64_t max_image_bytes_;
  uint32_t request_deadline_s_;
  std::map<uint64_t, HeldImage> images_;
  std::vector<uint8_t> payload_;
  std::unique_ptr<dec::Symbolizer> symbolizer_ = std::make_unique<dec::Symbolizer>();
  std::unique_ptr<dec::CfiUnwinder> unwinder_ = std::make_unique<dec::CfiUnwinder>();
};

int Usage() {
  std::fprintf(stderr,
               "pathprof-symbolizer: usage: pathprof-symbolizer [--uid U --gid G] "
               "[--max-image-bytes N] [--request-deadline-s S] (fd 3: the socket to the "
               "daemon)\n");
  return kExitUsage;
}

void Ready(const std::string& error) {
  pb::Ready m;
  m.set_error(error);
  const std::string bytes = m.SerializeAsString();
  (void)pathprof::stepping::SendMessage(kSocketFd, static_cast<uint32_t>(wire::Type::kReady),
                                        bytes.data(), static_cast<uint32_t>(bytes.size()));
}

}  // namespace

int main(int argc, char** argv) {
  signal(SIGPIPE, SIG_IGN);  // a daemon gone away is seen as EPIPE, not death
  (void)prctl(PR_SET_PDEATHSIG, SIGKILL);
  uint32_t uid = 0, gid = 0;
  uint64_t max_image_bytes = dec::kDefaultMaxImageBytes;
  uint32_t request_deadline_s = 0;  // 0: none
  bool drop = false;
  for (int i = 1; i < argc; ++i) {
    const std::string key = argv[i];
    if ((key == "--uid" || key == "--gid") && i + 1 < argc) {
      if (!pathprof::stepping::ParseHelperNumber(argv[i + 1], key == "--uid" ? &uid : &gid))
        return Usage();
      drop = true;
      ++i;
    } else if (key == "--request-deadline-s" && i + 1 < argc) {
      if (!pathprof::stepping::ParseHelperNumber(argv[++i], &request_deadline_s)) return Usage();
    } else if (key == "--max-image-bytes" && i + 1 < argc) {
      char* end = nullptr;
      max_image_bytes = std::strtoull(argv[++i], &end, 10);
      if (end == nullptr || *end != '\0' || max_image_bytes == 0) return Usage();
    } else {
      return Usage();
    }
  }
  if (drop) {
    if (const std::string e = pathprof::stepping::DropIdentity(uid, gid); !e.empty()) {
      Ready("could not become uid " + std::to_string(uid) + ": " + e);
      return 1;
    }
  }
  // Again: the uid change cleared the parent-death signal.
  (void)prctl(PR_SET_PDEATHSIG, SIGKILL);
  pathprof::stepping::SandboxPolicy policy;
  policy.role = pathprof::stepping::SandboxRole::kSymbolizer;
  if (const std::string e = pathprof::stepping::EnterHelperSandbox(policy); !e.empty()) {
    Ready("could not enter its sandbox: " + e);
    return 1;
  }
  Ready("");
  Server server(max_image_bytes, request_deadline_s);
  return server.Run();
}
