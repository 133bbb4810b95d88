#include "pathprof/decoders/symbolizer.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "common/run_command.h"

namespace pathprof::decoders {
namespace {

const std::string kCorpus = std::string(PATHPROF_SHARED_DIR) + "/corpus/lbr/autofdo/";

std::string RunCommand(const std::string& cmd) {
  return pathprof::testing::RunCommand(cmd).out;
}

TEST(Symbolizer, GzipAddressGivesFunctionAndLine) {
  auto image = ElfImage::Open(kCorpus + "test.binary");
  ASSERT_TRUE(image.ok());
  Symbolizer sym;
  auto s = sym.Symbolize(*image, 0x404e80);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->function, "compress_block");
  EXPECT_TRUE(s->file.ends_with("/164.gzip/run/00000001/trees.c")) << s->file;
  EXPECT_EQ(s->line, 1028);
  ASSERT_FALSE(s->frames.empty());
  EXPECT_EQ(s->frames.back().function, "compress_block");
  auto s2 = sym.Symbolize(*image, 0x403333);
  ASSERT_TRUE(s2.ok());
  EXPECT_EQ(s2->function, "inflate_codes");
  EXPECT_EQ(s2->line, 580);
}

TEST(Symbolizer, AgreesWithAddr2lineWhenPresent) {
  const std::string bin = kCorpus + "test.binary";
  const std::string a2l = RunCommand("addr2line -f -e " + bin + " 0x4012d4 0x402000 2>/dev/null");
  if (a2l.empty()) GTEST_SKIP() << "addr2line (binutils) not installed";
  auto image = ElfImage::Open(bin);
  ASSERT_TRUE(image.ok());
  Symbolizer sym;
  for (uint64_t addr : {0x4012d4ull, 0x402000ull}) {
    auto s = sym.Symbolize(*image, addr);
    ASSERT_TRUE(s.ok());
    const std::string expect = s->function + "\n" + s->file + ":" + std::to_string(s->line);
    EXPECT_NE(a2l.find(expect), std::string::npos) << "ours: " << expect << "\naddr2line:\n" << a2l;
  }
}

TEST(Symbolizer, PieWithCompressedDwarfAtImageVaddr) {
  auto image = ElfImage::Open(kCorpus + "propeller_sample_1.bin");
  ASSERT_TRUE(image.ok());
  Symbolizer sym;
  auto s = sym.Symbolize(*image, 0x18e3);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->function, "compute_flag");
  EXPECT_EQ(s->offset, 0x13u);
  EXPECT_EQ(s->ToString().rfind("compute_flag+0x13", 0), 0u);
}

TEST(Symbolizer, DemanglesCxx) {
  EXPECT_EQ(Demangle("_ZN8pathprof3fooEi"), "pathprof::foo(int)");
  EXPECT_EQ(Demangle("main"), "main");
  EXPECT_EQ(Demangle("_Zbroken"), "_Zbroken");
}

}  // namespace
}  // namespace pathprof::decoders
