#include "live_guest.h"

#include <cpuid.h>
#include <elf.h>
#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/ptrace.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <set>
#include <string>
#include <utility>

#include "pathprof/core/clock.h"
#include "pathprof/core/procfs.h"
#include "pathprof/decoders/address_space.h"

namespace pathprof::stepping {
namespace {

constexpr uint64_t kPageSize = emulator::Guest::kPageSize;
constexpr uint64_t kMissRefreshNs = 10'000'000;  // a miss re-reads the maps at most every 10 ms
constexpr size_t kMaxWritableNow = 16;  // mappings remembered per window (then queried per page)

// Where the XSAVE standard (non-compacted) format that PTRACE_GETREGSET returns puts each
// component on this CPU: CPUID leaf 0xD, sub-leaf i gives component i's size (EAX) and offset
// (EBX). 0 where the CPU lacks the component.
struct XsaveLayout {
  uint32_t size = 4096;
  uint32_t ymm_hi128 = 0;  // component 2: bits 128..255 of ymm0-15
  uint32_t opmask = 0;     // component 5: k0-k7
  uint32_t zmm_hi256 = 0;  // component 6: bits 256..511 of zmm0-15
  uint32_t hi16_zmm = 0;   // component 7: zmm16-31 whole
};

const XsaveLayout& Layout() {
  static const XsaveLayout layout = [] {
    XsaveLayout l;
    unsigned a = 0, b = 0, c = 0, d = 0;
    if (__get_cpuid_count(0xd, 0, &a, &b, &c, &d) && c >= 576) l.size = c;
    auto offset_of = [](unsigned component, unsigned min_size) -> uint32_t {
      unsigned ea = 0, eb = 0, ec = 0, ed = 0;
      if (!__get_cpuid_count(0xd, component, &ea, &eb, &ec, &ed) || ea < min_size) return 0;
      return eb;
    };
    l.ymm_hi128 = offset_of(2, 256);
    l.opmask = offset_of(5, 64);
    l.zmm_hi256 = offset_of(6, 512);
    l.hi16_zmm = offset_of(7, 1024);
    return l;
  }();
  return layout;
}

// XSAVE legacy region and header.
constexpr uint32_t kFcwOffset = 0;  // x87 control word
constexpr uint32_t kFswOffset = 2;  // x87 status word
constexpr uint32_t kMxcsrOffset = 24;
constexpr uint32_t kXmmOffset = 160;
constexpr uint32_t kXstateBvOffset = 512;
constexpr uint64_t kX87 = 1u << 0, kSse = 1u << 1, kAvx = 1u << 2, kOpmask = 1u << 5,
                   kZmmHi256 = 1u << 6, kHi16Zmm = 1u << 7;

constexpr unsigned long kProcmapQuery = _IOWR('f', 17, ProcmapQuery);
constexpr uint64_t kProcmapReadable = 0x01, kProcmapWritable = 0x02, kProcmapExecutable = 0x04;

// Whether the kernel's answer `q` is the read-only mapping `r` (same place, file and offset).
template <typename Range>
bool SameMapping(const Range& r, const ProcmapQuery& q) {
  return q.vma_start == r.start && q.vma_end == r.end && q.vma_offset == r.pgoff &&
         q.inode == r.inode && makedev(q.dev_major, q.dev_minor) == r.device &&
         (q.vma_flags & kProcmapReadable) != 0 && (q.vma_flags & kProcmapWritable) == 0;
}

}  // namespace

ProcessPages::~ProcessPages() {
  if (maps_fd_ >= 0) close(maps_fd_);
}

void ProcessPages::Reset() {
  if (maps_fd_ >= 0) close(maps_fd_);  // it names the address space that exec replaced
  maps_fd_ = -1;
  ranges_.clear();
  stable_in_use_.clear();
  read_at_ns_ = 0;
  stable_changed_ = false;
  prefetch_.Reset();
}

bool ProcessPages::ReadMaps(uint64_t now_ns) {
  read_at_ns_ = now_ns;
  ++maps_reads_;
  std::vector<Range> before = std::move(ranges_);
  ranges_.clear();
  auto space = decoders::ReadProcMaps(pid_);
  const bool ok = space.ok();
  const std::vector<decoders::Mapping> none;
  const std::vector<decoders::Mapping>& lines = ok ? space->mappings() : none;
  const std::vector<bool> stable = ok ? decoders::StableMappings(*space) : std::vector<bool>{};
  ranges_.reserve(lines.size());
  for (size_t i = 0; i < lines.size(); ++i) {
    const decoders::Mapping& m = lines[i];
    Range r;
    r.start = m.start;
    r.end = m.end();
    r.pgoff = m.pgoff;
    r.device = m.device;
    r.inode = m.inode;
    r.readable = m.readable;
    r.writable = m.writable;
    r.executable = m.executable;
    r.stable = stable[i];
    ranges_.push_back(r);
  }
  for (const Range& old : before) {
    if (!old.stable) continue;
    auto it = std::lower_bound(ranges_.begin(), ranges_.end(), old.start,
                               [](const Range& r, uint64_t a) { return r.start < a; });
    if (it == ranges_.end() || !(*it == old)) stable_changed_ = true;
  }
  return ok;
}

bool ProcessPages::Refresh(uint64_t now_ns, uint64_t max_age_ns) {
  if (read_at_ns_ == 0 || now_ns - read_at_ns_ >= max_age_ns || StableMappingReplaced())
    ReadMaps(now_ns);
  const bool changed = stable_changed_;
  stable_changed_ = false;
  if (changed) stable_in_use_.clear();  // the caller drops what the emulator kept
  return changed;
}

// Between reads of the maps, each stable mapping the emulator keeps pages of is checked with
// one PROCMAP_QUERY (a few per window): one replaced at the same address (a plugin reloaded in
// place, a JIT that maps code files in turn) would otherwise serve the old bytes and decodes
// until the next read of the maps.
bool ProcessPages::StableMappingReplaced() {
  for (const Range& r : stable_in_use_) {
    ProcmapQuery q{};
    if (!Query(r.start, &q)) return query_supported_;  // gone (or no PROCMAP_QUERY here)
    if (!SameMapping(r, q)) {
      stable_changed_ = true;
      return true;
    }
  }
  return false;
}

bool ProcessPages::Query(uint64_t address, ProcmapQuery* q) {
  if (!query_supported_) return false;
  if (maps_fd_ < 0) maps_fd_ = procfs::Procfs::Host().Open(pid_, "maps", O_RDONLY);
  if (maps_fd_ < 0) return false;
  q->size = sizeof *q;
  q->query_addr = address;
  ++queries_;
  if (ioctl(maps_fd_, kProcmapQuery, q) == 0) return true;
  if (errno != ENOENT) query_supported_ = false;  // an older kernel (ENOTTY): the maps it is
  return false;
}

const ProcessPages::Range* ProcessPages::Find(uint64_t address) {
  auto find = [&]() -> const Range* {
    auto it = std::upper_bound(ranges_.begin(), ranges_.end(), address,
                               [](uint64_t a, const Range& r) { return a < r.start; });
    if (it == ranges_.begin()) return nullptr;
    --it;
    return address < it->end ? &*it : nullptr;
  };
  if (const Range* r = find()) return r;
  const uint64_t now = MonotonicNs();
  if (read_at_ns_ != 0 && now - read_at_ns_ < kMissRefreshNs) return nullptr;
  ReadMaps(now);  // a stable range it finds changed is reported by the next Refresh
  return find();
}

void ProcessPages::BeginWindow(uint64_t rsp) {
  writable_now_.clear();
  prefetch_.Begin(rsp, [this](uint64_t page) {
    const Range* r = Find(page);
    return r != nullptr && r->readable && !r->stable;
  });
}

bool ProcessPages::Read(uint64_t page, uint8_t* out, bool* stable) {
  const Range* r = Find(page);
  if (r == nullptr || !r->readable) {
    // The maps read last may be older than the mapping: a library the loader mapped since, a
    // new thread's stack, a heap grown with mprotect (a miss re-reads them only every
    // kMissRefreshNs, and windows come faster). The kernel decides instead: process_vm_readv
    // reads only what the mapping allows now, so a page still unmapped, PROT_NONE or
    // execute-only fails as before. Such a page is not kept across windows.
    ++page_reads_;
    iovec local{out, kPageSize}, remote{reinterpret_cast<void*>(page), kPageSize};
    if (process_vm_readv(pid_, &local, 1, &remote, 1, 0) != static_cast<ssize_t>(kPageSize))
      return false;
    *stable = false;
    return true;
  }
  if (!r->stable) {
    if (const uint8_t* bytes = prefetch_.Take(page)) {
      std::memcpy(out, bytes, kPageSize);
      *stable = false;
      return true;
    }
    prefetch_.Used(page);
  }
  // process_vm_readv, not /proc/PID/mem: the latter reads with FOLL_FORCE, through any
  // protection (a PROT_NONE guard page, execute-only code). This read is allowed only what the
  // mapping allows when it happens, so a page made unreadable since the maps were read (up to
  // EmulatedWindows::kMapsMaxAgeNs ago) is unreadable here too.
  ++page_reads_;
  iovec local{out, kPageSize}, remote{reinterpret_cast<void*>(page), kPageSize};
  if (process_vm_readv(pid_, &local, 1, &remote, 1, 0) != static_cast<ssize_t>(kPageSize))
    return false;
  *stable = r->stable && StillMapped(*r);
  if (*stable &&
      std::find(stable_in_use_.begin(), stable_in_use_.end(), *r) == stable_in_use_.end())
    stable_in_use_.push_back(*r);
  return true;
}

// Whether the stable mapping `r`, as the last read of the maps has it, is still the one at its
// place: a page the emulator keeps must be known by the mapping it really came from, or a later
// mapping that looks the same (a file whose inode number was freed and reused) would pass for
// it. When it is not, the page serves this window only and the maps are read again.
bool ProcessPages::StillMapped(const Range& r) {
  ProcmapQuery q{};
  if (!Query(r.start, &q)) return !query_supported_;  // no PROCMAP_QUERY: the maps it is
  if (SameMapping(r, q)) return true;
  read_at_ns_ = 0;
  return false;
}

bool ProcessPages::Writable(uint64_t page) {
  // The permission now, where the kernel can say (PROCMAP_QUERY): the maps may be up to
  // EmulatedWindows::kMapsMaxAgeNs old, and a page made read-only since (a JIT's mprotect
  // after writing its code, a write barrier) must end a window that stores to it, as the CPU
  // would fault.
  for (const WritableNow& w : writable_now_)
    if (page >= w.start && page < w.end) return w.writable;
  ProcmapQuery q{};
  if (Query(page, &q)) {
    const bool writable = (q.vma_flags & kProcmapWritable) != 0;
    if (writable_now_.size() < kMaxWritableNow)
      writable_now_.push_back({q.vma_start, q.vma_end, writable});
    return writable;
  }
  if (query_supported_) return false;  // unmapped since
  const Range* r = Find(page);
  return r != nullptr && r->writable;
}

bool ProcessPages::Executable(uint64_t page) {
  // From the maps (at most kMapsMaxAgeNs old; a change to a stable mapping drops what the
  // emulator decoded from it): asked once per code page and window, a query each would cost
  // more than the rest of the window.
  const Range* r = Find(page);
  if (r != nullptr && r->executable) return true;
  // A "no" ends the window, so it is the kernel's answer now where it has one (PROCMAP_QUERY):
  // the maps read last may be older than the code. A program starting up jumps into a library
  // the loader mapped, or made executable, since (a miss re-reads the maps only every
  // kMissRefreshNs, and a range found but stale is not re-read at all): on a fresh AMD EPYC
  // KVM guest, 6-10 of ~47 windows of examples/threads ended as not_executable that way.
  ProcmapQuery q{};
  if (Query(page, &q)) return (q.vma_flags & kProcmapExecutable) != 0;
  return false;  // unmapped now, or no PROCMAP_QUERY: the maps it is
}

bool ThreadGuest::LoadVectorState(emulator::CpuState* state) {
  const XsaveLayout& layout = Layout();
  std::vector<uint8_t> buf(std::max<uint32_t>(layout.size, 1024), 0);
  iovec iov{buf.data(), buf.size()};
  if (ptrace(PTRACE_GETREGSET, tid_, reinterpret_cast<void*>(NT_X86_XSTATE), &iov) != 0)
    return false;
  const size_t got = iov.iov_len;
  if (got < kXstateBvOffset + 8) return false;
  uint64_t bv = 0;
  std::memcpy(&bv, buf.data() + kXstateBvOffset, 8);
  // A component whose XSTATE_BV bit is clear is in its initial state: zeros.
  for (auto& z : state->zmm) z.fill(0);
  state->k.fill(0);
  state->mxcsr = 0x1f80;
  if (bv & (kSse | kAvx)) std::memcpy(&state->mxcsr, buf.data() + kMxcsrOffset, 4);
  state->fcw = 0x37f;  // the x87 state's initial configuration (FNINIT)
  state->fsw = 0;
  if (bv & kX87) {
    std::memcpy(&state->fcw, buf.data() + kFcwOffset, 2);
    std::memcpy(&state->fsw, buf.data() + kFswOffset, 2);
  }
  auto copy = [&](uint32_t offset, size_t n, uint8_t* to) {
    if (offset == 0 || offset + n > got) return false;
    std::memcpy(to, buf.data() + offset, n);
    return true;
  };
  for (int i = 0; i < 16; ++i) {
    if (bv & kSse) copy(kXmmOffset + 16 * i, 16, state->zmm[i].data());
    if (bv & kAvx) copy(layout.ymm_hi128 + 16 * i, 16, state->zmm[i].data() + 16);
    if (bv & kZmmHi256) copy(layout.zmm_hi256 + 32 * i, 32, state->zmm[i].data() + 32);
    if (bv & kHi16Zmm) copy(layout.hi16_zmm + 64 * i, 64, state->zmm[16 + i].data());
  }
  if (bv & kOpmask)
    for (int i = 0; i < 8; ++i)
      copy(layout.opmask + 8 * i, 8, reinterpret_cast<uint8_t*>(&state->k[i]));
  state->vector_loaded = true;
  return true;
}

bool ReadCpuState(pid_t tid, emulator::CpuState* out, bool* in_restartable_syscall,
                  SyscallAtStop* syscall) {
  user_regs_struct r;
  if (ptrace(PTRACE_GETREGS, tid, nullptr, &r) != 0) return false;
  if (in_restartable_syscall)
    *in_restartable_syscall = ClassifySyscallAtStop(r) == SyscallAtStop::kRestarting;
  if (syscall) *syscall = ClassifySyscallAtStop(r);
  out->gpr = {r.rax, r.rcx, r.rdx, r.rbx, r.rsp, r.rbp, r.rsi, r.rdi,
              r.r8,  r.r9,  r.r10, r.r11, r.r12, r.r13, r.r14, r.r15};
  out->rip = r.rip;
  out->rflags = r.eflags;
  out->fs_base = r.fs_base;
  out->gs_base = r.gs_base;
  out->vector_loaded = false;
  return true;
}

}  // namespace pathprof::stepping
