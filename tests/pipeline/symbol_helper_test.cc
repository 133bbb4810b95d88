// The daemon's symbolization and unwinding in pathprof-symbolizer (symbolizer_client.h): the
// same Locations and unwinds as libdw in this process, on this process's own binaries (the test
// executable with its DWARF, libc, libstdc++, libdw); the helper nobody, without capabilities,
// under seccomp; a helper an exploit takes over (debug-only fault hook) ends that request alone,
// counted, and the next request gets a new helper; every malformed answer refused by name.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "common/capable_user.h"
#include "common/helper_end.h"
#include "common/proc_status.h"
#include "common/stack_capture.h"
#include "pathprof/core/procfs.h"
#include "pathprof/decoders/address_space.h"
#include "pathprof/pipeline/symbol_service.h"
#include "pathprof/stepping/helper_process.h"
#include "pathprof/stepping/helper_sandbox.h"
#include "pathprof/stepping/helper_socket.h"
#include "symbol_wire.h"
#include "symbol_wire.pb.h"
#include "symbolizer_client.h"

extern "C" __attribute__((noinline)) int pathprof_symbol_helper_marker(int x) {
  asm volatile("" ::: "memory");
  return x * 3 + 1;
}

// A function with another inlined into it (always_inline: in every build), so that the
// comparison below covers inline frames whatever else the binaries hold.
__attribute__((always_inline)) inline int pathprof_inlined_part(int x) {
  asm volatile("" ::: "memory");
  return x * 7;
}
extern "C" __attribute__((noinline)) int pathprof_symbol_helper_inlining(int x) {
  return pathprof_inlined_part(x) + 1;
}

namespace pathprof::pipeline {
namespace {

namespace wire = symbol_wire;
using testing::ProcStatusLine;

// This test's own executable, read as an image.
Result<std::shared_ptr<const decoders::ElfImage>> ThisExecutable() {
  PATHPROF_ASSIGN_OR_RETURN(const std::string path, procfs::Procfs::Host().Executable(getpid()));
  return decoders::ElfImage::Open(path);
}

// Addresses across this process's executable file mappings: a step through each, so that every
// image contributes functions with and without DWARF, PLT entries and gaps.
std::vector<uint64_t> AddressesOfThisProcess(const decoders::AddressSpace& space, size_t per_map) {
  std::vector<uint64_t> out;
  for (const decoders::Mapping& m : space.mappings()) {
    if (!m.executable || m.IsSpecial() || m.len == 0) continue;
    const uint64_t step = std::max<uint64_t>(1, m.len / per_map) | 1;  // odd: mid-instruction too
    for (uint64_t a = m.start; a < m.end(); a += step) out.push_back(a);
  }
  return out;
}

std::string Describe(const Location& l) {
  std::string s = l.function + "+" + std::to_string(l.offset) + " " + l.file + ":" +
                  std::to_string(l.line) + " size " + std::to_string(l.function_size) + " [" +
                  l.image + " " + l.build_id + "]" + (l.name_without_symbol ? " unsymbolized" : "");
  for (const Location& i : l.inlined_by)
    s += " <- " + i.function + " " + i.file + ":" + std::to_string(i.line);
  return s;
}

// The helper's start and its identity, read while it is alive.
pid_t StartedHelper(SymbolService& symbols, const decoders::AddressSpace& space) {
  (void)symbols.Symbolize(0, space, reinterpret_cast<uint64_t>(&pathprof_symbol_helper_marker));
  return symbols.HelperPid();
}

TEST(SymbolHelper, NamesThisProcessesBinariesAsLibdwHereDoes) {
  auto space = decoders::ReadProcMaps(getpid());
  ASSERT_TRUE(space.ok()) << space.status().ToString();
  SymbolService here;
  SymbolService helper(decoders::ImageStoreOptions{}, SymbolizeIn::kHelper);
  std::vector<uint64_t> addresses = AddressesOfThisProcess(*space, 64);
  ASSERT_GT(addresses.size(), 200u);
  for (uint64_t i = 0; i < 16; ++i)
    addresses.push_back(reinterpret_cast<uint64_t>(&pathprof_symbol_helper_inlining) + i);
  size_t named = 0, with_lines = 0, inlined = 0;
  for (const bool lines : {false, true}) {
    here.SetSourceLines(lines);
    helper.SetSourceLines(lines);
    for (uint64_t a : addresses) {
      const Location want = here.Symbolize(0, *space, a);
      const Location got = helper.Symbolize(0, *space, a);
      ASSERT_EQ(Describe(got), Describe(want)) << std::hex << a;
      ASSERT_EQ(helper.FunctionStart(0, *space, a), here.FunctionStart(0, *space, a));
      named += !want.function.empty();
      with_lines += want.line != 0;
      inlined += !want.inlined_by.empty();
    }
  }
  // What the comparison covered: names, source lines and inline frames (this test's DWARF).
  std::printf("%zu addresses: %zu named, %zu with a line, %zu with inline frames\n",
              addresses.size(), named, with_lines, inlined);
  EXPECT_GT(named, addresses.size());
  EXPECT_GT(with_lines, 0u);
  EXPECT_GT(inlined, 0u);
  // Inside the inlined callee: its frame, then the function it was inlined into.
  std::string chain;
  for (uint64_t i = 0; i < 16 && chain.empty(); ++i) {
    const Location l = helper.Symbolize(
        0, *space, reinterpret_cast<uint64_t>(&pathprof_symbol_helper_inlining) + i);
    if (l.inlined_by.size() == 2)
      chain = l.inlined_by[0].function + " <- " + l.inlined_by[1].function;
  }
  EXPECT_EQ(chain, "pathprof_inlined_part(int) <- pathprof_symbol_helper_inlining");
  const Location marker =
      helper.Symbolize(0, *space, reinterpret_cast<uint64_t>(&pathprof_symbol_helper_marker) + 1);
  EXPECT_EQ(marker.function, "pathprof_symbol_helper_marker");
  EXPECT_NE(marker.file.find("symbol_helper_test.cc"), std::string::npos) << marker.file;
  const SymbolHelperStats st = helper.HelperCounts();
  EXPECT_EQ(st.starts, 1u);
  EXPECT_TRUE(st.failures.empty());
  EXPECT_GT(st.images_sent, 3u);  // the test, libc, libstdc++, libdw at least
  EXPECT_EQ(here.HelperCounts().starts, 0u);
}

__attribute__((noinline, optimize("omit-frame-pointer"))) void CaptureInHelperTest(
    testing::CapturedStack* c) {
  testing::CaptureStackHere(c);
  asm volatile("" ::: "memory");  // not a tail call
}

TEST(SymbolHelper, UnwindsThisThreadsStackAsLibdwHereDoes) {
  testing::CapturedStack c;
  CaptureInHelperTest(&c);
  ASSERT_FALSE(c.stack.empty());
  auto space = decoders::ReadProcMaps(getpid());
  ASSERT_TRUE(space.ok());
  SymbolService here;
  SymbolService helper(decoders::ImageStoreOptions{}, SymbolizeIn::kHelper);
  const decoders::UnwindResult want = here.UnwindUser(0, *space, c.regs, c.stack_start, c.stack);
  const decoders::UnwindResult got = helper.UnwindUser(0, *space, c.regs, c.stack_start, c.stack);
  ASSERT_GE(want.frames.size(), 3u);
  EXPECT_EQ(got.frames, want.frames);
  EXPECT_EQ(got.end, want.end);
  EXPECT_EQ(got.frame_pointer_steps, want.frame_pointer_steps);
  EXPECT_EQ(got.cfi_refused, want.cfi_refused);
  EXPECT_EQ(helper.Symbolize(0, *space, got.frames[1] - 1).function,
            "pathprof::pipeline::(anonymous namespace)::CaptureInHelperTest(pathprof::testing::"
            "CapturedStack*)");
  EXPECT_EQ(helper.HelperCounts().frame_pointer_fallbacks, 0u);
}

TEST(SymbolHelper, TheHelperIsNobodyWithoutCapabilitiesUnderSeccomp) {
  auto space = decoders::ReadProcMaps(getpid());
  ASSERT_TRUE(space.ok());
  SymbolService helper(decoders::ImageStoreOptions{}, SymbolizeIn::kHelper);
  const pid_t pid = StartedHelper(helper, *space);
  ASSERT_GT(pid, 0);
  EXPECT_EQ(ProcStatusLine(pid, "Seccomp"), "2");
  EXPECT_EQ(ProcStatusLine(pid, "NoNewPrivs"), "1");
  EXPECT_EQ(ProcStatusLine(pid, "CapEff"), "0000000000000000");
  EXPECT_EQ(ProcStatusLine(pid, "CapPrm"), "0000000000000000");
  if (stepping::HoldsPrivilege()) {
    uid_t nobody = 0;
    gid_t nogroup = 0;
    stepping::NobodyIdentity(&nobody, &nogroup);
    EXPECT_EQ(testing::FirstField(ProcStatusLine(pid, "Uid")), std::to_string(nobody));
    EXPECT_EQ(testing::FirstField(ProcStatusLine(pid, "Gid")), std::to_string(nogroup));
    EXPECT_EQ(ProcStatusLine(pid, "Groups"), "");
  }
}

// The packaged daemon is no root but `pathprof` with ambient capabilities: its helper keeps
// none of them and becomes nobody; such a daemon (no CAP_KILL) cannot kill it, so a hung request
// is ended by the helper's own deadline (reply bound 1.5 s: the helper's is 3 s).
TEST(SymbolHelper, AHelperOfANonRootProcessWithCapabilitiesHasNoneAndEndsItsOwnHang) {
#ifdef NDEBUG
  GTEST_SKIP() << "the helper's fault hook exists in builds with assertions only";
#endif
  if (geteuid() != 0) GTEST_SKIP() << "making a non-root process with capabilities needs root";
  constexpr uid_t kUser = 65533;
  const std::string got =
      testing::InChildAsCapableUser(kUser, {CAP_DAC_READ_SEARCH, CAP_SETUID, CAP_SETGID}, [&] {
        std::string out = stepping::HoldsPrivilege() ? "privileged" : "plain";
        auto image = ThisExecutable();
        if (!image.ok()) return out + " [" + image.status().message() + "]";
        SymbolHelperOptions options;
        options.reply_timeout_ms = 1'500;
        HelperSymbolBackend backend(options);
        out += backend.Symbolize(*image, 0x1000, "", false).ok() ? " answered" : " refused";
        const pid_t helper = backend.HelperPid();
        out += " uid " + testing::FirstField(ProcStatusLine(helper, "Uid")) + " CapEff " +
               ProcStatusLine(helper, "CapEff") + " CapAmb " + ProcStatusLine(helper, "CapAmb") +
               " Seccomp " + ProcStatusLine(helper, "Seccomp");
        // A request that hangs, to a second helper started with the hook on: not killable from
        // here, so the helper's alarm ends it.
        setenv("PATHPROF_SYMBOLIZER_FAULT", "hang", 1);
        HelperSymbolBackend hung(options);
        std::string failure;
        std::thread request([&] {
          auto r = hung.Symbolize(*image, 0x2000, "", false);
          failure = r.ok() ? "[answered]"
                           : "timeout " + std::to_string(hung.HelperStats().failures["timeout"]);
        });
        const pid_t second =
            testing::ChildNamed(getpid(), "pathprof-symbol", std::chrono::seconds(5), helper);
        request.join();
        unsetenv("PATHPROF_SYMBOLIZER_FAULT");
        out += " " + failure;
        // It ends within its own deadline (3 s after the request): a zombie or gone.
        std::string state = second > 0 ? "running" : "not found";
        for (int i = 0; i < 60 && state == "running"; ++i) {
          auto stat = procfs::Procfs::Host().Read(second, "stat", 4096);
          if (!stat.ok() || stat->find(") Z") != std::string::npos)
            state = "ended";
          else
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
        }
        return out + " " + state;
      });
  EXPECT_EQ(got,
            "privileged answered uid 65534 CapEff 0000000000000000 CapAmb 0000000000000000 "
            "Seccomp 2 timeout 1 ended");
}

// An exploit of libdw in the helper ("write": a wild write, "exec": a shell, which the filter
// kills): that request gets no name, the failure is counted, and the next request starts a
// new helper that names the address.
void AnExploitEndsOneRequest(const char* fault, const char* reason) {
  auto space = decoders::ReadProcMaps(getpid());
  ASSERT_TRUE(space.ok());
  const uint64_t marker = reinterpret_cast<uint64_t>(&pathprof_symbol_helper_marker) + 1;
  SymbolService helper(decoders::ImageStoreOptions{}, SymbolizeIn::kHelper);
  setenv("PATHPROF_SYMBOLIZER_FAULT", fault, 1);
  const Location lost = helper.Symbolize(0, *space, marker);
  unsetenv("PATHPROF_SYMBOLIZER_FAULT");
  EXPECT_EQ(lost.function, "");
  EXPECT_NE(lost.image, "");  // the mapping is the daemon's to know
  SymbolHelperStats st = helper.HelperCounts();
  EXPECT_EQ(st.failures[reason], 1u);
  EXPECT_EQ(helper.HelperPid(), 0);
  const Location again = helper.Symbolize(0, *space, marker);
  EXPECT_EQ(again.function, "pathprof_symbol_helper_marker");
  st = helper.HelperCounts();
  EXPECT_EQ(st.starts, 2u);
  EXPECT_EQ(st.failures.size(), 1u);
}

TEST(SymbolHelper, AWildWriteEndsOneRequestAndTheNextHelperAnswers) {
#ifdef NDEBUG
  GTEST_SKIP() << "the helper's fault hook exists in builds with assertions only";
#endif
  AnExploitEndsOneRequest("write", "died");
}

TEST(SymbolHelper, AnExecIsKilledByTheFilter) {
#ifdef NDEBUG
  GTEST_SKIP() << "the helper's fault hook exists in builds with assertions only";
#endif
  AnExploitEndsOneRequest("exec", "died");
}

// A helper that hangs is killed at the reply bound, and says so.
TEST(SymbolHelper, AHangIsBoundedByTheReplyTimeout) {
#ifdef NDEBUG
  GTEST_SKIP() << "the helper's fault hook exists in builds with assertions only";
#endif
  SymbolHelperOptions options;
  options.reply_timeout_ms = 1'500;
  HelperSymbolBackend backend(options);
  auto image = ThisExecutable();
  ASSERT_TRUE(image.ok());
  setenv("PATHPROF_SYMBOLIZER_FAULT", "hang", 1);
  const auto start = std::chrono::steady_clock::now();
  auto r = backend.Symbolize(*image, 0x1000, "", false);
  unsetenv("PATHPROF_SYMBOLIZER_FAULT");
  const double waited =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kUnavailable);
  EXPECT_NE(r.status().message().find("did not answer within 1500 ms"), std::string::npos)
      << r.status().message();
  EXPECT_GE(waited, 1.4);
  EXPECT_LT(waited, 10.0);
  EXPECT_EQ(backend.HelperStats().failures.at("timeout"), 1u);
  EXPECT_EQ(backend.HelperPid(), 0);
}

// An unwind the helper fails is done by the frame-pointer chain here, which reads only the
// stack copy: the leaf at least, the same first frame as the helper's unwind.
TEST(SymbolHelper, AnUnwindTheHelperFailsFallsBackToFramePointers) {
#ifdef NDEBUG
  GTEST_SKIP() << "the helper's fault hook exists in builds with assertions only";
#endif
  testing::CapturedStack c;
  CaptureInHelperTest(&c);
  ASSERT_FALSE(c.stack.empty());
  auto space = decoders::ReadProcMaps(getpid());
  ASSERT_TRUE(space.ok());
  SymbolService helper(decoders::ImageStoreOptions{}, SymbolizeIn::kHelper);
  setenv("PATHPROF_SYMBOLIZER_FAULT", "write", 1);
  const decoders::UnwindResult r = helper.UnwindUser(0, *space, c.regs, c.stack_start, c.stack);
  unsetenv("PATHPROF_SYMBOLIZER_FAULT");
  ASSERT_FALSE(r.frames.empty());
  EXPECT_EQ(r.frames[0], c.regs[decoders::kDwarfRip]);
  const SymbolHelperStats st = helper.HelperCounts();
  EXPECT_EQ(st.frame_pointer_fallbacks, 1u);
  EXPECT_EQ(st.failures.at("died"), 1u);
  // The next unwind has a helper again, and its CFI.
  const decoders::UnwindResult again = helper.UnwindUser(0, *space, c.regs, c.stack_start, c.stack);
  EXPECT_GE(again.frames.size(), 3u);
  EXPECT_EQ(helper.HelperCounts().frame_pointer_fallbacks, 1u);
}

// A request that hangs ends the helper by itself at its deadline (SIGALRM), whoever could or
// could not kill it: the packaged daemon (no root, no CAP_KILL) cannot signal a helper that
// became nobody.
TEST(SymbolHelper, AHungRequestEndsTheHelperAtItsOwnDeadline) {
#ifdef NDEBUG
  GTEST_SKIP() << "the helper's fault hook exists in builds with assertions only";
#endif
  auto path = SymbolizerHelperPath();
  ASSERT_TRUE(path.ok()) << path.status().ToString();
  int sock = -1;
  auto pid = testing::SpawnHangingHelper(*path, "PATHPROF_SYMBOLIZER_FAULT",
                                         {"--request-deadline-s", "1"}, &sock);
  ASSERT_TRUE(pid.ok()) << pid.status().ToString();
  stepping::MessageHeader h{};
  std::vector<uint8_t> payload;
  int fd = -1;
  ASSERT_EQ(stepping::ReceiveMessage(sock, 10'000, wire::kMaxPayload, &h, &payload, &fd),
            stepping::ReceiveResult::kMessage);
  EXPECT_EQ(h.type, static_cast<uint32_t>(wire::Type::kReady));
  wire::pb::SymbolizeRequest q;
  q.set_image(1);
  const std::string bytes = q.SerializeAsString();
  const auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(stepping::SendMessage(sock, static_cast<uint32_t>(wire::Type::kSymbolize),
                                    bytes.data(), static_cast<uint32_t>(bytes.size())));
  // No kill from here: the helper must end by itself.
  const testing::HelperEnd end = testing::WaitForHelperEnd(*pid, start);
  close(sock);
  ASSERT_TRUE(end.reaped);
  EXPECT_EQ(end.signal, SIGALRM) << end.description;
  EXPECT_GE(end.seconds, 0.9);
  EXPECT_LT(end.seconds, 5.0);
}

// A helper that fails every request is started at most kMaxStartsPerMinute times a minute.
TEST(SymbolHelper, AHelperThatKeepsDyingIsNotStartedForEveryRequest) {
#ifdef NDEBUG
  GTEST_SKIP() << "the helper's fault hook exists in builds with assertions only";
#endif
  auto image = ThisExecutable();
  ASSERT_TRUE(image.ok());
  HelperSymbolBackend backend(SymbolHelperOptions{});
  setenv("PATHPROF_SYMBOLIZER_FAULT", "write", 1);
  for (int i = 0; i < kMaxStartsPerMinute + 3; ++i)
    EXPECT_FALSE(backend.Symbolize(*image, 0x1000, "", false).ok());
  unsetenv("PATHPROF_SYMBOLIZER_FAULT");
  const SymbolHelperStats st = backend.HelperStats();
  EXPECT_EQ(st.starts, static_cast<uint64_t>(kMaxStartsPerMinute));
  EXPECT_EQ(st.failures.at("died"), static_cast<uint64_t>(kMaxStartsPerMinute));
  EXPECT_EQ(st.failures.at("restart_refused"), 3u);
}

// What a helper taken over could send, each refused naming what was wrong.
TEST(SymbolWire, MalformedAnswersAreRefused) {
  auto symbol = [](const std::function<void(wire::pb::Symbol*)>& fill) {
    wire::pb::Symbol s;
    fill(&s);
    const std::string bytes = s.SerializeAsString();
    Result<decoders::Symbolization> answer = Error(ErrorCode::kInternal, "unset");
    const Status st = wire::ParseSymbol(
        std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()),
        &answer);
    return st.ok() ? std::string("ok") : st.message();
  };
  EXPECT_EQ(symbol([](wire::pb::Symbol* s) { s->set_function("f"); }), "ok");
  EXPECT_NE(symbol([](wire::pb::Symbol* s) { s->set_error_code(99); }).find("past the table"),
            std::string::npos);
  EXPECT_NE(symbol([](wire::pb::Symbol* s) { s->set_line(-1); }).find("negative line"),
            std::string::npos);
  EXPECT_NE(symbol([](wire::pb::Symbol* s) {
              for (size_t i = 0; i <= wire::kMaxSourceFrames; ++i) s->add_frames();
            }).find("inline frames"),
            std::string::npos);
  EXPECT_NE(symbol([](wire::pb::Symbol* s) {
              s->set_function(std::string(wire::kMaxText + 1, 'a'));
            }).find("over 64 KiB"),
            std::string::npos);
  const uint8_t garbage[] = {0xff, 0xff, 0xff};
  Result<decoders::Symbolization> unused = Error(ErrorCode::kInternal, "unset");
  EXPECT_NE(wire::ParseSymbol(garbage, &unused).message().find("does not parse"),
            std::string::npos);

  auto unwound = [](const std::function<void(wire::pb::Unwound*)>& fill) {
    wire::pb::Unwound u;
    fill(&u);
    const std::string bytes = u.SerializeAsString();
    auto r = wire::ParseUnwound(
        std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()), 8);
    return r.ok() ? std::string("ok") : r.status().message();
  };
  EXPECT_EQ(unwound([](wire::pb::Unwound* u) { u->add_frames(1); }), "ok");
  EXPECT_NE(unwound([](wire::pb::Unwound* u) {
              for (int i = 0; i < 9; ++i) u->add_frames(i);
            }).find("more than the 8 asked for"),
            std::string::npos);
  EXPECT_NE(unwound([](wire::pb::Unwound* u) { u->set_end(77); }).find("past the table"),
            std::string::npos);
  EXPECT_NE(unwound([](wire::pb::Unwound* u) {
              u->set_frame_pointer_steps(3);
            }).find("more frame-pointer steps than frames"),
            std::string::npos);
  EXPECT_NE(
      unwound([](wire::pb::Unwound* u) { u->add_cfi_refused("Bad Name\n"); }).find("refusal name"),
      std::string::npos);
}

}  // namespace
}  // namespace pathprof::pipeline
