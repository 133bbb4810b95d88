#include "pathprof/core/input_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "pathprof/core/hex.h"

namespace pathprof {
namespace {

const char* KindOf(mode_t mode) {
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

std::string MiB(uint64_t bytes) {
  return std::to_string(bytes >> 20) + " MiB";
}

// Whether `head` (the input's first bytes, possibly fewer than a magic's length at the end of a
// short input) can still start with one of `magics`.
bool MayStartWithOneOf(std::span<const uint8_t> head, std::span<const std::string_view> magics) {
  if (magics.empty()) return true;
  for (std::string_view m : magics) {
    const size_t n = std::min(head.size(), m.size());
    if (std::memcmp(head.data(), m.data(), n) == 0) return true;
  }
  return false;
}

Status NotARecording(const std::string& path, std::span<const uint8_t> head,
                     std::span<const std::string_view> magics) {
  std::string want;
  for (std::string_view m : magics) want += (want.empty() ? "'" : " or '") + std::string(m) + "'";
  const std::string got = HexBytes(head.first(std::min<size_t>(head.size(), 8)));
  return Error(ErrorCode::kCorrupt, path + " is not a recording: it starts with bytes " +
                                        (got.empty() ? "(none)" : got) + ", not " + want);
}

}  // namespace

Result<InputFile> InputFile::Open(const std::string& path, const InputLimits& limits,
                                  std::span<const std::string_view> magics) {
  if (path == "-") return FromDescriptor(STDIN_FILENO, "<stdin>", limits, magics);
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    return Error(err == ENOENT   ? ErrorCode::kNotFound
                 : err == EACCES ? ErrorCode::kPermission
                                 : ErrorCode::kIo,
                 path + ": cannot open: " + std::strerror(err));
  }
  auto in = FromDescriptor(fd, path, limits, magics);
  ::close(fd);
  return in;
}

Result<InputFile> InputFile::FromDescriptor(int fd, const std::string& path,
                                            const InputLimits& limits,
                                            std::span<const std::string_view> magics) {
  InputFile in;
  in.name_ = path;
  // The descriptor is the caller's to close: nothing below closes it.
  struct stat st {};
  if (fstat(fd, &st) != 0) {
    const int err = errno;
    return Error(ErrorCode::kIo, path + ": cannot stat: " + std::strerror(err));
  }
  if (S_ISREG(st.st_mode)) {
    const auto size = static_cast<uint64_t>(st.st_size);
    if (size > limits.max_file_bytes) {
      return Error(
          ErrorCode::kResourceExhausted,
          path + ": " + MiB(size) + " is above the " + MiB(limits.max_file_bytes) +
              " limit on one input file; split the recording (perf record --switch-output)");
    }
    if (size > 0) {
      void* m = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
      if (m == MAP_FAILED) {
        const int err = errno;
        return Error(ErrorCode::kIo, path + ": cannot map: " + std::strerror(err));
      }
      in.map_ = m;
      in.map_len_ = size;
      in.bytes_ = {static_cast<const uint8_t*>(m), size};
    }
    if (!MayStartWithOneOf(in.bytes_.subspan(0, std::min<size_t>(in.bytes_.size(), 8)), magics))
      return NotARecording(path, in.bytes_, magics);
    return in;
  }
  if (!S_ISFIFO(st.st_mode)) {
    return Error(ErrorCode::kInvalidArgument,
                 path + " is " + KindOf(st.st_mode) +
                     "; give a recording as a regular file, a pipe or a FIFO (- for stdin)");
  }
  // A stream (perf record -o - | pathctl analyze -): held whole, because the perf.data pipe
  // format puts what the decoders need (attributes, sideband) anywhere in it.
  uint8_t buf[1 << 16];
  while (true) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      return Error(ErrorCode::kIo, path + ": read failed: " + std::strerror(err));
    }
    if (in.owned_.size() + static_cast<size_t>(n) > limits.max_stream_bytes) {
      return Error(ErrorCode::kResourceExhausted,
                   path + ": the stream is longer than the " + MiB(limits.max_stream_bytes) +
                       " held in memory for one input; record to a file instead");
    }
    in.owned_.insert(in.owned_.end(), buf, buf + n);
    if (!MayStartWithOneOf(
            std::span<const uint8_t>(in.owned_).subspan(0, std::min<size_t>(in.owned_.size(), 8)),
            magics)) {
      return NotARecording(path, in.owned_, magics);
    }
  }
  in.bytes_ = in.owned_;
  return in;
}

InputFile::InputFile(InputFile&& other) noexcept {
  *this = std::move(other);
}

InputFile& InputFile::operator=(InputFile&& other) noexcept {
  if (this == &other) return *this;
  Release();
  name_ = std::move(other.name_);
  map_ = std::exchange(other.map_, nullptr);
  map_len_ = std::exchange(other.map_len_, 0);
  const bool owned = other.bytes_.data() == other.owned_.data();
  owned_ = std::move(other.owned_);
  bytes_ = owned ? std::span<const uint8_t>(owned_) : other.bytes_;
  other.bytes_ = {};
  return *this;
}

InputFile::~InputFile() {
  Release();
}

void InputFile::Release() {
  if (map_ != nullptr) munmap(map_, map_len_);
  map_ = nullptr;
  map_len_ = 0;
  owned_.clear();
  bytes_ = {};
}

}  // namespace pathprof
