// ProcessImage's view of the mappings against samples' mapping sequences: the maps, read at
// one time, describe a sample only when samples on both sides of the read carry its
// sequence. A view trusted without that is what let snapshot windows run past stores the
// thread faulted on (a page made read-only between two mprotect calls).
#include "process_image.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>

#include "pathprof/core/clock.h"

namespace pathprof::collectors {
namespace {

// Reads this process's maps now, whatever their age.
void ReadNow(ProcessImage& image) {
  image.Refresh(MonotonicNs(), 0);
}

TEST(ProcessImage, MapsDescribeASequenceOnlyWhenSamplesOnBothSidesOfTheReadCarryIt) {
  DirectProcessAccess access(std::nullopt);
  ProcessImage image(getpid(), access);
  image.ObserveSequence(MonotonicNs(), 40);
  ReadNow(image);
  EXPECT_FALSE(image.Describes(40));  // nothing is known yet of after the read
  image.ObserveSequence(MonotonicNs(), 42);
  EXPECT_FALSE(image.Describes(40));  // the mappings changed across the read
  EXPECT_FALSE(image.Describes(42));

  const uint64_t before = MonotonicNs();
  ReadNow(image);
  // A sample taken before the read but handed on after it counts as before it.
  image.ObserveSequence(before, 44);
  image.ObserveSequence(MonotonicNs(), 44);
  EXPECT_TRUE(image.Describes(44));
  EXPECT_FALSE(image.Describes(42));
  RawSnapshot sample;
  sample.has_mapping_sequence = true;
  sample.mapping_sequence = 44;
  EXPECT_TRUE(image.DescribesSample(sample));
  sample.mappings_changing = true;  // a change under way at the sample: never described
  EXPECT_FALSE(image.DescribesSample(sample));
  sample.mappings_changing = false;
  sample.mapping_sequence = 46;
  EXPECT_FALSE(image.DescribesSample(sample));
  // A kernel without the sequence: the maps are trusted, as before the sequence was recorded.
  EXPECT_TRUE(image.DescribesSample(RawSnapshot{}));
}

TEST(ProcessImage, ARereadOfTheSameMapsKeepsWhatTheyDescribed) {
  // A child that only waits: its mappings do not change between two reads (this process's
  // own could, by its allocations).
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    pause();
    _exit(0);
  }
  DirectProcessAccess access(std::nullopt);
  ProcessImage image(child, access);
  image.ObserveSequence(MonotonicNs(), 10);
  ReadNow(image);
  image.ObserveSequence(MonotonicNs(), 10);
  EXPECT_TRUE(image.Describes(10));
  ReadNow(image);  // the same mappings: still the state of sequence 10
  EXPECT_TRUE(image.Describes(10));
  EXPECT_EQ(image.stats().maps_reads, 2u);
  EXPECT_EQ(image.stats().maps_changed, 1u);  // the first read only
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
}

TEST(ProcessImage, AReadThatFindsOtherMapsForgetsWhatTheReadBeforeDescribed) {
  DirectProcessAccess access(std::nullopt);
  ProcessImage image(getpid(), access);
  image.ObserveSequence(MonotonicNs(), 10);
  ReadNow(image);
  image.ObserveSequence(MonotonicNs(), 10);
  ASSERT_TRUE(image.Describes(10));
  // A mapping of its own between two reads: the new read describes nothing yet.
  const size_t len = 3 * 4096;
  void* region = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(region, MAP_FAILED);
  ReadNow(image);
  EXPECT_FALSE(image.Describes(10));
  // Then read-only in the middle (the protection alone changes, as a write barrier's would).
  char* middle = static_cast<char*>(region) + 4096;
  ASSERT_EQ(mprotect(middle, 4096, PROT_READ), 0);
  image.ObserveSequence(MonotonicNs(), 12);
  ReadNow(image);
  image.ObserveSequence(MonotonicNs(), 12);
  EXPECT_TRUE(image.Describes(12));
  EXPECT_FALSE(image.Info(reinterpret_cast<uint64_t>(middle)).writable);
  ASSERT_EQ(mprotect(middle, 4096, PROT_READ | PROT_WRITE), 0);
  ReadNow(image);
  EXPECT_FALSE(image.Describes(12));
  EXPECT_TRUE(image.Info(reinterpret_cast<uint64_t>(middle)).writable);
  munmap(region, len);
}

}  // namespace
}  // namespace pathprof::collectors
