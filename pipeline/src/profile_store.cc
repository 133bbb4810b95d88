#include "pathprof/pipeline/profile_store.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <deque>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "engine_config.h"
#include "pathprof/core/clock.h"
#include "pathprof/core/hex.h"
#include "pathprof/core/procfs.h"
#include "pathprof/decoders/address_space.h"
#include "pathprof/decoders/cycle_model.h"
#include "pathprof/hwmodel/hwmodel.h"
#include "pathprof/profiles/hps_profiles.h"
#include "pathprof/profiles/osp_report.h"
#include "pathprof/profiles/osp_reservoir.h"
#include "pathprof/profiles/osp_sampler.h"
#include "pathprof/profiles/pcct.h"
#include "target_credentials.h"
#include "window_contexts.h"

namespace pathprof::pipeline {

std::string_view PathEstimatorName(PathEstimator e) {
  return WordOf(kPathEstimatorWords, e, "");
}
namespace {

// Debian's nogroup: the group a confined open falls back to when the target's is unreadable.
constexpr uint32_t kNoGroup = 65534;

// True when both maps have a vdso and it moved: a new address space, an exec.
bool VdsoMoved(const decoders::AddressSpace& before, const decoders::AddressSpace& after) {
  auto vdso = [](const decoders::AddressSpace& space) -> uint64_t {
    for (const decoders::Mapping& m : space.mappings())
      if (m.IsVdso()) return m.start;
    return 0;
  };
  const uint64_t was = vdso(before), is = vdso(after);
  return was != 0 && is != 0 && was != is;
}

uint32_t FloorPowerOfTwo(uint32_t v) {
  uint32_t p = 1;
  while (p * 2 <= v) p *= 2;
  return p;
}

constexpr size_t kMaxRepresentatives = 1 << 16;  // paths whose blocks are remembered
constexpr double kConfidence95 = 0.95;
constexpr std::chrono::milliseconds kMissRefreshInterval{100};
constexpr size_t kMaxLeafAddresses = kLeafAddressEntries;  // in SessionConfig's memory bound

// The last NSpid of /proc/PID/status: the pid in the process's innermost pid namespace; 0 when
// it is the pid itself (no container) or unreadable.
uint32_t NamespacePid(uint32_t pid) {
  auto status = procfs::Procfs::Host().ReadStatus(static_cast<pid_t>(pid));
  if (!status.ok()) return 0;
  const auto inner = static_cast<uint32_t>(status->innermost_pid);
  return inner == pid ? 0 : inner;
}

}  // namespace

struct ProfileStore::Impl {
  uint32_t pid = 0;
  SessionConfig config;
  bool windowed = false;
  std::string window_weighting;  // how the estimator weights windows, and why
  // kTime: block cycles of each window, outside `mu` (the model's code reader takes it).
  std::mutex cycle_mu;
  std::unique_ptr<decoders::CycleModel> cycles;
  bool offline = false;  // a recording: never read /proc
  std::shared_ptr<SymbolService> symbols;

  mutable std::mutex mu;
  TargetAccounting accounting;
  std::atomic<uint64_t> generation{0};

  // Mappings: kept after the process exits so its results still symbolize.
  decoders::AddressSpace space;
  bool maps_read = false;
  bool maps_stale = false;
  bool exec_pending = false;  // the next read of the maps replaces the space (NoteExec)
  // HoldUntilExec: nothing is recorded until NoteExec, nor what is stamped before exec_ns.
  bool held_until_exec = false;
  uint64_t exec_ns = 0;

  // True (and counted) for a sample or window of a held process's launcher code.
  bool BeforeExecLocked(uint64_t time_ns) {
    if (!held_until_exec && (exec_ns == 0 || time_ns == 0 || time_ns >= exec_ns)) return false;
    accounting.drops.Add("before_exec");
    return true;
  }
  // A confined session's files are opened with its requester's rights (mapped_file.h).
  std::optional<decoders::FileCredentials> open_as;
  std::chrono::steady_clock::time_point last_miss_refresh{};
  std::unordered_map<uint64_t, uint64_t> function_of;  // runtime address -> function start
  // Leaf function start -> sampled leaf address -> samples, for per-line pprof locations.
  std::unordered_map<uint64_t, std::unordered_map<uint64_t, uint64_t>> leaf_addresses;
  size_t leaf_address_entries = 0;
  TargetInfo info;

  std::unique_ptr<profiles::Pcct> pcct;
  profiles::HotMethods methods_from_stacks;
  profiles::HotMethods methods_from_branches;
  profiles::HotCallPairs call_pairs;

  std::optional<hwmodel::PathStack> stack_proto;  // copied per thread
  std::unordered_map<uint32_t, hwmodel::PathStack> stacks;
  std::optional<hwmodel::HotPathTable> hpt;
  std::optional<hwmodel::WindowEstimator> estimator;
  // First block sequence seen for each path, for reports (the descriptor alone names only the
  // start and the outcomes).
  std::unordered_map<hwmodel::PathDescriptor, std::vector<uint64_t>, hwmodel::PathDescriptorHash>
      representatives;

  // Hot paths per calling context: windows attributed to the stack at their start.
  WindowContexts contexts;
  uint64_t windows_with_context = 0;

  std::unique_ptr<profiles::OspReservoir> osp;
  std::unordered_map<uint32_t, std::unique_ptr<profiles::OspThreadSampler>> osp_samplers;

  // The newest batches, for branch-profile exports (bounded by config.export_branch_events).
  std::deque<BranchBatch> recent;
  size_t recent_events = 0;
  // Older batches let go to keep that bound: retention, not a loss (TargetStats says which).
  uint64_t recent_let_go = 0;

  void KeepRecentLocked(const BranchBatch& batch) {
    if (config.export_branch_events == 0) return;
    recent.push_back(batch);
    recent_events += batch.events.size();
    while (recent_events > config.export_branch_events && recent.size() > 1) {
      recent_events -= recent.front().events.size();
      recent.pop_front();
      ++recent_let_go;
    }
  }

  // Reads /proc/PID/maps and merges it into `space` (mappings of an earlier image stay where
  // nothing replaced them, so older samples still resolve). After an exec the new map replaces
  // the old one: the old image is gone, and an exec loop would otherwise pile up mappings.
  Status RefreshLocked() {
    if (offline) {
      maps_read = true;
      maps_stale = false;
      return Status::Ok();
    }
    auto maps = decoders::ReadProcMaps(static_cast<int>(pid));
    if (!maps.ok()) {
      accounting.decode_errors.Add("maps_unreadable");
      return maps.status();
    }
    maps->set_access(decoders::FileAccess{static_cast<int>(pid), open_as});
    // An exec nobody reported (a stacks-only session has no tracer to see it; an exec loop
    // outruns one): the new image's vdso lies elsewhere, as ASLR places it anew at every exec
    // and never moves it within one. The old image is gone: its mappings must not pile up
    // beside the new ones, exec after exec.
    if (!exec_pending && VdsoMoved(space, *maps)) {
      exec_pending = true;
      info.execs++;
    }
    if (exec_pending)
      space.Replace(*maps);
    else
      space.Overlay(*maps);
    exec_pending = false;
    maps_read = true;
    maps_stale = false;
    if (info.executable.empty() || info.execs > 0) {
      const procfs::Procfs& proc = procfs::Procfs::Host();
      if (auto exe = proc.Executable(static_cast<pid_t>(pid)); exe.ok())
        info.executable = std::move(*exe);
      auto comm = proc.Comm(static_cast<pid_t>(pid));
      info.comm = comm.ok() ? std::move(*comm) : "";
      info.namespace_pid = NamespacePid(pid);
    }
    return Status::Ok();
  }

  uint64_t FunctionOfLocked(uint64_t address) {
    auto it = function_of.find(address);
    if (it != function_of.end()) return it->second;
    const uint64_t fn = symbols->FunctionStart(pid, space, address);
    if (function_of.size() < (1u << 20)) function_of.emplace(address, fn);
    return fn;
  }

  void RecordPath(const hwmodel::CompletedPath& c, std::span<const BranchEvent> events, size_t i) {
    if (hpt) hpt->Record(c);
    if (representatives.size() >= kMaxRepresentatives || representatives.contains(c.path)) return;
    // The path's branches are the `length` events ending at i when nothing (a call) interleaved;
    // check that the first of them lies just after the path's start, else keep the start only.
    std::vector<uint64_t> blocks{c.path.start};
    const size_t len = c.path.length;
    if (len >= 1 && len <= i + 1) {
      const size_t first = i + 1 - len;
      const BranchEvent& f = events[first];
      if (f.from >= c.path.start && f.from - c.path.start < 4096) {
        for (size_t j = first; j < i; ++j) blocks.push_back(events[j].to);
      }
    }
    representatives.emplace(c.path, std::move(blocks));
  }

  // An address outside every known mapping: new code was mapped (dlopen, JIT) or the process
  // exec'd; re-read the maps, at most once per kMissRefreshInterval. A frame that no mapping will
  // ever cover (a broken unwind, a stale return address) would otherwise re-read /proc/PID/maps
  // under the lock on every sample.
  void RefreshAfterMissLocked() {
    const auto now = std::chrono::steady_clock::now();
    if (now - last_miss_refresh < kMissRefreshInterval) return;
    last_miss_refresh = now;
    if (RefreshLocked().ok()) function_of.clear();
  }

  // An image whose .eh_frame failed the unwinder's checks (hostile or malformed CFI) is unwound
  // by frame pointers; counted once per image, when an unwind first meets it.
  void CountRefusedCfi(const decoders::UnwindResult& u) {
    for (std::string_view reason : u.cfi_refused)
      accounting.decode_errors.Add("cfi_refused:" + std::string(reason));
  }

  std::vector<uint64_t> UserFramesLocked(const collectors::RawStackSample& sample) {
    if (sample.regs.empty()) return sample.user;
    // Mappings must be known before the unwinder asks which image holds each frame.
    if (space.Find(sample.regs[decoders::kDwarfRip]) == nullptr) RefreshAfterMissLocked();
    decoders::UnwindResult u =
        symbols->UnwindUser(pid, space, sample.regs, sample.stack_start, sample.stack);
    CountRefusedCfi(u);
    if (u.end != decoders::UnwindEnd::kOutermost && sample.user.size() > u.frames.size())
      return sample.user;
    if (u.end != decoders::UnwindEnd::kOutermost)
      accounting.decode_errors.Add("stack_unwind_incomplete:" +
                                   std::string(decoders::UnwindEndName(u.end)));
    return std::move(u.frames);
  }

  // PCCT frames (leaf first) of user addresses (leaf first): each frame's function, called from
  // the next frame's return address.
  std::vector<profiles::StackFrame> FramesLocked(const std::vector<uint64_t>& addrs) {
    std::vector<profiles::StackFrame> frames;
    frames.reserve(addrs.size());
    for (size_t i = 0; i < addrs.size(); ++i)
      frames.push_back({FunctionOfLocked(addrs[i]), i + 1 < addrs.size() ? addrs[i + 1] : 0});
    return frames;
  }

  // The calling context of a window: its own stack unwound, else the thread's nearest stack
  // sample, else none (counted). Every failure on the way is counted by reason.
  std::optional<ContextKey> WindowContextLocked(const BranchBatch& batch) {
    const ThreadStack& st = batch.stack;
    if (st.regs.size() == decoders::kDwarfRegisterCount) {
      if (!contexts.TakeUnwind(MonotonicNs())) {
        accounting.drops.Add("window_stack_rate_capped");
      } else {
        if (space.Find(st.regs[decoders::kDwarfRip]) == nullptr) RefreshAfterMissLocked();
        decoders::UnwindResult u =
            symbols->UnwindUser(pid, space, st.regs, st.stack_start, st.stack);
        CountRefusedCfi(u);
        if (u.frames.empty()) {
          accounting.decode_errors.Add("window_stack_unwind_failed");
        } else {
          ContextKey key;
          // A walk that stopped short of the thread's root names a partial context.
          key.truncated = u.end != decoders::UnwindEnd::kOutermost;
          if (key.truncated)
            accounting.decode_errors.Add("window_stack_unwind_partial:" +
                                         std::string(decoders::UnwindEndName(u.end)));
          key.frames = FramesLocked(u.frames);
          return key;
        }
      }
    } else if (st.error != 0) {
      accounting.decode_errors.Add(st.error == EBADMSG ? "window_stack_malformed"
                                                       : "window_stack_unreadable");
    } else if (!st.regs.empty()) {
      accounting.decode_errors.Add("window_stack_malformed");
    }
    if (const ContextKey* near = contexts.NearestSample(batch.tid, batch.time_ns)) return *near;
    accounting.drops.Add("window_context_none");
    return std::nullopt;
  }

  void AttributeWindowLocked(const BranchBatch& batch,
                             const std::vector<WindowContexts::Contribution>& paths) {
    std::optional<ContextKey> key = WindowContextLocked(batch);
    if (!key) return;
    const profiles::PcctNodeId node = pcct->Place(key->frames, key->truncated);
    uint64_t dropped = 0;
    if (contexts.Add(*key, node, paths, &dropped) == WindowContexts::AddResult::kTableFull) {
      accounting.drops.Add("window_context_table_full");
      return;
    }
    if (dropped) accounting.drops.Add("context_path_table_full", dropped);
    ++windows_with_context;
  }

  // The context's PCCT node now: the one last placed if it still holds this context (eviction
  // frees and reuses ids), else found again; kPcctNoNode when the PCCT evicted it.
  profiles::PcctNodeId LiveNodeLocked(const ContextKey& key, profiles::PcctNodeId cached) const {
    std::vector<profiles::StackFrame> root_first(key.frames.rbegin(), key.frames.rend());
    if (cached != profiles::kPcctNoNode && pcct->Context(cached) == root_first &&
        pcct->UnderTruncatedRoot(cached) == key.truncated)
      return cached;
    auto found = pcct->Find(root_first,
                            key.truncated ? profiles::Pcct::kTruncatedRoot : profiles::Pcct::kRoot);
    return found ? found->id : profiles::kPcctNoNode;
  }

  // The contexts a selector picks: a node and every context below it, or the contexts whose
  // innermost frames are the given functions. Names are resolved outside the store's lock.
  std::vector<ContextKey> SelectContexts(const ContextSelector& sel) const {
    std::vector<ContextKey> keys;
    decoders::AddressSpace sp;
    {
      std::lock_guard<std::mutex> lock(mu);
      if (sel.node != 0) {
        if (sel.node >= profiles::kPcctNoNode) return keys;
        const auto id = static_cast<profiles::PcctNodeId>(sel.node);
        const std::vector<profiles::StackFrame> root_first = pcct->Context(id);
        if (root_first.empty()) return keys;
        const bool truncated = pcct->UnderTruncatedRoot(id);
        const size_t n = root_first.size();
        contexts.ForEach([&](const ContextKey& k, const WindowContexts::Context&) {
          if (k.truncated != truncated || k.frames.size() < n) return;
          // k's outermost n frames (the end of its leaf-first list) are the node's context.
          for (size_t i = 0; i < n; ++i)
            if (k.frames[k.frames.size() - 1 - i] != root_first[i]) return;
          keys.push_back(k);
        });
        return keys;
      }
      contexts.ForEach([&](const ContextKey& k, const WindowContexts::Context&) {
        if (!sel.functions.empty() && k.frames.size() >= sel.functions.size()) keys.push_back(k);
      });
      sp = space;
    }
    std::unordered_map<uint64_t, std::string> names;
    auto name_of = [&](uint64_t fn) -> const std::string& {
      auto it = names.find(fn);
      if (it == names.end()) it = names.emplace(fn, symbols->Symbolize(pid, sp, fn).function).first;
      return it->second;
    };
    const size_t m = sel.functions.size();
    std::erase_if(keys, [&](const ContextKey& k) {
      for (size_t j = 0; j < m; ++j)
        if (name_of(k.frames[m - 1 - j].function) != sel.functions[j]) return true;
      return false;
    });
    return keys;
  }

  // Every context whose windows held `path`: its key, its node as last placed, the path's tally.
  struct PathInContext {
    ContextKey key;
    profiles::PcctNodeId node;
    WindowContexts::PathTally tally;
  };
  std::vector<PathInContext> ContextsOfLocked(const hwmodel::PathDescriptor& path) const {
    std::vector<PathInContext> out;
    contexts.ForEach([&](const ContextKey& k, const WindowContexts::Context& c) {
      auto it = c.paths.find(path);
      if (it != c.paths.end()) out.push_back({k, c.node, it->second});
    });
    return out;
  }

  std::vector<Location> SymbolizeAll(const decoders::AddressSpace& s,
                                     const std::vector<uint64_t>& addresses) const {
    std::vector<Location> out;
    out.reserve(addresses.size());
    for (uint64_t a : addresses) out.push_back(symbols->Symbolize(pid, s, a));
    return out;
  }

  decoders::AddressSpace SpaceCopy() const {
    std::lock_guard<std::mutex> lock(mu);
    return space;
  }
};

ProfileStore::ProfileStore(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ProfileStore::~ProfileStore() = default;

Result<std::unique_ptr<ProfileStore>> ProfileStore::Create(uint32_t pid,
                                                           const SessionConfig& config,
                                                           BranchWindows windows,
                                                           std::shared_ptr<SymbolService> symbols) {
  return Make(pid, config, windows, std::move(symbols), /*offline=*/false);
}

Result<std::unique_ptr<ProfileStore>> ProfileStore::Make(uint32_t pid, const SessionConfig& config,
                                                         BranchWindows windows,
                                                         std::shared_ptr<SymbolService> symbols,
                                                         bool offline) {
  const bool windowed = windows != BranchWindows::kNone;
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
  impl->windowed = windowed;
  impl->symbols = std::move(symbols);
  impl->info.pid = pid;

  profiles::PcctOptions pcct;
  pcct.max_walk = config.pcct.max_depth;
  pcct.max_nodes = config.pcct.max_nodes;
  impl->pcct = std::make_unique<profiles::Pcct>(pid, pcct);

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
    if (windows == BranchWindows::kTime) {
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
  osp.seed ^= pid;
  PATHPROF_ASSIGN_OR_RETURN(auto reservoir, profiles::OspReservoir::Create(std::move(osp)));
  impl->osp = std::move(reservoir);

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

void ProfileStore::AddStackSample(const collectors::RawStackSample& sample) {
  Impl& s = *impl_;
  {
    std::lock_guard<std::mutex> lock(s.mu);
    if (s.BeforeExecLocked(sample.time_ns)) return;
    if (sample.user.empty() && sample.kernel.empty()) {
      s.accounting.drops.Add(sample.user_error ? "stack_unreadable" : "empty_stack");
    } else {
      if (sample.user_error != 0) s.accounting.decode_errors.Add("user_stack_error");
      if (s.maps_stale || !s.maps_read) (void)s.RefreshLocked();
      // The user stack: the kernel's frame-pointer walk, or with a copied stack, the DWARF CFI
      // walk (programs built without frame pointers), unless frame pointers reached further.
      std::vector<uint64_t> user = s.UserFramesLocked(sample);
      for (uint64_t a : user) {
        if (s.space.Find(a) != nullptr) continue;
        s.RefreshAfterMissLocked();
        break;
      }
      profiles::StackSample st;
      st.pid = s.pid;
      st.tid = sample.tid;
      st.weight = 1;
      // Leaf first: kernel frames (if any) above the user stack. A frame's call site is the
      // caller's address, which is the next frame's return address.
      std::vector<uint64_t> addrs;
      addrs.reserve(sample.kernel.size() + user.size());
      addrs.insert(addrs.end(), sample.kernel.begin(), sample.kernel.end());
      addrs.insert(addrs.end(), user.begin(), user.end());
      st.frames.reserve(addrs.size());
      for (size_t i = 0; i < addrs.size(); ++i) {
        profiles::StackFrame f;
        f.function = s.FunctionOfLocked(addrs[i]);
        f.call_site = i + 1 < addrs.size() ? addrs[i + 1] : 0;
        st.frames.push_back(f);
      }
      if (Status add = s.pcct->Add(st); !add.ok()) {
        s.accounting.drops.Add("pcct_rejected");
      } else {
        if (!user.empty() && sample.kernel.empty()) {
          auto& at = s.leaf_addresses[st.frames.front().function];
          auto [it, added] = at.try_emplace(user.front(), 0);
          if (added && s.leaf_address_entries >= kMaxLeafAddresses) {
            at.erase(it);
            s.accounting.drops.Add("leaf_address_table_full");
          } else {
            s.leaf_address_entries += added;
            ++it->second;
          }
        }
        // The user part of the stack names the windows of this thread near it in time.
        if (!user.empty()) {
          ContextKey key;
          key.frames.assign(st.frames.begin() + static_cast<long>(sample.kernel.size()),
                            st.frames.end());
          s.contexts.NoteSample(sample.tid, sample.time_ns, key);
        }
        (void)s.methods_from_stacks.AddStackSample(st);
        s.accounting.stack_samples.fetch_add(1, std::memory_order_relaxed);
      }
      // The process's name is its main thread's, as of its latest sample: a child forked by a
      // shell is named `sh` until it execs (other threads may have names of their own).
      if (s.info.comm.empty() || sample.tid == s.pid) s.info.comm = sample.comm;
    }
  }
  s.generation.fetch_add(1, std::memory_order_relaxed);
}

PbsContents ProfileStore::RecentBranches() const {
  const Impl& s = *impl_;
  std::lock_guard<std::mutex> lock(s.mu);
  PbsContents out;
  out.batches.assign(s.recent.begin(), s.recent.end());
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

void ProfileStore::AddBranches(const BranchBatch& batch) {
  Impl& s = *impl_;
  {
    std::lock_guard<std::mutex> lock(s.mu);
    if (s.BeforeExecLocked(batch.time_ns)) return;
  }
  std::vector<double> durations;
  if (s.cycles && batch.window && !batch.events.empty()) {
    std::lock_guard<std::mutex> cycle_lock(s.cycle_mu);
    // The model decodes each span before asking for the next: holding the last image will do.
    std::shared_ptr<const decoders::ElfImage> owner;
    durations = s.cycles->WindowDurations(batch.events, [&](uint64_t address) {
      std::lock_guard<std::mutex> lock(s.mu);
      SymbolService::Code code = s.symbols->CodeAt(s.pid, s.space, address);
      owner = std::move(code.owner);
      return code.bytes;
    });
  }
  {
    std::lock_guard<std::mutex> lock(s.mu);
    s.accounting.windows.fetch_add(1, std::memory_order_relaxed);
    s.accounting.branches.fetch_add(batch.events.size(), std::memory_order_relaxed);
    if (batch.events.empty()) {
      s.accounting.drops.Add("empty_window");
    } else {
      if (s.estimator && batch.window) {
        const uint64_t unweighted = s.estimator->stats().windows_without_density;
        std::vector<WindowContexts::Contribution> paths;
        s.estimator->AddWindow(batch.events, durations,
                               [&](const hwmodel::PathDescriptor& p, double value, uint64_t n) {
                                 paths.push_back({p, value, n});
                               });
        // Fewer than two taken branches, or no block length known: no density to weight by.
        if (s.estimator->stats().windows_without_density > unweighted)
          s.accounting.drops.Add("window_without_density");
        s.AttributeWindowLocked(batch, paths);
      }
      if (batch.stack.empty()) {
        s.KeepRecentLocked(batch);
      } else {
        BranchBatch kept = batch;  // exports carry branches, not the stack bytes
        kept.stack = {};
        s.KeepRecentLocked(kept);
      }
      auto it = s.stacks.find(batch.tid);
      if (it == s.stacks.end()) it = s.stacks.emplace(batch.tid, *s.stack_proto).first;
      hwmodel::PathStack& stack = it->second;
      if (batch.gap_before || batch.window) stack.Reset();
      const std::span<const BranchEvent> events(batch.events);
      for (size_t i = 0; i < events.size(); ++i) {
        stack.Process(events[i],
                      [&](const hwmodel::CompletedPath& c) { s.RecordPath(c, events, i); });
      }
      // A window ends mid-path: its open paths are partial and must not leak into the next.
      if (batch.window) stack.Reset();

      auto sit = s.osp_samplers.find(batch.tid);
      if (sit == s.osp_samplers.end()) {
        sit = s.osp_samplers
                  .emplace(batch.tid,
                           std::make_unique<profiles::OspThreadSampler>(s.osp.get(), batch.tid))
                  .first;
      }
      sit->second->Feed(batch);
      if (batch.window) sit->second->Gap();
      sit->second->Flush();
      s.call_pairs.AddBatch(batch);
      s.methods_from_branches.AddBatch(batch);
    }
  }
  s.generation.fetch_add(1, std::memory_order_relaxed);
}

TargetInfo ProfileStore::Info() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->info;
}

using ContextTally = WindowContexts::PathTally;

HotPathsResult ProfileStore::HotPaths(const HotPathsQuery& query) const {
  const Impl& s = *impl_;
  HotPathsResult out;
  out.as_of_unix_ms = UnixMs();
  struct RowContext {
    ContextKey key;
    profiles::PcctNodeId node;
    ContextTally tally;
  };
  struct Row {
    hwmodel::PathDescriptor path;
    double value, half_width;
    uint64_t observations;
    std::vector<uint64_t> blocks;
    std::vector<RowContext> contexts = {};
    double contexts_total = 0;
  };
  std::vector<Row> rows;
  decoders::AddressSpace space;
  std::string comm;  // the process's name, as of the snapshot
  PathMetric metric = query.metric;
  std::vector<ContextKey> chosen;
  if (query.context) {
    if (query.context->pid != 0 && query.context->pid != s.pid) return out;
    chosen = s.SelectContexts(*query.context);
  }
  {
    std::lock_guard<std::mutex> lock(s.mu);
    space = s.space;
    comm = s.info.comm;
    if (query.context) {
      // The windows attributed to the chosen contexts, their paths summed over them.
      out.estimator = PathEstimator::kWindows;
      metric = PathMetric::kCount;
      std::unordered_map<hwmodel::PathDescriptor, WindowContexts::PathTally,
                         hwmodel::PathDescriptorHash>
          sum;
      for (const ContextKey& k : chosen) {
        const WindowContexts::Context* c = s.contexts.Find(k);
        if (c == nullptr) continue;
        ++out.contexts_matched;
        out.context_windows += c->windows;
        out.total += c->weight;
        for (const auto& [path, t] : c->paths) {
          WindowContexts::PathTally& into = sum[path];
          into.sum += t.sum;
          into.sum_sq += t.sum_sq;
          into.observations += t.observations;
        }
      }
      out.paths_distinct = sum.size();
      std::vector<std::pair<hwmodel::PathDescriptor, WindowContexts::PathTally>> sorted(sum.begin(),
                                                                                        sum.end());
      std::sort(sorted.begin(), sorted.end(),
                [](const auto& a, const auto& b) { return a.second.sum > b.second.sum; });
      const double z = 1.96;  // the window estimator's 95% interval (window_estimator.h)
      for (size_t i = 0; i < sorted.size() && rows.size() < query.top_k; ++i)
        rows.push_back({sorted[i].first,
                        sorted[i].second.sum,
                        z * std::sqrt(sorted[i].second.sum_sq),
                        sorted[i].second.observations,
                        {}});
    } else if (s.estimator && metric == PathMetric::kCount) {
      out.estimator = PathEstimator::kWindows;
      const auto est = s.estimator->Estimates();
      out.paths_distinct = est.size();
      for (const auto& e : est) out.total += e.estimate;
      for (size_t i = 0; i < est.size() && rows.size() < query.top_k; ++i) {
        rows.push_back({est[i].path,
                        est[i].estimate,
                        (est[i].ci_high - est[i].ci_low) / 2,
                        est[i].observations,
                        {}});
      }
    } else {
      out.estimator = PathEstimator::kHotPathTable;
      // The table accumulates one metric, fixed when the session started.
      metric = s.config.engine.metric;
      const auto sorted = s.hpt->Sorted();
      out.paths_distinct = sorted.size();
      out.total = static_cast<double>(s.hpt->Total());
      for (size_t i = 0; i < sorted.size() && rows.size() < query.top_k; ++i)
        rows.push_back({sorted[i].path, double(sorted[i].value), 0, sorted[i].value, {}});
    }
    if (query.contexts_per_path > 0) {
      // Each row's contexts, heaviest first: a scan of the (bounded) context table per row.
      for (Row& r : rows) {
        double path_total = 0;
        for (const auto& c : s.ContextsOfLocked(r.path)) {
          path_total += c.tally.sum;
          r.contexts.push_back({c.key, s.LiveNodeLocked(c.key, c.node), c.tally});
        }
        std::sort(r.contexts.begin(), r.contexts.end(),
                  [](const auto& a, const auto& b) { return a.tally.sum > b.tally.sum; });
        if (r.contexts.size() > query.contexts_per_path) r.contexts.resize(query.contexts_per_path);
        r.contexts_total = path_total;
      }
    }
    if (query.with_blocks) {
      for (Row& r : rows) {
        auto it = s.representatives.find(r.path);
        r.blocks = it != s.representatives.end() ? it->second : std::vector<uint64_t>{r.path.start};
      }
    }
  }
  for (Row& r : rows) {
    HotPath p;
    p.pid = s.pid;
    p.comm = comm;
    p.start = s.symbols->Symbolize(s.pid, space, r.path.start);
    p.length = r.path.length;
    p.outcomes = r.path.outcomes;
    p.metric = metric;
    p.estimate.value = r.value;
    p.estimate.error_bound = r.half_width;
    p.estimate.confidence = r.half_width > 0 ? kConfidence95 : 0;
    p.estimate.share = out.total > 0 ? r.value / out.total : 0;
    p.observations = r.observations;
    p.blocks = s.SymbolizeAll(space, r.blocks);
    for (const RowContext& rc : r.contexts) {
      PathContext pc;
      pc.node = rc.node == profiles::kPcctNoNode ? 0 : rc.node;
      pc.truncated = rc.key.truncated;
      for (auto f = rc.key.frames.rbegin(); f != rc.key.frames.rend(); ++f)
        pc.functions.push_back(s.symbols->Symbolize(s.pid, space, f->function));
      pc.estimate.value = rc.tally.sum;
      pc.estimate.error_bound = 1.96 * std::sqrt(rc.tally.sum_sq);
      pc.estimate.confidence = pc.estimate.error_bound > 0 ? kConfidence95 : 0;
      pc.estimate.share = r.contexts_total > 0 ? rc.tally.sum / r.contexts_total : 0;
      pc.observations = rc.tally.observations;
      p.contexts.push_back(std::move(pc));
    }
    out.paths.push_back(std::move(p));
  }
  return out;
}

std::vector<PathKey> ProfileStore::PathKeys() const {
  const Impl& s = *impl_;
  std::lock_guard<std::mutex> lock(s.mu);
  std::vector<PathKey> keys;
  auto add = [&](const hwmodel::PathDescriptor& p) {
    keys.push_back({s.pid, p.start, p.length, p.outcomes});
  };
  if (s.estimator) {
    for (const auto& e : s.estimator->Estimates()) add(e.path);
  } else {
    for (const auto& e : s.hpt->Sorted()) add(e.path);
  }
  return keys;
}

HotSubpathsResult ProfileStore::HotSubpaths(const HotSubpathsQuery& query) const {
  const Impl& s = *impl_;
  HotSubpathsResult out;
  profiles::OspReportOptions options;
  options.top_k = query.threshold > 0 ? 0 : query.top_k;
  options.confidence = s.config.osp.confidence;
  // The report is built under the lock that Add holds while it feeds the reservoir (a
  // consistent snapshot); naming its blocks, the slow part, happens after.
  Result<profiles::OspReport> report = Status(ErrorCode::kInternal, "no report");
  decoders::AddressSpace space;
  std::string comm;
  {
    std::lock_guard<std::mutex> lock(s.mu);
    report = profiles::BuildOspReport(*s.osp, options);
    comm = s.info.comm;
    space = s.space;
  }
  if (!report.ok()) return out;
  out.sampling_frequency = report->stats.f;
  double total = 0;
  for (const auto& e : report->entries) total += e.metric;
  out.share_basis = total;
  for (const auto& e : report->entries) {
    const double share = total > 0 ? e.metric / total : 0;
    if (query.threshold > 0 && share < query.threshold) continue;
    Subpath sp;
    sp.pid = s.pid;
    sp.comm = comm;
    sp.length = e.length;
    sp.blocks = s.SymbolizeAll(space, e.blocks);
    sp.estimate.value = e.estimated_count;
    sp.estimate.error_bound =
        std::isfinite(e.relative_error) ? e.estimated_count * e.relative_error : e.estimated_count;
    sp.estimate.confidence = s.config.osp.confidence;
    sp.estimate.share = share;
    out.subpaths.push_back(std::move(sp));
  }
  return out;
}

namespace {

// A call site is a return address: its file, line and inline frames are the call's, one byte
// back (as perf and pprof read callers); its address and offset stay the return address.
Location CallSiteLocation(SymbolService& symbols, uint32_t pid, const decoders::AddressSpace& space,
                          uint64_t return_address) {
  Location l = symbols.Symbolize(pid, space, return_address - 1);
  l.address = return_address;
  if (!l.function.empty()) ++l.offset;
  for (Location& f : l.inlined_by) f.address = return_address;
  return l;
}

}  // namespace

std::vector<std::pair<Location, uint64_t>> ProfileStore::LeafAddresses(
    uint64_t function_start) const {
  const Impl& s = *impl_;
  std::vector<std::pair<uint64_t, uint64_t>> counts;
  decoders::AddressSpace space;
  {
    std::lock_guard<std::mutex> lock(s.mu);
    auto it = s.leaf_addresses.find(function_start);
    if (it == s.leaf_addresses.end()) return {};
    counts.assign(it->second.begin(), it->second.end());
    space = s.space;
  }
  std::sort(counts.begin(), counts.end());
  std::vector<std::pair<Location, uint64_t>> out;
  out.reserve(counts.size());
  for (const auto& [address, n] : counts)
    out.emplace_back(s.symbols->Symbolize(s.pid, space, address), n);
  return out;
}

CallingContextTree ProfileStore::Cct(const CctQuery& query) const {
  const Impl& s = *impl_;
  CallingContextTree out;
  // One copy of the tree and its totals, taken under the lock that Add holds while it feeds the
  // tree; the walk and the naming below read only the copy.
  std::vector<profiles::PcctNode> nodes;
  profiles::PcctStats st;
  decoders::AddressSpace space;
  // Branch windows attributed to each node (its own context and those below it).
  std::unordered_map<profiles::PcctNodeId, uint64_t> windows_of;
  {
    std::lock_guard<std::mutex> lock(s.mu);
    nodes = s.pcct->Snapshot();
    st = s.pcct->stats();
    space = s.space;
    s.contexts.ForEach([&](const ContextKey& k, const WindowContexts::Context& c) {
      const profiles::PcctNodeId id = s.LiveNodeLocked(k, c.node);
      if (id != profiles::kPcctNoNode) windows_of[id] += c.windows;
    });
  }
  std::unordered_map<profiles::PcctNodeId, std::vector<size_t>> children_of;
  std::unordered_map<profiles::PcctNodeId, profiles::PcctNodeId> parent_of;
  for (size_t i = 0; i < nodes.size(); ++i) {
    children_of[nodes[i].parent].push_back(i);
    parent_of[nodes[i].id] = nodes[i].parent;
  }
  {
    std::unordered_map<profiles::PcctNodeId, uint64_t> own;
    own.swap(windows_of);
    for (const auto& [id, w] : own)
      for (auto at = parent_of.find(id); at != parent_of.end(); at = parent_of.find(at->second))
        windows_of[at->first] += w;
  }
  auto windows_at = [&](profiles::PcctNodeId id) {
    auto it = windows_of.find(id);
    return it == windows_of.end() ? uint64_t{0} : it->second;
  };
  auto children = [&](profiles::PcctNodeId id) {
    std::vector<const profiles::PcctNode*> out_children;
    if (auto it = children_of.find(id); it != children_of.end())
      for (size_t i : it->second) out_children.push_back(&nodes[i]);
    return out_children;
  };
  out.samples = st.samples;
  out.total_weight = static_cast<double>(st.weight);
  const double min_weight = query.min_weight * out.total_weight;

  std::unordered_map<uint64_t, Location> names;
  auto name_of = [&](uint64_t fn) -> const Location& {
    auto it = names.find(fn);
    if (it == names.end()) it = names.emplace(fn, s.symbols->Symbolize(s.pid, space, fn)).first;
    return it->second;
  };
  struct Item {
    profiles::PcctNode node;
    uint64_t parent_out;  // id in the output, 0 for a root
    uint32_t depth;
  };
  std::deque<Item> queue;
  uint64_t next_id = 1;
  auto push_children = [&](profiles::PcctNodeId id, uint64_t parent_out, uint32_t depth) {
    for (const profiles::PcctNode* c : children(id)) {
      // Nodes only branch windows named (no stack sample passed through them) stay visible.
      if ((double(c->total) < min_weight || c->total == 0) && windows_at(c->id) == 0) continue;
      queue.push_back({*c, parent_out, depth});
    }
  };
  if (query.root_function.empty()) {
    push_children(profiles::Pcct::kRoot, 0, 1);
    push_children(profiles::Pcct::kTruncatedRoot, 0, 1);
  } else {
    // Re-rooted: every node of the function becomes a root (breadth-first over the whole tree).
    std::deque<profiles::PcctNodeId> all{profiles::Pcct::kRoot, profiles::Pcct::kTruncatedRoot};
    size_t visited = 0;
    while (!all.empty() && visited < 1000000) {
      const profiles::PcctNodeId id = all.front();
      all.pop_front();
      for (const profiles::PcctNode* c : children(id)) {
        ++visited;
        if (name_of(c->frame.function).function == query.root_function) {
          if (double(c->total) >= min_weight) queue.push_back({*c, 0, 1});
        } else {
          all.push_back(c->id);
        }
      }
    }
  }
  while (!queue.empty() && out.nodes.size() < query.max_nodes) {
    Item item = std::move(queue.front());
    queue.pop_front();
    CctNode n;
    n.id = next_id++;
    n.parent_id = item.parent_out;
    n.pid = s.pid;
    n.function = name_of(item.node.frame.function);
    if (item.parent_out != 0 && item.node.frame.call_site != 0)
      n.call_site = CallSiteLocation(*s.symbols, s.pid, space, item.node.frame.call_site);
    n.self_weight = double(item.node.self);
    n.total_weight = double(item.node.total);
    n.edge_weight = double(item.node.edge);
    n.truncated = item.node.under_truncated_root;
    n.context_id = item.node.id;
    n.windows = windows_at(item.node.id);
    out.nodes.push_back(n);
    if (item.depth < query.max_depth) push_children(item.node.id, n.id, item.depth + 1);
  }
  return out;
}

HotCallPairsResult ProfileStore::HotCallPairs(uint32_t top_k) const {
  const Impl& s = *impl_;
  HotCallPairsResult out;
  std::vector<std::pair<profiles::CallPair, uint64_t>> top;
  double total = 0;
  decoders::AddressSpace space;
  std::string comm;
  {
    std::lock_guard<std::mutex> lock(s.mu);
    top = s.call_pairs.Top(top_k);
    total = double(s.call_pairs.total());
    space = s.space;
    comm = s.info.comm;
  }
  out.total = total;
  for (const auto& [pair, count] : top) {
    CallPair p;
    p.pid = s.pid;
    p.comm = comm;
    p.call_site = s.symbols->Symbolize(s.pid, space, pair.call_site);
    p.target = s.symbols->Symbolize(s.pid, space, pair.target);
    p.estimate.value = double(count);
    p.estimate.share = total > 0 ? double(count) / total : 0;
    out.pairs.push_back(std::move(p));
  }
  return out;
}

HotMethodsResult ProfileStore::HotMethods(uint32_t top_k) const {
  const Impl& s = *impl_;
  HotMethodsResult out;
  out.hot_data_streams_unsupported =
      profiles::HpsSupport(profiles::HpsProfileType::kHotDataStream).message();
  std::vector<std::pair<uint64_t, uint64_t>> by_self, by_entries;
  double self_total = 0, entries_total = 0;
  decoders::AddressSpace space;
  std::string comm;
  std::unordered_map<uint64_t, uint64_t> self_of, entries_of;
  {
    std::lock_guard<std::mutex> lock(s.mu);
    by_self = s.methods_from_stacks.Top(top_k);
    by_entries = s.methods_from_branches.Top(top_k);
    self_total = double(s.methods_from_stacks.total());
    entries_total = double(s.methods_from_branches.total());
    out.self_total = self_total;
    out.entries_total = entries_total;
    comm = s.info.comm;
    for (const auto& [fn, w] : by_self) entries_of[fn] = s.methods_from_branches.Count(fn);
    for (const auto& [fn, w] : by_entries) self_of[fn] = s.methods_from_stacks.Count(fn);
    space = s.space;
  }
  // Ranked by stack self weight (CPU), then methods only branch windows saw, by entries.
  std::vector<std::tuple<uint64_t, uint64_t, uint64_t>> rows;  // fn, self, entries
  std::unordered_set<uint64_t> seen;
  for (const auto& [fn, w] : by_self) rows.emplace_back(fn, w, entries_of[fn]), seen.insert(fn);
  for (const auto& [fn, w] : by_entries)
    if (!seen.contains(fn)) rows.emplace_back(fn, self_of[fn], w);
  if (rows.size() > top_k) rows.resize(top_k);
  for (const auto& [fn, self, entries] : rows) {
    HotMethod m;
    m.pid = s.pid;
    m.comm = comm;
    m.function = s.symbols->Symbolize(s.pid, space, fn);
    m.self.value = double(self);
    m.self.share = self_total > 0 ? double(self) / self_total : 0;
    m.entries.value = double(entries);
    m.entries.share = entries_total > 0 ? double(entries) / entries_total : 0;
    out.methods.push_back(std::move(m));
  }
  return out;
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
  t.pipeline_cpu_seconds = double(s.accounting.pipeline_cpu_ns.load()) / 1e9;
  const profiles::OspStats osp = s.osp->stats();
  std::lock_guard<std::mutex> lock(s.mu);
  uint64_t mem = s.pcct->node_count() * 64 + osp.memory_bytes;
  mem += uint64_t(s.config.engine.hpt_entries) * 32;
  for (const auto& [path, blocks] : s.representatives) mem += 64 + blocks.size() * 8;
  mem += s.function_of.size() * 32 + s.space.mappings().size() * 96;
  mem += s.leaf_address_entries * 48;
  if (s.estimator) mem += s.estimator->Estimates().size() * 64;
  mem += s.contexts.memory_bytes();
  t.windows_with_context = s.windows_with_context;
  t.memory_bytes = mem;
  t.window_weighting = s.window_weighting;
  t.namespace_pid = s.info.namespace_pid;
  t.export_windows_kept = s.recent.size();
  t.export_windows_let_go = s.recent_let_go;
  return t;
}

}  // namespace pathprof::pipeline
