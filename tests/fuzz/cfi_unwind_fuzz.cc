// libFuzzer target for the DWARF CFI unwinder: a sample's copied user stack and registers come
// from the target, and so does the .eh_frame of every image it maps.
// Input layout (little-endian):
//   header    17 x u64 registers in DWARF order (rax, rdx, rcx, rbx, rsi, rdi, rbp, rsp,
//             r8..r15, rip), u16 length of the .eh_frame bytes, u8 flags (bit 0: the image is
//             ET_DYN and also mapped at kBias; elsewhere no file backs an address)
//   eh_frame  that many bytes (fewer if the input ends), the image's .eh_frame at kEhFrameVaddr
//   stack     the rest: the copied stack, starting at the sampled rsp
// The fuzzer wraps the .eh_frame bytes in a minimal x86-64 ELF file (one executable PT_LOAD,
// sections .text at kTextVaddr, .eh_frame, .shstrtab), so libdw's CFI parser and the
// unwinder's expression evaluator both see hostile bytes.
// Properties: no crash or sanitizer report; the unwind ends by a known reason within its frame
// limit, leaf first; a second unwind over the cached rows gives the same frames.
#include <elf.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "pathprof/decoders/cfi_unwinder.h"

namespace {

namespace pd = pathprof::decoders;

constexpr uint64_t kTextVaddr = 0x401000;
constexpr uint64_t kEhFrameVaddr = 0x402000;
constexpr uint64_t kTextSize = 0x100;
constexpr uint64_t kBias = 0x7f0000000000;
constexpr size_t kHeaderBytes = pd::kDwarfRegisterCount * 8 + 2 + 1;
constexpr size_t kMaxFrames = 32;

template <typename T>
void Put(std::vector<uint8_t>& out, size_t at, const T& value) {
  if (out.size() < at + sizeof value) out.resize(at + sizeof value);
  std::memcpy(out.data() + at, &value, sizeof value);
}

// ELF header, one PT_LOAD, .text (ret instructions), .eh_frame, .shstrtab, 4 section headers.
std::vector<uint8_t> MakeElf(const uint8_t* eh_frame, size_t eh_size, bool dyn) {
  constexpr size_t kText = 0x100;  // file offset of .text
  const size_t eh_at = kText + kTextSize;
  const std::string names = std::string("\0.text\0.eh_frame\0.shstrtab\0", 27);
  const size_t names_at = eh_at + eh_size;
  const size_t shdrs_at = (names_at + names.size() + 7) & ~size_t{7};
  std::vector<uint8_t> out(shdrs_at + 4 * sizeof(Elf64_Shdr));
  Elf64_Ehdr eh{};
  std::memcpy(eh.e_ident, ELFMAG, SELFMAG);
  eh.e_ident[EI_CLASS] = ELFCLASS64;
  eh.e_ident[EI_DATA] = ELFDATA2LSB;
  eh.e_ident[EI_VERSION] = EV_CURRENT;
  eh.e_type = dyn ? ET_DYN : ET_EXEC;
  eh.e_machine = EM_X86_64;
  eh.e_version = EV_CURRENT;
  eh.e_entry = kTextVaddr;
  eh.e_phoff = sizeof eh;
  eh.e_shoff = shdrs_at;
  eh.e_ehsize = sizeof eh;
  eh.e_phentsize = sizeof(Elf64_Phdr);
  eh.e_phnum = 1;
  eh.e_shentsize = sizeof(Elf64_Shdr);
  eh.e_shnum = 4;
  eh.e_shstrndx = 3;
  Put(out, 0, eh);
  // The whole file loads so that .text's file offset maps to kTextVaddr.
  Elf64_Phdr load{};
  load.p_type = PT_LOAD;
  load.p_flags = PF_R | PF_X;
  load.p_offset = 0;
  load.p_vaddr = load.p_paddr = kTextVaddr - kText;
  load.p_filesz = load.p_memsz = eh_at;
  load.p_align = 0x1000;
  Put(out, sizeof eh, load);
  std::memset(out.data() + kText, 0xc3, kTextSize);
  if (eh_size) std::memcpy(out.data() + eh_at, eh_frame, eh_size);
  std::memcpy(out.data() + names_at, names.data(), names.size());
  Elf64_Shdr sh[4]{};
  sh[1] = {1, SHT_PROGBITS, SHF_ALLOC | SHF_EXECINSTR, kTextVaddr, kText, kTextSize, 0, 0, 16, 0};
  sh[2] = {7, SHT_PROGBITS, SHF_ALLOC, kEhFrameVaddr, eh_at, eh_size, 0, 0, 8, 0};
  sh[3] = {17, SHT_STRTAB, 0, 0, names_at, names.size(), 0, 0, 1, 0};
  for (int i = 0; i < 4; ++i) Put(out, shdrs_at + i * sizeof(Elf64_Shdr), sh[i]);
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < kHeaderBytes) return 0;
  std::vector<uint64_t> regs(pd::kDwarfRegisterCount);
  std::memcpy(regs.data(), data, regs.size() * 8);
  size_t at = regs.size() * 8;
  const size_t eh_size = std::min<size_t>(data[at] | data[at + 1] << 8, size - kHeaderBytes);
  const uint8_t flags = data[at + 2];
  at = kHeaderBytes;
  const bool dyn = (flags & 1) != 0;
  auto image = pd::ElfImage::FromBytes(MakeElf(data + at, eh_size, dyn), "fuzz");
  if (!image.ok()) std::abort();  // the wrapper is well-formed whatever the .eh_frame holds
  at += eh_size;
  std::shared_ptr<const pd::ElfImage> elf = *image;
  const uint64_t lo = kTextVaddr, hi = kEhFrameVaddr + eh_size;
  auto image_at = [&](uint64_t address) -> pd::UnwindImage {
    if (address >= lo && address < hi) return {elf, 0};
    if (dyn && address >= lo + kBias && address < hi + kBias) return {elf, kBias};
    return {};
  };
  pd::CfiUnwinder unwinder;
  const std::span<const uint8_t> stack(data + at, size - at);
  const uint64_t rsp = regs[pd::kDwarfRsp];
  pd::UnwindResult first = unwinder.Unwind(regs, rsp, stack, image_at, kMaxFrames);
  if (first.frames.empty() || first.frames.size() > kMaxFrames) std::abort();
  if (first.frames[0] != regs[pd::kDwarfRip]) std::abort();
  if (pd::UnwindEndName(first.end) == "unknown") std::abort();
  // At most one step per caller, plus the last one that read a zero return address.
  if (first.frame_pointer_steps < 0 ||
      static_cast<size_t>(first.frame_pointer_steps) > first.frames.size())
    std::abort();
  if (std::getenv("PATHPROF_FUZZ_VERBOSE")) {  // to check what a seed reaches
    for (uint64_t f : first.frames) std::fprintf(stderr, "frame 0x%lx\n", f);
    std::fprintf(stderr, "end %s, %d by frame pointers\n",
                 std::string(pd::UnwindEndName(first.end)).c_str(), first.frame_pointer_steps);
  }
  pd::UnwindResult again = unwinder.Unwind(regs, rsp, stack, image_at, kMaxFrames);
  if (again.frames != first.frames || again.end != first.end) std::abort();
  return 0;
}
