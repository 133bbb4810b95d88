// pathctl import FILE: a daemon session over a recording, queried like any other session.
#include <cstdio>
#include <filesystem>

#include "pathctl/client.h"

namespace pathctl {
namespace {

int RunImport(Args& args) {
  Client client(args);
  const bool json = args.Has("json");
  auto problems = args.Problems();
  if (args.positional().size() != 1) problems.push_back("expected one RECORDING (perf.data, .pbs)");
  if (!problems.empty()) return UsageError("import", problems);
  pathprof::v1::ImportRecordingRequest req;
  // The daemon does not share our working directory: a relative path is made absolute here.
  std::error_code ec;
  const std::filesystem::path absolute = std::filesystem::absolute(args.positional()[0], ec);
  req.set_path(ec ? args.positional()[0] : absolute.string());
  pathprof::v1::Session resp;
  auto ctx = client.Context();
  grpc::Status s = client.stub().ImportRecording(ctx.get(), req, &resp);
  if (!s.ok()) return client.Fail("import", s);
  if (json)
    PrintJson(resp);
  else
    std::printf("%s\n", SessionIdForDisplay(resp.name()).c_str());
  return kExitOk;
}

PATHCTL_COMMAND(Command{
    "import", "a daemon session over a recording (perf.data or .pbs): prints its id",
    "usage: pathctl import RECORDING\n\n"
    "The daemon reads RECORDING (a perf.data with LBR or Intel PT, or a .pbs from pathctl trace)\n"
    "on its own host and keeps it as an ended session: paths, subpaths, tree, calls and methods\n"
    "then answer it as they answer `pathctl paths RECORDING` here. Admins only (the daemon\n"
    "reads the file and the binaries it names with its own privileges).\n"
    "(--json prints the session as JSON, else its id)",
    ClientFlags(), RunImport});

}  // namespace
}  // namespace pathctl
