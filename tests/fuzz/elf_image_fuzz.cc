// libFuzzer target for the ELF readers: the images a profile names are files of the profiled
// program, read from /proc/PID/root or a build-id directory, so any bytes may come in.
// The input is the file. It goes through ElfImage::FromBytes and, from a memfd, ElfImage::Read
// and ReadBuildId (the two paths must agree), then every reader of an image: segments and
// address mapping, code bytes, function symbols (elf_function_symbols.h) and the names the
// image proves (code_names.h: PLT entries, _start/main, unwind entries).
// Properties: no crash or sanitizer report; a Status or an image; mappings that round-trip;
// sorted, disjoint name tables whose lookups answer inside their ranges.
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "../../decoders/src/code_names.h"
#include "pathprof/core/procfs.h"
#include "pathprof/decoders/elf_function_symbols.h"
#include "pathprof/decoders/elf_image.h"

namespace {

namespace pd = pathprof::decoders;

// One memfd for the whole run, rewritten for each input: the Read path reads a real file.
int Memfd() {
  static const int fd = memfd_create("elf_image_fuzz", 0);
  if (fd < 0) std::abort();
  return fd;
}

void CheckImage(const pd::ElfImage& image) {
  for (const pd::ElfSegment& s : image.segments()) {
    if (s.file_offset > image.bytes().size() && s.file_size != 0) std::abort();
    if (s.file_size == 0) continue;
    uint64_t vaddr = 0, offset = 0;
    if (!image.FileOffsetToVaddr(s.file_offset, &vaddr)) std::abort();
    if (image.VaddrToFileOffset(vaddr, &offset)) (void)offset;
  }
  volatile uint8_t sink = 0;
  for (uint64_t at : {image.code_begin(), image.code_end() - 1, image.code_end()}) {
    std::span<const uint8_t> code = image.CodeAt(at);
    if (!code.empty()) sink = sink + code.front() + code.back();
  }
  auto symbols = pd::ReadFunctionSymbols(image);
  if (symbols.ok()) {
    for (size_t i = 1; i < symbols->size(); ++i)
      if ((*symbols)[i].vaddr < (*symbols)[i - 1].vaddr) std::abort();
    for (const pd::FunctionSymbol& f : *symbols) {
      const pd::FunctionSymbol* found = pd::FindFunction(*symbols, f.vaddr);
      if (found && (f.vaddr < found->vaddr || f.vaddr - found->vaddr >= found->size)) std::abort();
    }
  }
}

void CheckNames(std::span<const uint8_t> bytes) {
  const pd::CodeNames names = pd::CodeNames::Read(bytes);
  for (size_t i = 0; i < names.names().size(); ++i) {
    const pd::NamedRange& r = names.names()[i];
    if (r.start >= r.end) std::abort();
    if (i > 0 && names.names()[i - 1].end > r.start) std::abort();
    const pd::NamedRange* found = names.NameAt(r.start);
    if (found == nullptr || found->start > r.start || r.start >= found->end) std::abort();
  }
  for (size_t i = 0; i < names.functions().size(); ++i) {
    const pd::AddressRange& r = names.functions()[i];
    if (r.start >= r.end) std::abort();
    if (i > 0 && names.functions()[i - 1].end > r.start) std::abort();
    const pd::AddressRange* found = names.FunctionAt(r.start);
    if (found == nullptr || found->start > r.start || r.start >= found->end) std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::span<const uint8_t> bytes(data, size);
  CheckNames(bytes);
  auto from_bytes = pd::ElfImage::FromBytes(std::vector<uint8_t>(data, data + size), "fuzz");
  if (from_bytes.ok()) CheckImage(**from_bytes);

  const int fd = Memfd();
  if (ftruncate(fd, 0) != 0 || pwrite(fd, data, size, 0) != static_cast<ssize_t>(size))
    std::abort();
  auto from_file = pd::ElfImage::Read(fd, "fuzz");
  if (from_file.ok() != from_bytes.ok()) std::abort();
  if (from_file.ok()) {
    if ((*from_file)->build_id() != (*from_bytes)->build_id()) std::abort();
    if ((*from_file)->segments().size() != (*from_bytes)->segments().size()) std::abort();
    if ((*from_file)->relocatable() != (*from_bytes)->relocatable()) std::abort();
  }
  auto build_id =
      pd::ReadBuildId(pathprof::procfs::Procfs::Host().Path(getpid(), "fd/" + std::to_string(fd)));
  if (build_id.ok() && from_bytes.ok() && *build_id != (*from_bytes)->build_id()) std::abort();
  return 0;
}
