#include "pathprof/core/status.h"

#include <gtest/gtest.h>

#include "pathprof/core/branch.h"
#include "pathprof/core/varint.h"

namespace pathprof {
namespace {

Result<int> Half(int x) {
  if (x % 2) return Error(ErrorCode::kInvalidArgument, "odd input " + std::to_string(x));
  return x / 2;
}

TEST(Status, ResultCarriesValueOrError) {
  EXPECT_EQ(*Half(8), 4);
  auto r = Half(3);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(r.status().ToString(), "invalid argument: odd input 3");
}

TEST(BranchKind, NamesRoundTrip) {
  for (int i = 0; i < kBranchKindCount; ++i) {
    BranchKind k = static_cast<BranchKind>(i), back;
    ASSERT_TRUE(ParseBranchKind(BranchKindName(k), &back));
    EXPECT_EQ(back, k);
  }
  BranchKind k;
  EXPECT_FALSE(ParseBranchKind("jump", &k));
}

TEST(Varint, ZigZagAndBounds) {
  for (int64_t v : std::initializer_list<int64_t>{0, 1, -1, 63, -64, INT64_MAX, INT64_MIN}) {
    EXPECT_EQ(UnZigZag(ZigZag(v)), v);
  }
  EXPECT_EQ(ZigZag(-1), 1u);
  EXPECT_EQ(ZigZag(1), 2u);
  std::vector<uint8_t> buf;
  PutVarint(buf, UINT64_MAX);
  EXPECT_EQ(buf.size(), 10u);
  size_t pos = 0;
  uint64_t out;
  ASSERT_TRUE(GetVarint(buf.data(), buf.size(), &pos, &out));
  EXPECT_EQ(out, UINT64_MAX);
  pos = 0;
  EXPECT_FALSE(GetVarint(buf.data(), 5, &pos, &out));  // runs off the end
  buf.back() = 0x7f;                                   // bits beyond 64
  pos = 0;
  EXPECT_FALSE(GetVarint(buf.data(), buf.size(), &pos, &out));
}

}  // namespace
}  // namespace pathprof
