#include "pathprof/decoders/elf_image.h"

#include <gelf.h>
#include <libelf.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>

namespace pathprof::decoders {
namespace {

std::string Hex(const uint8_t* p, size_t n) {
  static const char kDigits[] = "0123456789abcdef";
  std::string s;
  s.reserve(n * 2);
  for (size_t i = 0; i < n; ++i) {
    s += kDigits[p[i] >> 4];
    s += kDigits[p[i] & 15];
  }
  return s;
}

// libelf wants its version negotiated once per process.
void InitLibelf() {
  static const bool done = [] { return elf_version(EV_CURRENT) != EV_NONE; }();
  (void)done;
}

}  // namespace

Result<std::shared_ptr<const ElfImage>> ElfImage::Open(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return Error(ErrorCode::kNotFound,
                 "ELF image " + path + ": cannot open (" + std::strerror(errno) +
                     "); pass --binary-dir with a copy of the profiled binaries");
  }
  // One sized read: a byte-wise istreambuf_iterator copy takes seconds per 100 MB in an
  // unoptimized build, and pipelines open every image they symbolize.
  in.seekg(0, std::ios::end);
  const std::streamoff size = in.tellg();
  in.seekg(0, std::ios::beg);
  std::vector<uint8_t> bytes(size > 0 ? static_cast<size_t>(size) : 0);
  if (size > 0 && !in.read(reinterpret_cast<char*>(bytes.data()), size)) {
    return Error(ErrorCode::kIo,
                 "ELF image " + path + ": read failed (" + std::strerror(errno) + ")");
  }
  return FromBytes(std::move(bytes), path);
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
    } else if (ph.p_type == PT_NOTE && build_id_.empty()) {
      Elf_Data* data =
          elf_getdata_rawchunk(elf, static_cast<int64_t>(ph.p_offset), ph.p_filesz, ELF_T_NHDR);
      if (data == nullptr) continue;
      size_t off = 0, name_off = 0, desc_off = 0;
      GElf_Nhdr nh;
      while ((off = gelf_getnote(data, off, &nh, &name_off, &desc_off)) > 0) {
        const char* base = static_cast<const char*>(data->d_buf);
        if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
            std::memcmp(base + name_off, "GNU", 4) == 0) {
          build_id_ = Hex(reinterpret_cast<const uint8_t*>(base + desc_off), nh.n_descsz);
          break;
        }
      }
    }
  }
  if (build_id_.empty()) {
    // Some linkers put the note only in a section (no PT_NOTE); look there too.
    Elf_Scn* scn = nullptr;
    while ((scn = elf_nextscn(elf, scn)) != nullptr && build_id_.empty()) {
      GElf_Shdr sh;
      if (gelf_getshdr(scn, &sh) == nullptr || sh.sh_type != SHT_NOTE) continue;
      Elf_Data* data = elf_getdata(scn, nullptr);
      if (data == nullptr) continue;
      size_t off = 0, name_off = 0, desc_off = 0;
      GElf_Nhdr nh;
      while ((off = gelf_getnote(data, off, &nh, &name_off, &desc_off)) > 0) {
        const char* base = static_cast<const char*>(data->d_buf);
        if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
            std::memcmp(base + name_off, "GNU", 4) == 0) {
          build_id_ = Hex(reinterpret_cast<const uint8_t*>(base + desc_off), nh.n_descsz);
          break;
        }
      }
    }
  }
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
  auto image = ElfImage::Open(path);
  if (!image.ok()) return image.status();
  return (*image)->build_id();
}

}  // namespace pathprof::decoders
