#include "symbolizer_client.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <deque>
#include <utility>
#include <vector>

#include "pathprof/decoders/mapped_file.h"
#include "pathprof/stepping/helper_process.h"
#include "pathprof/stepping/helper_sandbox.h"
#include "pathprof/stepping/helper_socket.h"
#include "symbol_wire.h"
#include "symbol_wire.pb.h"

namespace pathprof::pipeline {
namespace {

namespace wire = symbol_wire;
namespace pb = symbol_wire::pb;
using decoders::UniqueFd;

// Image questions one unwind may ask: one per frame where every frame is in a new mapping, and
// some to spare for the frame-pointer steps.
size_t MaxQuestions(size_t max_frames) {
  return 2 * max_frames + 16;
}

// A sealed memfd holding `bytes`: the helper reads the image the daemon read and checked, not
// whatever the path names now, and cannot change it for anybody else.
Result<UniqueFd> SealedCopy(std::span<const uint8_t> bytes) {
  UniqueFd fd(static_cast<int>(memfd_create("pathprof-image", MFD_CLOEXEC | MFD_ALLOW_SEALING)));
  if (fd.get() < 0)
    return Error(ErrorCode::kResourceExhausted,
                 std::string("memfd_create: ") + std::strerror(errno));
  size_t at = 0;
  while (at < bytes.size()) {
    const ssize_t n = ::write(fd.get(), bytes.data() + at, bytes.size() - at);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0)
      return Error(ErrorCode::kResourceExhausted,
                   std::string("writing an image to a memfd: ") + std::strerror(errno));
    at += static_cast<size_t>(n);
  }
  (void)fcntl(fd.get(), F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL);
  return fd;
}

}  // namespace

Result<std::string> SymbolizerHelperPath() {
  stepping::HelperLocation where;
  where.name = "pathprof-symbolizer";
  where.env_var = "PATHPROF_SYMBOLIZER";
#ifdef PATHPROF_SYMBOLIZER_INSTALL_PATH
  where.install_path = PATHPROF_SYMBOLIZER_INSTALL_PATH;
#endif
#ifdef PATHPROF_SYMBOLIZER_BUILD_PATH
  where.build_path = PATHPROF_SYMBOLIZER_BUILD_PATH;
#endif
  where.purpose = "the symbolizer";
  return stepping::FindHelper(where);
}

struct HelperSymbolBackend::Impl {
  explicit Impl(const SymbolHelperOptions& o) : options(o) {}
  ~Impl() { (void)Stop(0); }

  SymbolHelperOptions options;
  SymbolHelperStats stats;
  UniqueFd sock;
  pid_t pid = 0;
  UniqueFd pidfd;
  std::deque<std::chrono::steady_clock::time_point> starts;  // within the last minute
  // The images the running helper holds, by id. The weak pointer tells an image that is gone
  // from a new one at the same address (ids are never reused).
  struct Sent {
    std::weak_ptr<const decoders::ElfImage> image;
    uint64_t id = 0;
    bool debug_file_sent = false;  // an unwind hands the image over without it
  };
  std::map<const decoders::ElfImage*, Sent> sent;
  uint64_t next_id = 1;
  std::vector<uint8_t> payload;
  // The helper's answers, many a read. It reads without a control buffer: a descriptor a
  // taken-over helper attaches is discarded by the kernel, never received.
  std::unique_ptr<stepping::MessageReader> reader;
  // Per process, the mappings earlier unwinds asked about (bounded): each is checked against
  // the process's mappings before an unwind and handed over with it, so that a steady stream
  // of samples asks nothing (each question is a round trip).
  struct Answer {
    uint64_t start = 0, end = 0, bias = 0;
    std::weak_ptr<const decoders::ElfImage> image;
  };
  std::map<uint32_t, std::vector<Answer>> answered;
  // The helper's answers by image and address (and whether with lines): a query asks again for
  // the addresses the last one named (pathtop every second), a round trip each without this.
  // Dropped with the image, and all at once at the bound.
  using Key = std::pair<uint64_t, bool>;  // the address, and whether with lines

  struct Answers {
    std::weak_ptr<const decoders::ElfImage> image;  // tells a new image at the same address
    std::map<Key, Result<decoders::Symbolization>> by_address;
  };
  std::map<const decoders::ElfImage*, Answers> answers;
  size_t answer_count = 0;
  static constexpr size_t kMaxAnswers = 1u << 16;
  static constexpr size_t kMaxAnsweredProcesses = 256;
  static constexpr size_t kMaxAnswersPerProcess = 32;

  // Ends the helper (killed unless it is exiting on its own within `grace_ms`): how it ended
  // (stepping::DescribeHelperExit), "gone" when none was running.
  std::string Stop(int grace_ms) {
    if (pid == 0) return "gone";
    reader.reset();
    sock = UniqueFd();  // EOF: a sound helper exits
    const int status = stepping::ReapHelper(pid, pidfd.get(), grace_ms);
    pid = 0;
    pidfd = UniqueFd();
    sent.clear();
    return stepping::DescribeHelperExit(status);
  }

  // Counts the failure by `reason`, ends the helper and says why the request failed: "the
  // symbolizer helper `what`", or `why` as the wire's parser worded it.
  Status Fail(const std::string& reason, const std::string& what) {
    return Fail(reason, Status(ErrorCode::kUnavailable, "the symbolizer helper " + what));
  }
  Status Fail(const std::string& reason, const Status& why) {
    ++stats.failures[reason];
    (void)Stop(0);
    return Error(ErrorCode::kUnavailable, why.message());
  }

  Status Start() {
    if (pid != 0) return Status::Ok();
    const auto now = std::chrono::steady_clock::now();
    while (!starts.empty() && now - starts.front() > std::chrono::minutes(1)) starts.pop_front();
    if (starts.size() >= kMaxStartsPerMinute) {
      ++stats.failures["restart_refused"];
      return Error(ErrorCode::kUnavailable, "the symbolizer helper failed " +
                                                std::to_string(kMaxStartsPerMinute) +
                                                " times in a minute; not started again yet");
    }
    starts.push_back(now);
    auto path = SymbolizerHelperPath();
    if (!path.ok()) {
      ++stats.failures["start"];
      return path.status();
    }
    int ends[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ends) != 0) {
      ++stats.failures["start"];
      return Error(ErrorCode::kResourceExhausted,
                   std::string("symbolizer: socketpair: ") + std::strerror(errno));
    }
    UniqueFd mine(ends[0]), theirs(ends[1]);
    // The helper ends itself a second after the daemon stops waiting for an answer.
    const int deadline_s = options.reply_timeout_ms / 1000 + 2;
    std::vector<std::string> args = {"--max-image-bytes", std::to_string(options.max_image_bytes),
                                     "--request-deadline-s", std::to_string(deadline_s)};
    // Root, or a daemon holding capabilities, gives the helper nobody's identity to drop to: it
    // reads only what it is handed (and world-readable DWARF supplements).
    if (stepping::HoldsPrivilege()) {
      uid_t uid = 0;
      gid_t gid = 0;
      stepping::NobodyIdentity(&uid, &gid);
      args.insert(args.end(), {"--uid", std::to_string(uid), "--gid", std::to_string(gid)});
    }
    auto spawned = stepping::SpawnHelper(*path, args, {theirs.get()});
    if (!spawned.ok()) {
      ++stats.failures["start"];
      return WithContext(spawned.status(), "symbolizer helper");
    }
    pid = *spawned;
    pidfd = UniqueFd(static_cast<int>(syscall(SYS_pidfd_open, pid, 0)));
    sock = std::move(mine);
    reader = std::make_unique<stepping::MessageReader>(sock.get(), wire::kMaxPayload);
    ++stats.starts;
    stepping::MessageHeader h{};
    const auto r = reader->Next(options.start_timeout_ms, &h, &payload);
    if (r != stepping::ReceiveResult::kMessage || h.type != uint32_t(wire::Type::kReady))
      return Fail("start", r == stepping::ReceiveResult::kTimeout ? "did not start in time"
                                                                  : "ended before it was ready");
    if (Status ready = wire::ParseReady(payload); !ready.ok()) return Fail("start", ready);
    return Status::Ok();
  }

  bool Send(wire::Type type, const std::string& bytes, int fd = -1) {
    return stepping::SendMessage(sock.get(), static_cast<uint32_t>(type), bytes.data(),
                                 static_cast<uint32_t>(bytes.size()), fd);
  }

  // The helper's id of `image`, handing the image over the first time and its debug file the
  // first time a symbol needs it (before the helper's libdw reads the image's DWARF).
  Result<uint64_t> IdOf(const std::shared_ptr<const decoders::ElfImage>& image,
                        const std::string& debug_file) {
    auto it = sent.find(image.get());
    if (it != sent.end() && it->second.image.lock() != image) {
      const uint64_t stale = it->second.id;  // a new image where an evicted one was
      sent.erase(it);
      it = sent.end();
      ForgetId(stale);
      if (pid == 0) return Error(ErrorCode::kUnavailable, "the symbolizer helper is gone");
    }
    if (it == sent.end()) {
      auto bytes = SealedCopy(image->bytes());
      if (!bytes.ok()) {
        ++stats.failures["send"];
        return bytes.status();
      }
      pb::Image m;
      m.set_id(next_id);
      m.set_name(image->path());
      if (!Send(wire::Type::kImage, m.SerializeAsString(), bytes->get()))
        return Fail("died", "closed its socket");
      ++stats.images_sent;
      it = sent.emplace(image.get(), Sent{image, next_id++, false}).first;
    }
    Sent& s = it->second;
    if (!debug_file.empty() && !s.debug_file_sent) {
      s.debug_file_sent = true;
      // Opened as the in-process symbolizer opens it (never blocking on a FIFO); a debug file
      // that cannot be opened leaves the image without it, as there.
      UniqueFd debug(::open(debug_file.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));
      if (debug.get() >= 0) {
        pb::DebugFile d;
        d.set_id(s.id);
        d.set_name(debug_file);
        if (!Send(wire::Type::kDebugFile, d.SerializeAsString(), debug.get()))
          return Fail("died", "closed its socket");
      }
    }
    return s.id;
  }

  void ForgetId(uint64_t id) {
    pb::Forget f;
    f.add_images(id);
    if (pid != 0 && !Send(wire::Type::kForget, f.SerializeAsString()))
      (void)Fail("died", "closed its socket");
  }

  // Drops the answers about one image (it left the cache, or another is at its address).
  void DropAnswers(std::map<const decoders::ElfImage*, Answers>::iterator per) {
    answer_count -= per->second.by_address.size();
    answers.erase(per);
  }

  std::vector<Answer>& KnownOf(uint32_t process) {
    if (answered.size() >= kMaxAnsweredProcesses && !answered.contains(process)) answered.clear();
    return answered[process];
  }

  // The next message, which must be one of `a` or `b`.
  Status Receive(wire::Type a, wire::Type b, wire::Type* got) {
    stepping::MessageHeader h{};
    const auto r = reader->Next(options.reply_timeout_ms, &h, &payload);
    if (r == stepping::ReceiveResult::kTimeout)
      return Fail("timeout",
                  "did not answer within " + std::to_string(options.reply_timeout_ms) + " ms");
    // It closed its socket: reaped (a second at most) to say how it ended.
    if (r != stepping::ReceiveResult::kMessage)
      return Fail("died", "ended (it " + Stop(1'000) + ")");
    if (h.type != uint32_t(a) && h.type != uint32_t(b))
      return Fail("malformed", "sent a message of type " + std::to_string(h.type));
    *got = static_cast<wire::Type>(h.type);
    return Status::Ok();
  }
};

HelperSymbolBackend::HelperSymbolBackend(const SymbolHelperOptions& options)
    : impl_(std::make_unique<Impl>(options)) {}
HelperSymbolBackend::~HelperSymbolBackend() = default;

SymbolHelperStats HelperSymbolBackend::HelperStats() const {
  return impl_->stats;
}
int HelperSymbolBackend::HelperPid() const {
  return impl_->pid;
}

Result<decoders::Symbolization> HelperSymbolBackend::Symbolize(
    const std::shared_ptr<const decoders::ElfImage>& image, uint64_t vaddr,
    const std::string& debug_file, bool lines) {
  Impl& s = *impl_;
  const Impl::Key key{vaddr, lines};
  if (auto per = s.answers.find(image.get()); per != s.answers.end()) {
    if (per->second.image.lock() != image) {
      s.DropAnswers(per);
    } else if (auto hit = per->second.by_address.find(key); hit != per->second.by_address.end()) {
      return hit->second;
    }
  }
  ++s.stats.requests;
  PATHPROF_RETURN_IF_ERROR(s.Start());
  PATHPROF_ASSIGN_OR_RETURN(const uint64_t id, s.IdOf(image, debug_file));
  pb::SymbolizeRequest q;
  q.set_image(id);
  q.set_vaddr(vaddr);
  q.set_lines(lines);
  if (!s.Send(wire::Type::kSymbolize, q.SerializeAsString()))
    return s.Fail("died", "closed its socket");
  wire::Type got{};
  PATHPROF_RETURN_IF_ERROR(s.Receive(wire::Type::kSymbol, wire::Type::kSymbol, &got));
  Result<decoders::Symbolization> answer = Error(ErrorCode::kInternal, "no answer");
  if (Status parsed = wire::ParseSymbol(s.payload, &answer); !parsed.ok())
    return s.Fail("malformed", parsed);
  if (s.answer_count >= Impl::kMaxAnswers) {
    s.answers.clear();
    s.answer_count = 0;
  }
  Impl::Answers& per = s.answers[image.get()];
  per.image = image;
  if (per.by_address.emplace(key, answer).second) ++s.answer_count;
  return answer;
}

decoders::UnwindResult HelperSymbolBackend::Unwind(uint32_t pid, std::span<const uint64_t> regs,
                                                   uint64_t stack_start,
                                                   std::span<const uint8_t> stack,
                                                   const UnwindMappingAt& mapping_at) {
  Impl& s = *impl_;
  ++s.stats.requests;
  constexpr size_t kMaxFrames = 127;  // decoders::CfiUnwinder::Unwind's default
  auto unwound = [&]() -> Result<decoders::UnwindResult> {
    PATHPROF_RETURN_IF_ERROR(s.Start());
    pb::UnwindRequest q;
    for (uint64_t r : regs) q.add_regs(r);
    q.set_stack_start(stack_start);
    q.set_stack(stack.data(), stack.size());
    q.set_max_frames(kMaxFrames);
    std::vector<Impl::Answer>& known = s.KnownOf(pid);
    for (auto it = known.begin(); it != known.end();) {
      // Still this mapping and image? Else dropped (the process remapped it, or the image
      // left the cache).
      const UnwindMapping now = mapping_at(it->start);
      const auto image = it->image.lock();
      if (image == nullptr || now.at.image != image || now.at.bias != it->bias ||
          now.start != it->start || now.end != it->end) {
        it = known.erase(it);
        continue;
      }
      // One that cannot be handed over is left out, as an unwind's question about it would be
      // answered: the helper asks for what it needs.
      const Result<uint64_t> id = s.IdOf(image, "");
      if (s.pid == 0) return Error(ErrorCode::kUnavailable, "the symbolizer helper is gone");
      if (!id.ok()) {
        it = known.erase(it);
        continue;
      }
      pb::ImageAnswer* a = q.add_known();
      a->set_image(*id);
      a->set_bias(it->bias);
      a->set_start(it->start);
      a->set_end(it->end);
      ++it;
    }
    if (!s.Send(wire::Type::kUnwind, q.SerializeAsString()))
      return s.Fail("died", "closed its socket");
    for (size_t asked = 0;; ++asked) {
      wire::Type got{};
      PATHPROF_RETURN_IF_ERROR(s.Receive(wire::Type::kImageQuestion, wire::Type::kUnwound, &got));
      if (got == wire::Type::kUnwound) {
        auto r = wire::ParseUnwound(s.payload, kMaxFrames);
        if (!r.ok()) return s.Fail("malformed", r.status());
        return r;
      }
      if (asked >= MaxQuestions(kMaxFrames))
        return s.Fail("malformed", "asked for more images than an unwind needs");
      auto address = wire::ParseImageQuestion(s.payload);
      if (!address.ok()) return s.Fail("malformed", address.status());
      const UnwindMapping m = mapping_at(*address);
      pb::ImageAnswer a;
      // CFI lives in the image itself; no debug file is needed to unwind. An image that cannot
      // be handed over is answered as none: the helper waits for an answer.
      Result<uint64_t> id = Error(ErrorCode::kNotFound, "no image");
      if (m.at.image != nullptr) id = s.IdOf(m.at.image, "");
      if (s.pid == 0) return Error(ErrorCode::kUnavailable, "the symbolizer helper is gone");
      if (id.ok()) {
        a.set_image(*id);
        a.set_bias(m.at.bias);
        a.set_start(m.start);
        a.set_end(m.end);
        if (known.size() < Impl::kMaxAnswersPerProcess && m.start < m.end)
          known.push_back({m.start, m.end, m.at.bias, m.at.image});
      }
      if (!s.Send(wire::Type::kImageAnswer, a.SerializeAsString()))
        return s.Fail("died", "closed its socket");
    }
  }();
  if (unwound.ok()) return std::move(*unwound);
  // The frame-pointer chain reads only the stack copy: no image, so nothing of libdw's runs.
  ++s.stats.frame_pointer_fallbacks;
  decoders::CfiUnwinder frame_pointers;
  return frame_pointers.Unwind(
      regs, stack_start, stack, [](uint64_t) { return decoders::UnwindImage{}; }, kMaxFrames);
}

void HelperSymbolBackend::Forget(const decoders::ElfImage* image) {
  if (auto per = impl_->answers.find(image); per != impl_->answers.end()) impl_->DropAnswers(per);
  auto it = impl_->sent.find(image);
  if (it == impl_->sent.end()) return;
  const uint64_t id = it->second.id;
  impl_->sent.erase(it);
  impl_->ForgetId(id);
}

void HelperSymbolBackend::ForgetAll() {
  impl_->answers.clear();
  impl_->answer_count = 0;
  if (impl_->sent.empty()) return;
  impl_->sent.clear();
  pb::Forget f;
  f.set_all(true);
  if (impl_->pid != 0 && !impl_->Send(wire::Type::kForget, f.SerializeAsString()))
    (void)impl_->Fail("died", "closed its socket");
}

}  // namespace pathprof::pipeline
