#include "pathprof/decoders/elf_image.h"

#include <elfutils/libdwelf.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <sys/stat.h>
#include <unistd.h>

#include "pathprof/core/hex.h"

namespace pathprof::decoders {
namespace {

// The NT_GNU_BUILD_ID note, from the program headers or, where a linker put it only in a
// section, from there (libdwelf looks in both); empty when the file has none.
std::string GnuBuildId(Elf* elf) {
  const void* id = nullptr;
  const ssize_t n = dwelf_elf_gnu_build_id(elf, &id);
  if (n <= 0 || id == nullptr) return {};
  return HexBytes(
      std::span<const uint8_t>(static_cast<const uint8_t*>(id), static_cast<size_t>(n)));
}

// libelf wants its version negotiated once per process.
void InitLibelf() {
  static const bool done = [] { return elf_version(EV_CURRENT) != EV_NONE; }();
  (void)done;
}

}  // namespace

Result<std::shared_ptr<const ElfImage>> ElfImage::Open(const std::string& path,
                                                       uint64_t max_bytes) {
  // O_NONBLOCK: a FIFO at the path must not block the reader (it is refused below).
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    return Error(ErrorCode::kNotFound,
                 "ELF image " + path + ": cannot open (" + std::strerror(errno) +
                     "); pass --binary-dir with a copy of the profiled binaries");
  }
  auto image = Read(fd, path, max_bytes);
  ::close(fd);
  return image;
}

Result<std::shared_ptr<const ElfImage>> ElfImage::Read(int fd, std::string name,
                                                       uint64_t max_bytes) {
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    return Error(ErrorCode::kInvalidArgument,
                 "ELF image " + name + ": not a regular file; nothing read");
  }
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  if (size > max_bytes) {
    return Error(ErrorCode::kResourceExhausted,
                 "ELF image " + name + ": " + std::to_string(size) + " bytes, above the " +
                     std::to_string(max_bytes) +
                     "-byte limit per image (limits.max_image_bytes); not read");
  }
  // One sized read (pread at offsets, so a shared fd's position does not matter); a file that
  // shrinks meanwhile gives a short read and an error, one that grows is read to its old size.
  std::vector<uint8_t> bytes(size);
  for (uint64_t done = 0; done < size;) {
    const ssize_t n = ::pread(fd, bytes.data() + done, size - done, static_cast<off_t>(done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      return Error(ErrorCode::kIo, "ELF image " + name + ": read failed at byte " +
                                       std::to_string(done) + " of " + std::to_string(size) +
                                       (n < 0 ? " (" + std::string(std::strerror(errno)) + ")"
                                              : " (the file shrank)"));
    }
    done += static_cast<uint64_t>(n);
  }
  return FromBytes(std::move(bytes), std::move(name));
}

Result<std::shared_ptr<const ElfImage>> ElfImage::FromBytes(std::vector<uint8_t> bytes,
                                                            std::string name) {
  std::shared_ptr<ElfImage> image(new ElfImage());
  image->path_ = std::move(name);
  image->bytes_ = std::move(bytes);
  PATHPROF_RETURN_IF_ERROR(image->Parse());
  return std::shared_ptr<const ElfImage>(std::move(image));
}

Status ElfImage::Parse() {
  InitLibelf();
  Elf* elf = elf_memory(reinterpret_cast<char*>(bytes_.data()), bytes_.size());
  if (elf == nullptr || elf_kind(elf) != ELF_K_ELF) {
    if (elf) elf_end(elf);
    return Error(ErrorCode::kCorrupt, "ELF image " + path_ + ": not an ELF file");
  }
  struct Closer {
    Elf* e;
    ~Closer() { elf_end(e); }
  } closer{elf};
  GElf_Ehdr ehdr;
  if (gelf_getehdr(elf, &ehdr) == nullptr) {
    return Error(ErrorCode::kCorrupt, "ELF image " + path_ + ": unreadable ELF header");
  }
  if (ehdr.e_ident[EI_CLASS] != ELFCLASS64 || ehdr.e_machine != EM_X86_64) {
    return Error(ErrorCode::kUnsupported, "ELF image " + path_ + ": machine " +
                                              std::to_string(ehdr.e_machine) + " class " +
                                              std::to_string(ehdr.e_ident[EI_CLASS]) +
                                              "; only x86-64 ELF64 code can be decoded");
  }
  relocatable_ = ehdr.e_type == ET_DYN;
  size_t phnum = 0;
  if (elf_getphdrnum(elf, &phnum) != 0) {
    return Error(ErrorCode::kCorrupt, "ELF image " + path_ + ": unreadable program headers");
  }
  for (size_t i = 0; i < phnum; ++i) {
    GElf_Phdr ph;
    if (gelf_getphdr(elf, static_cast<int>(i), &ph) == nullptr) continue;
    if (ph.p_type == PT_LOAD) {
      ElfSegment s;
      s.file_offset = ph.p_offset;
      s.vaddr = ph.p_vaddr;
      s.file_size = std::min<uint64_t>(
          ph.p_filesz, ph.p_offset <= bytes_.size() ? bytes_.size() - ph.p_offset : 0);
      s.mem_size = ph.p_memsz;
      s.executable = (ph.p_flags & PF_X) != 0;
      segments_.push_back(s);
      if (s.executable) {
        uint64_t end = s.vaddr + s.mem_size;
        if (code_begin_ == code_end_) {
          code_begin_ = s.vaddr;
          code_end_ = end;
        } else {
          code_begin_ = std::min(code_begin_, s.vaddr);
          code_end_ = std::max(code_end_, end);
        }
      }
    }
  }
  build_id_ = GnuBuildId(elf);
  return Status::Ok();
}

bool ElfImage::FileOffsetToVaddr(uint64_t offset, uint64_t* vaddr) const {
  for (const ElfSegment& s : segments_) {
    if (offset >= s.file_offset && offset < s.file_offset + s.file_size) {
      *vaddr = s.vaddr + (offset - s.file_offset);
      return true;
    }
  }
  return false;
}

bool ElfImage::VaddrToFileOffset(uint64_t vaddr, uint64_t* offset) const {
  for (const ElfSegment& s : segments_) {
    if (vaddr >= s.vaddr && vaddr < s.vaddr + s.file_size) {
      *offset = s.file_offset + (vaddr - s.vaddr);
      return true;
    }
  }
  return false;
}

std::span<const uint8_t> ElfImage::CodeAt(uint64_t vaddr) const {
  for (const ElfSegment& s : segments_) {
    if (s.executable && vaddr >= s.vaddr && vaddr < s.vaddr + s.file_size) {
      const uint64_t off = s.file_offset + (vaddr - s.vaddr);
      const uint64_t end = s.file_offset + s.file_size;
      return std::span<const uint8_t>(bytes_.data() + off, end - off);
    }
  }
  return {};
}

Result<std::string> ReadBuildId(const std::string& path) {
  // Maps the file lazily instead of reading all of it: indexing a directory of binaries by
  // build-id reads only their headers and notes.
  InitLibelf();
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return Error(ErrorCode::kNotFound,
                 "ELF file " + path + ": cannot open (" + std::strerror(errno) + ")");
  }
  Elf* elf = elf_begin(fd, ELF_C_READ_MMAP, nullptr);
  if (elf == nullptr || elf_kind(elf) != ELF_K_ELF) {
    if (elf != nullptr) elf_end(elf);
    ::close(fd);
    return Error(ErrorCode::kCorrupt, "ELF file " + path + ": not an ELF file");
  }
  std::string id = GnuBuildId(elf);
  elf_end(elf);
  ::close(fd);
  return id;
}

}  // namespace pathprof::decoders
