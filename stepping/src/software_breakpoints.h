// int3 breakpoints written into a traced process's text: the step mechanism for hosts whose
// hypervisor never fires debug-register breakpoints (window_stepper.h, StepMode::kInt3).
//
// Safety. The text is shared by every thread of the process, and the others run on while one is
// stepped. A thread that meets one of our int3s stops (it is traced) with SIGTRAP/SI_KERNEL just
// past it; OwnsTrap recognises that stop (the address was ours, this exec), the caller rewinds
// its rip and holds it until the breakpoints are gone, then resumes it: it runs the original
// instruction, having lost nothing but time. Every byte is restored before the thread being
// stepped, or any other, is resumed at the end of a burst; a fork child's copy of the text is
// cleaned by CleanChild. Writes go through /proc/PID/mem (one pwrite per byte, ~1.6 us here),
// which the kernel allows the tracer on read-only text by copying the page (the process then
// holds a private copy of each page we touched).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

namespace pathprof::stepping {

class SoftwareBreakpoints {
 public:
  explicit SoftwareBreakpoints(pid_t pid) : pid_(pid) {}
  ~SoftwareBreakpoints();  // closes the file; the caller must have called RemoveAll
  SoftwareBreakpoints(const SoftwareBreakpoints&) = delete;
  SoftwareBreakpoints& operator=(const SoftwareBreakpoints&) = delete;

  // The bytes of one instruction that is about to run: [start, end).
  struct CodeRange {
    uint64_t start = 0, end = 0;
  };
  // Plants `plant` and removes any planted address inside a range of `keep_clear` (the
  // instructions about to run, every byte of each: an int3 left inside one, at a jump target
  // that splits it, would change it), writing only the bytes that change. Others stay planted:
  // a leg never reaches an address outside the ones it runs without stopping first, so
  // leftovers cost nothing, and loops that alternate between two legs stop rewriting the same
  // bytes. False when a write failed (the set is then whatever succeeded; RemoveAll still
  // cleans it).
  bool Update(std::span<const uint64_t> plant, std::span<const CodeRange> keep_clear);
  // Restores every planted byte. False when a write failed (the thread is gone).
  bool RemoveAll();
  bool planted(uint64_t address) const { return planted_.count(address) != 0; }
  // Puts the original bytes back into `bytes`, read from the process at `address`.
  void Unpatch(uint64_t address, std::span<uint8_t> bytes) const;
  size_t planted_count() const { return planted_.size(); }

  // True when a thread stopped with SIGTRAP (si_code SI_KERNEL) at `rip` was stopped by one of
  // our int3s, planted now or earlier since the last exec: rewind it to rip - 1.
  bool OwnsTrap(uint64_t rip) const { return ever_.count(rip - 1) != 0; }

  // A fork child shares nothing with us but a copy of the text as it was: restore our bytes in
  // it. `child` is stopped and traced. Returns how many bytes were restored.
  size_t CleanChild(pid_t child);

  // The process exec'd: the text is new, nothing of ours is in it.
  void ForgetAll();

  // Whether an int3 may go at `address`: only into read-only executable file mappings, never
  // into memory the program could be writing (JIT code, writable text). Cached per mapping;
  // /proc/PID/maps is re-read when an address is in none of the known ones.
  bool Plantable(uint64_t address);

  uint64_t writes() const { return writes_; }

 private:
  bool Write(uint64_t address, uint8_t byte);
  bool Open();

  struct Mapping {
    uint64_t start, end;
    bool plantable;
  };

  pid_t pid_;
  int fd_ = -1;
  std::vector<Mapping> maps_;
  std::unordered_map<uint64_t, uint8_t> planted_;  // address -> original byte
  std::unordered_map<uint64_t, uint8_t> ever_;     // every address planted since the last exec
  uint64_t writes_ = 0;
};

}  // namespace pathprof::stepping
