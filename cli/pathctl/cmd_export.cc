// pathctl export SESSION -o FILE.pb.gz: the session's profile in pprof format
// (`go tool pprof FILE.pb.gz`).
#include <cstdio>
#include <fstream>

#include "pathctl/client.h"
#include "pathctl/json_writer.h"

namespace pathctl {
namespace {

int RunExport(Args& args) {
  Client client(args);
  bool paths = args.Has("paths");
  const std::string out = args.Get("output");  // -o is its short spelling (Args)
  const bool json = args.Has("json");
  const std::vector<std::string>& pos = args.positional();
  auto problems = args.Problems();
  if (pos.size() != 1) problems.push_back("expected one SESSION id");
  if (out.empty()) problems.push_back("-o FILE is required");
  if (!problems.empty()) return UsageError("export", problems);
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
    "write a session's profile as pprof (.pb.gz)",
    "usage: pathctl export SESSION -o FILE.pb.gz [--paths]\n\n"
    "  --paths   add path counts as a second sample type\n" PATHCTL_CLIENT_USAGE,
    {"json", "paths"},
    RunExport});

}  // namespace
}  // namespace pathctl
