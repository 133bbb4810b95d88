// Client over the generated PathProfiler stub.
#include <grpcpp/grpcpp.h>

#include <chrono>
#include <mutex>

#include "pathprof/v1/profiler.grpc.pb.h"
#include "pathtop/client.h"

namespace pathtop {
namespace {

ErrorCode CodeFor(grpc::StatusCode code) {
  switch (code) {
    case grpc::StatusCode::UNAVAILABLE:
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      return ErrorCode::kUnavailable;
    case grpc::StatusCode::NOT_FOUND:
      return ErrorCode::kNotFound;
    case grpc::StatusCode::PERMISSION_DENIED:
    case grpc::StatusCode::UNAUTHENTICATED:
      return ErrorCode::kPermission;
    case grpc::StatusCode::INVALID_ARGUMENT:
    case grpc::StatusCode::OUT_OF_RANGE:
    case grpc::StatusCode::FAILED_PRECONDITION:
      return ErrorCode::kInvalidArgument;
    case grpc::StatusCode::UNIMPLEMENTED:
      return ErrorCode::kUnsupported;
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
      return ErrorCode::kResourceExhausted;
    case grpc::StatusCode::CANCELLED:
      return ErrorCode::kIo;
    default:
      return ErrorCode::kInternal;
  }
}

std::shared_ptr<grpc::Channel> MakeChannel(const std::string& target) {
  grpc::ChannelArguments args;
  // gRPC's own reconnect backoff grows to two minutes; a restarted daemon should be seen again
  // within a refresh or two, so pathtop caps it (its own retry loop adds the user-visible backoff).
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 250);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 250);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 2000);
  return grpc::CreateCustomChannel(target, grpc::InsecureChannelCredentials(), args);
}

class GrpcClient : public Client {
 public:
  GrpcClient(const std::string& target, int deadline_ms)
      : target_(target),
        deadline_ms_(deadline_ms),
        stub_(v1::PathProfiler::NewStub(MakeChannel(target))) {}

  // Both lists come in pages; pathtop wants them whole, as one response.
  Result<v1::ListTargetsResponse> ListTargets(const v1::ListTargetsRequest& first) override {
    return AllPages<v1::ListTargetsResponse>("ListTargets", first, [&](auto* c, auto& r, auto* o) {
      return stub_->ListTargets(c, r, o);
    });
  }
  Result<v1::ListSessionsResponse> ListSessions() override {
    return AllPages<v1::ListSessionsResponse>(
        "ListSessions", v1::ListSessionsRequest(),
        [&](auto* c, auto& r, auto* o) { return stub_->ListSessions(c, r, o); });
  }
  Result<v1::Session> StartSession(const v1::StartSessionRequest& req) override {
    return Call<v1::Session>("StartSession", [&](grpc::ClientContext* c, auto* out) {
      return stub_->StartSession(c, req, out);
    });
  }
  Result<v1::Session> StopSession(const std::string& session_name) override {
    v1::StopSessionRequest req;
    req.set_name(session_name);
    return Call<v1::Session>("StopSession", [&](grpc::ClientContext* c, auto* out) {
      return stub_->StopSession(c, req, out);
    });
  }
  Result<v1::Session> DeleteSession(const std::string& session_name) override {
    v1::DeleteSessionRequest req;
    req.set_name(session_name);
    auto r = Call<v1::DeleteSessionResponse>(
        "DeleteSession",
        [&](grpc::ClientContext* c, auto* out) { return stub_->DeleteSession(c, req, out); });
    if (!r.ok()) return r.status();
    return r->deleted();
  }
  Result<v1::HotPaths> GetHotPaths(const v1::GetHotPathsRequest& req) override {
    return Call<v1::HotPaths>("GetHotPaths", [&](grpc::ClientContext* c, auto* out) {
      return stub_->GetHotPaths(c, req, out);
    });
  }
  Result<v1::HotSubpaths> GetHotSubpaths(const v1::GetHotSubpathsRequest& req) override {
    return Call<v1::HotSubpaths>("GetHotSubpaths", [&](grpc::ClientContext* c, auto* out) {
      return stub_->GetHotSubpaths(c, req, out);
    });
  }
  Result<v1::CallingContextTree> GetCallingContextTree(
      const v1::GetCallingContextTreeRequest& req) override {
    return Call<v1::CallingContextTree>("GetCallingContextTree",
                                        [&](grpc::ClientContext* c, auto* out) {
                                          return stub_->GetCallingContextTree(c, req, out);
                                        });
  }
  Result<v1::HotCallPairs> GetHotCallPairs(const v1::GetHotCallPairsRequest& req) override {
    return Call<v1::HotCallPairs>("GetHotCallPairs", [&](grpc::ClientContext* c, auto* out) {
      return stub_->GetHotCallPairs(c, req, out);
    });
  }
  Result<v1::HotMethods> GetHotMethods(const v1::GetHotMethodsRequest& req) override {
    return Call<v1::HotMethods>("GetHotMethods", [&](grpc::ClientContext* c, auto* out) {
      return stub_->GetHotMethods(c, req, out);
    });
  }
  Result<v1::Stats> GetStats(const std::string& session_name) override {
    v1::GetStatsRequest req;
    req.set_session(session_name);
    return Call<v1::Stats>("GetStats", [&](grpc::ClientContext* c, auto* out) {
      return stub_->GetStats(c, req, out);
    });
  }

  Status WatchHotPaths(const v1::WatchHotPathsRequest& req,
                       const std::function<void(const v1::HotPaths&)>& on_message) override {
    grpc::ClientContext context;
    {
      std::lock_guard<std::mutex> lock(watch_mu_);
      if (watch_cancelled_) {
        watch_cancelled_ = false;
        return Status(ErrorCode::kIo, "WatchHotPaths: cancelled");
      }
      watch_context_ = &context;
    }
    auto reader = stub_->WatchHotPaths(&context, req);
    v1::HotPaths msg;
    while (reader->Read(&msg)) on_message(msg);
    grpc::Status status = reader->Finish();
    {
      std::lock_guard<std::mutex> lock(watch_mu_);
      watch_context_ = nullptr;
      watch_cancelled_ = false;
    }
    if (status.ok()) return Status(ErrorCode::kIo, "WatchHotPaths: the stream ended");
    return ToStatus("WatchHotPaths", status);
  }

  void CancelWatch() override {
    std::lock_guard<std::mutex> lock(watch_mu_);
    if (watch_context_ != nullptr) {
      watch_context_->TryCancel();
    } else {
      watch_cancelled_ = true;  // a watch about to start returns at once
    }
  }

 private:
  // Every page of a List call (`rpc(context, request, response)`) as one response: MergeFrom
  // appends each page's repeated field; the token is the next request's.
  template <typename Response, typename Request, typename Rpc>
  Result<Response> AllPages(const char* method, Request req, Rpc rpc) {
    Response all;
    do {
      auto page = Call<Response>(
          method, [&](grpc::ClientContext* c, Response* out) { return rpc(c, req, out); });
      if (!page.ok()) return page.status();
      all.MergeFrom(*page);
      req.set_page_token(page->next_page_token());
    } while (!req.page_token().empty());
    all.clear_next_page_token();
    return all;
  }
  Status ToStatus(const char* rpc, const grpc::Status& s) const {
    // The status line already names the daemon's address; keep the message short for 80 columns.
    return Status(CodeFor(s.error_code()), std::string(rpc) + ": " + s.error_message());
  }

  template <typename Resp, typename Fn>
  Result<Resp> Call(const char* rpc, Fn&& fn) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() +
                         std::chrono::milliseconds(deadline_ms_));
    Resp out;
    grpc::Status s = fn(&context, &out);
    if (!s.ok()) return ToStatus(rpc, s);
    return out;
  }

  std::string target_;
  int deadline_ms_;
  std::unique_ptr<v1::PathProfiler::Stub> stub_;
  std::mutex watch_mu_;
  grpc::ClientContext* watch_context_ = nullptr;
  bool watch_cancelled_ = false;
};

}  // namespace

std::unique_ptr<Client> MakeGrpcClient(const std::string& target, int deadline_ms) {
  return std::make_unique<GrpcClient>(target, deadline_ms);
}

bool IsConnectionError(const Status& status) {
  return status.code() == ErrorCode::kUnavailable;
}

}  // namespace pathtop
