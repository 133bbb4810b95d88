#include "thread_stack_reader.h"

#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/user.h>

#include <algorithm>
#include <cerrno>
#include <vector>

namespace pathprof::stepping {
namespace {

constexpr uint64_t kPage = 4096;

}  // namespace

ThreadStack ReadThreadStack(pid_t pid, pid_t tid, size_t max_bytes) {
  ThreadStack out;
  user_regs_struct r;
  if (ptrace(PTRACE_GETREGS, tid, nullptr, &r) != 0) {
    out.error = errno != 0 ? errno : EIO;
    return out;
  }
  max_bytes = std::min(max_bytes, kMaxThreadStackBytes);
  // x86-64 DWARF register numbers 0..16 (decoders/cfi_unwinder.h).
  std::vector<uint64_t> regs = {r.rax, r.rdx, r.rcx, r.rbx, r.rsi, r.rdi, r.rbp, r.rsp, r.r8,
                                r.r9,  r.r10, r.r11, r.r12, r.r13, r.r14, r.r15, r.rip};
  out.stack_start = r.rsp;
  out.stack.resize(max_bytes);
  // One remote piece per page: the kernel stops at the first unreadable piece and returns what
  // it read before it, so a stack whose mapping ends inside the window keeps its readable part.
  std::vector<iovec> remote;
  for (uint64_t at = r.rsp, end = r.rsp + max_bytes; at < end;) {
    const uint64_t next = std::min(end, (at / kPage + 1) * kPage);
    remote.push_back({reinterpret_cast<void*>(at), static_cast<size_t>(next - at)});
    at = next;
  }
  iovec local{out.stack.data(), out.stack.size()};
  const ssize_t n =
      remote.empty() ? 0 : process_vm_readv(pid, &local, 1, remote.data(), remote.size(), 0);
  if (n <= 0) {
    out.error = n < 0 && errno != 0 ? errno : EFAULT;
    out.stack.clear();
    return out;
  }
  out.stack.resize(static_cast<size_t>(n));
  out.regs = std::move(regs);
  return out;
}

}  // namespace pathprof::stepping
