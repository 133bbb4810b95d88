// LBR reconstruction: a sampled branch stack (newest entry first) becomes the chronological
// stream of every branch retired in that window — the taken branches the hardware recorded, and
// between them the not-taken conditional branches found by walking the fall-through code.
//
// Policy on bad data (never guessed): a fall-through range that meets an unconditional transfer
// before the next recorded source, leaves its image, crosses user/kernel, runs past the bound,
// does not land on the next source (wrong binary), or cannot be decoded is a broken range. The
// sample is split there: the valid parts are emitted as separate batches (each with gap_before),
// and the range is counted by reason. A recorded entry that cannot be classified (no code for its
// source, zero addresses, source not a branch, direct target disagreeing with the recorded
// target) is dropped and counted by reason; the ranges on both sides of it are then unknown and
// the sample splits there too.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "pathprof/core/branch.h"
#include "pathprof/decoders/branch_cache.h"

namespace pathprof::decoders {

struct LbrEntry {
  uint64_t from = 0;
  uint64_t to = 0;
  uint32_t cycles = 0;  // 0 when the hardware does not report it
  bool mispredicted = false;
};

struct LbrSample {
  uint32_t pid = 0;
  uint32_t tid = 0;
  uint64_t time_ns = 0;
  uint64_t ip = 0;                    // the sampled instruction pointer
  std::span<const LbrEntry> entries;  // newest first, as perf records them
  // PERF_SAMPLE_BRANCH_CALL_STACK stacks hold the current call chain, not a branch sequence.
  bool call_stack_mode = false;
};

// Where code lives at run time: a range of runtime addresses, its load bias, and the branch
// cache of the image (which works in image virtual addresses: vaddr = runtime - bias).
struct CodeRegion {
  uint64_t begin = 0;
  uint64_t end = 0;
  uint64_t bias = 0;  // runtime - vaddr, modulo 2^64
  BranchCache* cache = nullptr;

  bool Contains(uint64_t addr) const { return addr >= begin && addr < end; }
};

// Resolves runtime addresses of one process to code. Implementations: ProcessCodeMap (maps +
// ELF files), test fixtures with raw bytes.
class CodeMap {
 public:
  virtual ~CodeMap() = default;
  // The region holding `addr` for process `pid`, or nullptr when no code is known there.
  virtual const CodeRegion* Find(uint32_t pid, uint64_t addr) = 0;
};

enum class LbrEntryDrop : uint8_t {
  kZeroAddress = 0,  // from or to is 0 (unfilled slot, filtered ring)
  kDuplicateEntry,   // the newest entry repeats the next one (old-kernel quirk)
  kNoCode,           // no image with code for the source (kernel without vmlinux, missing .so)
  kNotABranch,       // the source decodes to a non-branch that is not an async transfer
  kTargetMismatch,   // direct branch whose encoded target is not the recorded target
  kCallStackMode,    // the stack came from PERF_SAMPLE_BRANCH_CALL_STACK
  kCount,
};
enum class LbrRangeBreak : uint8_t {
  kUnconditionalInRange = 0,  // a jmp/call/ret sits between to[i] and from[i+1]
  kLeavesImage,               // the range runs outside the start's code region
  kUserKernelCross,           // one end in the kernel, the other in user space
  kBackwards,                 // from[i+1] < to[i]
  kTooLong,                   // more than BranchCache::kMaxScanBytes
  kMisaligned,                // the walk steps over from[i+1] (wrong binary or bad record)
  kDecodeError,               // invalid bytes on the way
  kNoCode,                    // no known code at the range start
  kEndpointDropped,           // a neighbouring entry was dropped, so the range is unknown
  kCount,
};
std::string_view LbrEntryDropName(LbrEntryDrop r);
std::string_view LbrRangeBreakName(LbrRangeBreak r);

struct LbrStats {
  uint64_t samples = 0;
  uint64_t entries = 0;          // branch records seen
  uint64_t entries_emitted = 0;  // records that became taken BranchEvents
  std::array<uint64_t, static_cast<size_t>(LbrEntryDrop::kCount)> entries_dropped{};
  uint64_t ranges = 0;         // fall-through ranges between consecutive records
  uint64_t ranges_walked = 0;  // ranges reconstructed exactly
  std::array<uint64_t, static_cast<size_t>(LbrRangeBreak::kCount)> ranges_broken{};
  uint64_t not_taken_emitted = 0;
  uint64_t async_transfers = 0;  // interrupts/faults recorded with a non-branch source
  uint64_t batches = 0;
  uint64_t events = 0;
  // Instructions in fully reconstructed blocks (sum of BranchEvent.instructions).
  uint64_t instructions = 0;
  // What `perf script -F brstackinsn` prints, for comparison: the oldest source, every walked
  // range through its closing branch, and the tail from the newest target to the sample ip.
  uint64_t perf_style_instructions = 0;

  uint64_t entries_dropped_total() const;
  uint64_t ranges_broken_total() const;
  void Merge(const LbrStats& o);
  std::string ToString() const;  // one "name value" pair per line
  std::string ToJson() const;
};

class LbrReconstructor {
 public:
  struct Options {
    // Drop the newest entry when it repeats the next one exactly. Off by default: a one-block
    // loop records identical consecutive entries legitimately, and perf keeps them.
    bool drop_duplicate_newest = false;
  };
  explicit LbrReconstructor(CodeMap* code) : code_(code) {}
  LbrReconstructor(CodeMap* code, Options options) : code_(code), options_(options) {}

  // Appends the batches of one sample to `out` (possibly none). Never fails: every loss is
  // counted in stats().
  void Reconstruct(const LbrSample& sample, std::vector<BranchBatch>* out);

  const LbrStats& stats() const { return stats_; }

 private:
  struct Classified {
    bool ok = false;
    BranchKind kind = BranchKind::kUnknown;
    bool async = false;
  };
  Classified Classify(uint32_t pid, const LbrEntry& e);
  uint32_t TailInstructions(uint32_t pid, uint64_t start, uint64_t ip);

  CodeMap* code_;
  Options options_;
  LbrStats stats_;
};

}  // namespace pathprof::decoders
