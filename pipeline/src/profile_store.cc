#include "pathprof/pipeline/profile_store.h"

#include <algorithm>

#include "engine_config.h"
#include "pathprof/core/clock.h"
#include "pathprof/core/hex.h"
#include "profile_store_impl.h"
#include "target_credentials.h"

namespace pathprof::pipeline {
namespace {

// Debian's nogroup: the group a confined open falls back to when the target's is unreadable.
constexpr uint32_t kNoGroup = 65534;

uint32_t FloorPowerOfTwo(uint32_t v) {
  uint32_t p = 1;
  while (p * 2 <= v) p *= 2;
  return p;
}

}  // namespace

// What takes branch windows (path stack, Hot Path Table, window estimator, subpath reservoir),
// built for `windows`; the stack side (calling context tree, methods) is apart from it.
Status ProfileStore::BuildBranchSide(Impl* impl, const SessionConfig& config,
                                     BranchWindows windows) {
  const bool windowed = windows != BranchWindows::kNone;
  impl->windows = windows;
  impl->estimator.reset();
  impl->cycles.reset();
  impl->window_weighting.clear();
  const hwmodel::PathStackConfig stack_config = PathStackConfigFor(config.engine);
  PATHPROF_ASSIGN_OR_RETURN(auto stack, hwmodel::PathStack::Create(stack_config));
  impl->stack_proto.emplace(std::move(stack));
  PATHPROF_ASSIGN_OR_RETURN(auto hpt,
                            hwmodel::HotPathTable::Create(HotPathTableConfigFor(config.engine)));
  impl->hpt.emplace(std::move(hpt));
  if (windowed) {
    hwmodel::WindowEstimatorConfig wc;
    wc.stack = stack_config;
    impl->window_weighting = "taken branches (window starts uniform over taken branches)";
    if (windows == BranchWindows::kTime || windows == BranchWindows::kTimeRagged) {
      // Starts are uniform in time: weight by each window's time, from its blocks' cycles.
      auto model = decoders::CycleModel::Create();
      if (model.ok()) {
        impl->cycles = std::move(*model);
        wc.starts = hwmodel::WindowStarts::kTime;
        impl->window_weighting = "time (block cycles from the in-process cycle model)";
      } else {
        wc.starts = hwmodel::WindowStarts::kInstructions;
        impl->window_weighting =
            "time, approximated by instructions (" + model.status().message() + ")";
      }
    }
    if (windows == BranchWindows::kTimeRagged) {
      wc.counted_prefix = hwmodel::kRaggedCountedPrefix;
      wc.window_cap = config.sampling.window_branches;
      impl->window_weighting +=
          "; ragged windows: whole paths counted within their window's first " +
          std::to_string(wc.counted_prefix) + " taken branches";
    }
    PATHPROF_ASSIGN_OR_RETURN(auto est, hwmodel::WindowEstimator::Create(wc));
    impl->estimator.emplace(std::move(est));
  }

  profiles::OspConfig osp;
  osp.max_entries = config.osp.memory_entries;
  uint32_t max_len = config.osp.max_length;
  // Subpaths longer than a window can never complete inside one.
  if (windowed)
    max_len = std::min(max_len, std::max(2u, FloorPowerOfTwo(config.sampling.window_branches)));
  PATHPROF_ASSIGN_OR_RETURN(auto lengths, profiles::OspLengthDistribution::Geometric(max_len));
  osp.lengths = std::move(lengths);
  // Windowed sources see little of the stream: start sampling every block (f = 1) and let the
  // reservoir raise f when it fills.
  osp.expected_blocks = windowed ? 0 : config.osp.expected_blocks;
  osp.seed ^= impl->pid;
  PATHPROF_ASSIGN_OR_RETURN(auto reservoir, profiles::OspReservoir::Create(std::move(osp)));
  impl->osp = std::move(reservoir);
  return Status::Ok();
}

ProfileStore::ProfileStore(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ProfileStore::~ProfileStore() {
  // What it kept is no longer held with the other stores (an evicted whole-host store).
  if (impl_ && impl_->export_shared) impl_->export_shared->held -= impl_->recent_events;
}

Result<std::unique_ptr<ProfileStore>> ProfileStore::Create(uint32_t pid,
                                                           const SessionConfig& config,
                                                           BranchWindows windows,
                                                           std::shared_ptr<SymbolService> symbols) {
  return Make(pid, config, windows, std::move(symbols), /*offline=*/false);
}

Status ProfileStore::ResetWindows(BranchWindows windows) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return BuildBranchSide(impl_.get(), impl_->config, windows);
}

Status ProfileStore::UseWindows(BranchWindows windows, std::string why) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->windows_note = std::move(why);
  if (windows == impl_->windows) return Status::Ok();
  return BuildBranchSide(impl_.get(), impl_->config, windows);
}

Result<std::unique_ptr<ProfileStore>> ProfileStore::Make(uint32_t pid, const SessionConfig& config,
                                                         BranchWindows windows,
                                                         std::shared_ptr<SymbolService> symbols,
                                                         bool offline) {
  if (symbols == nullptr) return Status(ErrorCode::kInvalidArgument, "ProfileStore: no symbols");
  auto impl = std::make_unique<Impl>();
  impl->pid = pid;
  if (config.confine_to_uid && !offline) {
    // The target's real gid is one its owner holds; without it, only the uid's own rights.
    auto creds = ReadTargetCredentials(pid);
    impl->open_as =
        decoders::FileCredentials{*config.confine_to_uid, creds.ok() ? creds->gids[0] : kNoGroup};
  }
  impl->offline = offline;
  impl->config = config;
  impl->symbols = std::move(symbols);
  impl->info.pid = pid;

  profiles::PcctOptions pcct;
  pcct.max_walk = config.pcct.max_depth;
  pcct.max_nodes = config.pcct.max_nodes;
  impl->pcct = std::make_unique<profiles::Pcct>(pid, pcct);

  PATHPROF_RETURN_IF_ERROR(BuildBranchSide(impl.get(), config, windows));

  // Read the mappings now: a short-lived target may be gone by the time its samples are read.
  {
    std::lock_guard<std::mutex> lock(impl->mu);
    (void)impl->RefreshLocked();
  }
  return std::unique_ptr<ProfileStore>(new ProfileStore(std::move(impl)));
}

Result<std::unique_ptr<ProfileStore>> ProfileStore::CreateOffline(
    uint32_t pid, const SessionConfig& config, BranchWindows windows,
    std::shared_ptr<SymbolService> symbols) {
  return Make(pid, config, windows, std::move(symbols), /*offline=*/true);
}

void ProfileStore::AddMapping(const decoders::Mapping& mapping) {
  if (mapping.IsVdso()) return;
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->space.Add(mapping);
  impl_->function_of.clear();
}

void ProfileStore::SetIdentity(const std::string& comm, const std::string& executable) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  if (!comm.empty()) impl_->info.comm = comm;
  if (!executable.empty()) impl_->info.executable = executable;
}

uint32_t ProfileStore::pid() const {
  return impl_->pid;
}
TargetAccounting& ProfileStore::accounting() {
  return impl_->accounting;
}
const TargetAccounting& ProfileStore::accounting() const {
  return impl_->accounting;
}
uint64_t ProfileStore::generation() const {
  return impl_->generation.load(std::memory_order_relaxed);
}

Status ProfileStore::RefreshMappings() {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->RefreshLocked();
}

void ProfileStore::HoldUntilExec() {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->held_until_exec = true;
}

void ProfileStore::NoteExec(uint64_t exec_monotonic_ns) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  if (impl_->held_until_exec) {
    impl_->held_until_exec = false;
    impl_->exec_ns = exec_monotonic_ns != 0 ? exec_monotonic_ns : MonotonicNs();
  }
  impl_->maps_stale = true;
  impl_->exec_pending = true;
  impl_->function_of.clear();
  impl_->info.execs++;
}

void ProfileStore::NoteThreadExit(uint32_t tid) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->pcct->ForgetThread(tid);
  impl_->contexts.ForgetThread(tid);
  impl_->stacks.erase(tid);
  if (auto it = impl_->osp_samplers.find(tid); it != impl_->osp_samplers.end()) {
    it->second->Flush();
    impl_->osp_samplers.erase(it);
  }
}

void ProfileStore::NoteExit() {
  std::lock_guard<std::mutex> lock(impl_->mu);
  if (impl_->info.exited) return;
  impl_->info.exited = true;
  impl_->info.exited_unix_ms = UnixMs();
  for (auto& [tid, s] : impl_->osp_samplers) s->Flush();
}

void ProfileStore::ShareExportBuffer(std::shared_ptr<SharedExportBuffer> shared) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  if (impl_->export_shared) impl_->export_shared->held -= impl_->recent_events;
  impl_->export_shared = std::move(shared);
  if (impl_->export_shared) impl_->export_shared->held += impl_->recent_events;
}

uint64_t ProfileStore::RecentBranchEvents() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->recent_events;
}

PbsContents ProfileStore::RecentBranches(uint64_t max_events) const {
  const Impl& s = *impl_;
  std::lock_guard<std::mutex> lock(s.mu);
  PbsContents out;
  auto first = s.recent.end();
  for (uint64_t kept = 0;
       first != s.recent.begin() && kept + std::prev(first)->events.size() <= max_events;)
    kept += (--first)->events.size();
  out.batches.assign(first, s.recent.end());
  for (const decoders::Mapping& m : s.space.mappings()) {
    if (m.IsSpecial()) continue;
    ImageRecord img;
    img.pid = s.pid;
    img.start = m.start;
    img.end = m.end();
    img.file_offset = m.pgoff;
    // The file as this host reads it (through /proc/PID/root for a container's process).
    img.path = m.read_path.empty() ? m.path : m.read_path;
    out.images.push_back(std::move(img));
  }
  return out;
}

Result<std::shared_ptr<const decoders::ElfImage>> ProfileStore::MappedImage(uint64_t at) const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  const decoders::Mapping* m = impl_->space.Find(at);
  if (m != nullptr) return impl_->symbols->MappedImage(impl_->space, *m);
  return Error(ErrorCode::kNotFound,
               "pid " + std::to_string(impl_->pid) + " maps no file at " + HexAddress(at));
}

TargetInfo ProfileStore::Info() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->info;
}

TargetStats ProfileStore::Stats() const {
  const Impl& s = *impl_;
  TargetStats t;
  t.pid = s.pid;
  t.stack_samples = s.accounting.stack_samples.load();
  t.windows = s.accounting.windows.load();
  t.branches = s.accounting.branches.load();
  t.drops = s.accounting.drops.Snapshot();
  t.decode_errors = s.accounting.decode_errors.Snapshot();
  t.windows_held_back = s.accounting.windows_held_back.Snapshot();
  t.windows_by_source = s.accounting.windows_by_source.Snapshot();
  t.pipeline_cpu_seconds = double(s.accounting.pipeline_cpu_ns.load()) / 1e9;
  const profiles::OspStats osp = s.osp->stats();
  std::lock_guard<std::mutex> lock(s.mu);
  uint64_t mem = s.pcct->node_count() * 64 + osp.memory_bytes;
  mem += uint64_t(s.config.engine.hpt_entries) * 32;
  for (const auto& [path, blocks] : s.representatives) mem += 64 + blocks.size() * 8;
  mem += (s.function_of.size() + s.kernel_address_keys.size()) * 32;
  mem += s.space.mappings().size() * 96;
  mem += s.leaf_address_entries * 48;
  if (s.estimator) mem += s.estimator->Estimates().size() * 64;
  if (s.cycles) mem += s.cycles->memory_bytes();
  mem += s.contexts.memory_bytes();
  t.windows_with_context = s.windows_with_context;
  t.memory_bytes = mem;
  t.window_weighting = s.window_weighting;
  if (!s.windows_note.empty()) t.window_weighting += "; " + s.windows_note;
  t.namespace_pid = s.info.namespace_pid;
  t.export_windows_kept = s.recent.size();
  t.export_windows_let_go = s.recent_let_go;
  return t;
}

}  // namespace pathprof::pipeline
