#include "live_guest.h"

#include <cpuid.h>
#include <elf.h>
#include <fcntl.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <string>

#include "pathprof/core/clock.h"
#include "pathprof/decoders/address_space.h"

namespace pathprof::stepping {
namespace {

constexpr uint64_t kPageSize = emulator::Guest::kPageSize;
constexpr uint64_t kMissRefreshNs = 10'000'000;  // a miss re-reads the maps at most every 10 ms

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
constexpr uint32_t kMxcsrOffset = 24;
constexpr uint32_t kXmmOffset = 160;
constexpr uint32_t kXstateBvOffset = 512;
constexpr uint64_t kSse = 1u << 1, kAvx = 1u << 2, kOpmask = 1u << 5, kZmmHi256 = 1u << 6,
                   kHi16Zmm = 1u << 7;

}  // namespace

ProcessPages::~ProcessPages() {
  if (mem_fd_ >= 0) close(mem_fd_);
}

void ProcessPages::Reset() {
  if (mem_fd_ >= 0) close(mem_fd_);
  mem_fd_ = -1;
  ranges_.clear();
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
  if (space.ok()) {
    ranges_.reserve(space->mappings().size());
    for (const decoders::Mapping& m : space->mappings()) {
      Range r;
      r.start = m.start;
      r.end = m.end();
      r.pgoff = m.pgoff;
      r.device = m.device;
      r.inode = m.inode;
      r.readable = m.readable;
      r.writable = m.writable;
      // A read-only file mapping cannot change under the process without an mprotect or a
      // new mapping, which the next read of the maps sees; the vdso never changes.
      r.stable = m.readable && !m.writable && (m.inode != 0 || m.IsVdso());
      ranges_.push_back(r);
    }
  }
  for (const Range& old : before) {
    if (!old.stable) continue;
    auto it = std::lower_bound(ranges_.begin(), ranges_.end(), old.start,
                               [](const Range& r, uint64_t a) { return r.start < a; });
    if (it == ranges_.end() || !(*it == old)) stable_changed_ = true;
  }
  return space.ok();
}

bool ProcessPages::Refresh(uint64_t now_ns, uint64_t max_age_ns) {
  if (read_at_ns_ == 0 || now_ns - read_at_ns_ >= max_age_ns) ReadMaps(now_ns);
  const bool changed = stable_changed_;
  stable_changed_ = false;
  return changed;
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
  prefetch_.Begin(rsp, [this](uint64_t page) {
    const Range* r = Find(page);
    return r != nullptr && r->readable && !r->stable;
  });
}

bool ProcessPages::Read(uint64_t page, uint8_t* out, bool* stable) {
  const Range* r = Find(page);
  if (r == nullptr || !r->readable) return false;
  if (!r->stable) {
    if (const uint8_t* bytes = prefetch_.Take(page)) {
      std::memcpy(out, bytes, kPageSize);
      *stable = false;
      return true;
    }
    prefetch_.Used(page);
  }
  if (mem_fd_ < 0) {
    mem_fd_ = open(("/proc/" + std::to_string(pid_) + "/mem").c_str(), O_RDONLY | O_CLOEXEC);
    if (mem_fd_ < 0) return false;
  }
  ++page_reads_;
  if (pread(mem_fd_, out, kPageSize, static_cast<off_t>(page)) != static_cast<ssize_t>(kPageSize))
    return false;
  *stable = r->stable;
  return true;
}

bool ProcessPages::Writable(uint64_t page) {
  const Range* r = Find(page);
  return r != nullptr && r->writable;
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

bool ReadCpuState(pid_t tid, emulator::CpuState* out, bool* in_restartable_syscall) {
  user_regs_struct r;
  if (ptrace(PTRACE_GETREGS, tid, nullptr, &r) != 0) return false;
  if (in_restartable_syscall) {
    // As ReadStoppedThread: orig_rax holds the system call, rax an ERESTART* code (512..516).
    const long rax = static_cast<long>(r.rax);
    *in_restartable_syscall = static_cast<long>(r.orig_rax) >= 0 && rax <= -512 && rax >= -516;
  }
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
