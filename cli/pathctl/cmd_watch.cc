// pathctl watch SESSION: the online report, one hot-path table per interval (WatchHotPaths).
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <thread>

#include <google/protobuf/util/time_util.h>

#include "pathctl/client.h"

namespace pathctl {
namespace {

int RunWatch(Args& args) {
  Client client(args);
  bool json = args.Has("json");
  pathprof::v1::WatchHotPathsRequest req;
  req.mutable_query()->set_top_k(static_cast<int32_t>(args.GetInt("top", 10, 1, 1000000)));
  const double interval_s = args.GetDuration("interval", 1, 0.001, 0.01, 3600);
  *req.mutable_interval() = google::protobuf::util::TimeUtil::MillisecondsToDuration(
      static_cast<int64_t>(interval_s * 1000 + 0.5));
  long long count = args.GetInt("count", 0, 0, kMaxI64);
  auto problems = args.Problems();
  if (args.positional().size() != 1) problems.push_back("expected one SESSION id");
  if (!problems.empty()) return UsageError("watch", problems);
  req.mutable_query()->set_session(SessionNameFromUser(args.positional()[0]));
  // A stream lasts until --count or the session ends, so there is no deadline on the call:
  // --timeout bounds the wait for each update instead (the interval plus --timeout), and a
  // daemon that goes quiet for longer ends the watch with exit 8.
  grpc::ClientContext ctx;
  std::mutex mu;
  std::condition_variable cv;
  bool done = false, timed_out = false;
  auto last = std::chrono::steady_clock::now();
  const auto patience =
      std::chrono::microseconds(static_cast<long long>((interval_s + client.timeout_s()) * 1e6));
  std::thread watchdog([&] {
    std::unique_lock<std::mutex> lock(mu);
    while (!done) {
      if (cv.wait_until(lock, last + patience, [&] { return done; })) break;
      if (std::chrono::steady_clock::now() >= last + patience) {
        timed_out = true;
        ctx.TryCancel();
        break;
      }
    }
  });
  auto reader = client.stub().WatchHotPaths(&ctx, req);
  pathprof::v1::HotPaths msg;
  long long n = 0;
  while (reader->Read(&msg)) {
    {
      std::lock_guard<std::mutex> lock(mu);
      last = std::chrono::steady_clock::now();
    }
    if (json) {
      PrintJson(msg);  // one HotPaths per line
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
  {
    std::lock_guard<std::mutex> lock(mu);
    done = true;
  }
  cv.notify_all();
  watchdog.join();
  if (timed_out)
    return client.Fail("watch", grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED, "no update"));
  if (!s.ok() && s.error_code() != grpc::StatusCode::CANCELLED) return client.Fail("watch", s);
  return kExitOk;
}

PATHCTL_COMMAND(Command{
    "watch",
    "stream a session's hot paths every interval",
    "usage: pathctl watch SESSION [--interval DUR] [--top K] [--count N]\n\n"
    "  --interval DUR    time between updates: 500ms, 2s (a bare number is milliseconds;\n"
    "                    default 1s)\n"
    "  --top K           paths per update (default 10)\n"
    "  --count N         stop after N updates (default: until the session ends or Ctrl-C)\n"
    "With watch, --timeout bounds the wait for each update (after its interval).\n"
    "\n" PATHCTL_CLIENT_USAGE,
    {"json"},
    RunWatch});

}  // namespace
}  // namespace pathctl
