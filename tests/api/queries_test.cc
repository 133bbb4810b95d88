// The request checks and defaults the daemon and pathctl's embedded queries share.
#include "pathprof/api/queries.h"

#include <gtest/gtest.h>

#include "pathprof/api/grpc_status.h"
#include "pathprof/api/resource_names.h"

namespace pathprof::api {
namespace {

TEST(Queries, ZeroTakesTheDefaultAndTheBoundNamesItsKey) {
  QueryLimits limits;
  limits.default_top_k = 7;
  limits.max_top_k = 100;
  uint32_t k = 0;
  ASSERT_TRUE(TopK(0, limits, &k).ok());
  EXPECT_EQ(k, 7u);
  ASSERT_TRUE(TopK(100, limits, &k).ok());
  EXPECT_EQ(k, 100u);
  const grpc::Status above = TopK(101, limits, &k);
  EXPECT_EQ(above.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(above.error_message(), "top_k 101 is above the server maximum 100 (limits.max_top_k)");
  auto info = ErrorInfoOf(above);
  ASSERT_TRUE(info.has_value());
  EXPECT_EQ(info->reason(), "ABOVE_LIMIT");
  EXPECT_EQ(info->metadata().at("limit"), "limits.max_top_k");
  const grpc::Status negative = TopK(-1, limits, &k);
  EXPECT_EQ(negative.error_message(), "top_k -1 is negative");
  EXPECT_EQ(ErrorInfoOf(negative)->metadata().at("field"), "top_k");
}

TEST(Queries, TreeNodesDefaultToTheSmallerOfTenThousandAndTheBound) {
  v1::GetCallingContextTreeRequest req;
  pipeline::CctQuery q;
  ASSERT_TRUE(ToQuery(req, QueryLimits{}, &q).ok());
  EXPECT_EQ(q.max_nodes, 10000u);
  EXPECT_EQ(q.max_depth, pipeline::CctQuery{}.max_depth);  // 0 keeps the pipeline's default
  QueryLimits tight;
  tight.max_tree_nodes = 500;
  ASSERT_TRUE(ToQuery(req, tight, &q).ok());
  EXPECT_EQ(q.max_nodes, 500u);
  req.set_min_weight(std::numeric_limits<double>::quiet_NaN());
  const grpc::Status nan = ToQuery(req, tight, &q);
  EXPECT_EQ(nan.error_message(), "min_weight must be a share in [0, 1]");
  req.set_min_weight(0.5);
  req.set_max_nodes(501);
  EXPECT_EQ(ToQuery(req, tight, &q).error_message(),
            "max_nodes 501 is above the server maximum 500 (limits.max_tree_nodes)");
}

TEST(ResourceNames, OnlyTheFullNameIsASessionName) {
  EXPECT_EQ(SessionName("ab12"), "sessions/ab12");
  auto id = SessionIdFromName("sessions/ab12", "name");
  ASSERT_TRUE(id.ok());
  EXPECT_EQ(*id, "ab12");
  for (const char* bad : {"", "ab12", "sessions/", "sessions/a/b", "session/ab12"})
    EXPECT_FALSE(SessionIdFromName(bad, "name").ok()) << bad;
  EXPECT_EQ(SessionNameFromUser("ab12"), "sessions/ab12");
  EXPECT_EQ(SessionNameFromUser("sessions/ab12"), "sessions/ab12");
  EXPECT_EQ(SessionIdForDisplay("sessions/ab12"), "ab12");
}

TEST(ErrorDetails, EveryCodeGetsAReasonAndPipelineCodesKeepTheirs) {
  const grpc::Status corrupt = ToGrpc(Status(ErrorCode::kCorrupt, "bad magic at offset 0"));
  EXPECT_EQ(corrupt.error_code(), grpc::StatusCode::DATA_LOSS);
  EXPECT_EQ(ErrorInfoOf(corrupt)->reason(), "CORRUPT");
  const grpc::Status plain(grpc::StatusCode::NOT_FOUND, "no process 5");
  EXPECT_FALSE(ErrorInfoOf(plain).has_value());
  EXPECT_EQ(ErrorInfoOf(WithErrorInfo(plain))->reason(), "NOT_FOUND");
  EXPECT_EQ(ErrorInfoOf(WithErrorInfo(plain))->domain(), "pathprof.dev");
  EXPECT_TRUE(WithErrorInfo(grpc::Status::OK).ok());
}

// Every reason comes from the one table (v1::ErrorReason): each pipeline code is passed on under
// a value of it, and a call site's specific reason replaces the code's.
TEST(ErrorDetails, ReasonsAreValuesOfTheOneTable) {
  for (ErrorCode code : {ErrorCode::kInvalidArgument, ErrorCode::kNotFound, ErrorCode::kCorrupt,
                         ErrorCode::kTruncated, ErrorCode::kUnsupported, ErrorCode::kPermission,
                         ErrorCode::kUnavailable, ErrorCode::kResourceExhausted,
                         ErrorCode::kInternal, ErrorCode::kIo}) {
    const v1::ErrorReason r = ReasonOf(code);
    EXPECT_NE(r, v1::ERROR_REASON_UNSPECIFIED) << ErrorCodeName(code);
    v1::ErrorReason parsed;
    ASSERT_TRUE(v1::ErrorReason_Parse(ReasonName(code), &parsed)) << ReasonName(code);
    EXPECT_EQ(parsed, r);
  }
  EXPECT_EQ(ReasonName(ErrorCode::kIo), "IO");
  EXPECT_EQ(ReasonName(ErrorCode::kPermission), "PERMISSION_DENIED");
  const grpc::Status gone =
      ToGrpc(Status(ErrorCode::kNotFound, "no baseline b"), {.reason = v1::BASELINE_NOT_FOUND});
  EXPECT_EQ(gone.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(ErrorInfoOf(gone)->reason(), "BASELINE_NOT_FOUND");
  const grpc::Status quota =
      MakeError(grpc::StatusCode::RESOURCE_EXHAUSTED, "full",
                {.reason = v1::QUOTA_EXCEEDED, .limit = "limits.max_sessions"});
  EXPECT_EQ(ErrorInfoOf(quota)->reason(), "QUOTA_EXCEEDED");
  EXPECT_EQ(ErrorInfoOf(quota)->metadata().at("limit"), "limits.max_sessions");
  // A plain InvalidArgument is a field out of range unless the caller says otherwise.
  EXPECT_EQ(ErrorInfoOf(InvalidArgument("x is negative", "x"))->reason(), "FIELD_OUT_OF_RANGE");
  EXPECT_EQ(ErrorInfoOf(InvalidArgument("x is empty", "x", v1::FIELD_REQUIRED))->reason(),
            "FIELD_REQUIRED");
}

}  // namespace
}  // namespace pathprof::api
