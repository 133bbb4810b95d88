#include "pathprof/profiles/hps_profiles.h"

#include <gtest/gtest.h>

namespace pathprof::profiles {
namespace {

BranchEvent Ev(BranchKind kind, uint64_t from, uint64_t to, bool taken = true) {
  BranchEvent e;
  e.kind = kind;
  e.from = from;
  e.to = to;
  e.taken = taken;
  return e;
}

// A window as a bursty controller would hand it over, with every kind of branch in it.
BranchBatch Window() {
  using K = BranchKind;
  BranchBatch b;
  b.pid = 5;
  b.tid = 5;
  b.window = true;
  b.events = {
      Ev(K::kConditional, 0x10, 0x14, false),
      Ev(K::kDirectCall, 0x100, 0x1000),
      Ev(K::kReturn, 0x1010, 0x105),
      Ev(K::kDirectCall, 0x100, 0x1000),
      Ev(K::kIndirectCall, 0x200, 0x2000),
      Ev(K::kIndirectCall, 0x200, 0x3000),
      Ev(K::kDirectJump, 0x3004, 0x3100),
      Ev(K::kIndirectCall, 0x200, 0x2000),
      Ev(K::kDirectCall, 0x300, 0x1000),
      Ev(K::kDirectCall, 0x100, 0x1000),
      Ev(K::kDirectCall, 0x400, 0x404, /*taken=*/false),  // malformed: counted, not used
      Ev(K::kFarTransfer, 0x1100, 0xffff0000),
  };
  return b;
}

TEST(HotCallPairs, CountsCallSiteTargetPairs) {
  HotCallPairs p;
  p.AddBatch(Window());
  EXPECT_EQ(p.Count({0x100, 0x1000}), 3u);
  EXPECT_EQ(p.Count({0x200, 0x2000}), 2u);
  EXPECT_EQ(p.Count({0x200, 0x3000}), 1u);
  EXPECT_EQ(p.Count({0x300, 0x1000}), 1u);
  EXPECT_EQ(p.Count({0x400, 0x404}), 0u);
  EXPECT_EQ(p.total(), 7u);
  auto top = p.Top(2);
  ASSERT_EQ(top.size(), 2u);
  EXPECT_EQ(top[0].first, (CallPair{0x100, 0x1000}));
  EXPECT_EQ(top[1].first, (CallPair{0x200, 0x2000}));
  auto shares = p.Shares();
  ASSERT_EQ(shares.size(), 4u);
  EXPECT_DOUBLE_EQ(shares[0].second, 3.0 / 7);
  EXPECT_EQ(p.stats().calls, 7u);
  EXPECT_EQ(p.stats().untaken_calls, 1u);
  EXPECT_EQ(p.stats().events, 12u);
  EXPECT_EQ(p.stats().window_batches, 1u);
  // A second window adds up.
  p.AddBatch(Window());
  EXPECT_EQ(p.Count({0x100, 0x1000}), 6u);
  EXPECT_EQ(p.stats().batches, 2u);
}

TEST(HotMethods, CountsFunctionEntriesFromCalls) {
  HotMethods m;
  m.AddBatch(Window());
  EXPECT_EQ(m.Count(0x1000), 4u);  // from three call sites
  EXPECT_EQ(m.Count(0x2000), 2u);
  EXPECT_EQ(m.Count(0x3000), 1u);
  EXPECT_EQ(m.Count(0x3100), 0u);  // a jump target is not a method entry
  auto top = m.Top(3);
  ASSERT_EQ(top.size(), 3u);
  EXPECT_EQ(top[0], (std::pair<uint64_t, uint64_t>{0x1000, 4}));
  EXPECT_EQ(top[1], (std::pair<uint64_t, uint64_t>{0x2000, 2}));
  EXPECT_EQ(top[2], (std::pair<uint64_t, uint64_t>{0x3000, 1}));
  EXPECT_DOUBLE_EQ(m.Shares()[0].second, 4.0 / 7);
}

TEST(HotMethods, LeafOfStackSamplesIsFigure12) {
  HotMethods m;
  StackSample s;
  s.frames = {{0xa, 0x1}, {0xb, 0}};  // leaf a, root b
  s.weight = 3;
  ASSERT_TRUE(m.AddStackSample(s).ok());
  s.frames = {{0xb, 0}};
  s.weight = 1;
  ASSERT_TRUE(m.AddStackSample(s).ok());
  EXPECT_EQ(m.Count(0xa), 3u);
  EXPECT_EQ(m.Count(0xb), 1u);  // only as a leaf: callers get nothing
  s.frames.clear();
  EXPECT_EQ(m.AddStackSample(s).code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(m.stats().rejected_samples, 1u);
  EXPECT_EQ(m.stats().samples, 2u);
}

TEST(HpsSupport, HotDataStreamsNeedDataAddresses) {
  EXPECT_TRUE(HpsSupport(HpsProfileType::kHotCallPair).ok());
  EXPECT_TRUE(HpsSupport(HpsProfileType::kHotMethod).ok());
  Status s = HpsSupport(HpsProfileType::kHotDataStream);
  EXPECT_EQ(s.code(), ErrorCode::kUnsupported);
  EXPECT_NE(s.message().find("data addresses"), std::string::npos);
  EXPECT_NE(s.message().find("LBR"), std::string::npos);
}

}  // namespace
}  // namespace pathprof::profiles
