// The daemon checks every number a client sends, whatever the client: a raw gRPC client skips
// pathctl's own checks and sends negative counts, pid 0, or what slips through comparisons (NaN
// rates, an infinite confidence). Each is INVALID_ARGUMENT with the field and its range, and an
// ErrorInfo naming the field; no session starts. The API's conventions (AIP) are checked here
// too: resource names, paging, ErrorInfo details.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "daemon_harness.h"
#include "pathprof/api/grpc_status.h"
#include "pathprof/v1/profiler.grpc.pb.h"

namespace pathprof::daemon::testing {
namespace {

class DaemonValidation : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(daemon_.Ready()) << daemon_.Log();
    stub_ = v1::PathProfiler::NewStub(
        grpc::CreateChannel("unix:" + daemon_.socket(), grpc::InsecureChannelCredentials()));
  }
  grpc::Status Start(const v1::StartSessionRequest& req) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    v1::Session session;
    return stub_->StartSession(&ctx, req, &session);
  }
  v1::StartSessionRequest OnLoop() {
    v1::StartSessionRequest req;
    req.set_pid(loop_.pid());
    return req;
  }
  int Sessions() {
    grpc::ClientContext ctx;
    v1::ListSessionsResponse resp;
    EXPECT_TRUE(stub_->ListSessions(&ctx, v1::ListSessionsRequest{}, &resp).ok());
    return resp.sessions_size();
  }
  grpc::Status Paths(const std::string& session) {
    grpc::ClientContext ctx;
    v1::GetHotPathsRequest req;
    req.set_session(session);
    v1::HotPaths out;
    return stub_->GetHotPaths(&ctx, req, &out);
  }
  Daemon daemon_;
  HotLoop loop_;
  std::unique_ptr<v1::PathProfiler::Stub> stub_;
};

void ExpectInvalid(const grpc::Status& s, const std::string& message) {
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << s.error_message();
  EXPECT_NE(s.error_message().find(message), std::string::npos) << s.error_message();
}

TEST_F(DaemonValidation, NumbersOutOfRangeAreRefusedByTheDaemonItself) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  v1::StartSessionRequest req;
  req.set_pid(-1);  // kill(2) would read it as every process the caller may signal
  ExpectInvalid(Start(req), "pid must be in [1, 2147483647], got -1");
  req.set_pid(std::numeric_limits<int32_t>::min());
  ExpectInvalid(Start(req), "pid must be in [1, 2147483647], got -2147483648");
  req.set_pid(0);
  ExpectInvalid(Start(req), "pid must be in [1, 2147483647], got 0");

  req = OnLoop();
  req.mutable_sampling()->set_bursts_per_second(nan);
  ExpectInvalid(Start(req), "sampling.bursts_per_second must be in [0, 10000]");
  req = OnLoop();
  req.mutable_sampling()->set_bursts_per_second(inf);
  ExpectInvalid(Start(req), "sampling.bursts_per_second must be in [0, 10000]");
  req = OnLoop();
  req.mutable_sampling()->set_max_stopped_fraction(nan);
  ExpectInvalid(Start(req), "sampling.max_stopped_fraction must be in [0, 0.5]");
  req = OnLoop();
  req.mutable_osp()->set_confidence(inf);
  ExpectInvalid(Start(req), "osp.confidence must be in (0, 1)");
  req = OnLoop();
  req.mutable_osp()->set_confidence(nan);
  ExpectInvalid(Start(req), "osp.confidence must be in (0, 1)");
  // Counts are signed on the wire: each negative one is named.
  req = OnLoop();
  req.mutable_engine()->set_hpt_entries(-1);
  ExpectInvalid(Start(req), "engine.hpt_entries -1 is negative");
  req = OnLoop();
  req.mutable_osp()->set_memory_entries(-5);
  ExpectInvalid(Start(req), "osp.memory_entries -5 is negative");
  req = OnLoop();
  req.mutable_sampling()->set_window_branches(-32);
  ExpectInvalid(Start(req), "sampling.window_branches -32 is negative");
  req = OnLoop();
  req.mutable_duration()->set_seconds(-3);
  ExpectInvalid(Start(req), "duration is negative");
  EXPECT_EQ(Sessions(), 0);
  EXPECT_TRUE(daemon_.Alive());
}

// Every failure carries a google.rpc.ErrorInfo: reason, domain, and the field (and limit) to
// blame, packed under google.rpc's type URL so that any googleapis client decodes it.
TEST_F(DaemonValidation, FailuresCarryErrorInfo) {
  v1::StartSessionRequest req = OnLoop();
  req.mutable_engine()->set_hpt_entries(1 << 24);
  const grpc::Status above = Start(req);
  ASSERT_EQ(above.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  v1::RpcStatus details;
  ASSERT_TRUE(details.ParseFromString(above.error_details()));
  EXPECT_EQ(details.code(), static_cast<int>(grpc::StatusCode::INVALID_ARGUMENT));
  EXPECT_EQ(details.message(), above.error_message());
  ASSERT_EQ(details.details_size(), 1);
  EXPECT_EQ(details.details(0).type_url(), "type.googleapis.com/google.rpc.ErrorInfo");
  auto info = api::ErrorInfoOf(above);
  ASSERT_TRUE(info.has_value());
  EXPECT_EQ(info->reason(), "ABOVE_LIMIT");
  EXPECT_EQ(info->domain(), "pathprof.dev");
  EXPECT_EQ(info->metadata().at("field"), "engine.hpt_entries");
  EXPECT_EQ(info->metadata().at("limit"), "limits.max_hpt_entries");

  // A session that does not exist, and one named without its collection.
  const grpc::Status gone = Paths("sessions/no-such");
  EXPECT_EQ(gone.error_code(), grpc::StatusCode::NOT_FOUND) << gone.error_message();
  info = api::ErrorInfoOf(gone);
  ASSERT_TRUE(info.has_value());
  EXPECT_EQ(info->reason(), "SESSION_NOT_FOUND");
  EXPECT_EQ(info->metadata().at("field"), "session");
  const grpc::Status bare = Paths("no-such");
  ExpectInvalid(bare, "session 'no-such' is not a session name: expected sessions/no-such");
  info = api::ErrorInfoOf(bare);
  ASSERT_TRUE(info.has_value());
  EXPECT_EQ(info->reason(), "SESSION_NAME_INVALID");
  EXPECT_EQ(info->metadata().at("field"), "session");
}

// ListSessions and ListTargets page (AIP-158): a page_size of 1 walks every item once, in
// order, and the last page has no token; a token this server never gave is refused.
TEST_F(DaemonValidation, ListsComeInPages) {
  std::vector<std::string> started;
  for (int i = 0; i < 3; ++i) {
    grpc::ClientContext ctx;
    v1::StartSessionRequest req = OnLoop();
    req.set_source(v1::SOURCE_CHOICE_NONE);
    req.mutable_sampling()->set_stack_hz(1);
    v1::Session s;
    ASSERT_TRUE(stub_->StartSession(&ctx, req, &s).ok());
    EXPECT_EQ(s.name().rfind("sessions/", 0), 0u) << s.name();
    started.push_back(s.name());
  }
  std::sort(started.begin(), started.end());
  std::vector<std::string> seen;
  v1::ListSessionsRequest list;
  list.set_page_size(1);
  int pages = 0;
  do {
    grpc::ClientContext ctx;
    v1::ListSessionsResponse page;
    ASSERT_TRUE(stub_->ListSessions(&ctx, list, &page).ok());
    ASSERT_LE(page.sessions_size(), 1);
    for (const auto& s : page.sessions()) seen.push_back(s.name());
    list.set_page_token(page.next_page_token());
    ASSERT_LT(++pages, 10);
  } while (!list.page_token().empty());
  EXPECT_EQ(seen, started);

  list.set_page_token("not-a-token");
  grpc::ClientContext bad_ctx;
  v1::ListSessionsResponse ignored;
  ExpectInvalid(stub_->ListSessions(&bad_ctx, list, &ignored), "page_token 'not-a-token'");

  v1::ListTargetsRequest targets;
  targets.set_page_size(1);
  int32_t last_pid = 0;
  for (int i = 0; i < 2; ++i) {
    grpc::ClientContext ctx;
    v1::ListTargetsResponse page;
    ASSERT_TRUE(stub_->ListTargets(&ctx, targets, &page).ok());
    ASSERT_EQ(page.targets_size(), 1);
    EXPECT_GT(page.targets(0).pid(), last_pid);  // by pid, each page after the last
    last_pid = page.targets(0).pid();
    EXPECT_FALSE(page.next_page_token().empty());  // this host has more than two processes
    targets.set_page_token(page.next_page_token());
  }
  targets.set_page_size(-1);
  grpc::ClientContext neg_ctx;
  v1::ListTargetsResponse none;
  ExpectInvalid(stub_->ListTargets(&neg_ctx, targets, &none), "page_size -1 is negative");
}

}  // namespace
}  // namespace pathprof::daemon::testing
