#include "pathprof/decoders/cfi_unwinder.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "common/stack_capture.h"
#include "pathprof/core/procfs.h"
#include "pathprof/decoders/address_space.h"
#include "pathprof/decoders/image_store.h"
#include "pathprof/decoders/symbolizer.h"

namespace pathprof::decoders {
namespace {

using Captured = pathprof::testing::CapturedStack;
using pathprof::testing::CaptureStackHere;

__attribute__((noinline, optimize("omit-frame-pointer"))) void UnwindLevel3(Captured* c) {
  CaptureStackHere(c);
  asm volatile("" ::: "memory");  // not a tail call
}
__attribute__((noinline, optimize("omit-frame-pointer"))) void UnwindLevel2(Captured* c) {
  UnwindLevel3(c);
  asm volatile("" ::: "memory");
}
__attribute__((noinline, optimize("omit-frame-pointer"))) void UnwindLevel1(Captured* c) {
  UnwindLevel2(c);
  asm volatile("" ::: "memory");
}

class CfiUnwinderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    UnwindLevel1(&captured_);
    auto space = ReadProcMaps(getpid());
    ASSERT_TRUE(space.ok());
    space_ = *space;
  }

  UnwindImage ImageAt(uint64_t address) {
    const Mapping* m = space_.Find(address);
    if (m == nullptr || m->IsSpecial()) return {};
    auto image = images_.Get(m->path);
    if (!image.ok()) return {};
    uint64_t vaddr = 0;
    if (!(*image)->FileOffsetToVaddr(address - m->start + m->pgoff, &vaddr)) return {};
    return {*image, address - vaddr};
  }

  std::vector<std::string> Names(const std::vector<uint64_t>& frames) {
    std::vector<std::string> names;
    for (size_t i = 0; i < frames.size(); ++i) {
      const uint64_t a = i == 0 ? frames[i] : frames[i] - 1;
      UnwindImage at = ImageAt(a);
      std::string name = "?";
      if (at.image) {
        auto s = symbolizer_.Symbolize(at.image, a - at.bias);
        if (s.ok()) name = s->function;
      }
      names.push_back(name);
    }
    return names;
  }

  UnwindResult Unwind(const Captured& c, CfiUnwinder& unwinder) {
    return unwinder.Unwind(c.regs, c.stack_start, c.stack,
                           [this](uint64_t a) { return ImageAt(a); });
  }

  Captured captured_;
  AddressSpace space_;
  ImageStore images_;
  Symbolizer symbolizer_;
};

// The index of the first name containing `what`, or -1.
int Find(const std::vector<std::string>& names, const std::string& what) {
  for (size_t i = 0; i < names.size(); ++i)
    if (names[i].find(what) != std::string::npos) return static_cast<int>(i);
  return -1;
}

TEST_F(CfiUnwinderTest, WalksThisProcessFromTheCaptureToMain) {
  CfiUnwinder unwinder;
  UnwindResult r = Unwind(captured_, unwinder);
  auto names = Names(r.frames);
  std::string all;
  for (auto& n : names) all += n + "\n";
  ASSERT_GE(r.frames.size(), 5u) << all;
  EXPECT_NE(names[0].find("CaptureStackHere"), std::string::npos) << all;
  EXPECT_NE(names[1].find("UnwindLevel3"), std::string::npos) << all;
  EXPECT_NE(names[2].find("UnwindLevel2"), std::string::npos) << all;
  EXPECT_NE(names[3].find("UnwindLevel1"), std::string::npos) << all;
  EXPECT_NE(names[4].find("SetUp"), std::string::npos) << all;
  // The 16 KiB copy reaches main when gtest's frames are shallow enough; the chain must at
  // least be monotone and stop for a stated reason.
  if (r.end == UnwindEnd::kOutermost) {
    EXPECT_GE(Find(names, "main"), 5) << all;
  }
  EXPECT_EQ(r.frame_pointer_steps, 0) << "every frame here has CFI";
}

TEST_F(CfiUnwinderTest, NeedsNoFramePointer) {
  // A program built without frame pointers uses rbp as a general register: CFI must not care.
  Captured c = captured_;
  c.regs[kDwarfRbp] = 0x5a5a5a5a5a5a5a5a;
  CfiUnwinder unwinder;
  UnwindResult with = Unwind(captured_, unwinder);
  UnwindResult without = Unwind(c, unwinder);
  ASSERT_GE(without.frames.size(), 5u);
  EXPECT_EQ(std::vector<uint64_t>(without.frames.begin(), without.frames.begin() + 5),
            std::vector<uint64_t>(with.frames.begin(), with.frames.begin() + 5));
}

TEST_F(CfiUnwinderTest, ShortCopyStopsAtItsEndAndSaysSo) {
  Captured c = captured_;
  c.stack.resize(16);  // not even CaptureStackHere's return address slot, in general
  CfiUnwinder unwinder;
  UnwindResult r = Unwind(c, unwinder);
  EXPECT_EQ(r.end, UnwindEnd::kStackCopyEnd);
  EXPECT_LE(r.frames.size(), 2u);
  EXPECT_EQ(r.frames[0], captured_.regs[kDwarfRip]);
}

TEST_F(CfiUnwinderTest, AddressWithoutImageFollowsFramePointersOrStops) {
  Captured c = captured_;
  c.regs[kDwarfRip] = 0x10;  // no mapping
  c.regs[kDwarfRbp] = 0;     // and no frame chain
  CfiUnwinder unwinder;
  UnwindResult r = Unwind(c, unwinder);
  EXPECT_EQ(r.end, UnwindEnd::kNoImage);
  EXPECT_EQ(r.frames, std::vector<uint64_t>{0x10});
}

TEST_F(CfiUnwinderTest, GarbageRegistersNeverReadOutsideTheCopy) {
  CfiUnwinder unwinder;
  for (uint64_t seed = 1; seed < 200; ++seed) {
    Captured c = captured_;
    for (auto& r : c.regs) r = seed * 0x9e3779b97f4a7c15ull;
    c.regs[kDwarfRip] = captured_.regs[kDwarfRip] + (seed % 64);
    c.regs[kDwarfRsp] = captured_.stack_start + (seed % 128);
    UnwindResult r = Unwind(c, unwinder);
    EXPECT_LE(r.frames.size(), 127u);
  }
}

}  // namespace
}  // namespace pathprof::decoders
