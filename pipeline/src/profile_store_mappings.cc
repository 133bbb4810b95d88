// ProfileStore: the process's mappings, read from /proc (or a recording), and the symbols and
// frames found through them.
#include "pathprof/core/procfs.h"
#include "profile_store_impl.h"

namespace pathprof::pipeline {
namespace {

// How often at most a miss re-reads the maps (a frame that no mapping will ever cover, a broken
// unwind or a stale return address, would otherwise re-read them under the lock on every sample).
constexpr std::chrono::milliseconds kMissRefreshInterval{100};

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

// The last NSpid of /proc/PID/status: the pid in the process's innermost pid namespace; 0 when
// it is the pid itself (no container) or unreadable.
uint32_t NamespacePid(uint32_t pid) {
  auto status = procfs::Procfs::Host().ReadStatus(static_cast<pid_t>(pid));
  if (!status.ok()) return 0;
  const auto inner = static_cast<uint32_t>(status->innermost_pid);
  return inner == pid ? 0 : inner;
}

}  // namespace

Status ProfileStore::Impl::RefreshLocked() {
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
    auto cgroup = proc.Cgroup(static_cast<pid_t>(pid));
    info.cgroup = cgroup.ok() ? std::move(*cgroup) : "";
    info.namespace_pid = NamespacePid(pid);
  }
  return Status::Ok();
}

uint64_t ProfileStore::Impl::FunctionOfLocked(uint64_t address) {
  // A kernel frame is named when a query shows it, not here (kernel_keys.h).
  if (decoders::IsKernelAddress(address) && !symbols->KernelSymbolsRead() &&
      (kernel_address_keys.contains(address) ||
       kernel_address_keys.size() < kMaxKernelAddressKeys)) {
    kernel_address_keys.insert(address);
    return address;
  }
  auto it = function_of.find(address);
  if (it != function_of.end()) return it->second;
  const uint64_t fn = symbols->FunctionStart(pid, space, address);
  if (function_of.size() < (1u << 20)) function_of.emplace(address, fn);
  return fn;
}

void ProfileStore::Impl::RefreshAfterMissLocked() {
  const auto now = std::chrono::steady_clock::now();
  if (now - last_miss_refresh < kMissRefreshInterval) return;
  last_miss_refresh = now;
  if (RefreshLocked().ok()) function_of.clear();
}

void ProfileStore::Impl::CountRefusedCfi(const decoders::UnwindResult& u) {
  for (const std::string& reason : u.cfi_refused)
    accounting.decode_errors.Add("cfi_refused:" + reason);
}

std::vector<uint64_t> ProfileStore::Impl::UserFramesLocked(
    const collectors::RawStackSample& sample) {
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

std::vector<profiles::StackFrame> ProfileStore::Impl::FramesLocked(
    const std::vector<uint64_t>& addrs) {
  std::vector<profiles::StackFrame> frames;
  frames.reserve(addrs.size());
  for (size_t i = 0; i < addrs.size(); ++i)
    frames.push_back({FunctionOfLocked(addrs[i]), i + 1 < addrs.size() ? addrs[i + 1] : 0});
  return frames;
}

std::vector<Location> ProfileStore::Impl::SymbolizeAll(
    const decoders::AddressSpace& s, const std::vector<uint64_t>& addresses) const {
  std::vector<Location> out;
  out.reserve(addresses.size());
  for (uint64_t a : addresses) out.push_back(symbols->Symbolize(pid, s, a));
  return out;
}

decoders::AddressSpace ProfileStore::Impl::SpaceCopy() const {
  std::lock_guard<std::mutex> lock(mu);
  return space;
}

}  // namespace pathprof::pipeline
