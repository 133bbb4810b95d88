// The emulator's view of a live traced process (emulator::Guest): its memory page by page as
// the CPU would let its threads see it, and a stopped thread's registers.
//
// Memory is read with process_vm_readv, never through /proc/PID/mem, which reads with
// FOLL_FORCE: it returns pages the process itself may not read (a PROT_NONE guard page,
// execute-only code). A page the CPU would fault on is unreadable to the emulator too, judged
// when it is read; a store to a page without write permission ends the window, judged by the
// kernel's answer now (PROCMAP_QUERY) where it has one, else by /proc/PID/maps. Pages of
// read-only private file mappings (code, .rodata, RELRO; not memfds, nor files the process also
// maps writable and shared) are "stable": the emulator keeps them, and the instructions decoded
// from them, across windows, until such a mapping changes. A file written in place behind its
// mappings, or an inode number reused by a new file mapped at the same place between two
// windows, is a change no check of the mappings can see.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <vector>

#include "interrupted_syscall.h"
#include "page_prefetch.h"
#include "pathprof/emulator/window_emulator.h"

namespace pathprof::stepping {

// PROCMAP_QUERY (Linux 6.11, <linux/fs.h>): the mapping at an address as the kernel has it now,
// one ioctl on an open /proc/PID/maps. Declared here: the headers of older systems lack it.
struct ProcmapQuery {
  uint64_t size;
  uint64_t query_flags;
  uint64_t query_addr;
  uint64_t vma_start;
  uint64_t vma_end;
  uint64_t vma_flags;
  uint64_t vma_page_size;
  uint64_t vma_offset;
  uint64_t inode;
  uint32_t dev_major;
  uint32_t dev_minor;
  uint32_t vma_name_size;
  uint32_t build_id_size;
  uint64_t vma_name_addr;
  uint64_t build_id_addr;
};

class ProcessPages {
 public:
  explicit ProcessPages(pid_t pid) : pid_(pid) {}
  ~ProcessPages();
  ProcessPages(const ProcessPages&) = delete;
  ProcessPages& operator=(const ProcessPages&) = delete;

  // Copies one page; false when the process may not read it (unmapped, no read permission).
  bool Read(uint64_t page, uint8_t* out, bool* stable);
  bool Writable(uint64_t page);
  bool Executable(uint64_t page);

  // Re-reads the mappings when the last read is older than `max_age_ns`, or when a stable
  // mapping that pages were read from is no longer what it was (checked each call, where the
  // kernel has PROCMAP_QUERY). Returns true when a stable mapping changed or went away since
  // (munmap, mprotect, dlclose, a mapping replaced in place): what the emulator kept from
  // stable pages must then be dropped (WindowEmulator::Reset).
  bool Refresh(uint64_t now_ns, uint64_t max_age_ns);
  // The process exec'd: a new address space.
  void Reset();

  // A window starts (its thread stopped with its stack pointer at `rsp`) and ends: the pages
  // recent windows kept reading are read at the start in one call (page_prefetch.h).
  void BeginWindow(uint64_t rsp);
  void EndWindow() {
    prefetch_.End();
    writable_now_.clear();
  }

  uint64_t maps_reads() const { return maps_reads_; }
  uint64_t queries() const { return queries_; }        // PROCMAP_QUERY ioctls
  uint64_t page_reads() const { return page_reads_; }  // one by one
  const PagePrefetch& prefetch() const { return prefetch_; }

 private:
  struct Range {
    uint64_t start = 0, end = 0;
    uint64_t pgoff = 0, device = 0, inode = 0;
    bool readable = false, writable = false, executable = false, stable = false;
    bool operator==(const Range&) const = default;
  };
  // The mapping holding `address`; on a miss the mappings are read again (a region mapped
  // since the last read), at most once per kMissRefreshNs.
  const Range* Find(uint64_t address);
  bool ReadMaps(uint64_t now_ns);
  bool StableMappingReplaced();
  bool StillMapped(const Range& r);
  // The mapping holding `address` now; false when none does, or the kernel cannot say
  // (query_supported_ turns false).
  bool Query(uint64_t address, ProcmapQuery* q);

  pid_t pid_;
  PagePrefetch prefetch_{pid_};
  int maps_fd_ = -1;                  // for PROCMAP_QUERY
  bool query_supported_ = true;       // until the kernel says otherwise
  std::vector<Range> ranges_;         // sorted by start
  std::vector<Range> stable_in_use_;  // stable pages were read from these since the last drop
  // The mappings the kernel described to Writable in this window, with their permission: one
  // query per mapping and window answers for every page of it (a window stores to a dozen
  // pages of one stack or heap). The stopped thread changes no mapping before it runs again;
  // another thread's mprotect during the window is a race a query per page would not close.
  struct WritableNow {
    uint64_t start, end;
    bool writable;
  };
  std::vector<WritableNow> writable_now_;
  uint64_t queries_ = 0;
  uint64_t read_at_ns_ = 0;
  bool stable_changed_ = false;  // since the last Refresh
  uint64_t maps_reads_ = 0;
  uint64_t page_reads_ = 0;
};

// A thread of the process, stopped by this tracer.
class ThreadGuest final : public emulator::Guest {
 public:
  ThreadGuest(pid_t tid, ProcessPages& pages) : tid_(tid), pages_(pages) {}
  bool ReadPage(uint64_t page, uint8_t* out, bool* stable) override {
    return pages_.Read(page, out, stable);
  }
  bool PageWritable(uint64_t page) override { return pages_.Writable(page); }
  bool PageExecutable(uint64_t page) override { return pages_.Executable(page); }
  // The SSE/AVX/AVX-512 registers and MXCSR (PTRACE_GETREGSET NT_X86_XSTATE).
  bool LoadVectorState(emulator::CpuState* state) override;

 private:
  pid_t tid_;
  ProcessPages& pages_;
};

// The general registers, rip, rflags and the fs/gs bases of the stopped thread `tid`; and, when
// `in_restartable_syscall` is given, whether it was stopped inside a system call the kernel
// restarts on resume (a blocked read, a futex wait): then it has no user code to run yet;
// `syscall`, where it stands with respect to a system call (interrupted_syscall.h).
bool ReadCpuState(pid_t tid, emulator::CpuState* out, bool* in_restartable_syscall = nullptr,
                  SyscallAtStop* syscall = nullptr);

}  // namespace pathprof::stepping
