// Emulated branch windows: from a stopped thread's registers, run its next W taken branches in
// an interpreter instead of on the CPU, so that a window costs one ptrace stop instead of one
// per taken branch or per instruction (collectors/, StepMode::kEmulate).
//
// The interpreter executes Zydis-decoded x86-64 user code: integer instructions and flags,
// loads/stores, stack and control flow, string instructions, and the SSE/AVX/AVX2/AVX-512
// moves, compares and mask operations that glibc's string and memory functions use. Memory is
// read on demand from the target (Guest::ReadPage) into a per-window page copy; stores go to
// that copy only, so the target is never changed. A window that meets something the
// interpreter cannot reproduce exactly ends early with the reason (EmulationEnd): the events
// before it are still exact, so an early end makes a shorter window, never a wrong one.
//
// Why not a library: the feasibility check with Unicorn 2.0.1 (Debian's libunicorn-dev) was
// exact but took 80-90 us per 32-branch window on a warm loop and 2.6-3 ms cold (it translates
// every block with QEMU's TCG before running it once), and it lacks the AVX2 instructions that
// glibc's string functions retire, ending 22% of python3's windows. A window here runs a few
// hundred instructions once each: an interpreter over cached decodes is the right tool.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "pathprof/core/branch.h"

namespace pathprof::emulator {

// The registers a window starts from. General registers are in x86 encoding order (rax, rcx,
// rdx, rbx, rsp, rbp, rsi, rdi, r8..r15). Vector state is loaded on first use
// (Guest::LoadVectorState): most windows of integer code never need it.
struct CpuState {
  std::array<uint64_t, 16> gpr{};
  uint64_t rip = 0;
  uint64_t rflags = 0x202;
  uint64_t fs_base = 0;
  uint64_t gs_base = 0;
  // zmm0..zmm31, 64 bytes each (xmm is the low 16, ymm the low 32), and the opmasks k0..k7.
  alignas(64) std::array<std::array<uint8_t, 64>, 32> zmm{};
  std::array<uint64_t, 8> k{};
  uint32_t mxcsr = 0x1f80;
  // The x87 control and status words (fnstcw, fldcw, fwait: strtod, printf and CPython save
  // and set the precision control). x87 arithmetic itself is not modelled.
  uint16_t fcw = 0x37f;
  uint16_t fsw = 0;
  bool vector_loaded = false;
};

// Indices into CpuState::gpr.
enum Gpr : uint8_t { kRax, kRcx, kRdx, kRbx, kRsp, kRbp, kRsi, kRdi };

// What the emulator reads from the target. Implemented over /proc/PID/mem for live threads
// (collectors/) and over plain buffers in tests.
class Guest {
 public:
  virtual ~Guest() = default;
  static constexpr uint64_t kPageSize = 4096;
  // Copies the page at `page` (a multiple of kPageSize) into `out` (kPageSize bytes). `stable`:
  // its bytes do not change while the target runs (read-only file-backed code and data), so
  // the emulator may keep the copy, and the instructions decoded from it, across windows.
  // False when the page is not readable (unmapped, or no read permission).
  virtual bool ReadPage(uint64_t page, uint8_t* out, bool* stable) = 0;
  // Whether the target may store to `page` (read earlier by ReadPage). A store to a page it may
  // not write faults on the CPU, so the window ends there instead of writing the overlay.
  virtual bool PageWritable(uint64_t /*page*/) { return true; }
  // Whether the CPU would execute code in `page` (read earlier by ReadPage).
  virtual bool PageExecutable(uint64_t /*page*/) { return true; }
  // Fills state->zmm, k, mxcsr, fcw and fsw from the thread; false when they cannot be read.
  virtual bool LoadVectorState(CpuState* state) = 0;

  // A guest that holds only part of the target (a snapshot taken without stopping it:
  // stepping/'s SnapshotGuest) says so here. The emulator then tracks which bytes are unknown:
  // a load of bytes the guest does not hold, vector registers it cannot load, and registers it
  // does not hold make what is computed from them unknown, and the window ends only where a
  // branch condition, a jump target, an address or a faulting operand depends on them
  // (EmulationEnd::kNotInSnapshot, kVectorStateUnknown, kRegisterUnknown). Exact or shorter,
  // never wrong, as every other window.
  virtual bool Partial() { return false; }
  // Partial guests, after ReadPage(page): sets to 1 the bytes of `unheld` (kPageSize, zeroed
  // by the caller) whose values the guest does not hold (ReadPage gave something else there);
  // false when it holds the whole page.
  virtual bool UnheldBytes(uint64_t /*page*/, uint8_t* /*unheld*/) { return false; }
  // Partial guests: the general registers whose start values it does not hold (a bit per
  // CpuState::gpr index; rax of a thread sampled inside a system call).
  virtual uint16_t UnheldRegisters() { return 0; }
  // Partial guests: whether PageWritable(page), and for ReadableKnown whether the page could
  // be read at all, are known to hold at the window's start. A guest built from a snapshot
  // knows the bytes it copied but not always the permissions then: the mappings may have
  // changed between its view of them and the sample. A store into such a page, or any access
  // to a page of which it holds no byte, ends the window (EmulationEnd::kProtectionUnknown):
  // the CPU may have faulted there.
  virtual bool WritableKnown(uint64_t /*page*/) { return true; }
  virtual bool ReadableKnown(uint64_t /*page*/) { return true; }
};

// Why a window ended. Every end but kComplete leaves a shorter window, still exact.
enum class EmulationEnd : uint8_t {
  kComplete = 0,      // W taken branches
  kSyscall,           // syscall/sysenter next: the kernel's effects are not modelled
  kTrap,              // int3, int n, ud2, hlt, or a far transfer next
  kUnmodelled,        // an instruction the interpreter does not cover (mnemonic given)
  kHiddenState,       // cpuid, rdtsc, xgetbv, rdrand...: reads state the emulator cannot see
  kFault,             // the instruction would fault (division by zero, a bad alignment)
  kUnreadable,        // a page it reads, or its code, is not readable: the target would fault
  kSelfModifying,     // code was fetched from a page the window wrote
  kInstructionLimit,  // the window ran max_instructions without W taken branches
  kPageLimit,         // the window touched more than max_window_pages pages
  kDecode,            // bytes that are not an instruction
  kVectorState,       // vector registers were needed but could not be read
  kTimeLimit,         // the window ran max_ns (the tracer lost its CPU while the thread waited)
  kSharedMemory,      // an atomic (lock prefix, xchg with memory) in a process of many threads
  kNotExecutable,     // the code is in a page the CPU would not execute (NX): it would fault
  // Partial guests only (Guest::Partial): a branch condition, jump target, address or
  // faulting operand next depends on bytes ...
  kNotInSnapshot,       // ... of memory the guest does not hold
  kVectorStateUnknown,  // ... of vector registers (or mxcsr) it could not load
  kRegisterUnknown,     // ... of a general register it does not hold at the start
  // Partial guests: a store into a page whose write permission at the start the guest does not
  // know, or an access to a page it does not know was readable (Guest::WritableKnown,
  // ReadableKnown).
  kProtectionUnknown,
};
inline constexpr int kEmulationEndCount = 19;
std::string_view EmulationEndName(EmulationEnd end);  // "complete", "syscall", ...

struct EmulatorLimits {
  uint32_t window_taken = 32;
  uint64_t max_instructions = 100000;
  uint32_t max_window_pages = 256;   // pages read or written by one window (1 MiB)
  uint32_t max_stable_pages = 4096;  // kept across windows (16 MiB); then dropped, counted
  uint32_t max_decoded = 1 << 16;    // cached decoded instructions; then dropped, counted
  // Wall time one window may take (checked every 64 instructions); 0: no limit. The thread is
  // stopped meanwhile, so a tracer that loses its CPU mid-window ends it instead of holding it.
  uint64_t max_ns = 0;
};

struct EmulatedWindow {
  std::vector<BranchEvent> events;  // as a stepped window reports them (not-taken included)
  uint32_t taken = 0;
  uint64_t instructions = 0;  // retired (a REP string instruction once)
  EmulationEnd end = EmulationEnd::kComplete;
  uint16_t mnemonic = 0;     // kUnmodelled/kHiddenState/kTrap: the ZydisMnemonic that ended it
  uint64_t end_address = 0;  // the first instruction not executed
  uint32_t pages_read = 0;   // read from the target for this window
  CpuState state;            // registers where the window ended (rip = end_address)
};

struct EmulatorStats {
  uint64_t windows = 0;
  uint64_t instructions = 0;
  uint64_t pages_read = 0;
  uint64_t stable_hits = 0;   // pages served from the cross-window cache
  uint64_t stable_drops = 0;  // the cross-window page cache was full and started over
  uint64_t decoded = 0;       // instructions decoded (cache misses)
  uint64_t decode_drops = 0;  // the decode cache was full and started over
  uint64_t vector_loads = 0;  // windows that needed the vector registers
  std::array<uint64_t, kEmulationEndCount> ends{};
};

class WindowEmulator {
 public:
  explicit WindowEmulator(const EmulatorLimits& limits = {});
  ~WindowEmulator();
  WindowEmulator(const WindowEmulator&) = delete;
  WindowEmulator& operator=(const WindowEmulator&) = delete;

  // Runs from `start` until limits().window_taken taken branches retired or the window ends
  // early. Reads memory through `guest`, never writes to it. `shared_memory`: other threads
  // run meanwhile and write what this one reads; the window then ends at an atomic
  // instruction, where the data it reads is the most likely to change under it (a lock taken,
  // a counter raced), instead of going on with a value the real thread may not see.
  EmulatedWindow Run(const CpuState& start, Guest& guest, bool shared_memory = false);
  // The target exec'd (or its text may have changed): forget every cached page and decode.
  void Reset();
  const EmulatorStats& stats() const;
  const EmulatorLimits& limits() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The instruction name of a ZydisMnemonic ("vpcmpeqb"), for reports; "?" when out of range.
std::string_view MnemonicName(uint16_t mnemonic);

}  // namespace pathprof::emulator
