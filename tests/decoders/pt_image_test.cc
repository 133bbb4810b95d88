// PtImage from the two sources of mappings: .pbs ImageRecords and perf MMAP2 records.
#include "pathprof/decoders/pt_image.h"

#include <gtest/gtest.h>
#include <sys/mman.h>

#include <climits>
#include <cstdlib>

namespace pathprof::decoders {
namespace {

// Any readable file will do as mapped bytes; this test's own source is always there.
const std::string kFile = std::string(PATHPROF_SOURCE_DIR) + "/tests/decoders/pt_image_test.cc";

TEST(PtImage, ImageRecordsWithFilesBecomeSectionsOthersAreCounted) {
  auto cache = PtSectionCache::Create();
  ASSERT_TRUE(cache.ok());
  PtImage image(*cache);
  image.AddImages({ImageRecord{1, 0x400000, 0x401000, 0, kFile, ""},
                   ImageRecord{1, 0x7fff0000, 0x7fff2000, 0, "[vdso]", ""},
                   ImageRecord{1, 0x500000, 0x501000, 0, "/nonexistent/lib.so", ""}});
  EXPECT_EQ(image.stats().sections, 1u);
  EXPECT_EQ(image.stats().skipped_no_file, 2u);
}

TEST(PtImage, PerfMmap2AddsOnlyExecutableFileMappings) {
  auto cache = PtSectionCache::Create();
  ASSERT_TRUE(cache.ok());
  PtImage image(*cache);
  PerfMmap text;
  text.is_mmap2 = true;
  text.start = 0x400000;
  text.len = 0x1000;
  text.prot = PROT_READ | PROT_EXEC;
  text.filename = kFile;
  PerfMmap data = text;
  data.prot = PROT_READ | PROT_WRITE;
  data.start = 0x600000;
  EXPECT_TRUE(image.AddPerfMmap(text));
  EXPECT_FALSE(image.AddPerfMmap(data));
  EXPECT_EQ(image.stats().sections, 1u);
  // The section's bytes are the file's bytes.
  uint8_t buf[2] = {};
  // isid of the first section added to a fresh cache is 1.
  EXPECT_EQ(image.cache().Read(1, 0x400000, buf, 2), 2);
  EXPECT_EQ(buf[0], '/');
  EXPECT_EQ(buf[1], '/');
}

}  // namespace
}  // namespace pathprof::decoders
