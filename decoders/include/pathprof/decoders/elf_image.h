// One ELF file held in memory: its loadable segments (which decide file offset <-> virtual
// address), its type (PIE/shared vs fixed), its GNU build-id, and read access to its code bytes.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "pathprof/core/status.h"

namespace pathprof::decoders {

struct ElfSegment {
  uint64_t file_offset = 0;
  uint64_t vaddr = 0;
  uint64_t file_size = 0;
  uint64_t mem_size = 0;
  bool executable = false;
};

// Largest image read by default. Images are copied into memory (not mapped: a mapped file that
// its owner truncates raises SIGBUS in the reader), so the bound is on resident memory. Only
// the file's data is copied: a sparse file's holes stay untouched zero pages, not resident.
inline constexpr uint64_t kDefaultMaxImageBytes = uint64_t{1} << 30;

// Unmaps the anonymous mapping ElfImage::Read copies a file into.
struct ImageUnmap {
  size_t size = 0;
  void operator()(uint8_t* p) const;
};

class ElfImage {
 public:
  // Reads and parses `path`. kNotFound if it does not exist, kCorrupt if it is not ELF,
  // kUnsupported for non-x86-64 or 32-bit ELF, kInvalidArgument if it is not a regular file,
  // kResourceExhausted above `max_bytes` (nothing is read then).
  static Result<std::shared_ptr<const ElfImage>> Open(const std::string& path,
                                                      uint64_t max_bytes = kDefaultMaxImageBytes);
  // The same for a file already open (e.g. OpenMappedFile's); `name` is the path reports show.
  static Result<std::shared_ptr<const ElfImage>> Read(int fd, std::string name,
                                                      uint64_t max_bytes = kDefaultMaxImageBytes);
  // Parses an image already in memory (e.g. the vdso read from a live process).
  static Result<std::shared_ptr<const ElfImage>> FromBytes(std::vector<uint8_t> bytes,
                                                           std::string name);

  const std::string& path() const { return path_; }
  // Lower-case hex of NT_GNU_BUILD_ID, empty if the file has none.
  const std::string& build_id() const { return build_id_; }
  // ET_DYN (PIE executables and shared objects) are loaded at a bias; ET_EXEC at their vaddrs.
  bool relocatable() const { return relocatable_; }
  const std::vector<ElfSegment>& segments() const { return segments_; }
  std::span<const uint8_t> bytes() const { return bytes_; }

  // Maps through the PT_LOAD headers; false if no segment covers the input.
  bool FileOffsetToVaddr(uint64_t offset, uint64_t* vaddr) const;
  bool VaddrToFileOffset(uint64_t vaddr, uint64_t* offset) const;
  // The file bytes from `vaddr` to the end of its executable segment's file image; empty when
  // `vaddr` is not inside executable file-backed bytes.
  std::span<const uint8_t> CodeAt(uint64_t vaddr) const;
  // Lowest and one-past-highest vaddr of executable segments (0,0 if none).
  uint64_t code_begin() const { return code_begin_; }
  uint64_t code_end() const { return code_end_; }

 private:
  ElfImage() = default;
  Status Parse();

  std::string path_;
  std::vector<uint8_t> vector_bytes_;                  // FromBytes's
  std::unique_ptr<uint8_t, ImageUnmap> mapped_bytes_;  // Read's
  std::span<uint8_t> bytes_;                           // whichever of the two holds the image
  std::string build_id_;
  bool relocatable_ = false;
  std::vector<ElfSegment> segments_;
  uint64_t code_begin_ = 0;
  uint64_t code_end_ = 0;
};

// Reads the build-id of `path` without keeping the file; empty string when none.
Result<std::string> ReadBuildId(const std::string& path);

}  // namespace pathprof::decoders
