// pathctl export SESSION -o FILE.pb.gz: the session's profile in pprof format
// (`go tool pprof FILE.pb.gz`), or with --format otlp as the OTLP request a collector takes;
// --format bolt|perf-lbr: the branches of a session or of a recording as an optimizer profile.
#include <cstdio>
#include <fstream>
#include <optional>
#include <set>
#include <string>

#include "pathctl/client.h"
#include "pathctl/export_recording.h"
#include "pathprof/fleet/otlp.h"
#include "pathprof/fleet/window.h"
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

bool ExportsProfile(const ExportOptions& o) {
  return o.format == "pprof" || o.format == "otlp";
}

// The flags that only go with some formats or inputs, named where given with another.
void AddCombinationProblems(Args& args, const ExportOptions& o,
                            std::vector<std::string>* problems) {
  const bool branches = ExportsBranches(o);
  if (!ExportsProfile(o) && !branches)
    problems->push_back("--format is pprof, otlp, perf-lbr or bolt");
  if (ExportsProfile(o) && o.recording)
    problems->push_back("a .pbs recording exports as --format perf-lbr or bolt");
  if (!o.binary.empty() && o.format != "bolt")
    problems->push_back("--binary goes with --format bolt");
  if (args.Has("entries") && (o.format != "perf-lbr" || !o.recording))
    problems->push_back("--entries goes with --format perf-lbr of a recording");
  if (args.Has("pid") && (!branches || o.recording))
    problems->push_back("--pid goes with --format bolt or perf-lbr of a session");
  if (o.paths && !ExportsProfile(o))
    problems->push_back("--paths goes with --format pprof or otlp");
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

// Where the profile comes from, as continuous mode labels its windows (and the OTLP resource
// says under the semantic-convention names): the daemon's host, the executable when every
// process ran one, and the pid of a one-process session.
pathprof::fleet::WindowIdentity IdentityOf(const pathprof::v1::ExportProfileResponse& resp) {
  pathprof::fleet::WindowIdentity identity;
  identity.host = resp.host();
  std::set<std::string> executables;
  for (const pathprof::v1::Target& p : resp.processes()) executables.insert(p.executable());
  if (executables.size() == 1) identity.executable = *executables.begin();
  if (resp.processes_size() == 1) identity.pid = static_cast<uint32_t>(resp.processes(0).pid());
  return identity;
}

// The session's pprof re-encoded as the OTLP request a collector's OTLP receiver takes (what
// continuous mode pushes), for `curl --data-binary @FILE -H 'Content-Type:
// application/x-protobuf' http://COLLECTOR:4318/v1development/profiles`.
std::optional<std::string> PprofAsOtlp(const pathprof::v1::ExportProfileResponse& resp) {
  pathprof::fleet::ProfileWindow window;
  window.pprof = resp.pprof_gzip();
  window.labels = pathprof::fleet::ToLabels(IdentityOf(resp));
  pathprof::fleet::OtlpOptions options;
  options.scope_version = PATHPROF_VERSION_STRING;
  auto request = pathprof::fleet::BuildOtlpRequest(options, window);
  if (!request.ok()) {
    std::fprintf(stderr, "pathctl export: the daemon's profile does not convert to OTLP: %s\n",
                 request.status().message().c_str());
    return std::nullopt;
  }
  return request->SerializeAsString();
}

int ExportSessionProfile(Client& client, const ExportOptions& o) {
  pathprof::v1::ExportProfileRequest req;
  req.set_session(SessionNameFromUser(o.input));
  req.set_include_paths(o.paths);
  pathprof::v1::ExportProfileResponse resp;
  auto ctx = client.Context();
  grpc::Status s = client.stub().ExportProfile(ctx.get(), req, &resp);
  if (!s.ok()) return client.Fail("export", s);
  const bool otlp = o.format == "otlp";
  std::string bytes;
  if (otlp) {
    std::optional<std::string> converted = PprofAsOtlp(resp);
    if (!converted) return kExitError;
    bytes = std::move(*converted);
  } else {
    bytes = std::move(*resp.mutable_pprof_gzip());
  }
  std::ofstream f(o.output, std::ios::binary);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!f) {
    std::fprintf(stderr, "pathctl export: cannot write %s\n", o.output.c_str());
    return kExitError;
  }
  if (o.json) {
    pathprof::v1::ExportReport report;
    report.set_file(o.output);
    report.set_format(otlp ? pathprof::v1::EXPORT_FORMAT_OTLP : pathprof::v1::EXPORT_FORMAT_PPROF);
    report.set_bytes(static_cast<int64_t>(bytes.size()));
    PrintJson(report);
  } else if (otlp) {
    std::fprintf(stderr, "wrote %s (%zu bytes, OTLP profiles v%s)\n", o.output.c_str(),
                 bytes.size(), pathprof::fleet::kOtlpProtoVersion);
  } else {
    std::fprintf(stderr, "wrote %s (%zu bytes); view with: go tool pprof -top %s\n",
                 o.output.c_str(), bytes.size(), o.output.c_str());
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
    "usage: pathctl export SESSION -o FILE.pb.gz [--paths] [--format otlp]\n"
    "       pathctl export --format perf-lbr RECORDING.pbs -o FILE.data [--entries N]\n"
    "       pathctl export --format bolt RECORDING.pbs -o FILE.fdata [--binary PATH]\n"
    "       pathctl export --format bolt|perf-lbr SESSION -o FILE [--binary PATH] [--pid PID]\n\n"
    "--format pprof is a session's profile (the default); otlp: the same profile as the OTLP\n"
    "profiles request (v1.11.0, protobuf) a collector's OTLP receiver takes; perf-lbr: a\n"
    "recording as a perf.data of branch-stack samples (MMAP2 with build-ids) that perf script\n"
    "brstack, perf2bolt and create_llvm_prof read like perf record -b's. An exact trace is cut\n"
    "into consecutive samples of N taken branches (each taken branch counted once); a\n"
    "ptrace-burst window becomes one sample; bolt: BOLT's fdata for one binary (llvm-bolt\n"
    "-data), each branch of the recording counted once: an exact trace's counts are the true\n"
    "counts, a window's branches count as one LBR sample's do. A session exports its newest\n"
    "windows (each process keeps its last 65536 branches).\n"
    "A recording's export reads the file here; a session's asks the daemon (--socket ...).",
    Concat({BoolFlag("paths", "add path counts as a second sample type").Sets("include_paths"),
            WordsFlag("format", {"pprof", "otlp", "perf-lbr", "bolt"}, "pprof",
                      "what to write (see above)")
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
