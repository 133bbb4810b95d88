// The pages of a process that change while it runs (stack, heap, writable data) must be read
// again for every emulated window, and a read of one page through /proc/PID/mem costs ~1.4 us
// here: Python's windows read about twenty, more than the emulation itself. But consecutive
// windows read mostly the same ones (the interpreter's state, type objects, the stack), and one
// process_vm_readv of many pages costs ~0.6 us a page. So at a window's start the pages recent
// windows kept reading are read in one call, and the window takes them from there; the rest it
// reads one by one as before. A page read at the start is as current as one read later: the
// thread is stopped for the whole window (other threads of the process may write either way).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <unordered_map>
#include <vector>

namespace pathprof::stepping {

class PagePrefetch {
 public:
  static constexpr size_t kMaxPages = 48;  // read at one window's start
  static constexpr size_t kMaxTracked = 1024;

  explicit PagePrefetch(pid_t pid) : pid_(pid) {}

  // At a window's start: reads the pages read in at least two of the last eight windows, and
  // the stack page at `rsp`, among those `readable` (the CPU would let the thread read them,
  // and they may change) says yes to, in one system call.
  void Begin(uint64_t rsp, const std::function<bool(uint64_t)>& readable);
  // The bytes of `page` read at Begin, or nullptr; counts the page as used by this window.
  const uint8_t* Take(uint64_t page);
  // A page this window read one by one.
  void Used(uint64_t page);
  // At the window's end: shifts every page's history by one window.
  void End();
  // The process exec'd: its pages are new.
  void Reset();

  uint64_t prefetched() const { return prefetched_; }  // pages read at window starts
  uint64_t taken() const { return taken_; }            // of which a window used
  uint64_t calls() const { return calls_; }            // process_vm_readv calls

 private:
  pid_t pid_;
  // Per page: bit i set when the window i windows ago read it (bit 0: this window).
  std::unordered_map<uint64_t, uint8_t> history_;
  std::vector<uint64_t> pages_;                 // read at Begin, in buffer order
  std::vector<uint8_t> buffer_;                 // their bytes
  std::unordered_map<uint64_t, size_t> index_;  // page -> position in pages_
  uint64_t prefetched_ = 0, taken_ = 0, calls_ = 0;
};

}  // namespace pathprof::stepping
