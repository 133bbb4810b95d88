// pathctl export SESSION -o FILE.pb.gz: the session's profile in pprof format
// (`go tool pprof FILE.pb.gz`); --format bolt|perf-lbr: the branches of a session or of a
// recording as an optimizer profile.
#include <cstdio>
#include <fstream>
#include <optional>

#include "pathctl/client.h"
#include "pathctl/export_recording.h"
#include "pathctl/json_writer.h"

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
    std::fprintf(stderr, "wrote %s for %s: %s. Optimize with: llvm-bolt-15 %s -data %s -o OUT\n",
                 e.output.c_str(), resp.binary().c_str(), resp.counts().c_str(),
                 resp.binary().c_str(), e.output.c_str());
  }
  return kExitOk;
}

int RunExport(Args& args) {
  const std::vector<std::string>& pos = args.positional();
  const bool recording = !pos.empty() && pos[0].ends_with(".pbs");
  // A recording's export does not connect: its connection flags would be ignored, so they are
  // not read (Problems() reports them as not applying).
  std::optional<Client> client;
  if (!recording) client.emplace(args);
  bool paths = args.Has("paths");
  const std::string out = args.Get("output");  // -o is its short spelling (Args)
  const bool json = args.Has("json");
  const std::string format = args.Get("format", "pprof");
  const long long entries = args.GetInt("entries", 32, 1, 1024);
  const std::string binary = args.Get("binary");
  const long long pid = args.GetInt("pid", 0, 1, kMaxPid);
  auto problems = args.Problems();
  if (pos.size() != 1) problems.push_back("expected one SESSION id or RECORDING.pbs");
  if (out.empty()) problems.push_back("-o FILE is required");
  const bool branches = format == "perf-lbr" || format == "bolt";
  if (format != "pprof" && !branches) problems.push_back("--format is pprof, perf-lbr or bolt");
  if (format == "pprof" && recording)
    problems.push_back("a .pbs recording exports as --format perf-lbr or bolt");
  if (!binary.empty() && format != "bolt") problems.push_back("--binary goes with --format bolt");
  if (args.Has("entries") && (format != "perf-lbr" || !recording))
    problems.push_back("--entries goes with --format perf-lbr of a recording");
  if (args.Has("pid") && (!branches || recording))
    problems.push_back("--pid goes with --format bolt or perf-lbr of a session");
  if (paths && format != "pprof") problems.push_back("--paths goes with --format pprof");
  if (!problems.empty()) return UsageError("export", problems);
  if (branches) {
    BranchExport e{pos[0], out, {}, json};
    e.request.format = format == "bolt" ? dec::BranchProfileFormat::kBoltFdata
                                        : dec::BranchProfileFormat::kPerfLbr;
    e.request.entries = static_cast<uint32_t>(entries);
    e.request.binary = binary;
    e.request.source = pos[0];
    if (recording) return ExportRecording(e);
    return ExportSessionBranches(*client, e, static_cast<uint32_t>(pid));
  }
  pathprof::v1::ExportProfileRequest req;
  req.set_session(SessionNameFromUser(pos[0]));
  req.set_include_paths(paths);
  pathprof::v1::ExportProfileResponse resp;
  auto ctx = client->Context();
  grpc::Status s = client->stub().ExportProfile(ctx.get(), req, &resp);
  if (!s.ok()) return client->Fail("export", s);
  std::ofstream f(out, std::ios::binary);
  f.write(resp.pprof_gzip().data(), static_cast<std::streamsize>(resp.pprof_gzip().size()));
  if (!f) {
    std::fprintf(stderr, "pathctl export: cannot write %s\n", out.c_str());
    return kExitError;
  }
  if (json) {
    JsonWriter j;
    j.BeginObject();
    j.Key("file").String(out);
    j.Key("bytes").Uint(resp.pprof_gzip().size());
    j.Key("format").String("pprof");
    j.EndObject();
    std::printf("%s\n", j.str().c_str());
  } else {
    std::fprintf(stderr, "wrote %s (%zu bytes); view with: go tool pprof -top %s\n", out.c_str(),
                 resp.pprof_gzip().size(), out.c_str());
  }
  return kExitOk;
}

PATHCTL_COMMAND(Command{
    "export",
    "write a session's profile as pprof, or branches as an optimizer profile (BOLT, perf.data)",
    "usage: pathctl export SESSION -o FILE.pb.gz [--paths]\n"
    "       pathctl export --format perf-lbr RECORDING.pbs -o FILE.data [--entries N]\n"
    "       pathctl export --format bolt RECORDING.pbs -o FILE.fdata [--binary PATH]\n"
    "       pathctl export --format bolt|perf-lbr SESSION -o FILE [--binary PATH] [--pid PID]\n\n"
    "  --paths        add path counts as a second sample type\n"
    "  --format F     pprof (a session's profile, the default); perf-lbr: a recording as a\n"
    "                 perf.data of branch-stack samples (MMAP2 with build-ids) that perf script\n"
    "                 brstack, perf2bolt and create_llvm_prof read like perf record -b's. An\n"
    "                 exact trace is cut into consecutive samples of N taken branches (each\n"
    "                 taken branch counted once); a ptrace-burst window becomes one sample;\n"
    "                 bolt: BOLT's fdata for one binary (llvm-bolt -data), each branch of the\n"
    "                 recording counted once: an exact trace's counts are the true counts, a\n"
    "                 window's branches count as one LBR sample's do. A session exports its\n"
    "                 newest windows (each process keeps its last 65536 branches)\n"
    "  --entries N    a recording's branches per sample (default 32, the LBR depth)\n"
    "  --binary PATH  the binary whose fdata to write (default: the recording's first image,\n"
    "                 the traced executable; a session's target executable)\n"
    "  -o, --output FILE  the file to write\n"
    "  -p, --pid PID  a session's process to export (default: all of them)\n"
    "  --json         what was written, as JSON on stdout\n"
    "A recording's export reads the file here; a session's asks the daemon:\n" PATHCTL_CLIENT_USAGE,
    {"json", "paths"},
    RunExport});

}  // namespace
}  // namespace pathctl
