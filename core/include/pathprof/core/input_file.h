// A recording's bytes, read once and bounded. Regular files are mapped read-only (no copy);
// pipes and FIFOs (and "-" for stdin) are streams and are read into memory up to a cap;
// anything else — a character device such as /dev/zero, a directory, a socket — is refused
// with a message, because reading it "whole" would never end or would mean nothing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "pathprof/core/status.h"

namespace pathprof {

struct InputLimits {
  // Most bytes read from a pipe or FIFO; the whole stream is held in memory to be decoded.
  uint64_t max_stream_bytes = uint64_t{1} << 30;
  // Largest regular file accepted; mapped, so this bounds address space, not resident memory.
  uint64_t max_file_bytes = uint64_t{64} << 30;
};

class InputFile {
 public:
  // "-" reads standard input (which must then be a pipe, a FIFO or a regular file). With
  // `magics`, input that starts with none of them is refused as soon as its first bytes are in,
  // so that `yes | pathctl analyze -` ends at once instead of after max_stream_bytes.
  static Result<InputFile> Open(const std::string& path, const InputLimits& limits = {},
                                std::span<const std::string_view> magics = {});
  // The same over a descriptor somebody else opened (a file a helper was handed): `path` only
  // names it in messages. The descriptor stays the caller's (not closed).
  static Result<InputFile> FromDescriptor(int fd, const std::string& path,
                                          const InputLimits& limits = {},
                                          std::span<const std::string_view> magics = {});

  InputFile(InputFile&& other) noexcept;
  InputFile& operator=(InputFile&& other) noexcept;
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;
  ~InputFile();

  std::span<const uint8_t> bytes() const { return bytes_; }
  const std::string& name() const { return name_; }

 private:
  InputFile() = default;
  void Release();

  std::string name_;
  void* map_ = nullptr;
  size_t map_len_ = 0;
  std::vector<uint8_t> owned_;
  std::span<const uint8_t> bytes_;
};

}  // namespace pathprof
