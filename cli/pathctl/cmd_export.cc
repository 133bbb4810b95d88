// pathctl export SESSION -o FILE.pb.gz: the session's profile in pprof format
// (`go tool pprof FILE.pb.gz`); --format bolt|perf-lbr: the branches of a session or of a
// recording as an optimizer profile.
#include <cstdio>
#include <fstream>
#include <optional>

#include "pathctl/client.h"
#include "pathctl/export_recording.h"
#include "pathprof/v1/tools.pb.h"

namespace pathctl {
namespace {

namespace dec = pathprof::decoders;

int ExportSessionBranches(Client& client, const BranchExport& e, uint32_t pid) {
  pathprof::v1::ExportBranchProfileRequest req;
  req.set_session(SessionNameFromUser(e.input));
  req.set_format(e.request.format == dec::BranchProfileFormat::kBoltFdata
                     ? pathprof::v1::BRANCH_PROFILE_FORMAT_BOLT_FDATA
                     : pathprof::v1::BRANCH_PROFILE_FORMAT_PERF_LBR);
  req.set_binary(e.request.binary);
  req.set_pid(pid);
  pathprof::v1::ExportBranchProfileResponse resp;
  auto ctx = client.Context();
  grpc::Status s = client.stub().ExportBranchProfile(ctx.get(), req, &resp);
  if (!s.ok()) return client.Fail("export", s);
  std::ofstream f(e.output, std::ios::binary);
  f.write(resp.data().data(), static_cast<std::streamsize>(resp.data().size()));
  if (!f) {
    std::fprintf(stderr, "pathctl export: cannot write %s\n", e.output.c_str());
    return kExitError;
  }
  dec::BranchProfileSummary summary;
  summary.windows = resp.windows();
  summary.binary = resp.binary();
  summary.images = resp.images();
  summary.counts = resp.counts();
  BranchExport shown = e;
  shown.request.binary = resp.binary();
  if (e.json || e.request.format == dec::BranchProfileFormat::kPerfLbr) {
    ReportBranchExport(shown, summary);
  } else {  // the per-line counters stay in the daemon; say what the client knows
    std::fprintf(stderr, "wrote %s for %s: %s.\n", e.output.c_str(), resp.binary().c_str(),
                 resp.counts().c_str());
    PrintOptimizeHint(resp.binary(), e.output);
  }
  return kExitOk;
}

struct ExportOptions {
  std::string input;       // SESSION or RECORDING.pbs
  bool recording = false;  // input is a .pbs, read here
  std::string output, format, binary;
  bool paths = false, json = false;
  long long entries = 32, pid = 0;
};

bool ExportsBranches(const ExportOptions& o) {
  return o.format == "perf-lbr" || o.format == "bolt";
}

// The flags that only go with some formats or inputs, named where given with another.
void AddCombinationProblems(Args& args, const ExportOptions& o,
                            std::vector<std::string>* problems) {
  const bool branches = ExportsBranches(o);
  if (o.format != "pprof" && !branches) problems->push_back("--format is pprof, perf-lbr or bolt");
  if (o.format == "pprof" && o.recording)
    problems->push_back("a .pbs recording exports as --format perf-lbr or bolt");
  if (!o.binary.empty() && o.format != "bolt")
    problems->push_back("--binary goes with --format bolt");
  if (args.Has("entries") && (o.format != "perf-lbr" || !o.recording))
    problems->push_back("--entries goes with --format perf-lbr of a recording");
  if (args.Has("pid") && (!branches || o.recording))
    problems->push_back("--pid goes with --format bolt or perf-lbr of a session");
  if (o.paths && o.format != "pprof") problems->push_back("--paths goes with --format pprof");
}

// The flags into `o` (after Client has read its own); the usage error's exit code where they are
// wrong.
std::optional<int> ParseExport(Args& args, ExportOptions* o) {
  o->paths = args.Has("paths");
  o->output = args.Get("output");  // -o is its short spelling (Args)
  o->json = args.Has("json");
  o->format = args.Get("format");
  o->entries = args.Int("entries");
  o->binary = args.Get("binary");
  o->pid = args.Int("pid");
  auto problems = args.Problems();
  if (args.positional().size() != 1) problems.push_back("expected one SESSION id or RECORDING.pbs");
  if (o->output.empty()) problems.push_back("-o FILE is required");
  AddCombinationProblems(args, *o, &problems);
  if (!problems.empty()) return UsageError("export", problems);
  o->input = args.positional()[0];
  return std::nullopt;
}

// `client` is null for a recording, which is read here.
int ExportBranches(Client* client, const ExportOptions& o) {
  BranchExport e{o.input, o.output, {}, o.json};
  e.request.format = o.format == "bolt" ? dec::BranchProfileFormat::kBoltFdata
                                        : dec::BranchProfileFormat::kPerfLbr;
  e.request.entries = static_cast<uint32_t>(o.entries);
  e.request.binary = o.binary;
  e.request.source = o.input;
  if (o.recording) return ExportRecording(e);
  return ExportSessionBranches(*client, e, static_cast<uint32_t>(o.pid));
}

int ExportSessionProfile(Client& client, const ExportOptions& o) {
  pathprof::v1::ExportProfileRequest req;
  req.set_session(SessionNameFromUser(o.input));
  req.set_include_paths(o.paths);
  pathprof::v1::ExportProfileResponse resp;
  auto ctx = client.Context();
  grpc::Status s = client.stub().ExportProfile(ctx.get(), req, &resp);
  if (!s.ok()) return client.Fail("export", s);
  std::ofstream f(o.output, std::ios::binary);
  f.write(resp.pprof_gzip().data(), static_cast<std::streamsize>(resp.pprof_gzip().size()));
  if (!f) {
    std::fprintf(stderr, "pathctl export: cannot write %s\n", o.output.c_str());
    return kExitError;
  }
  if (o.json) {
    pathprof::v1::ExportReport report;
    report.set_file(o.output);
    report.set_format(pathprof::v1::EXPORT_FORMAT_PPROF);
    report.set_bytes(static_cast<int64_t>(resp.pprof_gzip().size()));
    PrintJson(report);
  } else {
    std::fprintf(stderr, "wrote %s (%zu bytes); view with: go tool pprof -top %s\n",
                 o.output.c_str(), resp.pprof_gzip().size(), o.output.c_str());
  }
  return kExitOk;
}

int RunExport(Args& args) {
  ExportOptions o;
  o.recording = !args.positional().empty() && args.positional()[0].ends_with(".pbs");
  // A recording's export does not connect: its connection flags would be ignored, so they are
  // not read (Problems() reports them as not applying).
  std::optional<Client> client;
  if (!o.recording) client.emplace(args);
  if (std::optional<int> bad = ParseExport(args, &o)) return *bad;
  if (ExportsBranches(o)) return ExportBranches(client ? &*client : nullptr, o);
  return ExportSessionProfile(*client, o);
}

PATHCTL_COMMAND(Command{
    "export",
    "write a session's profile as pprof, or branches as an optimizer profile (BOLT, perf.data)",
    "usage: pathctl export SESSION -o FILE.pb.gz [--paths]\n"
    "       pathctl export --format perf-lbr RECORDING.pbs -o FILE.data [--entries N]\n"
    "       pathctl export --format bolt RECORDING.pbs -o FILE.fdata [--binary PATH]\n"
    "       pathctl export --format bolt|perf-lbr SESSION -o FILE [--binary PATH] [--pid PID]\n\n"
    "--format pprof is a session's profile (the default); perf-lbr: a recording as a perf.data\n"
    "of branch-stack samples (MMAP2 with build-ids) that perf script brstack, perf2bolt and\n"
    "create_llvm_prof read like perf record -b's. An exact trace is cut into consecutive\n"
    "samples of N taken branches (each taken branch counted once); a ptrace-burst window\n"
    "becomes one sample; bolt: BOLT's fdata for one binary (llvm-bolt -data), each branch of\n"
    "the recording counted once: an exact trace's counts are the true counts, a window's\n"
    "branches count as one LBR sample's do. A session exports its newest windows (each process\n"
    "keeps its last 65536 branches).\n"
    "A recording's export reads the file here; a session's asks the daemon (--socket ...).",
    Concat({BoolFlag("paths", "add path counts as a second sample type").Sets("include_paths"),
            WordsFlag("format", {"pprof", "perf-lbr", "bolt"}, "pprof", "what to write (see above)")
                .Sets("format"),
            IntFlag("entries", "N", "32", 1, 1024,
                    "a recording's branches per sample (the LBR depth)"),
            StringFlag("binary", "PATH", "",
                       "the binary whose fdata to write (default: the recording's first image, "
                       "the traced executable; a session's target executable)")
                .Sets("binary"),
            StringFlag("output", "FILE", "", "the file to write").Short("-o"),
            IntFlag("pid", "PID", "", 1, kMaxPid,
                    "a session's process to export (default: all of them)")
                .Short("-p")
                .Sets("pid")},
           ClientFlags()),
    RunExport});

}  // namespace
}  // namespace pathctl
