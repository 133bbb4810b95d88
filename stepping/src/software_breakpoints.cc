#include "software_breakpoints.h"

#include <fcntl.h>
#include <unistd.h>

#include <string>

#include "pathprof/core/procfs.h"
#include "pathprof/decoders/address_space.h"

namespace pathprof::stepping {
namespace {

constexpr uint8_t kInt3 = 0xcc;

bool ReadByte(int fd, uint64_t address, uint8_t* byte) {
  return pread(fd, byte, 1, static_cast<off_t>(address)) == 1;
}

}  // namespace

SoftwareBreakpoints::~SoftwareBreakpoints() {
  if (fd_ >= 0) close(fd_);
}

bool SoftwareBreakpoints::Open() {
  if (fd_ < 0) fd_ = procfs::Procfs::Host().Open(pid_, "mem", O_RDWR);
  return fd_ >= 0;
}

bool SoftwareBreakpoints::Write(uint64_t address, uint8_t byte) {
  ++writes_;
  return pwrite(fd_, &byte, 1, static_cast<off_t>(address)) == 1;
}

bool SoftwareBreakpoints::Update(std::span<const uint64_t> plant,
                                 std::span<const CodeRange> keep_clear) {
  if (!Open()) return false;
  bool ok = true;
  // Every byte of each range (an instruction is at most 15): leftovers from earlier legs pile
  // up over a long trace, so the planted set is not walked.
  for (const CodeRange& r : keep_clear)
    for (uint64_t address = r.start; address < r.end && address - r.start < 15; ++address) {
      auto it = planted_.find(address);
      if (it == planted_.end()) continue;
      ok &= Write(address, it->second);
      planted_.erase(it);
    }
  for (uint64_t address : plant) {
    if (planted_.count(address)) continue;
    // Loops plant the same few addresses over and over: their original byte is known (the
    // text does not change under us between execs), which saves a read per plant.
    uint8_t original = 0;
    const auto known = ever_.find(address);
    if (!Plantable(address)) {
      ok = false;
      continue;
    }
    if (known != ever_.end()) {
      original = known->second;
    } else if (!ReadByte(fd_, address, &original) || original == kInt3) {
      ok = false;
      continue;
    }
    if (!Write(address, kInt3)) {
      ok = false;
      continue;
    }
    planted_.emplace(address, original);
    ever_.emplace(address, original);
  }
  return ok;
}

void SoftwareBreakpoints::Unpatch(uint64_t address, std::span<uint8_t> bytes) const {
  for (size_t i = 0; i < bytes.size(); ++i) {
    auto it = planted_.find(address + i);
    if (it != planted_.end()) bytes[i] = it->second;
  }
}

bool SoftwareBreakpoints::RemoveAll() {
  bool ok = true;
  if (!planted_.empty() && Open()) {
    for (const auto& [address, original] : planted_) ok &= Write(address, original);
  } else if (!planted_.empty()) {
    ok = false;
  }
  planted_.clear();
  return ok;
}

size_t SoftwareBreakpoints::CleanChild(pid_t child) {
  if (ever_.empty()) return 0;
  const int fd = procfs::Procfs::Host().Open(child, "mem", O_RDWR);
  if (fd < 0) return 0;
  size_t restored = 0;
  for (const auto& [address, original] : ever_) {
    uint8_t now = 0;
    if (ReadByte(fd, address, &now) && now == kInt3 &&
        pwrite(fd, &original, 1, static_cast<off_t>(address)) == 1)
      ++restored;
  }
  close(fd);
  return restored;
}

bool SoftwareBreakpoints::Plantable(uint64_t address) {
  for (int pass = 0; pass < 2; ++pass) {
    for (const Mapping& m : maps_)
      if (address >= m.start && address < m.end) return m.plantable;
    if (pass == 1) break;
    maps_.clear();
    auto space = decoders::ReadProcMaps(pid_);
    if (!space.ok()) return false;
    for (const decoders::Mapping& m : space->mappings()) {
      // Code of a file, mapped read-only: writing an int3 through /proc/PID/mem makes the
      // process a private copy of that page and never touches the file.
      const bool plantable = m.readable && !m.writable && m.executable && m.path.starts_with('/');
      maps_.push_back({m.start, m.end(), plantable});
    }
  }
  return false;
}

void SoftwareBreakpoints::ForgetAll() {
  planted_.clear();
  ever_.clear();
  maps_.clear();
  if (fd_ >= 0) close(fd_);  // the old mm is gone; reopen on next use
  fd_ = -1;
}

}  // namespace pathprof::stepping
