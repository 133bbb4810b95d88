// pathprofd_load: drives one query (GetHotPaths by default) from many concurrent connections at a
// target rate and reports latency percentiles, achieved qps, errors, and the daemon's CPU and
// memory over the run.
// usage: pathprofd_load --socket PATH --session ID [--connections 50] [--qps 500] [--seconds 20]
//                       [--top 50] [--daemon-pid PID]      (--qps 0: as fast as possible)
//                       [--query paths|methods|cpu-share] [--root FUNCTION]
// The scheduler queries (docs/schedulers.md): `methods` is GetHotMethods(top), "the hottest
// methods of this unit"; `cpu-share` is GetCallingContextTree(root_function=FUNCTION,
// max_depth=1), "the share of CPU under FUNCTION", read from the re-rooted roots' total weight.
#include <grpcpp/grpcpp.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "pathprof/api/resource_names.h"
#include "pathprof/core/procfs.h"
#include "pathprof/v1/profiler.grpc.pb.h"

namespace {

using Clock = std::chrono::steady_clock;

struct ProcSample {
  double cpu_s = 0;
  double rss_mib = 0;
};

ProcSample ReadProc(int pid) {
  ProcSample s;
  if (pid <= 0) return s;
  const pathprof::procfs::Procfs& proc = pathprof::procfs::Procfs::Host();
  auto stat = proc.ReadStat(pid);
  if (!stat.ok()) return s;
  const double hz = static_cast<double>(sysconf(_SC_CLK_TCK));
  s.cpu_s = static_cast<double>(stat->utime_ticks + stat->stime_ticks) / hz;
  auto statm_text = proc.Read(pid, "statm");
  std::istringstream statm(statm_text.ok() ? *statm_text : "");
  double size = 0, resident = 0;
  statm >> size >> resident;
  s.rss_mib = resident * static_cast<double>(sysconf(_SC_PAGESIZE)) / 1048576.0;
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  std::map<std::string, std::string> opt = {
      {"connections", "50"}, {"qps", "500"},      {"seconds", "20"},
      {"top", "50"},         {"daemon-pid", "0"}, {"socket", ""},
      {"session", ""},       {"query", "paths"},  {"root", "hot"}};
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i];
    if (k.rfind("--", 0) != 0 || !opt.count(k.substr(2))) {
      std::fprintf(stderr, "pathprofd_load: unknown option %s\n", argv[i]);
      return 2;
    }
    opt[k.substr(2)] = argv[i + 1];
  }
  if (opt["socket"].empty() || opt["session"].empty()) {
    std::fprintf(stderr,
                 "usage: pathprofd_load --socket PATH --session ID [--connections N] "
                 "[--qps Q] [--seconds S] [--top K] [--daemon-pid PID]\n");
    return 2;
  }
  const int conns = std::atoi(opt["connections"].c_str());
  const double qps = std::atof(opt["qps"].c_str());
  const double seconds = std::atof(opt["seconds"].c_str());
  const int pid = std::atoi(opt["daemon-pid"].c_str());

  std::vector<std::unique_ptr<pathprof::v1::PathProfiler::Stub>> stubs;
  for (int i = 0; i < conns; ++i) {
    grpc::ChannelArguments args;
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);  // one real connection per channel
    args.SetInt("pathprofd_load.channel", i);
    auto ch = grpc::CreateCustomChannel("unix:" + opt["socket"], grpc::InsecureChannelCredentials(),
                                        args);
    stubs.push_back(pathprof::v1::PathProfiler::NewStub(ch));
  }
  pathprof::v1::GetHotPathsRequest req;
  req.set_session(pathprof::api::SessionNameFromUser(opt["session"]));
  req.set_top_k(static_cast<uint32_t>(std::atoi(opt["top"].c_str())));

  const std::string query = opt["query"];
  if (query != "paths" && query != "methods" && query != "cpu-share") {
    std::fprintf(stderr, "pathprofd_load: --query is paths, methods or cpu-share\n");
    return 2;
  }
  pathprof::v1::GetHotMethodsRequest methods_req;
  methods_req.set_session(pathprof::api::SessionNameFromUser(opt["session"]));
  methods_req.set_top_k(req.top_k());
  pathprof::v1::GetCallingContextTreeRequest tree_req;
  tree_req.set_session(pathprof::api::SessionNameFromUser(opt["session"]));
  tree_req.set_root_function(opt["root"]);
  tree_req.set_max_depth(1);
  // One call of the chosen query; returns its status and how many entries the reply held.
  auto call = [&](pathprof::v1::PathProfiler::Stub& stub, uint64_t* entries) {
    grpc::ClientContext ctx;
    if (query == "methods") {
      pathprof::v1::HotMethods resp;
      grpc::Status st = stub.GetHotMethods(&ctx, methods_req, &resp);
      *entries = resp.methods_size();
      return st;
    }
    if (query == "cpu-share") {
      pathprof::v1::CallingContextTree resp;
      grpc::Status st = stub.GetCallingContextTree(&ctx, tree_req, &resp);
      *entries = resp.nodes_size();
      return st;
    }
    pathprof::v1::HotPaths resp;
    grpc::Status st = stub.GetHotPaths(&ctx, req, &resp);
    *entries = resp.paths_size();
    return st;
  };

  // Warm up every connection once (connection setup is not what we measure).
  for (auto& s : stubs) {
    uint64_t unused = 0;
    grpc::Status st = call(*s, &unused);
    if (!st.ok()) {
      std::fprintf(stderr, "pathprofd_load: warm-up failed: %s\n", st.error_message().c_str());
      return 1;
    }
  }

  std::vector<std::vector<double>> lat(conns);
  std::atomic<uint64_t> errors{0}, paths_seen{0};
  std::map<int, uint64_t> codes;
  std::mutex codes_mu;
  ProcSample before = ReadProc(pid);
  auto t0 = Clock::now();
  auto end =
      t0 + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  std::vector<std::thread> threads;
  for (int i = 0; i < conns; ++i) {
    threads.emplace_back([&, i] {
      // Open loop per connection: request n is due at t0 + offset + n * period, whatever
      // happened to earlier ones, so a slow daemon shows up as latency, not as fewer requests.
      double period = qps > 0 ? conns / qps : 0;
      auto next = t0 + std::chrono::duration_cast<Clock::duration>(
                           std::chrono::duration<double>(period * i / conns));
      while (Clock::now() < end) {
        if (period > 0) {
          std::this_thread::sleep_until(next);
          next +=
              std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(period));
        }
        uint64_t entries = 0;
        auto a = Clock::now();
        grpc::Status st = call(*stubs[i], &entries);
        auto b = Clock::now();
        if (!st.ok()) {
          ++errors;
          std::lock_guard<std::mutex> lock(codes_mu);
          ++codes[st.error_code()];
          continue;
        }
        paths_seen += entries;
        lat[i].push_back(std::chrono::duration<double, std::milli>(b - a).count());
      }
    });
  }
  for (auto& t : threads) t.join();
  double wall = std::chrono::duration<double>(Clock::now() - t0).count();
  ProcSample after = ReadProc(pid);
  std::vector<double> all;
  for (auto& v : lat) all.insert(all.end(), v.begin(), v.end());
  std::sort(all.begin(), all.end());
  auto pct = [&](double p) {
    return all.empty() ? 0.0 : all[std::min(all.size() - 1, static_cast<size_t>(p * all.size()))];
  };
  std::printf("connections %d, target %s qps, %.1f s: %zu ok, %llu errors", conns,
              qps > 0 ? opt["qps"].c_str() : "max", wall, all.size(),
              static_cast<unsigned long long>(errors.load()));
  for (const auto& [c, n] : codes)
    std::printf(" [code %d: %llu]", c, static_cast<unsigned long long>(n));
  std::printf(
      "\n  achieved %.0f qps; latency ms p50 %.2f p90 %.2f p99 %.2f max %.2f; "
      "%.1f entries per reply (%s)\n",
      all.size() / wall, pct(0.50), pct(0.90), pct(0.99), all.empty() ? 0 : all.back(),
      all.empty() ? 0 : static_cast<double>(paths_seen) / all.size(), query.c_str());
  if (pid > 0)
    std::printf("  daemon: %.0f%% of one core (%.2f CPU s over %.1f s), RSS %.1f -> %.1f MiB\n",
                100 * (after.cpu_s - before.cpu_s) / wall, after.cpu_s - before.cpu_s, wall,
                before.rss_mib, after.rss_mib);
  return errors > 0 ? 1 : 0;
}
