// Names for code without symbols (decoders/src/code_names.h), checked against what binutils
// reads from the same files: objdump's `NAME@plt` labels, readelf's FDE ranges, and nm's main
// and _start in the unstripped twin of a program built here.
#include "code_names.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <fstream>
#include <iterator>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "common/run_command.h"
#include "pathprof/decoders/elf_image.h"
#include "pathprof/decoders/symbolizer.h"

namespace pathprof::decoders {
namespace {

using pathprof::testing::RunCommand;

std::vector<uint8_t> FileBytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), {}};
}

// objdump -d's labels of PLT entries: "0000000000003030 <getenv@plt>:".
std::map<uint64_t, std::string> ObjdumpPltLabels(const std::string& path) {
  std::map<uint64_t, std::string> out;
  const auto r = RunCommand("objdump -d -j .plt -j .plt.sec -j .plt.got " + path + " 2>/dev/null");
  std::istringstream in(r.out);
  std::regex label(R"(^([0-9a-f]+) <([^>+]+@plt)>:$)");
  std::smatch m;
  for (std::string line; std::getline(in, line);)
    if (std::regex_match(line, m, label)) out[std::stoull(m[1].str(), nullptr, 16)] = m[2].str();
  return out;
}

// readelf's FDEs: "... FDE cie=00000000 pc=0000000000097210..00000000000980a6".
std::set<std::pair<uint64_t, uint64_t>> ReadelfFdes(const std::string& path) {
  std::set<std::pair<uint64_t, uint64_t>> out;
  const auto r = RunCommand("readelf --debug-dump=frames " + path + " 2>/dev/null");
  std::regex fde(R"(FDE cie=[0-9a-f]+ pc=([0-9a-f]+)\.\.([0-9a-f]+))");
  for (auto it = std::sregex_iterator(r.out.begin(), r.out.end(), fde);
       it != std::sregex_iterator(); ++it)
    out.emplace(std::stoull((*it)[1].str(), nullptr, 16), std::stoull((*it)[2].str(), nullptr, 16));
  return out;
}

bool HaveBinutils() {
  return RunCommand("objdump --version && readelf --version").rc == 0;
}

TEST(CodeNames, DebianZstdPltEntriesAreNamedAsObjdumpNamesThem) {
  const std::string zstd = "/usr/bin/zstd";
  if (access(zstd.c_str(), R_OK) != 0) GTEST_SKIP() << zstd << " is not installed (apt zstd)";
  if (!HaveBinutils()) GTEST_SKIP() << "no objdump/readelf (apt binutils)";
  const auto labels = ObjdumpPltLabels(zstd);
  ASSERT_GT(labels.size(), 20u) << "objdump found no PLT entries in " << zstd;
  const CodeNames names = CodeNames::Read(FileBytes(zstd));
  size_t plt_names = 0;
  for (const NamedRange& r : names.names()) plt_names += r.name.ends_with("@plt");
  EXPECT_EQ(plt_names, labels.size());
  for (const auto& [address, label] : labels) {
    const NamedRange* r = names.NameAt(address + 5);  // inside the entry, not only its start
    ASSERT_NE(r, nullptr) << label;
    EXPECT_EQ(r->name, label);
    EXPECT_EQ(r->start, address) << label;
  }
  ASSERT_NE(std::find_if(labels.begin(), labels.end(),
                         [](const auto& l) { return l.second == "memcmp@plt"; }),
            labels.end());
}

TEST(CodeNames, DebianZstdFunctionsAreItsUnwindEntriesAsReadelfReadsThem) {
  const std::string zstd = "/usr/bin/zstd";
  if (access(zstd.c_str(), R_OK) != 0) GTEST_SKIP() << zstd << " is not installed (apt zstd)";
  if (!HaveBinutils()) GTEST_SKIP() << "no objdump/readelf (apt binutils)";
  const auto fdes = ReadelfFdes(zstd);
  ASSERT_GT(fdes.size(), 500u);
  const CodeNames names = CodeNames::Read(FileBytes(zstd));
  std::set<std::pair<uint64_t, uint64_t>> ours;
  for (const AddressRange& f : names.functions()) ours.emplace(f.start, f.end);
  EXPECT_EQ(ours, fdes);
  // Every address of a function maps to that one function: its start, middle and last byte
  // (the CFI rows inside a large function change at each push and pop).
  for (const auto& [start, end] : fdes) {
    for (uint64_t at : {start, start + (end - start) / 2, end - 1}) {
      const AddressRange* f = names.FunctionAt(at);
      ASSERT_NE(f, nullptr) << std::hex << at;
      EXPECT_EQ(f->start, start) << std::hex << at;
      EXPECT_EQ(f->end, end) << std::hex << at;
    }
  }
}

// A program built here, stripped: main and _start in the stripped copy are where nm finds them
// in the unstripped one, for a PIE and a fixed-address build; and the symbolizer names every
// address of main `main`, of a static function its FDE start, and a PLT call `puts@plt`.
class StrippedProgram : public ::testing::TestWithParam<const char*> {};

TEST_P(StrippedProgram, MainAndStartAreWhereNmFindsThemUnstripped) {
  char dir_template[] = "/tmp/pathprof-names-XXXXXX";
  const std::string dir = mkdtemp(dir_template);
  {
    std::ofstream f(dir + "/t.c");
    f << "#include <stdio.h>\n"
         "__attribute__((noinline)) static int work(int x) { int s = 0; "
         "for (int i = 0; i < x; ++i) { s = s * 7 + i; if (s & 64) s ^= x; } return s; }\n"
         "int main(int argc, char** argv) { (void)argv; puts(\"hi\"); return work(argc * 1000); "
         "}\n";
  }
  const auto built = RunCommand("cc -O2 " + std::string(GetParam()) + " -o " + dir + "/t " + dir +
                                "/t.c && strip -o " + dir + "/t.stripped " + dir + "/t 2>&1");
  if (built.rc != 0) GTEST_SKIP() << "no C toolchain to build the test program: " << built.out;
  const std::string nm = RunCommand("nm " + dir + "/t").out;
  auto symbol = [&](const std::string& name) -> uint64_t {
    std::smatch m;
    if (!std::regex_search(nm, m, std::regex("([0-9a-f]+) [TtW] " + name + "\n"))) return 0;
    return std::stoull(m[1].str(), nullptr, 16);
  };
  const uint64_t main = symbol("main"), start = symbol("_start"), work = symbol("work");
  ASSERT_NE(main, 0u) << nm;
  ASSERT_NE(start, 0u) << nm;
  ASSERT_NE(work, 0u) << nm;
  const CodeNames names = CodeNames::Read(FileBytes(dir + "/t.stripped"));
  const NamedRange* m = names.NameAt(main);
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->name, "main");
  EXPECT_EQ(m->start, main);
  const NamedRange* s = names.NameAt(start);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->name, "_start");
  EXPECT_EQ(s->start, start);

  auto image = ElfImage::Open(dir + "/t.stripped");
  ASSERT_TRUE(image.ok()) << image.status().ToString();
  Symbolizer sym;
  const auto in_main = sym.Symbolize(*image, m->end - 1);
  ASSERT_TRUE(in_main.ok());
  EXPECT_EQ(in_main->function, "main");
  EXPECT_EQ(in_main->offset, m->end - 1 - main);
  EXPECT_TRUE(in_main->without_symbol);
  EXPECT_FALSE(in_main->from_unwind_entry);
  const AddressRange* work_fde = names.FunctionAt(work);
  ASSERT_NE(work_fde, nullptr);
  EXPECT_EQ(work_fde->start, work);
  char work_name[64];
  std::snprintf(work_name, sizeof work_name, "t.stripped+0x%llx", (unsigned long long)work);
  for (uint64_t at = work_fde->start; at < work_fde->end; at += 3) {
    const auto w = sym.Symbolize(*image, at);
    ASSERT_TRUE(w.ok());
    EXPECT_EQ(w->function, work_name) << std::hex << at;
    EXPECT_EQ(w->offset, at - work);
    EXPECT_EQ(w->function_size, work_fde->end - work_fde->start);
    EXPECT_TRUE(w->from_unwind_entry);
    EXPECT_TRUE(w->without_symbol);
  }
  const auto labels = ObjdumpPltLabels(dir + "/t");
  bool puts_seen = false;
  for (const auto& [address, label] : labels) {
    const auto p = sym.Symbolize(*image, address);
    ASSERT_TRUE(p.ok());
    EXPECT_EQ(p->function, label);
    puts_seen |= label == "puts@plt";
  }
  EXPECT_TRUE(puts_seen || labels.empty()) << "objdump named no puts@plt";
  RunCommand("rm -rf " + dir);
}

INSTANTIATE_TEST_SUITE_P(PieAndFixed, StrippedProgram,
                         ::testing::Values("-fPIE -pie", "-fno-pie -no-pie"));

TEST(CodeNames, GarbageIsNamedNothing) {
  std::vector<uint8_t> junk(4096, 0xff);
  const CodeNames names = CodeNames::Read(junk);
  EXPECT_TRUE(names.names().empty());
  EXPECT_TRUE(names.functions().empty());
  EXPECT_TRUE(CodeNames::Read({}).functions().empty());
}

}  // namespace
}  // namespace pathprof::decoders
