// The emulator's view of a process at one eBPF sample (a snapshot window: no stop): the
// registers and the bytes the sample copied (stack, the ranges around registers, hint pages),
// and the process's stable pages (ProcessImage: code and read-only data, from their files).
// Nothing is read from the live process's memory: what the sample did not copy is unknown, and
// the emulator (a partial guest, emulator::Guest::Partial) runs on until a branch, jump target
// or address depends on it. Vector registers are not in a sample: unknown from their first use.
#pragma once

#include <array>
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "pathprof/collectors/ebpf_stack_sampler.h"
#include "pathprof/emulator/window_emulator.h"
#include "process_image.h"

namespace pathprof::collectors {

// Where a window's start comes from: the sample's registers in the emulator's order. A sample
// taken inside a system call starts at its return, with rax (the result) unknown, and none of
// the memory it copied trusted (the call may have written it since: a read() into the stack).
struct SnapshotStart {
  emulator::CpuState state;
  uint16_t unheld_registers = 0;  // bits of CpuState::gpr
  bool in_syscall = false;
  // Inside mmap, munmap, mprotect, mremap, brk, pkey_mprotect or shmdt: what is mapped, and
  // with which permissions, changes before the thread returns, and neither the record nor the
  // image can say how; such a sample starts no window.
  bool in_mapping_syscall = false;
};
// False when the sample holds no registers or no snapshot.
bool StartFromSample(const RawStackSample& sample, ProcessImage& image, SnapshotStart* out);

// What held a page a window read.
enum class SnapshotPageSource : uint8_t {
  kImage,    // a stable page, from its file
  kStack,    // the stack copy holds it (whole, or the part above the copy's start)
  kRecord,   // register ranges or a hint page hold some or all of it
  kUnknown,  // nothing holds it: every byte unknown
  kCount,
};

class RecordGuest final : public emulator::Guest {
 public:
  // All must outlive the guest. Whole pages the sample copied that the image wants a copy of
  // (ProcessImage::WantsCopy: RELRO) are handed to it here.
  RecordGuest(const RawStackSample& sample, const SnapshotStart& start, ProcessImage& image);

  bool ReadPage(uint64_t page, uint8_t* out, bool* stable) override;
  bool PageWritable(uint64_t page) override;
  bool PageExecutable(uint64_t page) override;
  bool LoadVectorState(emulator::CpuState*) override { return false; }
  bool Partial() override { return true; }
  bool UnheldBytes(uint64_t page, uint8_t* unheld) override;
  uint16_t UnheldRegisters() override { return unheld_registers_; }
  bool WritableKnown(uint64_t page) override;
  bool ReadableKnown(uint64_t page) override;

  // Pages this window read that nothing held (all bytes unknown), in the order read; and stable
  // mappings' pages that were not their file's (ProcessImage::WantsCopy): what hint pages
  // could bring.
  const std::vector<uint64_t>& unknown_pages() const { return unknown_pages_; }
  // Whether the sampler failed to read part of `page` (RawSnapshot::unreadable).
  bool UnreadableAtSample(uint64_t page) const;
  const std::vector<uint64_t>& wanted_copies() const { return wanted_copies_; }

  // Pages read by source, for the stats.
  const std::array<uint32_t, static_cast<size_t>(SnapshotPageSource::kCount)>& reads() const {
    return reads_;
  }

 private:
  struct Held {
    uint32_t lo, hi;  // offsets into the page
  };
  const RawStackSample& sample_;
  const RawSnapshot& snap_;
  ProcessImage& image_;
  uint16_t unheld_registers_ = 0;
  bool trust_memory_ = true;  // false for a sample inside a system call
  // Whether the image's maps are those of the sample's instant (ProcessImage::DescribesSample):
  // otherwise a page's write permission then is unknown (a page made read-only between two
  // mprotect calls reads fine at the sample, and a store there faults), and so is whether a
  // page the sample holds no byte of could be read.
  bool maps_current_ = true;
  // Pages held only in part: the parts held.
  std::unordered_map<uint64_t, std::vector<Held>> held_parts_;
  std::array<uint32_t, static_cast<size_t>(SnapshotPageSource::kCount)> reads_{};
  std::vector<uint64_t> unknown_pages_, wanted_copies_;
};

}  // namespace pathprof::collectors
