// pathctl residual SESSION --baseline NAME: paths seen now that the baseline never saw
// (--save stores the current paths as that baseline instead).
#include <cstdio>

#include "pathctl/client.h"

namespace pathctl {
namespace {

int RunResidual(Args& args) {
  Client client(args);
  bool json = args.Has("json"), save = args.Has("save");
  std::string baseline = args.Get("baseline");
  // --save stores every path: --top would be ignored, so it is left unread and reported.
  const int32_t top = save ? 0 : static_cast<int32_t>(args.Int("top"));
  auto problems = args.Problems();
  if (args.positional().size() != 1) problems.push_back("expected one SESSION id");
  if (baseline.empty()) problems.push_back("--baseline NAME is required");
  if (!problems.empty()) return UsageError("residual", problems);
  const std::string session = SessionNameFromUser(args.positional()[0]);
  auto ctx = client.Context();
  if (save) {
    pathprof::v1::SaveBaselineRequest req;
    req.set_session(session);
    req.set_name(baseline);
    pathprof::v1::SaveBaselineResponse resp;
    grpc::Status s = client.stub().SaveBaseline(ctx.get(), req, &resp);
    if (!s.ok()) return client.Fail("residual", s);
    if (json)
      PrintJson(resp);
    else
      std::printf("baseline %s saved: %llu paths\n", baseline.c_str(),
                  static_cast<unsigned long long>(resp.paths()));
    return kExitOk;
  }
  pathprof::v1::GetResidualPathsRequest req;
  req.set_session(session);
  req.set_baseline(baseline);
  req.set_top_k(top);
  pathprof::v1::ResidualPaths resp;
  grpc::Status s = client.stub().GetResidualPaths(ctx.get(), req, &resp);
  if (!s.ok()) return client.Fail("residual", s);
  if (json) {
    PrintJson(resp);
  } else {
    pathprof::v1::HotPaths as_paths;
    as_paths.set_session(resp.session());
    *as_paths.mutable_paths() = resp.residual();
    as_paths.set_paths_distinct(resp.residual_size());
    std::printf("%llu paths also in baseline %s; new paths:\n",
                static_cast<unsigned long long>(resp.known()), baseline.c_str());
    PrintHotPaths(as_paths, "residual vs " + baseline);
  }
  return resp.residual_size() ? kExitOk : kExitNoData;
}

PATHCTL_COMMAND(Command{
    "residual", "paths seen now that a saved baseline never saw",
    "usage: pathctl residual SESSION --baseline NAME [--top K]\n"
    "       pathctl residual SESSION --baseline NAME --save",
    Concat({StringFlag("baseline", "NAME", "",
                       "the saved baseline to compare with (or to save, with --save)")
                .Sets("baseline"),
            IntFlag("top", "K", "20", 1, 1000000, "new paths to list").Sets("top_k"),
            BoolFlag("save", "store the session's current paths as baseline NAME")},
           ClientFlags()),
    RunResidual});

}  // namespace
}  // namespace pathctl
