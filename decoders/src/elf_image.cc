#include "pathprof/decoders/elf_image.h"

#include <elfutils/libdwelf.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <sys/mman.h>
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

// Reads the data of `fd` into `out` (its size), leaving the file's holes as they are in `out`
// (zeros). pread at offsets: the file position does not matter. A file that shrinks meanwhile
// is an error; one that grows is read to its old size.
Status ReadData(int fd, std::span<uint8_t> out, const std::string& name) {
  const uint64_t size = out.size();
  auto failed = [&](uint64_t at, const std::string& why) {
    return Error(ErrorCode::kIo, "ELF image " + name + ": read failed at byte " +
                                     std::to_string(at) + " of " + std::to_string(size) + " (" +
                                     why + ")");
  };
  for (uint64_t at = 0; at < size;) {
    // The next run of data: [data, hole). Without SEEK_DATA support, all of the rest is data.
    off_t data = lseek(fd, static_cast<off_t>(at), SEEK_DATA);
    if (data < 0 && errno == ENXIO) break;  // only a hole up to the end
    if (data < 0) data = static_cast<off_t>(at);
    off_t hole = lseek(fd, data, SEEK_HOLE);
    if (hole <= data) hole = static_cast<off_t>(size);  // unsupported, or the file changed
    const uint64_t end = std::min<uint64_t>(static_cast<uint64_t>(hole), size);
    for (at = static_cast<uint64_t>(data); at < end;) {
      const ssize_t n = ::pread(fd, out.data() + at, end - at, static_cast<off_t>(at));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return failed(at, std::strerror(errno));
      if (n == 0) return failed(at, "the file shrank");
      at += static_cast<uint64_t>(n);
    }
    at = std::max<uint64_t>(at, end);
  }
  struct stat st {};
  if (fstat(fd, &st) != 0 || static_cast<uint64_t>(st.st_size) < size)
    return failed(size, "the file shrank");
  return Status::Ok();
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
  if (size == 0) return FromBytes({}, std::move(name));  // not ELF: Parse says so
  // A zero-filled anonymous mapping (pages untouched until written), into which the file's data
  // extents are read (SEEK_DATA / SEEK_HOLE): a sparse file costs its data, not its size.
  void* at = mmap(nullptr, size, PROT_READ | PROT_WRITE,
                  MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (at == MAP_FAILED) {
    return Error(ErrorCode::kResourceExhausted,
                 "ELF image " + name + ": cannot map " + std::to_string(size) +
                     " bytes to read it into (" + std::strerror(errno) + ")");
  }
  std::shared_ptr<ElfImage> image(new ElfImage());
  image->mapped_bytes_ =
      std::unique_ptr<uint8_t, ImageUnmap>(static_cast<uint8_t*>(at), ImageUnmap{size});
  image->bytes_ = std::span<uint8_t>(image->mapped_bytes_.get(), size);
  image->path_ = std::move(name);
  PATHPROF_RETURN_IF_ERROR(ReadData(fd, image->bytes_, image->path_));
  PATHPROF_RETURN_IF_ERROR(image->Parse());
  return std::shared_ptr<const ElfImage>(std::move(image));
}

Result<std::shared_ptr<const ElfImage>> ElfImage::FromBytes(std::vector<uint8_t> bytes,
                                                            std::string name) {
  std::shared_ptr<ElfImage> image(new ElfImage());
  image->path_ = std::move(name);
  image->vector_bytes_ = std::move(bytes);
  image->bytes_ = image->vector_bytes_;
  PATHPROF_RETURN_IF_ERROR(image->Parse());
  return std::shared_ptr<const ElfImage>(std::move(image));
}

void ImageUnmap::operator()(uint8_t* p) const {
  munmap(p, size);
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
