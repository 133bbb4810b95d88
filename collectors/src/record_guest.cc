#include "record_guest.h"

#include <algorithm>
#include <cstring>

namespace pathprof::collectors {

namespace {

constexpr uint64_t kPage = emulator::Guest::kPageSize;

// DWARF register n (0-15) is CpuState::gpr[kDwarfToGpr[n]].
constexpr uint8_t kDwarfToGpr[16] = {emulator::kRax,
                                     emulator::kRdx,
                                     emulator::kRcx,
                                     emulator::kRbx,
                                     emulator::kRsi,
                                     emulator::kRdi,
                                     emulator::kRbp,
                                     emulator::kRsp,
                                     8,
                                     9,
                                     10,
                                     11,
                                     12,
                                     13,
                                     14,
                                     15};

// Whether the two bytes before `rip` are a syscall instruction (0f 05), read from the image.
bool AfterSyscallInstruction(uint64_t rip, ProcessImage& image) {
  if (rip < 2) return false;
  uint8_t bytes[2];
  uint8_t page[kPage];
  for (int i = 0; i < 2; ++i) {
    const uint64_t at = rip - 2 + static_cast<uint64_t>(i);
    if (image.ReadStable(at & ~(kPage - 1), page) != ProcessImage::StableRead::kRead) return false;
    bytes[i] = page[at & (kPage - 1)];
  }
  return bytes[0] == 0x0f && bytes[1] == 0x05;
}

}  // namespace

bool StartFromSample(const RawStackSample& sample, ProcessImage& image, SnapshotStart* out) {
  if (!sample.snapshot || sample.regs.size() < 17) return false;
  const RawSnapshot& snap = *sample.snapshot;
  SnapshotStart s;
  for (int dwarf = 0; dwarf < 16; ++dwarf) s.state.gpr[kDwarfToGpr[dwarf]] = sample.regs[dwarf];
  s.state.rip = sample.regs[16];
  s.state.rflags = snap.rflags;
  s.state.fs_base = snap.fs_base;
  s.state.gs_base = snap.gs_base;
  s.state.vector_loaded = false;
  // In the kernel with a system call number: the thread resumes after the syscall instruction
  // with the call's result in rax (the saved rcx and r11 are what sysret restores). Exceptions
  // keep their error code in orig_rax too, so the instruction before rip tells them apart: a
  // fault restarts its instruction, whose registers the sample holds whole.
  if (snap.in_kernel && snap.orig_rax != ~uint64_t{0} &&
      AfterSyscallInstruction(s.state.rip, image)) {
    s.in_syscall = true;
    s.unheld_registers = uint16_t{1} << emulator::kRax;
    // x86-64 numbers: mmap 9, mprotect 10, munmap 11, brk 12, mremap 25, shmdt 67,
    // pkey_mprotect 329.
    for (uint64_t nr : {9, 10, 11, 12, 25, 67, 329})
      if (snap.orig_rax == nr) s.in_mapping_syscall = true;
  }
  *out = s;
  return true;
}

RecordGuest::RecordGuest(const RawStackSample& sample, const SnapshotStart& start,
                         ProcessImage& image)
    : sample_(sample),
      snap_(*sample.snapshot),
      image_(image),
      unheld_registers_(start.unheld_registers),
      trust_memory_(!start.in_syscall),
      maps_current_(image.DescribesSample(*sample.snapshot)) {
  // A read-only mapping's page cannot change while it stays read-only: a copy is good for
  // every later window too (a system call does not write it either).
  for (const RawSnapshot::Piece& p : snap_.pieces)
    if (p.size == kPage && (p.address & (kPage - 1)) == 0 &&
        uint64_t{p.offset} + p.size <= snap_.bytes.size())
      image_.Adopt(p.address, snap_.bytes.data() + p.offset);
}

bool RecordGuest::UnreadableAtSample(uint64_t page) const {
  for (const RawSnapshot::Range& r : snap_.unreadable)
    if (r.address < page + kPage && page < r.address + r.size) return true;
  return false;
}

bool RecordGuest::ReadPage(uint64_t page, uint8_t* out, bool* stable) {
  // The sampler could not read it at that instant (inaccessible, say, between two mprotect
  // calls): the thread may fault there, so the window ends (kUnreadable) whatever the image's
  // older view of the mappings says.
  if (UnreadableAtSample(page)) return false;
  const ProcessImage::PageInfo info = image_.Info(page);
  if (info.stable) {
    const ProcessImage::StableRead got = image_.ReadStable(page, out);
    if (got == ProcessImage::StableRead::kRead) {
      *stable = true;
      ++reads_[static_cast<size_t>(SnapshotPageSource::kImage)];
      return true;
    }
    if (got == ProcessImage::StableRead::kWritten) wanted_copies_.push_back(page);
  }
  *stable = false;
  std::memset(out, 0, kPage);
  std::vector<Held> held;
  bool from_stack = false;
  auto hold = [&](uint64_t address, const uint8_t* bytes, uint64_t size) {
    const uint64_t lo = std::max(address, page), hi = std::min(address + size, page + kPage);
    if (lo >= hi) return false;
    std::memcpy(out + (lo - page), bytes + (lo - address), hi - lo);
    held.push_back({static_cast<uint32_t>(lo - page), static_cast<uint32_t>(hi - page)});
    return true;
  };
  if (trust_memory_) {
    from_stack = hold(snap_.stack_base, snap_.stack.data(), snap_.stack.size());
    for (const RawSnapshot::Piece& p : snap_.pieces)
      if (uint64_t{p.offset} + p.size <= snap_.bytes.size())
        hold(p.address, snap_.bytes.data() + p.offset, p.size);
  }
  // A page no mapping holds now and the sample did not copy: the CPU would most likely fault
  // there (the window ends, kUnreadable) rather than read bytes nobody knows.
  if (held.empty() && !(info.mapped && info.readable)) return false;
  std::sort(held.begin(), held.end(), [](const Held& a, const Held& b) { return a.lo < b.lo; });
  uint32_t covered = 0;  // the prefix [0, covered) held without a gap
  for (const Held& h : held)
    if (h.lo <= covered) covered = std::max(covered, h.hi);
  if (covered >= kPage) {
    ++reads_[static_cast<size_t>(from_stack ? SnapshotPageSource::kStack
                                            : SnapshotPageSource::kRecord)];
    return true;
  }
  if (held.empty()) unknown_pages_.push_back(page);
  ++reads_[static_cast<size_t>(held.empty() ? SnapshotPageSource::kUnknown
                               : from_stack ? SnapshotPageSource::kStack
                                            : SnapshotPageSource::kRecord)];
  held_parts_[page] = std::move(held);
  return true;
}

bool RecordGuest::UnheldBytes(uint64_t page, uint8_t* unheld) {
  auto it = held_parts_.find(page);
  if (it == held_parts_.end()) return false;
  std::memset(unheld, 1, kPage);
  for (const Held& h : it->second) std::memset(unheld + h.lo, 0, h.hi - h.lo);
  return true;
}

bool RecordGuest::PageWritable(uint64_t page) {
  if (UnreadableAtSample(page)) return false;
  if (page >= (snap_.stack_base & ~(kPage - 1)) && page < snap_.stack_base + snap_.stack.size())
    return true;
  return image_.Info(page).writable;
}

bool RecordGuest::WritableKnown(uint64_t page) {
  // A page the sampler could not read faults whatever the maps say (PageWritable says so).
  return maps_current_ || UnreadableAtSample(page);
}

bool RecordGuest::ReadableKnown(uint64_t page) {
  // A page the sampler read bytes of was readable then; a stable page is served from the image
  // (its mappings' changes are caught by ProcessImage::Refresh).
  return maps_current_ ||
         std::find(unknown_pages_.begin(), unknown_pages_.end(), page) == unknown_pages_.end();
}

bool RecordGuest::PageExecutable(uint64_t page) {
  return image_.Info(page).executable;
}

}  // namespace pathprof::collectors
