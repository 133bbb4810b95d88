#include "recording_import.h"

#include <fcntl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <variant>

#include "import_wire.h"
#include "pathprof/stepping/helper_process.h"
#include "pathprof/stepping/helper_sandbox.h"
#include "recording_decode.h"

namespace pathprof::pipeline {
namespace {

namespace wire = import_wire;

// How long the helper has to exit once it sent its summary (or once its pipe is closed).
constexpr int kExitTimeoutMs = 5'000;

// Reads the helper's frames into `sink` until its summary: OK and the summary merged into
// `out`, or what went wrong.
Status ReadFrames(int pipe, int silence_ms, StoreSink* sink, DecodeSummary* out) {
  wire::Reader reader(pipe);
  bool begun = false;
  for (;;) {
    wire::Frame frame;
    PATHPROF_ASSIGN_OR_RETURN(const bool more, reader.Next(silence_ms, &frame));
    if (!more) return Error(ErrorCode::kInternal, "the import helper ended without a summary");
    if (auto* begin = std::get_if<wire::BeginFrame>(&frame)) {
      if (begun) return Error(ErrorCode::kCorrupt, "the import helper began twice");
      begun = true;
      PATHPROF_RETURN_IF_ERROR(sink->Begin(begin->windows, begin->processes));
    } else if (auto* batch = std::get_if<BranchBatch>(&frame)) {
      if (!begun) return Error(ErrorCode::kCorrupt, "the import helper sent a batch first");
      PATHPROF_RETURN_IF_ERROR(sink->Add(*batch));
    } else if (auto* summary = std::get_if<DecodeSummary>(&frame)) {
      MergeDecodeSummary(std::move(*summary), out);
      // Nothing may follow: the helper must close its pipe now.
      auto after = reader.Next(kExitTimeoutMs, &frame);
      if (!after.ok() || *after)
        return Error(ErrorCode::kCorrupt, "the import helper did not end after its summary");
      return Status::Ok();
    } else {
      return std::get<Status>(frame);  // the decode's own failure, its message naming the file
    }
  }
}

}  // namespace

Result<std::string> ImportHelperPath() {
  stepping::HelperLocation where;
  where.name = "pathprof-import";
  where.env_var = "PATHPROF_IMPORT";
#ifdef PATHPROF_IMPORT_INSTALL_PATH
  where.install_path = PATHPROF_IMPORT_INSTALL_PATH;
#endif
#ifdef PATHPROF_IMPORT_BUILD_PATH
  where.build_path = PATHPROF_IMPORT_BUILD_PATH;
#endif
  where.purpose = "the import decoder";
  return stepping::FindHelper(where);
}

Result<AnalyzeResult> AnalyzeFileInHelper(const std::string& path, const AnalyzeOptions& options) {
  const decoders::FileCredentials requester = *options.decode_in_helper_for;
  // What the helper is told: the binary directory and its deadline. The daemon's imports set
  // nothing else; refuse what would be dropped on the way rather than ignore it.
  if (options.pbs_via_pt)
    return Error(ErrorCode::kInvalidArgument,
                 "the import helper decodes a recording as recorded (no --via-pt)");
  PATHPROF_ASSIGN_OR_RETURN(const std::string helper, ImportHelperPath());
  // The requester's rights decide what may be imported; our own where we are the requester.
  std::optional<decoders::FileCredentials> open_as;
  if (requester.uid != geteuid()) open_as = requester;
  PATHPROF_ASSIGN_OR_RETURN(decoders::UniqueFd file, decoders::OpenFileAs(path, open_as));
  // Opened non-blocking (a FIFO cannot block the open); the helper reads it blocking, bounded
  // by the silence below.
  if (const int flags = fcntl(file.get(), F_GETFL); flags >= 0)
    (void)fcntl(file.get(), F_SETFL, flags & ~O_NONBLOCK);
  int ends[2];
  if (pipe2(ends, O_CLOEXEC) != 0)
    return Error(ErrorCode::kResourceExhausted,
                 std::string("import: cannot make a pipe: ") + std::strerror(errno));
  decoders::UniqueFd read_end(ends[0]), write_end(ends[1]);
  std::vector<std::string> args;
  // Root, or a daemon holding capabilities (the packaged one: `pathprof` with ambient ones, which
  // the exec would pass on), gives the helper the requester's identity to drop to, nobody's for
  // root; an unprivileged caller's helper stays that caller and is sandboxed all the same.
  if (stepping::HoldsPrivilege()) {
    decoders::FileCredentials as = requester;
    if (as.uid == 0) stepping::NobodyIdentity(&as.uid, &as.gid);
    args = {"--uid", std::to_string(as.uid), "--gid", std::to_string(as.gid)};
  }
  args.insert(args.end(), {"--deadline-ms", std::to_string(options.helper_deadline_ms)});
  if (!options.binary_dir.empty()) args.insert(args.end(), {"--binary-dir", options.binary_dir});
  args.push_back(path);
  auto pid = stepping::SpawnHelper(helper, args, {file.get(), write_end.get()});
  if (!pid.ok()) return WithContext(pid.status(), "import helper");
  write_end = decoders::UniqueFd();  // the helper's end: EOF here once it exits
  const decoders::UniqueFd pidfd(static_cast<int>(syscall(SYS_pidfd_open, *pid, 0)));

  AnalyzeResult out = EmptyAnalyzeResult(options);
  Status read = [&] {
    StoreSink sink(options, &out);
    return ReadFrames(read_end.get(), options.helper_silence_ms, &sink, &out.decode);
  }();
  read_end = decoders::UniqueFd();  // a helper still writing sees EPIPE and exits
  const int status = stepping::ReapHelper(*pid, pidfd.get(), read.ok() ? kExitTimeoutMs : 0);
  if (read.ok() && (!WIFEXITED(status) || WEXITSTATUS(status) != 0))
    read = Error(ErrorCode::kInternal, "the import helper failed after its summary");
  if (!read.ok())
    return Status(read.code(), "import of " + path + ": " + read.message() + " (the helper " +
                                   stepping::DescribeHelperExit(status) + ")");
  return out;
}

}  // namespace pathprof::pipeline
