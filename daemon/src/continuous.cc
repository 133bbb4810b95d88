#include "pathprof/daemon/continuous.h"

#include <malloc.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <set>

#include "pathprof/collectors/shared_stack_sampler.h"
#include "pathprof/core/pbs.h"
#include "pathprof/daemon/log.h"
#include "pathprof/decoders/elf_image.h"
#include "pathprof/fleet/otlp.h"
#include "pathprof/fleet/parca.h"
#include "pathprof/fleet/pyroscope.h"
#include "pathprof/pipeline/session.h"

namespace pathprof::daemon {
namespace {

// The snapshot rate per CPU at most (the rate the snapshot source takes by default).
constexpr int kMaxSnapshotHz = 999;

int64_t NowNanos() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

void Finish(Series& s, const std::vector<const ProcessEntry*>& members, const std::string& host) {
  std::set<std::string> exes, cgroups;
  for (const ProcessEntry* p : members) {
    s.pids.push_back(p->pid);
    exes.insert(p->executable);
    cgroups.insert(p->cgroup);
  }
  s.identity.host = host;
  s.identity.unit = s.match.unit;
  s.identity.cgroup = !s.match.cgroup.empty() ? s.match.cgroup
                      : cgroups.size() == 1   ? *cgroups.begin()
                                              : "";
  if (exes.size() == 1) s.identity.executable = *exes.begin();
}

// The executable and the cgroup the processes that joined a window's session all had, each ""
// where they differ (or none joined); a cgroup series keeps its own cgroup. Every series joins
// its processes on their first sample, whatever the source, so the window's processes are
// these, not those of its start (which ResolveSeries saw).
void LabelFromJoined(const pipeline::Session& session, Series& s) {
  std::set<std::string> exes, cgroups;
  for (const auto& store : session.Stores()) {
    const pipeline::TargetInfo info = store->Info();
    exes.insert(info.executable);
    cgroups.insert(info.cgroup);
  }
  s.identity.executable = exes.size() == 1 ? *exes.begin() : "";
  if (s.match.cgroup.empty()) s.identity.cgroup = cgroups.size() == 1 ? *cgroups.begin() : "";
}

// A backend's Create result as the pusher takes it.
template <typename SinkType>
Result<std::unique_ptr<fleet::Sink>> AsSink(Result<std::unique_ptr<SinkType>> sink) {
  if (!sink.ok()) return sink.status();
  return std::unique_ptr<fleet::Sink>(std::move(sink.value()));
}

}  // namespace

std::vector<Series> ResolveSeries(const ContinuousConfig& config,
                                  const std::vector<ProcessEntry>& processes,
                                  const std::string& host) {
  std::vector<Series> out;
  auto add = [&](Series s) {
    std::vector<const ProcessEntry*> members;
    for (const ProcessEntry& p : processes)
      if (s.match.Matches(p.executable, p.cgroup)) members.push_back(&p);
    Finish(s, members, host);
    out.push_back(std::move(s));
  };
  auto series_of = [](std::string pipeline::ProcessMatch::*field, const std::string& value) {
    Series s;
    s.match.*field = value;
    return s;
  };
  for (const std::string& u : config.units) add(series_of(&pipeline::ProcessMatch::unit, u));
  for (const std::string& g : config.cgroups) add(series_of(&pipeline::ProcessMatch::cgroup, g));
  for (const std::string& e : config.executables)
    add(series_of(&pipeline::ProcessMatch::executable, e));
  if (out.empty()) add(Series{});
  return out;
}

Result<std::unique_ptr<ContinuousProfiler>> ContinuousProfiler::Create(
    const ContinuousConfig& config, const collectors::HostCapabilities& caps,
    const decoders::ImageStoreOptions& images, pipeline::SymbolizeIn where) {
  std::unique_ptr<ContinuousProfiler> p(new ContinuousProfiler());
  p->config_ = config;
  p->caps_ = caps;
  p->symbols_ = std::make_shared<pipeline::SymbolService>(images, where);
  p->host_ = HostLabel(config);
  const long cpus = std::max(1L, sysconf(_SC_NPROCESSORS_ONLN));
  collectors::WindowBudgetSettings budget;
  budget.windows_per_second =
      config.window_budget != 0 ? config.window_budget : DefaultWindowBudget(cpus);
  budget.cpu_share = config.window_cpu_percent / 100.0;
  p->window_budget_ = std::make_shared<collectors::WindowBudget>(budget);
  // Snapshots at the rate that gives the budget's windows with every CPU busy: each costs the
  // sampled program ~10 us (docs/performance.md), so the host pays for no snapshot the budget
  // would refuse, and an idle host's few busy CPUs get the budget's share each.
  p->snapshot_hz_ = std::clamp(budget.windows_per_second / static_cast<double>(cpus), 1.0,
                               static_cast<double>(kMaxSnapshotHz));
  fleet::ArchiveOptions ao;
  ao.directory = config.archive_dir;
  ao.max_windows = config.keep_windows;
  ao.max_bytes = config.max_disk_bytes;
  auto archive = fleet::ProfileArchive::Open(ao);
  if (!archive.ok()) return WithContext(archive.status(), "continuous.archive_dir");
  p->archive_ = std::make_unique<fleet::ProfileArchive>(std::move(archive.value()));

  fleet::PushOptions po;
  po.queue_capacity = config.push_queue;
  po.max_attempts = config.push_attempts;
  auto add_pusher = [&](Result<std::unique_ptr<fleet::Sink>> sink,
                        const std::string& key) -> Status {
    if (!sink.ok()) return WithContext(sink.status(), key);
    auto pusher = fleet::Pusher::Start(std::move(sink.value()), po);
    if (!pusher.ok()) return WithContext(pusher.status(), key);
    p->pushers_.push_back(std::move(pusher.value()));
    return Status::Ok();
  };
  if (!config.pyroscope.url.empty()) {
    fleet::PyroscopeOptions o;
    o.url = config.pyroscope.url;
    o.app_name = config.pyroscope.app_name;
    o.auth.tenant_id = config.pyroscope.tenant_id;
    o.auth.bearer_token = config.pyroscope.bearer_token;
    o.auth.basic_user = config.pyroscope.basic_user;
    o.auth.basic_password = config.pyroscope.basic_password;
    PATHPROF_RETURN_IF_ERROR(
        add_pusher(AsSink(fleet::PyroscopeSink::Create(std::move(o))), "continuous.pyroscope"));
  }
  if (!config.parca.target.empty()) {
    fleet::ParcaOptions o;
    o.target = config.parca.target;
    o.use_tls = config.parca.use_tls;
    o.bearer_token = config.parca.bearer_token;
    PATHPROF_RETURN_IF_ERROR(
        add_pusher(AsSink(fleet::ParcaSink::Create(std::move(o))), "continuous.parca"));
  }
  if (!config.otlp.target.empty()) {
    fleet::OtlpOptions o;
    o.target = config.otlp.target;
    o.use_tls = config.otlp.use_tls;
    o.bearer_token = config.otlp.bearer_token;
    o.include_pprof = config.otlp.include_pprof;
    o.scope_version = PATHPROF_VERSION_STRING;
    PATHPROF_RETURN_IF_ERROR(
        add_pusher(AsSink(fleet::OtlpSink::Create(std::move(o))), "continuous.otlp"));
  }
  return p;
}

ContinuousProfiler::~ContinuousProfiler() {
  Stop();
}

void ContinuousProfiler::Start() {
  if (!thread_.joinable()) thread_ = std::thread([this] { Run(); });
}

void ContinuousProfiler::Stop() {
  {
    std::lock_guard<std::mutex> lock(stop_mu_);
    stopping_ = true;
  }
  stop_cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  for (auto& p : pushers_) p->Stop(std::chrono::milliseconds(2000));
}

void ContinuousProfiler::Run() {
  for (;;) {
    {
      std::lock_guard<std::mutex> lock(stop_mu_);
      if (stopping_) {
        sampler_kept_.reset();
        return;
      }
    }
    Window(NowNanos());
  }
}

void ContinuousProfiler::Window(int64_t start_ns) {
  pipeline::SourceChoice source = pipeline::SourceChoice::kNone;
  pipeline::ParseSourceChoice(config_.source, &source);
  std::vector<Series> series = ResolveSeries(config_, ListProcesses(), host_);
  const uint32_t self = static_cast<uint32_t>(getpid());

  struct Running {
    Series series;
    std::unique_ptr<pipeline::Session> session;
  };
  std::vector<Running> running;
  uint64_t seq = 0;
  for (Series& s : series) {
    // Stacks, and snapshot windows: one session on the host sampler's every-process target,
    // each process the selector names (any, without one) joining on its first sample, so one
    // born or moved into the unit mid-window is in that window; up to max_pids processes. A
    // branch source that stops threads traces the processes named at the window's start.
    const bool snapshots =
        source == pipeline::SourceChoice::kSnapshot || source == pipeline::SourceChoice::kHybrid;
    const bool joins = source == pipeline::SourceChoice::kNone || snapshots;
    std::vector<uint32_t> pids;
    uint64_t over = 0;
    if (!joins) {
      for (uint32_t pid : s.pids) {
        if (pid == self || kill(static_cast<pid_t>(pid), 0) != 0) continue;  // never ourselves
        if (pids.size() >= config_.max_pids) {
          ++over;
          continue;
        }
        pids.push_back(pid);
      }
    }
    std::lock_guard<std::mutex> lock(mu_);
    pids_over_limit_ += over;
    if (pids.empty() && !joins) {
      ++empty_series_;
      continue;
    }
    pipeline::SessionConfig sc;
    if (joins) {
      sc.every_process = true;
      sc.join_match = s.match;
      sc.max_descendants = static_cast<uint32_t>(config_.max_pids);
    } else {
      sc.pids = pids;
    }
    sc.source = source;
    sc.sampling.stack_hz = config_.stack_hz;
    // A store keeps its newest windows for the archive (Session::BranchesForArchive): one
    // process alone may fill the window's whole share.
    sc.export_branch_events = std::max(sc.export_branch_events, config_.archive_branch_events);
    if (snapshots) {
      sc.hybrid_stop_hz = config_.hybrid_stop_hz;
      sc.sampling.bursts_per_second = snapshot_hz_;
      sc.window_budget = window_budget_;
    }
    stepping::ParseStepRequest(config_.step_mode, &sc.sampling.step_mode);
    auto session =
        pipeline::Session::Start("continuous-" + std::to_string(++seq), sc, caps_, symbols_);
    if (!session.ok()) {
      ++failed_start_;
      last_error_ = "series " +
                    fleet::PercentEncode(s.match.unit + s.match.cgroup + s.match.executable) +
                    ": " + session.status().message();
      Log(kLogWarning, "continuous: %s", last_error_.c_str());
      continue;
    }
    running.push_back({std::move(s), std::move(session.value())});
  }

  sampler_kept_.reset();  // this window's sessions hold it now
  {
    std::unique_lock<std::mutex> lock(stop_mu_);
    stop_cv_.wait_until(lock,
                        std::chrono::steady_clock::now() + std::chrono::seconds(config_.window_s),
                        [this] { return stopping_; });
  }
  const int64_t end_ns = NowNanos();
  // The next window starts on the same sampler (no reload of the BPF program between them).
  sampler_kept_ = collectors::StackSubscription::KeepHostSampler();

  for (Running& r : running) {
    uint64_t before_stop = 0;
    for (const auto& t : r.session->Stats()) before_stop += t.stack_samples;
    r.session->Stop();
    uint64_t samples = 0, windows = 0, with_windows = 0, memory = 0;
    std::map<std::string, uint64_t> by_reason;
    const auto stats = r.session->Stats();  // one per process sampled (the whole host: joined)
    for (const auto& t : stats) {
      samples += t.stack_samples;
      windows += t.windows;
      with_windows += t.windows > 0;
      memory += t.memory_bytes;
      for (const auto& [reason, n] : t.drops) by_reason[reason] += n;
    }
    // By reason, largest first: "dropped" mixes samples lost with parts of windows a path
    // could not count (docs/profiles.md), which only the reason tells apart.
    std::vector<std::pair<uint64_t, std::string>> reasons;
    for (const auto& [reason, n] : by_reason) reasons.emplace_back(n, reason);
    std::sort(reasons.rbegin(), reasons.rend());
    std::string dropped;
    for (const auto& [n, reason] : reasons)
      dropped += (dropped.empty() ? "" : ", ") + reason + " " + std::to_string(n);
    Log(kLogDebug,
        "continuous: window of %zu process(es): %llu stack samples (%llu before stop); %llu "
        "branch windows in %llu process(es); stores ~%llu KiB; dropped: %s",
        stats.size(), static_cast<unsigned long long>(samples),
        static_cast<unsigned long long>(before_stop), static_cast<unsigned long long>(windows),
        static_cast<unsigned long long>(with_windows),
        static_cast<unsigned long long>(memory >> 10), dropped.empty() ? "none" : dropped.c_str());
    if (stats.empty()) {  // a series whose processes joined: none did
      std::lock_guard<std::mutex> lock(mu_);
      ++empty_series_;
      continue;
    }
    LabelFromJoined(*r.session, r.series);
    auto pprof = r.session->ExportPprof(source != pipeline::SourceChoice::kNone);
    // The window's branch windows beside its pprof, for the queries and optimizer exports the
    // pprof cannot answer (pathctl paths FILE.pbs, pathctl export --format bolt FILE.pbs).
    pipeline::Session::ArchivedBranches kept;
    if (pprof.ok() && source != pipeline::SourceChoice::kNone &&
        config_.archive_branch_events > 0) {
      kept = r.session->BranchesForArchive(config_.archive_branch_events);
      Log(kLogDebug, "continuous: %llu of %llu branch windows to archive",
          static_cast<unsigned long long>(kept.windows_kept),
          static_cast<unsigned long long>(kept.windows_taken));
    }
    r.session.reset();
    std::lock_guard<std::mutex> lock(mu_);
    if (!pprof.ok()) {
      ++failed_export_;
      last_error_ = "export: " + pprof.status().message();
      continue;
    }
    if (!r.series.identity.executable.empty()) {
      auto it = build_ids_.find(r.series.identity.executable);
      if (it == build_ids_.end()) {
        auto elf = decoders::ElfImage::Open(r.series.identity.executable);
        it = build_ids_.emplace(r.series.identity.executable, elf.ok() ? (*elf)->build_id() : "")
                 .first;
      }
      r.series.identity.build_id = it->second;
    }
    fleet::ProfileWindow w;
    w.pprof = std::move(pprof.value());
    w.labels = fleet::ToLabels(r.series.identity);
    w.start_unix_nanos = start_ns;
    w.end_unix_nanos = end_ns;
    w.sample_rate_hz = config_.stack_hz;
    if (kept.windows_kept > 0) {
      // The window's labels go with its branches, so that the .pbs alone says what it is.
      for (const fleet::Label& label : w.labels)
        kept.recording.meta.push_back({"label." + label.name, label.value});
      kept.recording.meta.push_back({"start_unix_nanos", std::to_string(start_ns)});
      kept.recording.meta.push_back({"end_unix_nanos", std::to_string(end_ns)});
      auto bytes = PbsBytes(kept.recording);
      if (bytes.ok()) {
        w.branches = std::move(bytes.value());
      } else {
        ++branches_failed_;
        last_error_ = "branches: " + bytes.status().message();
      }
    }
    ++exported_;
    if (Status s = archive_->Add(w); !s.ok()) last_error_ = "archive: " + s.message();
    for (auto& p : pushers_) (void)p->Enqueue(w);  // refusals are counted in its PushStats
  }
  // The window's sessions are gone, and with them most of what it allocated, freed in the
  // malloc arenas of threads that are gone too (each session's ingestors, its collector's
  // worker). glibc keeps freed pages of a thread's arena mapped, and the next window's threads
  // land in other arenas, so without a trim the daemon's RSS climbed window by window to twice
  // its live size (50 busy processes, 10 s windows: ~205 MB after 2 minutes against ~100 MB
  // trimmed; docs/performance.md). Once a window, a few milliseconds.
  malloc_trim(0);
}

void ContinuousProfiler::FillStats(v1::ContinuousStats* out, bool details) const {
  std::lock_guard<std::mutex> lock(mu_);
  out->mutable_window()->set_seconds(config_.window_s);
  out->set_windows_exported(exported_);
  out->set_windows_failed_start(failed_start_);
  out->set_windows_failed_export(failed_export_);
  out->set_series_without_processes(empty_series_);
  out->set_pids_over_limit(pids_over_limit_);
  const fleet::ArchiveStats& a = archive_->stats();
  out->set_archive_windows(archive_->windows().size());
  out->set_archive_bytes(archive_->total_bytes());
  out->set_archive_evicted(a.windows_deleted_count_limit + a.windows_deleted_byte_limit);
  out->set_archive_rejected(a.windows_rejected_too_large + a.windows_rejected_invalid);
  out->set_archive_write_errors(a.write_errors);
  out->set_archive_windows_with_branches(a.windows_with_branches);
  out->set_archive_branches_not_stored(a.branches_rejected_too_large + branches_failed_);
  if (details) out->set_last_error(last_error_);
  for (const auto& p : pushers_) {
    fleet::PushStats s = p->stats();
    v1::PushStats* ps = out->add_push();
    const std::string sink = p->sink().Describe();  // "KIND ADDRESS"
    ps->set_sink(details ? sink : sink.substr(0, sink.find(' ')));
    ps->set_enqueued(s.enqueued);
    ps->set_sent(s.sent);
    ps->set_retries(s.retries);
    ps->set_dropped(s.dropped_invalid + s.dropped_queue_full + s.dropped_retries_exhausted +
                    s.dropped_rejected + s.dropped_shutdown);
    ps->set_queued(p->queued());
    if (details) ps->set_last_error(s.last_error);
  }
}

}  // namespace pathprof::daemon
