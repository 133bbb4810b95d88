#include "pathprof/stepping/instruction_reader.h"

#include <fcntl.h>
#include <sys/uio.h>
#include <unistd.h>

#include <string>

#include "software_breakpoints.h"

namespace pathprof::stepping {

InstructionReader::~InstructionReader() {
  if (mem_fd_ >= 0) close(mem_fd_);
}

void InstructionReader::Reset() {
  cache_.clear();
  if (mem_fd_ >= 0) close(mem_fd_);
  mem_fd_ = -1;
}

std::span<const uint8_t> InstructionReader::Bytes(uint64_t ip) {
  iovec local{buf_, sizeof buf_}, remote{reinterpret_cast<void*>(ip), sizeof buf_};
  ssize_t n = process_vm_readv(pid_, &local, 1, &remote, 1, 0);
  if (n <= 0) {
    // The last bytes of a mapping: process_vm_readv fails on the unmapped tail; /proc/PID/mem
    // returns what it can.
    if (mem_fd_ < 0) mem_fd_ = open(("/proc/" + std::to_string(pid_) + "/mem").c_str(), O_RDONLY);
    n = mem_fd_ >= 0 ? pread(mem_fd_, buf_, sizeof buf_, static_cast<off_t>(ip)) : -1;
  }
  if (n <= 0) return {};
  if (breakpoints_ != nullptr && breakpoints_->planted_count() > 0)
    breakpoints_->Unpatch(ip, std::span<uint8_t>(buf_, static_cast<size_t>(n)));
  return std::span<const uint8_t>(buf_, static_cast<size_t>(n));
}

const decoders::X86Instruction* InstructionReader::At(uint64_t ip) {
  auto it = cache_.find(ip);
  if (it != cache_.end()) return &it->second;
  const std::span<const uint8_t> bytes = Bytes(ip);
  decoders::X86Instruction insn;
  if (bytes.empty() || !decoders::DecodeX86Fast(bytes.data(), bytes.size(), ip, &insn)) {
    ++failures_;
    return nullptr;
  }
  return &cache_.emplace(ip, insn).first->second;
}

}  // namespace pathprof::stepping
