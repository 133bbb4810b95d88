// The kernel's symbol table as SymbolService reads it: only code symbols, modules named without
// their brackets, every address sorted, nothing from a table whose addresses are hidden; and on
// this host, the same symbols as the whole /proc/kallsyms read and parsed line by line.
#include "kernel_symbols.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

namespace pathprof::pipeline {
namespace {

namespace fs = std::filesystem;

class FakeKallsyms : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("fake-kallsyms-" + std::to_string(getpid()));
    fs::remove_all(root_);
    fs::create_directories(root_);
  }
  void TearDown() override { fs::remove_all(root_); }
  void Write(const std::string& text) { std::ofstream(root_ / "kallsyms") << text; }
  fs::path root_;
};

TEST_F(FakeKallsyms, CodeSymbolsSortedWithTheirModules) {
  // A module's lines come after the kernel's, at lower addresses here; data symbols (D, b, r)
  // and a malformed line are not frames.
  Write(
      "ffffffff81000000 T _text\n"
      "ffffffff81000100 t do_one\n"
      "ffffffff81000200 D some_data\n"
      "ffffffff81000300 W weak_fn\n"
      "not-an-address T broken\n"
      "ffffffff81000400 b bss_thing\n"
      "ffffffffa0000000 t mod_fn\t[my_mod]\n"
      "ffffffffa0000100 T mod_other\t[my_mod]\n"
      "ffffffff80000000 t early_fn\t[other]\n");
  const KernelSymbolTable table = KernelSymbolTable::Read(procfs::Procfs(root_.string()));
  ASSERT_EQ(table.size(), 6u);
  EXPECT_FALSE(table.Find(0xffffffff7fffffff).has_value()) << "below the first symbol";
  const std::optional<KernelSymbol> early = table.Find(0xffffffff80000010);
  ASSERT_TRUE(early.has_value());
  EXPECT_EQ(early->name, "early_fn");
  EXPECT_EQ(early->module, "other");
  const std::optional<KernelSymbol> one =
      table.Find(0xffffffff81000250);  // past some_data: still do_one's
  ASSERT_TRUE(one.has_value());
  EXPECT_EQ(one->name, "do_one");
  EXPECT_EQ(one->address, 0xffffffff81000100u);
  EXPECT_TRUE(one->module.empty());
  const std::optional<KernelSymbol> weak = table.Find(0xffffffff81000450);  // bss_thing is not code
  ASSERT_TRUE(weak.has_value());
  EXPECT_EQ(weak->name, "weak_fn");
  const std::optional<KernelSymbol> mod = table.Find(0xffffffffa0000180);
  ASSERT_TRUE(mod.has_value());
  EXPECT_EQ(mod->name, "mod_other");
  EXPECT_EQ(mod->module, "my_mod");
}

// Without CAP_SYSLOG (kptr_restrict) every address reads as 0: no table, not a table of zeros.
TEST_F(FakeKallsyms, HiddenAddressesGiveNoTable) {
  Write("0000000000000000 T _text\n0000000000000000 t do_one\n");
  EXPECT_EQ(KernelSymbolTable::Read(procfs::Procfs(root_.string())).size(), 0u);
}

// A line past the bound is a corrupt file: no table rather than the part before it.
TEST_F(FakeKallsyms, AnOverlongLineGivesNoTable) {
  Write("ffffffff81000000 T _text\nffffffff81000100 t " +
        std::string(KernelSymbolTable::kMaxLineBytes + 10, 'n') + "\n");
  EXPECT_EQ(KernelSymbolTable::Read(procfs::Procfs(root_.string())).size(), 0u);
}

// The table survives a move (SymbolService assigns it), and is whole past the arenas' 1 MiB
// populate steps (100,000 entries of 16 bytes, 2.4 MB of names).
TEST_F(FakeKallsyms, NamesStayValidWhenTheTableMoves) {
  std::string text;
  for (int i = 0; i < 100000; ++i) {
    char line[96];
    snprintf(line, sizeof line, "%016llx t function_number_%d\t[mod%d]\n",
             0xffffffff81000000ull + 16ull * i, i, i % 7);
    text += line;
  }
  Write(text);
  KernelSymbolTable moved;
  moved = KernelSymbolTable::Read(procfs::Procfs(root_.string()));
  ASSERT_EQ(moved.size(), 100000u);
  const std::optional<KernelSymbol> s = moved.Find(0xffffffff81000000ull + 16ull * 12345 + 3);
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->name, "function_number_12345");
  EXPECT_EQ(s->module, "mod4");
  const std::optional<KernelSymbol> top = moved.Find(0xffffffff81000000ull + 16ull * 99999 + 15);
  ASSERT_TRUE(top.has_value());
  EXPECT_EQ(top->name, "function_number_99999");
}

// The arena hands out room up to its bound and no further, and what it handed out stays.
TEST(PopulatedArena, AppendsUpToItsBound) {
  PopulatedArena arena(3 << 20);
  char* first = arena.Append(10);
  ASSERT_NE(first, nullptr);
  std::memcpy(first, "0123456789", 10);
  for (int i = 0; i < 2; ++i) ASSERT_NE(arena.Append(1 << 20), nullptr) << i;
  ASSERT_NE(arena.Append((1 << 20) - 10), nullptr) << "up to the bound exactly";
  EXPECT_EQ(arena.size(), size_t{3} << 20);
  EXPECT_EQ(arena.Append(1), nullptr) << "one byte past the bound";
  PopulatedArena moved = std::move(arena);
  EXPECT_EQ(std::string_view(moved.data(), 10), "0123456789");
  EXPECT_EQ(arena.Append(1), nullptr) << "a moved-from arena has no room";
  EXPECT_EQ(PopulatedArena().Append(1), nullptr);
}

// This host's table: every code symbol with an address, as a plain parse of the whole file finds
// them, each address found under one of its names.
TEST(HostKallsyms, EveryCodeSymbolOfThisHostIsFoundByItsAddress) {
  // The reference: the whole file read at once and parsed by a stream, as the table did before.
  auto text = procfs::Procfs::Host().ReadGlobal("kallsyms", KernelSymbolTable::kMaxBytes);
  ASSERT_TRUE(text.ok()) << text.status().ToString();
  std::istringstream in(*text);
  std::multimap<uint64_t, std::string> expected;
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string addr, type, name;
    fields >> addr >> type >> name;
    if (type != "t" && type != "T" && type != "w" && type != "W") continue;
    const uint64_t a = std::stoull(addr, nullptr, 16);
    if (a != 0) expected.emplace(a, name);
  }
  if (expected.empty()) GTEST_SKIP() << "kallsyms shows no addresses (kptr_restrict, not root)";
  const KernelSymbolTable table = KernelSymbolTable::Read(procfs::Procfs::Host());
  // Modules and BPF programs may come and go between the two reads: allow a few.
  EXPECT_NEAR(static_cast<double>(table.size()), static_cast<double>(expected.size()), 50.0);
  size_t checked = 0, found = 0;
  for (auto it = expected.begin(); it != expected.end();
       it = expected.upper_bound(it->first), ++checked) {
    const std::optional<KernelSymbol> s = table.Find(it->first);
    if (!s || s->address != it->first) continue;
    auto [b, e] = expected.equal_range(it->first);
    for (; b != e; ++b)
      if (b->second == s->name) break;
    if (b != e) ++found;
  }
  EXPECT_GE(found + 50, checked) << found << " of " << checked
                                 << " addresses named as kallsyms names them";
}

}  // namespace
}  // namespace pathprof::pipeline
