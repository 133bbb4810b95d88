#include "pathprof/daemon/connection_activity.h"

#include <grpcpp/server_context.h>

#include <cstdlib>
#include <string>

namespace pathprof::daemon {
namespace {

using grpc::experimental::InterceptorBatchMethods;
using grpc::experimental::ServerRpcInfo;

// Lives as long as its call: counted in at the call's first interception point, out when the
// call ends and gRPC destroys its interceptors.
class ActivityInterceptor final : public grpc::experimental::Interceptor {
 public:
  ActivityInterceptor(PeerRegistry* peers, ServerRpcInfo* info) : peers_(peers), info_(info) {}
  ~ActivityInterceptor() override {
    if (fd_ >= 0) peers_->CallEnded(fd_);
  }
  void Intercept(InterceptorBatchMethods* methods) override {
    if (!seen_) {
      seen_ = true;
      // "fd:N" for a connection the Unix listener handed over; TCP peers are not counted.
      const std::string peer = info_->server_context()->peer();
      if (peer.rfind("fd:", 0) == 0) {
        char* end = nullptr;
        const long fd = std::strtol(peer.c_str() + 3, &end, 10);
        if (end != nullptr && *end == '\0' && fd >= 0) {
          fd_ = static_cast<int>(fd);
          peers_->CallStarted(fd_);
        }
      }
    }
    methods->Proceed();
  }

 private:
  PeerRegistry* peers_;
  ServerRpcInfo* info_;
  bool seen_ = false;
  int fd_ = -1;
};

class ActivityFactory final : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  explicit ActivityFactory(PeerRegistry* peers) : peers_(peers) {}
  grpc::experimental::Interceptor* CreateServerInterceptor(ServerRpcInfo* info) override {
    return new ActivityInterceptor(peers_, info);
  }

 private:
  PeerRegistry* peers_;
};

}  // namespace

std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface> ConnectionActivity(
    PeerRegistry* peers) {
  return std::make_unique<ActivityFactory>(peers);
}

}  // namespace pathprof::daemon
