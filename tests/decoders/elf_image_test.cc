#include "pathprof/decoders/elf_image.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>

#include "pathprof/decoders/address_space.h"
#include "pathprof/decoders/image_store.h"
#include "pathprof/decoders/process_code_map.h"

#include "common/corpus.h"
#include "common/run_command.h"
#include "pathprof/core/procfs.h"

namespace pathprof::decoders {
namespace {

// The two corpus binaries, relative to the corpus directory (for PATHPROF_SKIP_WITHOUT_CORPUS)
// and in full.
constexpr char kPropellerFile[] = "lbr/autofdo/propeller_sample_1.bin";
constexpr char kGzipFile[] = "lbr/autofdo/test.binary";
const std::string kCorpus = pathprof::testing::CorpusPath("lbr/autofdo/");
const std::string kPropeller = pathprof::testing::CorpusPath(kPropellerFile);
const std::string kGzip = pathprof::testing::CorpusPath(kGzipFile);

std::string RunCommand(const std::string& cmd) {
  return pathprof::testing::RunCommand(cmd).out;
}

TEST(ElfImage, LldCodeSegmentMapsFileOffset0x740ToVaddr0x1740) {
  PATHPROF_SKIP_WITHOUT_CORPUS(kPropellerFile);
  auto image = ElfImage::Open(kPropeller);
  ASSERT_TRUE(image.ok()) << image.status().ToString();
  const ElfImage& e = **image;
  EXPECT_TRUE(e.relocatable());  // PIE
  uint64_t v = 0, off = 0;
  ASSERT_TRUE(e.FileOffsetToVaddr(0x740, &v));
  EXPECT_EQ(v, 0x1740u);
  ASSERT_TRUE(e.VaddrToFileOffset(0x18d0, &off));  // compute_flag
  EXPECT_EQ(off, 0x8d0u);
  EXPECT_EQ(e.code_begin(), 0x1740u);
  EXPECT_EQ(e.code_end(), 0x1740u + 0x450u);
  // compute_flag starts with "mov %edi,-0x8(%rsp)" = 89 7c 24 f8 (as perf script shows).
  auto code = e.CodeAt(0x18d0);
  ASSERT_GE(code.size(), 4u);
  EXPECT_EQ(code[0], 0x89);
  EXPECT_EQ(code[1], 0x7c);
  EXPECT_EQ(code[2], 0x24);
  EXPECT_EQ(code[3], 0xf8);
  EXPECT_TRUE(e.CodeAt(0x8d0).empty());  // the file offset is not a code address
}

TEST(ElfImage, BuildIdMatchesReadelf) {
  PATHPROF_SKIP_WITHOUT_CORPUS(kPropellerFile);
  auto image = ElfImage::Open(kPropeller);
  ASSERT_TRUE(image.ok());
  EXPECT_EQ((*image)->build_id(), "572ac72487ae1966");
  const std::string readelf = RunCommand("readelf -n " + kPropeller + " 2>/dev/null");
  if (readelf.empty()) GTEST_SKIP() << "readelf (binutils) not installed";
  EXPECT_NE(readelf.find("Build ID: " + (*image)->build_id()), std::string::npos) << readelf;
}

TEST(ElfImage, NonPieImage) {
  PATHPROF_SKIP_WITHOUT_CORPUS(kGzipFile);
  auto image = ElfImage::Open(kGzip);
  ASSERT_TRUE(image.ok());
  EXPECT_FALSE((*image)->relocatable());
  EXPECT_EQ((*image)->build_id(), "");
  uint64_t v = 0;
  ASSERT_TRUE((*image)->FileOffsetToVaddr(0x4e80, &v));
  EXPECT_EQ(v, 0x404e80u);
}

// Needs no corpus file, so it runs without the corpus too.
TEST(ElfImage, OpenRefusesMissingAndNonElfFiles) {
  auto missing = ElfImage::Open("/nonexistent/x");
  EXPECT_EQ(missing.status().code(), ErrorCode::kNotFound);
  auto notelf = ElfImage::FromBytes({'h', 'i'}, "bytes");
  EXPECT_EQ(notelf.status().code(), ErrorCode::kCorrupt);
}

TEST(AddressSpace, ProcMapsParseAndOverlapReplacement) {
  auto space = ParseProcMaps(
      "55d0c0a00000-55d0c0a02000 r--p 00000000 fd:01 1234 /usr/bin/cat\n"
      "55d0c0a02000-55d0c0a07000 r-xp 00002000 fd:01 1234 /usr/bin/cat\n"
      "7ffd1b5f0000-7ffd1b5f2000 r-xp 00000000 00:00 0                          [vdso]\n");
  ASSERT_TRUE(space.ok()) << space.status().ToString();
  const Mapping* m = space->Find(0x55d0c0a03000);
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->pgoff, 0x2000u);
  EXPECT_TRUE(m->executable);
  EXPECT_EQ(m->path, "/usr/bin/cat");
  EXPECT_FALSE(space->Find(0x55d0c0a00000)->executable);
  EXPECT_TRUE(space->Find(0x7ffd1b5f0010)->IsVdso());
  EXPECT_EQ(space->Find(0x1000), nullptr);
  // A new mapping in the middle splits the old one; the tail keeps its moved file offset.
  space->Add({0x55d0c0a03000, 0x1000, 0, true, "/lib/x.so", "", ""});
  EXPECT_EQ(space->Find(0x55d0c0a03800)->path, "/lib/x.so");
  EXPECT_EQ(space->Find(0x55d0c0a04000)->pgoff, 0x4000u);
  EXPECT_EQ(space->Find(0x55d0c0a02800)->pgoff, 0x2000u);
  EXPECT_FALSE(ParseProcMaps("garbage\n").ok());
}

// Images from `dir` only: not from this host's paths, not from a debuginfod server.
ImageStoreOptions OnlyUnder(const std::filesystem::path& dir) {
  ImageStoreOptions opt;
  opt.binary_dir = dir.string();
  opt.use_host_paths = false;
  opt.use_debuginfod = false;
  return opt;
}

// Add and Overlay against the definition (each new mapping cuts what it overlaps out of the
// old ones, as mmap(2) does), on random maps: page-granular ranges, many overlaps.
std::vector<Mapping> ReferenceAdd(std::vector<Mapping> maps, const Mapping& m) {
  std::vector<Mapping> out;
  for (const Mapping& old : maps) {
    if (old.end() <= m.start || old.start >= m.end()) {
      out.push_back(old);
      continue;
    }
    if (old.start < m.start) {
      Mapping head = old;
      head.len = m.start - old.start;
      out.push_back(head);
    }
    if (old.end() > m.end()) {
      Mapping tail = old;
      tail.start = m.end();
      tail.len = old.end() - m.end();
      tail.pgoff = old.pgoff + (m.end() - old.start);
      out.push_back(tail);
    }
  }
  out.push_back(m);
  std::sort(out.begin(), out.end(), [](auto& a, auto& b) { return a.start < b.start; });
  return out;
}

bool SameMaps(const std::vector<Mapping>& a, const std::vector<Mapping>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].start != b[i].start || a[i].len != b[i].len || a[i].pgoff != b[i].pgoff ||
        a[i].path != b[i].path)
      return false;
  return true;
}

TEST(AddressSpace, AddAndOverlayAgreeWithTheDefinitionOnRandomMaps) {
  uint64_t seed = 0x9e3779b97f4a7c15ull;
  auto next = [&](uint64_t n) {
    seed ^= seed << 13;
    seed ^= seed >> 7;
    seed ^= seed << 17;
    return seed % n;
  };
  auto random_mapping = [&](int tag) {
    Mapping m;
    m.start = 0x10000 + next(64) * 0x1000;
    m.len = (1 + next(12)) * 0x1000;
    m.pgoff = next(16) * 0x1000;
    m.path = "/lib/" + std::to_string(tag);
    return m;
  };
  for (int round = 0; round < 300; ++round) {
    AddressSpace space;
    std::vector<Mapping> expect;
    const int n = 1 + static_cast<int>(next(10));
    for (int i = 0; i < n; ++i) {
      const Mapping m = random_mapping(i);
      space.Add(m);
      expect = ReferenceAdd(expect, m);
      ASSERT_TRUE(SameMaps(space.mappings(), expect)) << "round " << round << " add " << i;
    }
    // A fresh read: non-overlapping mappings, as /proc/PID/maps lists them.
    AddressSpace fresh;
    std::vector<Mapping> fresh_list;
    for (int i = 0; i < 1 + static_cast<int>(next(6)); ++i) {
      const Mapping m = random_mapping(100 + i);
      fresh.Add(m);
      fresh_list = ReferenceAdd(fresh_list, m);
    }
    for (const Mapping& m : fresh.mappings()) expect = ReferenceAdd(expect, m);
    const uint64_t generation = space.generation();
    space.Overlay(fresh);
    EXPECT_GT(space.generation(), generation);
    ASSERT_TRUE(SameMaps(space.mappings(), expect)) << "round " << round << " overlay";
  }
}

TEST(ImageStore, BinaryDirByRecordedPathThenBasenameAndBuildIdCheck) {
  PATHPROF_SKIP_WITHOUT_CORPUS(kPropellerFile);
  ImageStoreOptions opt;
  opt.binary_dir = kCorpus;
  opt.use_host_paths = false;
  ImageStore store(opt);
  auto by_base = store.Get("/some/where/propeller_sample_1.bin", "572ac72487ae1966");
  ASSERT_TRUE(by_base.ok()) << by_base.status().ToString();
  auto again = store.Get("/other/propeller_sample_1.bin", "572ac72487ae1966");
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(by_base->get(), again->get());  // cached per build-id
  auto wrong = store.Get("/x/propeller_sample_1.bin", "00112233");
  EXPECT_FALSE(wrong.ok());
  EXPECT_EQ(store.stats().build_id_mismatches, 1u);
  EXPECT_NE(wrong.status().message().find("--binary-dir"), std::string::npos);
}

// A recording names a binary by where it was on the recording host; a copy under any name
// in the binary dir is found by its build-id, and a file whose id differs is never used.
TEST(ImageStore, BinaryDirIsSearchedByBuildIdWhateverTheFileIsCalled) {
  PATHPROF_SKIP_WITHOUT_CORPUS(kPropellerFile);
  PATHPROF_SKIP_WITHOUT_CORPUS(kGzipFile);
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("pathprof-ids-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir / "deep" / "er");
  std::filesystem::copy_file(kPropeller, dir / "deep" / "er" / "renamed.elf");
  std::filesystem::copy_file(kGzip, dir / "test.binary");
  {
    std::FILE* f = std::fopen((dir / "not-elf.txt").c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fputs(
        "\x7f"
        "ELF but truncated, and a text file after all: skipped, not fatal\n",
        f);
    std::fclose(f);
  }
  ImageStore store(OnlyUnder(dir));
  auto image = store.Get("/build/google3/propeller_sample_1.bin.gen", "572ac72487ae1966");
  ASSERT_TRUE(image.ok()) << image.status().ToString();
  EXPECT_EQ((*image)->path(), (dir / "deep" / "er" / "renamed.elf").string());
  EXPECT_EQ(store.stats().found_by_build_id, 1u);
  EXPECT_EQ(store.stats().binary_dir_elf_files, 2u);
  EXPECT_EQ(store.stats().binary_dir_unindexed, 1u);  // the text file with an ELF magic
  // A build-id nothing under the directory has: the name alone never stands in for it.
  auto other = store.Get("/build/google3/propeller_sample_1.bin.gen", "00ff00ff00ff00ff");
  EXPECT_FALSE(other.ok());
  // No recorded id (test.binary has none): recorded path, then basename, as before.
  auto by_name = store.Get("/export/hda3/tmp/test.binary", "");
  ASSERT_TRUE(by_name.ok()) << by_name.status().ToString();
  EXPECT_EQ(store.stats().found_by_build_id, 1u);
  std::filesystem::remove_all(dir);
}

// `perf buildid-cache -a FILE` keeps FILE as ~/.debug/.build-id/xx/REST -> ../../PATH/ID/elf.
TEST(ImageStore, PerfBuildIdCacheLayoutIsFound) {
  PATHPROF_SKIP_WITHOUT_CORPUS(kPropellerFile);
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("pathprof-bidcache-" + std::to_string(::getpid()));
  const std::filesystem::path held = dir / "srv" / "propeller_sample_1.bin" / "572ac72487ae1966";
  std::filesystem::create_directories(held);
  std::filesystem::copy_file(kPropeller, held / "elf");
  std::filesystem::create_directories(dir / ".build-id" / "57");
  std::filesystem::create_directory_symlink(held, dir / ".build-id" / "57" / "2ac72487ae1966");
  ImageStore store(OnlyUnder(dir));
  auto image = store.Get("/gone/propeller_sample_1.bin.gen", "572ac72487ae1966");
  ASSERT_TRUE(image.ok()) << image.status().ToString();
  EXPECT_EQ((*image)->path(), (dir / ".build-id" / "57" / "2ac72487ae1966" / "elf").string());
  EXPECT_EQ(store.stats().found_by_build_id, 1u);
  std::filesystem::remove_all(dir);
}

TEST(ElfImage, ReadBuildIdReadsOnlyTheNotes) {
  PATHPROF_SKIP_WITHOUT_CORPUS(kPropellerFile);
  PATHPROF_SKIP_WITHOUT_CORPUS(kGzipFile);
  auto id = ReadBuildId(kPropeller);
  ASSERT_TRUE(id.ok()) << id.status().ToString();
  EXPECT_EQ(*id, "572ac72487ae1966");
  auto none = ReadBuildId(kGzip);
  ASSERT_TRUE(none.ok()) << none.status().ToString();
  EXPECT_EQ(*none, "");
}

// Needs no corpus file, so it runs without the corpus too.
TEST(ElfImage, ReadBuildIdRefusesMissingAndNonElfFiles) {
  EXPECT_EQ(ReadBuildId(procfs::Procfs::Host().Path(getpid(), "status")).status().code(),
            ErrorCode::kCorrupt);
  EXPECT_EQ(ReadBuildId("/nonexistent/file").status().code(), ErrorCode::kNotFound);
}

TEST(ProcessCodeMap, MmapRecordOfThePieGivesTheRecordedLoadBias) {
  PATHPROF_SKIP_WITHOUT_CORPUS(kPropellerFile);
  // The corpus's MMAP2 record: [0x5629ec742000(0x1000) @ 0] r-xp propeller_sample_1.bin.gen
  ImageStoreOptions opt;
  opt.binary_dir = kCorpus;
  ImageStore store(opt);
  ProcessCodeMap code(&store);
  code.AddMapping(5595,
                  {0x5629ec742000, 0x1000, 0, true, "/build/propeller_sample_1.bin.gen", "", ""});
  // The recorded name (.gen) is not in the binary dir: no code, never a guess.
  EXPECT_EQ(code.Find(5595, 0x5629ec742967), nullptr);
  code.AddMapping(5596, {0x5629ec742000, 0x1000, 0, true, "propeller_sample_1.bin", "", ""});
  const CodeRegion* r = code.Find(5596, 0x5629ec742967);
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->bias, 0x5629ec741000u);
  EXPECT_EQ(r->begin, 0x5629ec742740u);
  EXPECT_EQ(r->end, 0x5629ec742b90u);
  X86Instruction insn;
  ASSERT_TRUE(r->cache->DecodeAt(0x5629ec742967 - r->bias, &insn));  // call compute_flag
  EXPECT_EQ(insn.kind, BranchKind::kDirectCall);
  EXPECT_EQ(insn.direct_target + r->bias, 0x5629ec7428d0u);
  EXPECT_EQ(code.Find(5596, 0x5629ec742100), nullptr);  // mapped, but not code
}

}  // namespace
}  // namespace pathprof::decoders

namespace pathprof::decoders {
namespace {

TEST(LiveProcess, OwnMapsResolveThisFunctionAndTheVdsoReadsFromMemory) {
  auto space = ReadProcMaps(::getpid());
  ASSERT_TRUE(space.ok()) << space.status().ToString();
  ImageStore store;
  ProcessCodeMap code(&store, /*read_live_vdso=*/true);
  code.SetAddressSpace(::getpid(), *space);
  // This test's own code: the region's image must hold the bytes the CPU runs here.
  const auto here = reinterpret_cast<uint64_t>(&ReadProcMaps);
  const CodeRegion* r = code.Find(::getpid(), here);
  ASSERT_NE(r, nullptr);
  auto bytes = r->cache->image()->CodeAt(here - r->bias);
  ASSERT_GE(bytes.size(), 8u);
  EXPECT_EQ(std::memcmp(bytes.data(), reinterpret_cast<const void*>(here), 8), 0);
  // The vdso has no file: it is read from /proc/self/mem.
  for (const Mapping& m : space->mappings()) {
    if (!m.IsVdso()) continue;
    const CodeRegion* v = code.Find(::getpid(), m.start + 0x100);
    if (v == nullptr) continue;  // the vdso's first page may be data only
    EXPECT_EQ(v->cache->image()->path(), "[vdso]");
  }
  auto vdso_map = std::find_if(space->mappings().begin(), space->mappings().end(),
                               [](const Mapping& m) { return m.IsVdso(); });
  if (vdso_map == space->mappings().end()) GTEST_SKIP() << "no vdso in this process";
  auto vdso = store.GetVdso(::getpid(), vdso_map->start, vdso_map->len);
  ASSERT_TRUE(vdso.ok()) << vdso.status().ToString();
  EXPECT_GT((*vdso)->code_end(), (*vdso)->code_begin());
}

}  // namespace
}  // namespace pathprof::decoders
