// pathctl watch SESSION: the online report, one hot-path table per interval (WatchHotPaths).
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <optional>
#include <thread>

#include <google/protobuf/util/time_util.h>

#include "pathctl/client.h"

namespace pathctl {
namespace {

struct WatchOptions {
  pathprof::v1::WatchHotPathsRequest request;
  double interval_s = 1;
  long long count = 0;  // 0: until the session ends
  bool json = false;
};

// The flags into `w` (after Client has read its own); the usage error's exit code where they are
// wrong.
std::optional<int> ParseWatch(Args& args, WatchOptions* w) {
  w->json = args.Has("json");
  w->request.mutable_query()->set_top_k(static_cast<int32_t>(args.Int("top")));
  w->interval_s = args.Seconds("interval");
  *w->request.mutable_interval() = google::protobuf::util::TimeUtil::MillisecondsToDuration(
      static_cast<int64_t>(w->interval_s * 1000 + 0.5));
  w->count = args.Int("count");
  auto problems = args.Problems();
  if (args.positional().size() != 1) problems.push_back("expected one SESSION id");
  if (!problems.empty()) return UsageError("watch", problems);
  w->request.mutable_query()->set_session(SessionNameFromUser(args.positional()[0]));
  return std::nullopt;
}

// A stream lasts until --count or the session ends, so there is no deadline on the call:
// --timeout bounds the wait for each update instead (the interval plus --timeout), and a
// daemon that goes quiet for longer has the call cancelled (Stop() then says so).
class UpdateWatchdog {
 public:
  UpdateWatchdog(grpc::ClientContext* ctx, std::chrono::microseconds patience)
      : ctx_(ctx), patience_(patience), last_(std::chrono::steady_clock::now()) {
    thread_ = std::thread([this] { Watch(); });
  }
  ~UpdateWatchdog() {
    if (thread_.joinable()) Stop();
  }
  UpdateWatchdog(const UpdateWatchdog&) = delete;
  UpdateWatchdog& operator=(const UpdateWatchdog&) = delete;

  void UpdateArrived() {
    std::lock_guard<std::mutex> lock(mu_);
    last_ = std::chrono::steady_clock::now();
  }
  // True where the watchdog gave up on the daemon.
  bool Stop() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      done_ = true;
    }
    cv_.notify_all();
    thread_.join();
    return timed_out_;
  }

 private:
  void Watch() {
    std::unique_lock<std::mutex> lock(mu_);
    while (!done_) {
      if (cv_.wait_until(lock, last_ + patience_, [&] { return done_; })) break;
      if (std::chrono::steady_clock::now() >= last_ + patience_) {
        timed_out_ = true;
        ctx_->TryCancel();
        break;
      }
    }
  }

  grpc::ClientContext* ctx_;
  const std::chrono::microseconds patience_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false, timed_out_ = false;
  std::chrono::steady_clock::time_point last_;
  std::thread thread_;
};

// Prints each update as it comes, until --count of them or the stream's end.
grpc::Status PrintUpdates(Client& client, const WatchOptions& w, grpc::ClientContext* ctx,
                          UpdateWatchdog* watchdog) {
  auto reader = client.stub().WatchHotPaths(ctx, w.request);
  pathprof::v1::HotPaths msg;
  long long n = 0;
  while (reader->Read(&msg)) {
    watchdog->UpdateArrived();
    if (w.json) {
      PrintJson(msg);  // one HotPaths per line
    } else {
      PrintHotPaths(msg);
      std::printf("\n");
    }
    std::fflush(stdout);
    if (w.count > 0 && ++n >= w.count) {
      ctx->TryCancel();
      break;
    }
  }
  return reader->Finish();
}

int RunWatch(Args& args) {
  Client client(args);
  WatchOptions w;
  if (std::optional<int> bad = ParseWatch(args, &w)) return *bad;
  grpc::ClientContext ctx;
  UpdateWatchdog watchdog(
      &ctx,
      std::chrono::microseconds(static_cast<long long>((w.interval_s + client.timeout_s()) * 1e6)));
  const grpc::Status s = PrintUpdates(client, w, &ctx, &watchdog);
  if (watchdog.Stop())
    return client.Fail("watch", grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED, "no update"));
  if (!s.ok() && s.error_code() != grpc::StatusCode::CANCELLED) return client.Fail("watch", s);
  return kExitOk;
}

PATHCTL_COMMAND(Command{
    "watch", "stream a session's hot paths every interval",
    "usage: pathctl watch SESSION [--interval DUR] [--top K] [--count N]\n\n"
    "With watch, --timeout bounds the wait for each update (after its interval).",
    Concat(
        {DurationFlag("interval", "1s", 0.001, 0.01, 3600, "time between updates").Sets("interval"),
         IntFlag("top", "K", "10", 1, 1000000, "paths per update").Sets("query.top_k"),
         IntFlag("count", "N", "", 0, kMaxI64,
                 "stop after N updates (default: until the session ends or Ctrl-C)")},
        ClientFlags()),
    RunWatch});

}  // namespace
}  // namespace pathctl
