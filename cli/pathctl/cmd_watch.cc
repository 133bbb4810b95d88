// pathctl watch SESSION: the online report, one hot-path table per interval (WatchHotPaths).
#include <cstdio>

#include "pathctl/client.h"

namespace pathctl {
namespace {

int RunWatch(Args& args) {
  Client client(args);
  bool json = args.Has("json");
  pathprof::v1::WatchHotPathsRequest req;
  req.mutable_query()->set_top_k(static_cast<uint32_t>(args.GetInt("top", 10, 1, 1000000)));
  req.set_interval_ms(static_cast<uint32_t>(args.GetInt("interval", 1000, 10, 3600000)));
  long long count = args.GetInt("count", 0, 0, kMaxI64);
  auto problems = args.Problems();
  if (args.positional().size() != 1) problems.push_back("expected one SESSION id");
  if (!problems.empty()) return UsageError("watch", problems);
  req.mutable_query()->set_session_id(args.positional()[0]);
  grpc::ClientContext ctx;  // no deadline: a stream lasts until --count or the session ends
  auto reader = client.stub().WatchHotPaths(&ctx, req);
  pathprof::v1::HotPaths msg;
  long long n = 0;
  while (reader->Read(&msg)) {
    if (json) {
      JsonWriter w;
      HotPathsJson(w, msg);
      std::printf("%s\n", w.str().c_str());
    } else {
      HotPathsTable(msg);
      std::printf("\n");
    }
    std::fflush(stdout);
    if (count > 0 && ++n >= count) {
      ctx.TryCancel();
      break;
    }
  }
  grpc::Status s = reader->Finish();
  if (!s.ok() && s.error_code() != grpc::StatusCode::CANCELLED) return client.Fail("watch", s);
  return kExitOk;
}

PATHCTL_COMMAND(Command{
    "watch",
    "stream a session's hot paths every interval",
    "usage: pathctl watch SESSION [--interval MS] [--top K] [--count N]\n\n" PATHCTL_CLIENT_USAGE,
    {"json"},
    RunWatch});

}  // namespace
}  // namespace pathctl
