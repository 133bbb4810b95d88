#include "pathprof/stepping/instruction_reader.h"

#include <fcntl.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <string>

#include "pathprof/core/clock.h"
#include "pathprof/core/procfs.h"
#include "pathprof/decoders/address_space.h"

#include "software_breakpoints.h"

namespace pathprof::stepping {
namespace {

constexpr uint64_t kMapsMaxAgeNs = 100'000'000;
constexpr uint64_t kMissRefreshNs = 10'000'000;

}  // namespace

InstructionReader::~InstructionReader() {
  if (mem_fd_ >= 0) close(mem_fd_);
}

void InstructionReader::Reset() {
  cache_.clear();
  ranges_.clear();
  ranges_read_ns_ = 0;
  if (mem_fd_ >= 0) close(mem_fd_);
  mem_fd_ = -1;
}

std::span<const uint8_t> InstructionReader::Bytes(uint64_t ip) {
  iovec local{buf_, sizeof buf_}, remote{reinterpret_cast<void*>(ip), sizeof buf_};
  ssize_t n = process_vm_readv(pid_, &local, 1, &remote, 1, 0);
  if (n <= 0) {
    // The last bytes of a mapping: process_vm_readv fails on the unmapped tail; /proc/PID/mem
    // returns what it can.
    if (mem_fd_ < 0) mem_fd_ = procfs::Procfs::Host().Open(pid_, "mem", O_RDONLY);
    n = mem_fd_ >= 0 ? pread(mem_fd_, buf_, sizeof buf_, static_cast<off_t>(ip)) : -1;
  }
  if (n <= 0) return {};
  if (breakpoints_ != nullptr && breakpoints_->planted_count() > 0)
    breakpoints_->Unpatch(ip, std::span<uint8_t>(buf_, static_cast<size_t>(n)));
  return std::span<const uint8_t>(buf_, static_cast<size_t>(n));
}

bool InstructionReader::StableCode(uint64_t ip) {
  auto find = [&]() -> const Range* {
    auto it = std::upper_bound(ranges_.begin(), ranges_.end(), ip,
                               [](uint64_t a, const Range& r) { return a < r.start; });
    if (it == ranges_.begin()) return nullptr;
    --it;
    return ip < it->end ? &*it : nullptr;
  };
  const uint64_t now = MonotonicNs();
  const Range* r = find();
  // A miss (code mapped since) reads the maps again, at most every kMissRefreshNs.
  if ((r == nullptr && now - ranges_read_ns_ > kMissRefreshNs) ||
      now - ranges_read_ns_ > kMapsMaxAgeNs) {
    ranges_read_ns_ = now;
    ranges_.clear();
    if (auto space = decoders::ReadProcMaps(pid_); space.ok()) {
      for (const decoders::Mapping& m : space->mappings()) {
        // Bytes that cannot change without a new mapping or an mprotect, which the next read
        // of the maps shows: a private, read-only view of a file that is not a memfd.
        const bool stable = m.readable && !m.writable && !m.shared && m.inode != 0 &&
                            !m.path.starts_with("/memfd:");
        ranges_.push_back({m.start, m.end(), stable});
      }
    }
    r = find();
  }
  return r != nullptr && r->stable;
}

const decoders::X86Instruction* InstructionReader::At(uint64_t ip) {
  auto it = cache_.find(ip);
  if (it != cache_.end() && it->second.stable) return &it->second.insn;
  const std::span<const uint8_t> bytes = Bytes(ip);
  if (it != cache_.end() && bytes.size() >= it->second.insn.length &&
      std::memcmp(bytes.data(), it->second.bytes.data(), it->second.insn.length) == 0)
    return &it->second.insn;  // changeable code, unchanged
  decoders::X86Instruction insn;
  if (bytes.empty() || !decoders::DecodeX86Fast(bytes.data(), bytes.size(), ip, &insn)) {
    ++failures_;
    return nullptr;
  }
  Entry e;
  e.insn = insn;
  std::memcpy(e.bytes.data(), bytes.data(), std::min(bytes.size(), e.bytes.size()));
  e.stable = StableCode(ip);
  if (it != cache_.end()) {
    ++redecodes_;
    it->second = e;  // callers holding the pointer see the code as it is now
    return &it->second.insn;
  }
  return &cache_.emplace(ip, e).first->second.insn;
}

}  // namespace pathprof::stepping
