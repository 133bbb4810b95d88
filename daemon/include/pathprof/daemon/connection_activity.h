// Which Unix-socket connections are busy, for the idle timeout: a gRPC server interceptor that
// counts each call in the PeerRegistry from the moment the server hands it to a handler (its
// request has arrived) until it ends. A stream that never sends its request never gets there,
// so a connection holding only such streams counts as idle, and UnixListener shuts it down.
#pragma once

#include <grpcpp/support/server_interceptor.h>

#include <memory>

#include "pathprof/daemon/peer.h"

namespace pathprof::daemon {

// For ServerBuilder::experimental().SetInterceptorCreators; `peers` outlives the server.
std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface> ConnectionActivity(
    PeerRegistry* peers);

}  // namespace pathprof::daemon
