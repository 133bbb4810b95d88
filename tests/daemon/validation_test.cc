// The daemon checks every number a client sends, whatever the client: a raw gRPC client skips
// pathctl's own checks and sends what once wrapped (a pid above pid_t's range, pid 0) or slipped
// through comparisons (NaN rates, an infinite confidence). Each is INVALID_ARGUMENT with the
// field and its range; no session starts.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "daemon_harness.h"
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
    req.set_pid(static_cast<uint32_t>(loop_.pid()));
    return req;
  }
  int Sessions() {
    grpc::ClientContext ctx;
    v1::ListSessionsResponse resp;
    EXPECT_TRUE(stub_->ListSessions(&ctx, v1::ListSessionsRequest{}, &resp).ok());
    return resp.sessions_size();
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
  req.set_pid(2147483648u);  // 2^31: no pid_t; as an int it would be negative
  ExpectInvalid(Start(req), "pid must be in [1, 2147483647], got 2147483648");
  req.set_pid(4294967295u);
  ExpectInvalid(Start(req), "pid must be in [1, 2147483647], got 4294967295");
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
  EXPECT_EQ(Sessions(), 0);
  EXPECT_TRUE(daemon_.Alive());
}

}  // namespace
}  // namespace pathprof::daemon::testing
