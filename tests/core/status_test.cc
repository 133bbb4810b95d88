#include "pathprof/core/status.h"

#include <gtest/gtest.h>

#include "pathprof/core/branch.h"
#include "varint.h"

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

// Quarter(x) = Half(Half(x)), each step through PATHPROF_ASSIGN_OR_RETURN; `steps` counts the
// lines after each macro that ran, so a macro that carried on after a failure is seen.
Result<int> Quarter(int x, int* steps) {
  PATHPROF_ASSIGN_OR_RETURN(int half, Half(x));
  ++*steps;
  PATHPROF_ASSIGN_OR_RETURN(auto quarter, Half(half));
  ++*steps;
  return quarter;
}

Status CheckQuarter(int x, int* steps) {
  PATHPROF_ASSIGN_OR_RETURN(int q, Quarter(x, steps));
  return q > 0 ? Status::Ok() : Error(ErrorCode::kInvalidArgument, "not positive");
}

TEST(Status, AssignOrReturnTakesTheValueOrReturnsTheFirstFailure) {
  int steps = 0;
  EXPECT_EQ(*Quarter(12, &steps), 3);
  EXPECT_EQ(steps, 2);
  steps = 0;
  auto r = Quarter(6, &steps);  // 6 -> 3 -> odd
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().ToString(), "invalid argument: odd input 3");
  EXPECT_EQ(steps, 1);
  steps = 0;
  Status s = CheckQuarter(5, &steps);
  EXPECT_EQ(s.ToString(), "invalid argument: odd input 5");
  EXPECT_EQ(steps, 0);
  EXPECT_TRUE(CheckQuarter(4, &steps).ok());
}

TEST(Status, AResultMadeFromOkIsAnInternalErrorThatSaysSo) {
  Result<int> r = Status::Ok();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kInternal);
  EXPECT_NE(r.status().message().find("OK status where a value"), std::string::npos)
      << r.status().message();
}

TEST(Status, WithContextKeepsTheCodeAndPutsTheContextFirst) {
  Status s = WithContext(Error(ErrorCode::kNotFound, "no such file x.pbs"), "reading recording");
  EXPECT_EQ(s.code(), ErrorCode::kNotFound);
  EXPECT_EQ(s.ToString(), "not found: reading recording: no such file x.pbs");
  EXPECT_TRUE(WithContext(Status::Ok(), "anything").ok());
  EXPECT_EQ(WithContext(Status::Ok(), "anything").message(), "");
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
