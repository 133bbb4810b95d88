#include "cfi_validation.h"

#include <elf.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "pathprof/core/procfs.h"
#include "pathprof/decoders/cfi_unwinder.h"

namespace pathprof::decoders {
namespace {

std::vector<uint8_t> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

struct Section {
  size_t offset = 0;
  size_t size = 0;
  uint64_t addr = 0;
};

// A section of a 64-bit ELF file by name, read from its section headers; size 0 if absent.
Section FindSection(const std::vector<uint8_t>& file, const std::string& name) {
  Elf64_Ehdr eh;
  if (file.size() < sizeof eh) return {};
  std::memcpy(&eh, file.data(), sizeof eh);
  auto shdr = [&](size_t i) {
    Elf64_Shdr sh{};
    const size_t at = eh.e_shoff + i * sizeof sh;
    if (at + sizeof sh <= file.size()) std::memcpy(&sh, file.data() + at, sizeof sh);
    return sh;
  };
  const Elf64_Shdr names = shdr(eh.e_shstrndx);
  for (size_t i = 0; i < eh.e_shnum; ++i) {
    const Elf64_Shdr sh = shdr(i);
    const size_t at = names.sh_offset + sh.sh_name;
    if (at + name.size() < file.size() &&
        std::memcmp(file.data() + at, name.c_str(), name.size() + 1) == 0)
      return {sh.sh_offset, sh.sh_size, sh.sh_addr};
  }
  return {};
}

void PutU32(std::vector<uint8_t>& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<uint8_t>(v >> (8 * i)));
}

// .eh_frame entries as GCC writes them: CIEs "zR" (code 1, data -8, return address 16, FDE
// addresses pcrel|sdata4) and FDEs with empty augmentation data.
struct EhFrameBuilder {
  std::vector<uint8_t> bytes;

  size_t Cie(const std::vector<uint8_t>& instructions) {
    std::vector<uint8_t> body;
    PutU32(body, 0);  // CIE id
    body.insert(body.end(), {1, 'z', 'R', 0, 1, 0x78, 16, 1, 0x1b});
    body.insert(body.end(), instructions.begin(), instructions.end());
    return Entry(body);
  }
  size_t Fde(size_t cie, const std::vector<uint8_t>& instructions) {
    std::vector<uint8_t> body;
    PutU32(body, static_cast<uint32_t>(bytes.size() + 4 - cie));  // back to the CIE
    PutU32(body, 0x1000);                                         // pc begin (pcrel)
    PutU32(body, 0x40);                                           // pc range
    body.push_back(0);                                            // augmentation data length
    body.insert(body.end(), instructions.begin(), instructions.end());
    return Entry(body);
  }
  size_t Entry(const std::vector<uint8_t>& body) {
    const size_t at = bytes.size();
    PutU32(bytes, static_cast<uint32_t>(body.size()));
    bytes.insert(bytes.end(), body.begin(), body.end());
    return at;
  }
  CfiCheck Check() {
    std::vector<uint8_t> terminated = bytes;
    PutU32(terminated, 0);
    EhFrameSource source;
    source.eh_frame = terminated;
    source.eh_frame_vaddr = 0x402000;
    return CheckEhFrame(source);
  }
};

// A CIE's usual initial instructions: CFA = rsp + 8, return address at CFA - 8.
const std::vector<uint8_t> kCieInstructions = {0x0c, 0x07, 0x08, 0x90, 0x01};

TEST(CfiValidationTest, RefusesTheFuzzFindingsRegisterBeforeLibdwSizesATableByIt) {
  // The fuzzer's input: 17 registers, a u16 length and a flags byte, then the .eh_frame whose
  // CIE holds DW_CFA_same_value for register 0x0ffffffa (libdw allocated 2 GiB for it).
  const auto input = ReadFile(std::string(PATHPROF_SOURCE_DIR) +
                              "/tests/fuzz/seeds/cfi_unwind/regress_register_oom.bin");
  constexpr size_t kHeader = kDwarfRegisterCount * 8 + 3;
  ASSERT_GT(input.size(), kHeader);
  const size_t length = input[kDwarfRegisterCount * 8] | (input[kDwarfRegisterCount * 8 + 1] << 8);
  EhFrameSource source;
  source.eh_frame =
      std::span<const uint8_t>(input).subspan(kHeader, std::min(length, input.size() - kHeader));
  source.eh_frame_vaddr = 0x402000;
  const CfiCheck check = CheckEhFrame(source);
  EXPECT_EQ(check.refusal, CfiRefusal::kRegisterOutOfRange) << check.status.ToString();
  EXPECT_NE(check.status.message().find("DW_CFA_same_value names register 268435450"),
            std::string::npos)
      << check.status.message();
  EXPECT_NE(check.status.message().find("CIE at .eh_frame offset 0x2c, instruction at 0x3d"),
            std::string::npos)
      << check.status.message();
  EXPECT_EQ(CfiRefusalName(check.refusal), "register_out_of_range");
}

TEST(CfiValidationTest, AcceptsRealBinariesInFull) {
  const std::vector<std::string> paths = {procfs::Procfs::Host().Path(getpid(), "exe"), "/bin/ls",
                                          "/lib/x86_64-linux-gnu/libc.so.6",
                                          "/usr/lib/x86_64-linux-gnu/libstdc++.so.6"};
  for (const std::string& path : paths) {
    const auto file = ReadFile(path);
    ASSERT_FALSE(file.empty()) << path;
    const CfiCheck check = CheckElfFileCfi(file);
    EXPECT_TRUE(check.ok()) << path << ": " << check.status.ToString();
    EXPECT_TRUE(check.found) << path;
    EXPECT_GT(check.fdes, 100u) << path;
    EXPECT_GE(check.cies, 1u) << path;
    // The linker's table names (almost) every FDE, each checked against the walk.
    EXPECT_GT(check.table_entries, check.fdes * 9 / 10) << path;
    EXPECT_LE(check.table_entries, check.fdes) << path;
  }
}

TEST(CfiValidationTest, RefusesASearchTableEntryPointingIntoAnFde) {
  auto file = ReadFile("/bin/ls");
  const Section hdr = FindSection(file, ".eh_frame_hdr");
  ASSERT_GE(hdr.size, 12u + 16u);
  ASSERT_TRUE(CheckElfFileCfi(file).ok());
  // Entry 1's FDE pointer (datarel sdata4), moved 8 bytes on: into its FDE's fields.
  const size_t field = hdr.offset + 12 + 8 + 4;
  int32_t fde = 0;
  std::memcpy(&fde, file.data() + field, 4);
  fde += 8;
  std::memcpy(file.data() + field, &fde, 4);
  const CfiCheck check = CheckElfFileCfi(file);
  EXPECT_EQ(check.refusal, CfiRefusal::kSearchTableMismatch) << check.status.ToString();
  EXPECT_NE(check.status.message().find("table entry 1 names .eh_frame offset"), std::string::npos)
      << check.status.message();
  EXPECT_NE(check.status.message().find("not the start of an FDE"), std::string::npos);
}

TEST(CfiValidationTest, FollowsPtGnuEhFrameWhenTheFileHasNoSectionHeaders) {
  // Without section headers libdw takes .eh_frame_hdr from PT_GNU_EH_FRAME and reads .eh_frame
  // from where the header points to the end of the file: the check must walk the same bytes.
  auto file = ReadFile("/bin/ls");
  const CfiCheck with_sections = CheckElfFileCfi(file);
  ASSERT_TRUE(with_sections.ok()) << with_sections.status.ToString();
  const Section hdr = FindSection(file, ".eh_frame_hdr");
  ASSERT_GE(hdr.size, 12u + 16u);
  Elf64_Ehdr eh;
  std::memcpy(&eh, file.data(), sizeof eh);
  eh.e_shoff = 0;
  eh.e_shnum = 0;
  eh.e_shstrndx = 0;
  std::memcpy(file.data(), &eh, sizeof eh);
  const CfiCheck segment = CheckElfFileCfi(file);
  EXPECT_TRUE(segment.ok()) << segment.status.ToString();
  EXPECT_EQ(segment.fdes, with_sections.fdes);
  EXPECT_EQ(segment.table_entries, with_sections.table_entries);
  // The last table entry, moved 4 bytes back: into the FDE before it.
  const size_t field = hdr.offset + 12 + (segment.table_entries - 1) * 8 + 4;
  int32_t fde = 0;
  std::memcpy(&fde, file.data() + field, 4);
  fde -= 4;
  std::memcpy(file.data() + field, &fde, 4);
  EXPECT_EQ(CheckElfFileCfi(file).refusal, CfiRefusal::kSearchTableMismatch);
}

TEST(CfiValidationTest, BoundsRememberStateDepth) {
  for (int depth : {kCfiMaxRememberDepth, kCfiMaxRememberDepth + 1}) {
    EhFrameBuilder b;
    const size_t cie = b.Cie(kCieInstructions);
    std::vector<uint8_t> program(depth, 0x0a);   // DW_CFA_remember_state
    program.insert(program.end(), depth, 0x0b);  // DW_CFA_restore_state
    b.Fde(cie, program);
    const CfiCheck check = b.Check();
    if (depth <= kCfiMaxRememberDepth) {
      EXPECT_TRUE(check.ok()) << check.status.ToString();
      EXPECT_EQ(check.fdes, 1u);
    } else {
      EXPECT_EQ(check.refusal, CfiRefusal::kStateTooDeep) << check.status.ToString();
      EXPECT_NE(check.status.message().find("FDE at .eh_frame offset 0x16"), std::string::npos)
          << check.status.message();
    }
  }
}

TEST(CfiValidationTest, BoundsTheRegisterOfEveryRule) {
  // Each instruction that names a register, with that register's ULEB128 at the end.
  const std::vector<std::vector<uint8_t>> rules = {
      {0x05},        // DW_CFA_offset_extended reg, offset
      {0x06},        // DW_CFA_restore_extended reg
      {0x07},        // DW_CFA_undefined reg
      {0x08},        // DW_CFA_same_value reg
      {0x09, 0x03},  // DW_CFA_register 3 <- reg (the second operand)
      {0x09},        // DW_CFA_register reg <- 3
      {0x0c},        // DW_CFA_def_cfa reg, offset
      {0x0d},        // DW_CFA_def_cfa_register reg
      {0x10},        // DW_CFA_expression reg, block
      {0x11},        // DW_CFA_offset_extended_sf reg, offset
      {0x12},        // DW_CFA_def_cfa_sf reg, offset
      {0x14},        // DW_CFA_val_offset reg, offset
      {0x15},        // DW_CFA_val_offset_sf reg, offset
      {0x16},        // DW_CFA_val_expression reg, block
      {0x2f},        // DW_CFA_GNU_negative_offset_extended reg, offset
  };
  for (const auto& rule : rules) {
    for (uint64_t reg : {kCfiRegisterLimit - 1, kCfiRegisterLimit, uint64_t{0x0ffffffa}}) {
      std::vector<uint8_t> program = rule;
      for (uint64_t v = reg;; v >>= 7) {  // ULEB128
        program.push_back(static_cast<uint8_t>((v & 0x7f) | (v > 0x7f ? 0x80 : 0)));
        if (v <= 0x7f) break;
      }
      if (rule.size() == 1 && rule[0] == 0x09) program.push_back(0x03);
      if (rule[0] == 0x10 || rule[0] == 0x16) program.insert(program.end(), {1, 0x9c});
      if (rule[0] != 0x06 && rule[0] != 0x07 && rule[0] != 0x08 && rule[0] != 0x09 &&
          rule[0] != 0x0d && rule[0] != 0x10 && rule[0] != 0x16)
        program.push_back(0x02);  // the offset
      EhFrameBuilder b;
      b.Fde(b.Cie(kCieInstructions), program);
      const CfiCheck check = b.Check();
      const std::string what = "opcode " + std::to_string(rule[0]) + " register " +
                               std::to_string(reg) + ": " + check.status.ToString();
      if (reg < kCfiRegisterLimit) {
        EXPECT_TRUE(check.ok()) << what;
      } else {
        EXPECT_EQ(check.refusal, CfiRefusal::kRegisterOutOfRange) << what;
        EXPECT_NE(check.status.message().find("register " + std::to_string(reg)), std::string::npos)
            << what;
      }
    }
  }
}

TEST(CfiValidationTest, RefusesWhatLibdwWouldReadOutOfPlace) {
  {  // An FDE whose CIE pointer leads into the middle of the CIE.
    EhFrameBuilder b;
    b.Cie(kCieInstructions);
    b.Fde(4, {});
    EXPECT_EQ(b.Check().refusal, CfiRefusal::kMalformed) << b.Check().status.ToString();
  }
  {  // An expression block longer than its FDE.
    EhFrameBuilder b;
    b.Fde(b.Cie(kCieInstructions), {0x0f, 0x40, 0x77});
    EXPECT_EQ(b.Check().refusal, CfiRefusal::kMalformed) << b.Check().status.ToString();
  }
  {  // An expression above the bound, even where the FDE holds it.
    EhFrameBuilder b;
    std::vector<uint8_t> program = {0x0f, 0x81, 0x10};  // 2049 bytes
    program.insert(program.end(), 2049, 0x96);          // DW_OP_nop
    b.Fde(b.Cie(kCieInstructions), program);
    EXPECT_EQ(b.Check().refusal, CfiRefusal::kTooLarge) << b.Check().status.ToString();
  }
  {  // DW_CFA_GNU_window_save (SPARC) and DW_CFA_MIPS_advance_loc8: not x86-64 CFI.
    for (uint8_t op : {0x2d, 0x1d, 0x3f}) {
      EhFrameBuilder b;
      b.Fde(b.Cie(kCieInstructions), {op});
      EXPECT_EQ(b.Check().refusal, CfiRefusal::kUnknownOpcode) << int{op};
    }
  }
  {  // An entry whose length runs past the section.
    EhFrameBuilder b;
    b.Cie(kCieInstructions);
    b.bytes[0] = 0xf0;
    EXPECT_EQ(b.Check().refusal, CfiRefusal::kMalformed) << b.Check().status.ToString();
  }
  {  // The return address register itself.
    EhFrameBuilder b;
    b.Cie(kCieInstructions);
    b.bytes[4 + 4 + 1 + 3 + 2] = 0xc8;  // version 1: one byte, 200
    EXPECT_EQ(b.Check().refusal, CfiRefusal::kRegisterOutOfRange) << b.Check().status.ToString();
  }
}

TEST(CfiValidationTest, RefusedImageIsUnwoundWithoutLibdwAndCountedOnce) {
  // This test binary's own file with one FDE's instructions replaced by DW_CFA_same_value for
  // register 0x0ffffffa: the unwinder must refuse the whole image before libdw reads it.
  auto file = ReadFile(procfs::Procfs::Host().Path(getpid(), "exe"));
  const Section eh = FindSection(file, ".eh_frame");
  ASSERT_GT(eh.size, 64u);
  size_t off = 0;
  bool patched = false;
  while (!patched && off + 8 < eh.size) {
    uint32_t length = 0, id = 0;
    std::memcpy(&length, file.data() + eh.offset + off, 4);
    std::memcpy(&id, file.data() + eh.offset + off + 4, 4);
    if (length == 0) break;
    // GCC's FDEs: pc begin, pc range (sdata4 each), augmentation length 0, then instructions.
    const size_t instructions = off + 4 + 4 + 8 + 1, end = off + 4 + length;
    if (id != 0 && end >= instructions + 5) {
      const uint8_t program[] = {0x08, 0xfa, 0xff, 0xff, 0x7f};
      std::memcpy(file.data() + eh.offset + instructions, program, sizeof program);
      patched = true;
    }
    off = end;
  }
  ASSERT_TRUE(patched);
  auto image = ElfImage::FromBytes(file, "patched test binary");
  ASSERT_TRUE(image.ok()) << image.status().ToString();
  CfiUnwinder unwinder;
  // A frame-pointer chain of one frame: [rbp] = 0, [rbp + 8] = return address 0 (the end).
  std::vector<uint64_t> regs(kDwarfRegisterCount, 0);
  regs[kDwarfRip] = 0x400;
  regs[kDwarfRsp] = regs[kDwarfRbp] = 0x1000;
  const uint8_t stack[16] = {};
  auto image_at = [&](uint64_t) { return UnwindImage{*image, 0}; };
  UnwindResult first = unwinder.Unwind(regs, 0x1000, stack, image_at);
  EXPECT_EQ(first.cfi_refused, std::vector<std::string>{"register_out_of_range"});
  EXPECT_EQ(first.end, UnwindEnd::kOutermost) << UnwindEndName(first.end);
  EXPECT_EQ(first.frame_pointer_steps, 1);
  const Status why = unwinder.RefusedCfi(image->get());
  EXPECT_EQ(why.code(), ErrorCode::kCorrupt);
  EXPECT_NE(why.message().find("names register 268435450"), std::string::npos) << why.message();
  // Checked once per image: the next unwind neither checks nor counts it again.
  UnwindResult second = unwinder.Unwind(regs, 0x1000, stack, image_at);
  EXPECT_TRUE(second.cfi_refused.empty());
  EXPECT_EQ(second.end, first.end);
}

// The check's cost, once per image: the largest .eh_frame at hand (python3.11's when installed).
TEST(CfiValidationTest, CostPerImage) {
  std::string path = "/usr/bin/python3.11";
  auto file = ReadFile(path);
  if (file.empty()) file = ReadFile(path = "/lib/x86_64-linux-gnu/libc.so.6");
  ASSERT_FALSE(file.empty());
  const Section eh = FindSection(file, ".eh_frame");
  constexpr int kRounds = 5;
  CfiCheck check;
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < kRounds; ++i) check = CheckElfFileCfi(file);
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count() /
      kRounds;
  ASSERT_TRUE(check.ok()) << check.status.ToString();
  std::printf("%s: .eh_frame %zu bytes, %zu CIEs, %zu FDEs, %zu table entries: %.2f ms per check\n",
              path.c_str(), eh.size, check.cies, check.fdes, check.table_entries, ms);
}

}  // namespace
}  // namespace pathprof::decoders
