#include "pathprof/decoders/symbolizer.h"

#include <gtest/gtest.h>

#include <stdlib.h>

#include <cstdio>
#include <string>

#include "common/corpus.h"
#include "common/run_command.h"

namespace pathprof::decoders {
namespace {

const std::string kCorpus = pathprof::testing::CorpusPath("lbr/autofdo/");

std::string RunCommand(const std::string& cmd) {
  return pathprof::testing::RunCommand(cmd).out;
}

// A fresh directory from `dir_template` (mkdtemp's XXXXXX) holding `name` with `text`; empty when
// it cannot be made. The caller removes it.
std::string DirWithFile(const std::string& dir_template, const std::string& name,
                        const std::string& text) {
  std::string dir = dir_template;
  if (mkdtemp(dir.data()) == nullptr) return "";
  FILE* f = std::fopen((dir + "/" + name).c_str(), "w");
  if (f == nullptr) return "";
  std::fputs(text.c_str(), f);
  std::fclose(f);
  return dir;
}

TEST(Symbolizer, GzipAddressGivesFunctionAndLine) {
  PATHPROF_SKIP_WITHOUT_CORPUS("lbr/autofdo/test.binary");
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
  PATHPROF_SKIP_WITHOUT_CORPUS("lbr/autofdo/test.binary");
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
  PATHPROF_SKIP_WITHOUT_CORPUS("lbr/autofdo/propeller_sample_1.bin");
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

// A code address whose nearest symbol is a data object (stripped binaries keep their exported
// objects in .dynsym) stays unnamed: the object's name would be a made-up caller.
TEST(Symbolizer, ADataSymbolNeverNamesCode) {
  const std::string dir = DirWithFile(
      "/tmp/pathprof-datasym-XXXXXX", "t.s",
      ".text\n"
      ".globl code_fn\n.type code_fn, @function\ncode_fn: nop\nnop\nret\n.size code_fn, 3\n"
      ".globl table_in_text\n.type table_in_text, @object\n"
      "table_in_text: nop\nnop\nnop\nret\n.size table_in_text, 4\n");
  ASSERT_FALSE(dir.empty());
  const auto built = pathprof::testing::RunCommand("cc -shared -nostdlib -o " + dir + "/t.so " +
                                                   dir + "/t.s 2>&1");
  if (built.rc != 0) GTEST_SKIP() << "no C toolchain to build the test object: " << built.out;
  const std::string nm = RunCommand("nm " + dir + "/t.so");
  auto address_of = [&](const std::string& name) -> uint64_t {
    const auto at = nm.find(" " + name + "\n");
    if (at == std::string::npos) return 0;
    const auto line = nm.rfind('\n', at) + 1;
    return std::stoull(nm.substr(line, at - line), nullptr, 16);
  };
  const uint64_t code = address_of("T code_fn"), data = address_of("T table_in_text");
  ASSERT_NE(code, 0u) << nm;
  ASSERT_NE(data, 0u) << nm;
  auto image = ElfImage::Open(dir + "/t.so");
  ASSERT_TRUE(image.ok()) << image.status().ToString();
  Symbolizer sym;
  auto in_code = sym.Symbolize(*image, code + 1);
  ASSERT_TRUE(in_code.ok());
  EXPECT_EQ(in_code->function, "code_fn");
  auto in_data = sym.Symbolize(*image, data + 2);
  ASSERT_TRUE(in_data.ok());
  EXPECT_EQ(in_data->function, "") << "named after a data symbol";
  EXPECT_EQ(sym.data_symbols_refused(), 1u);
  pathprof::testing::RunCommand("rm -rf " + dir);
}

// Inline frames name, innermost first, each inlined function and then the one it was inlined
// into, as addr2line -i does: two nested inlines in `outer` (volatile stores keep their code
// apart) give add_one <- twice <- outer inside add_one's code, the same chain as addr2line's at
// every address of `outer`. (dwarf_getscopes alone followed an inline
// instance into its abstract origin's scopes and lost every caller.)
TEST(Symbolizer, InlineFramesNameEveryCallerUpToTheFunction) {
  const std::string dir =
      DirWithFile("/tmp/pathprof-inline-XXXXXX", "t.c",
                  "volatile int g;\n"
                  "static inline __attribute__((always_inline)) int add_one(int x) {\n"
                  "  g = x;\n  return g + 1;\n}\n"
                  "static inline __attribute__((always_inline)) int twice(int x) {\n"
                  "  int a = add_one(x);\n  g = a;\n  return a * 2;\n}\n"
                  "__attribute__((noinline)) int outer(int x) { return twice(x) + 3; }\n"
                  "int main(int argc, char** argv) { (void)argv; return outer(argc); }\n");
  ASSERT_FALSE(dir.empty());
  const auto built =
      pathprof::testing::RunCommand("cc -O2 -g -o " + dir + "/t " + dir + "/t.c 2>&1");
  if (built.rc != 0) GTEST_SKIP() << "no C toolchain to build the test program: " << built.out;
  const std::string nm = RunCommand("nm -S " + dir + "/t");
  const auto at = nm.find(" T outer\n");
  ASSERT_NE(at, std::string::npos) << nm;
  const auto line = nm.rfind('\n', at) + 1;
  const uint64_t outer = std::stoull(nm.substr(line, 16), nullptr, 16);
  const uint64_t size = std::stoull(nm.substr(line + 17, 16), nullptr, 16);
  auto image = ElfImage::Open(dir + "/t");
  ASSERT_TRUE(image.ok()) << image.status().ToString();
  Symbolizer sym;
  size_t nested = 0;
  for (uint64_t a = outer; a < outer + size; ++a) {
    auto s = sym.Symbolize(*image, a);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    EXPECT_EQ(s->function, "outer");
    ASSERT_FALSE(s->frames.empty());
    EXPECT_EQ(s->frames.back().function, "outer") << "at 0x" << std::hex << a;
    std::string chain;
    for (const SourceFrame& f : s->frames) chain += (chain.empty() ? "" : " <- ") + f.function;
    if (s->frames.size() == 3) {
      EXPECT_EQ(chain, "add_one <- twice <- outer");
      ++nested;
    }
    // addr2line's own chain for the address, when binutils is there.
    char hex[32];
    std::snprintf(hex, sizeof hex, "0x%llx", static_cast<unsigned long long>(a));
    const std::string a2l = RunCommand("addr2line -i -f -e " + dir + "/t " + hex + " 2>/dev/null");
    if (a2l.empty()) continue;
    std::string theirs;
    size_t pos = 0;
    for (int i = 0; pos < a2l.size(); ++i) {
      const size_t end = a2l.find('\n', pos);
      if (i % 2 == 0) theirs += (theirs.empty() ? "" : " <- ") + a2l.substr(pos, end - pos);
      pos = end == std::string::npos ? a2l.size() : end + 1;
    }
    EXPECT_EQ(chain, theirs) << "at 0x" << std::hex << a;
  }
  EXPECT_GT(nested, 0u) << "no address inside both inlines";
  pathprof::testing::RunCommand("rm -rf " + dir);
}

// A stripped program's functions have no symbol, but each has an unwind entry (FDE) spanning
// it: its code is named `image+0xSTART` after that entry, START being the function's address in
// the unstripped build (nm), so every address of one function gives one name (one hot method).
TEST(Symbolizer, StrippedCodeIsNamedAfterItsUnwindEntry) {
  const std::string dir = DirWithFile(
      "/tmp/pathprof-fde-XXXXXX", "t.c",
      "__attribute__((noinline)) static int warm(int x) { int s = 0; "
      "for (int i = 0; i < x; ++i) s += i * x; return s; }\n"
      "__attribute__((noinline)) static int hot(int x) { int s = 1; "
      "for (int i = 0; i < x; ++i) s = s * 3 + i; return s; }\n"
      "int main(int argc, char** argv) { (void)argv; return hot(argc) + warm(argc); }\n");
  ASSERT_FALSE(dir.empty());
  const auto built =
      pathprof::testing::RunCommand("cc -O1 -o " + dir + "/t " + dir + "/t.c && " + "strip -o " +
                                    dir + "/t.stripped " + dir + "/t 2>&1");
  if (built.rc != 0) GTEST_SKIP() << "no C toolchain to build the test program: " << built.out;
  const std::string nm = RunCommand("nm -S " + dir + "/t");
  auto symbol = [&](const std::string& name, uint64_t* size) -> uint64_t {
    const auto at = nm.find(" " + name + "\n");
    if (at == std::string::npos) return 0;
    const auto line = nm.rfind('\n', at) + 1;
    *size = std::stoull(nm.substr(line + 17, 16), nullptr, 16);
    return std::stoull(nm.substr(line, 16), nullptr, 16);
  };
  uint64_t hot_size = 0, warm_size = 0;
  const uint64_t hot = symbol("t hot", &hot_size), warm = symbol("t warm", &warm_size);
  ASSERT_NE(hot, 0u) << nm;
  ASSERT_NE(warm, 0u) << nm;
  auto image = ElfImage::Open(dir + "/t.stripped");
  ASSERT_TRUE(image.ok()) << image.status().ToString();
  Symbolizer sym;
  char hot_name[64], warm_name[64];
  std::snprintf(hot_name, sizeof hot_name, "t.stripped+0x%llx", (unsigned long long)hot);
  std::snprintf(warm_name, sizeof warm_name, "t.stripped+0x%llx", (unsigned long long)warm);
  for (uint64_t at : {hot, hot + hot_size / 2, hot + hot_size - 1}) {
    auto s = sym.Symbolize(*image, at);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    EXPECT_EQ(s->function, hot_name) << "at 0x" << std::hex << at;
    EXPECT_EQ(s->offset, at - hot);
  }
  auto w = sym.Symbolize(*image, warm + warm_size / 2);
  ASSERT_TRUE(w.ok());
  EXPECT_EQ(w->function, warm_name);
  EXPECT_EQ(sym.unwind_entry_names(), 4u);
  // The unstripped build keeps its own names.
  auto named = ElfImage::Open(dir + "/t");
  ASSERT_TRUE(named.ok());
  auto h = sym.Symbolize(*named, hot + 1);
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(h->function, "hot");
  pathprof::testing::RunCommand("rm -rf " + dir);
}

// What a session's ingest asks per new frame: the function and offset from the symbol table,
// with no source line (reading it decompresses and parses DWARF). Symbolize afterwards still
// gives the line, and an address is counted once however it was asked for.
TEST(Symbolizer, FunctionOfReadsNoSourceLinesAndAgreesWithSymbolize) {
  const std::string dir =
      DirWithFile("/tmp/pathprof-fnof-XXXXXX", "t.c",
                  "__attribute__((noinline)) static int hot(int x) { int s = 1;\n"
                  "  for (int i = 0; i < x; ++i) s = s * 3 + i;\n  return s; }\n"
                  "int main(int argc, char** argv) { (void)argv; return hot(argc); }\n");
  ASSERT_FALSE(dir.empty());
  const auto built =
      pathprof::testing::RunCommand("cc -g -O1 -o " + dir + "/t " + dir + "/t.c && strip -o " +
                                    dir + "/t.stripped " + dir + "/t 2>&1");
  if (built.rc != 0) GTEST_SKIP() << "no C toolchain to build the test program: " << built.out;
  const std::string nm = RunCommand("nm " + dir + "/t");
  const auto at = nm.find(" t hot\n");
  ASSERT_NE(at, std::string::npos) << nm;
  const uint64_t hot = std::stoull(nm.substr(nm.rfind('\n', at) + 1, 16), nullptr, 16);
  auto image = ElfImage::Open(dir + "/t");
  ASSERT_TRUE(image.ok()) << image.status().ToString();
  Symbolizer sym;
  auto f = sym.FunctionOf(*image, hot + 2);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_EQ(f->function, "hot");
  EXPECT_EQ(f->offset, 2u);
  EXPECT_TRUE(f->file.empty()) << f->file;
  EXPECT_EQ(f->line, 0);
  EXPECT_TRUE(f->frames.empty());
  auto s = sym.Symbolize(*image, hot + 2);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->function, "hot");
  EXPECT_EQ(s->offset, 2u);
  EXPECT_TRUE(s->file.ends_with("/t.c")) << s->file;
  EXPECT_GT(s->line, 0);
  auto again = sym.FunctionOf(*image, hot + 2);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->function, "hot");

  auto stripped = ElfImage::Open(dir + "/t.stripped");
  ASSERT_TRUE(stripped.ok());
  auto u = sym.FunctionOf(*stripped, hot + 2);
  ASSERT_TRUE(u.ok());
  EXPECT_TRUE(u->from_unwind_entry) << u->function;
  EXPECT_EQ(u->offset, 2u);
  ASSERT_TRUE(sym.Symbolize(*stripped, hot + 2).ok());
  ASSERT_TRUE(sym.FunctionOf(*stripped, hot + 2).ok());
  EXPECT_EQ(sym.unwind_entry_names(), 1u);
  pathprof::testing::RunCommand("rm -rf " + dir);
}

}  // namespace
}  // namespace pathprof::decoders
