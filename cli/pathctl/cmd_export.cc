// pathctl export SESSION -o FILE.pb.gz: the session's profile in pprof format
// (`go tool pprof FILE.pb.gz`).
#include <cstdio>
#include <fstream>

#include "pathctl/client.h"
#include "pathctl/export_recording.h"
#include "pathctl/json_writer.h"

namespace pathctl {
namespace {

int RunExport(Args& args) {
  Client client(args);  // reads the connection flags (a recording's export does not connect)
  bool paths = args.Has("paths");
  const std::string out = args.Get("output");  // -o is its short spelling (Args)
  const bool json = args.Has("json");
  const std::string format = args.Get("format", "pprof");
  const long long entries = args.GetInt("entries", 32, 1, 1024);
  const std::string binary = args.Get("binary");
  const std::vector<std::string>& pos = args.positional();
  auto problems = args.Problems();
  if (pos.size() != 1) problems.push_back("expected one SESSION id or RECORDING.pbs");
  if (out.empty()) problems.push_back("-o FILE is required");
  const bool branches = format == "perf-lbr" || format == "bolt";
  if (format != "pprof" && !branches) problems.push_back("--format is pprof, perf-lbr or bolt");
  if (branches && !pos.empty() && !pos[0].ends_with(".pbs"))
    problems.push_back("--format " + format +
                       " takes a recording (.pbs from pathctl trace or pathctl bursts -o); "
                       "a daemon session's branches cannot be exported in it yet");
  if (format == "pprof" && !pos.empty() && pos[0].ends_with(".pbs"))
    problems.push_back("a .pbs recording exports as --format perf-lbr or bolt");
  if (!binary.empty() && format != "bolt") problems.push_back("--binary goes with --format bolt");
  if (args.Has("entries") && format != "perf-lbr")
    problems.push_back("--entries goes with --format perf-lbr");
  if (!problems.empty()) return UsageError("export", problems);
  const RecordingExport recording{pos[0], out, static_cast<uint32_t>(entries), json, binary};
  if (format == "perf-lbr") return ExportRecordingAsPerfLbr(recording);
  if (format == "bolt") return ExportRecordingAsBoltFdata(recording);
  pathprof::v1::ExportProfileRequest req;
  req.set_session_id(pos[0]);
  req.set_include_paths(paths);
  pathprof::v1::ExportProfileResponse resp;
  auto ctx = client.Context();
  grpc::Status s = client.stub().ExportProfile(ctx.get(), req, &resp);
  if (!s.ok()) return client.Fail("export", s);
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
    "write a session's profile as pprof, or a recording as perf.data branch stacks",
    "usage: pathctl export SESSION -o FILE.pb.gz [--paths]\n"
    "       pathctl export --format perf-lbr RECORDING.pbs -o FILE.data [--entries N]\n"
    "       pathctl export --format bolt RECORDING.pbs -o FILE.fdata [--binary PATH]\n\n"
    "  --paths        add path counts as a second sample type\n"
    "  --format F     pprof (a session's profile, the default); perf-lbr: a recording as a\n"
    "                 perf.data of branch-stack samples (MMAP2 with build-ids) that perf script\n"
    "                 -F brstack, perf2bolt and create_llvm_prof read like perf record -b. An\n"
    "                 exact trace is cut into consecutive samples of N taken branches (each\n"
    "                 taken branch counted once); a ptrace-burst window becomes one sample;\n"
    "                 bolt: BOLT's fdata for one binary (llvm-bolt -data), each branch of the\n"
    "                 recording counted once: an exact trace's counts are the true counts, a\n"
    "                 window's branches count as one LBR sample's do\n"
    "  --entries N    branches per sample (default 32, the LBR depth)\n"
    "  --binary PATH  the binary whose fdata to write (default: the recording's first image,\n"
    "                 the traced executable)\n" PATHCTL_CLIENT_USAGE,
    {"json", "paths"},
    RunExport});

}  // namespace
}  // namespace pathctl
