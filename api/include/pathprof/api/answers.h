// Every query of a session answered as a v1 message: the request checked and given its
// defaults (queries.h), the pipeline asked, kernel frames hidden where the caller may not see
// them, the result converted (convert.h). The daemon's handlers call these once they have
// authenticated the caller and found the session; pathctl calls them for a recording it read
// itself. One implementation, so the same query of the same session is one document either way.
#pragma once

#include <grpcpp/support/status.h>

#include <string>

#include "pathprof/api/queries.h"
#include "pathprof/pipeline/session.h"
#include "pathprof/v1/profiler.pb.h"

namespace pathprof::api {

// Who asks, and under which bounds.
struct AnswerScope {
  QueryLimits limits;        // the server's bounds; pathctl's own recording has none
  bool hide_kernel = false;  // the caller may not see kernel addresses (Authorizer)
  std::string session_id;    // names the answers; empty for a session that is no resource
};

// Each fills `out` and returns OK, or returns INVALID_ARGUMENT naming the field it refused.
grpc::Status Answer(const pipeline::Session& session, const v1::GetHotPathsRequest& req,
                    const AnswerScope& scope, v1::HotPaths* out);
grpc::Status Answer(const pipeline::Session& session, const v1::GetHotSubpathsRequest& req,
                    const AnswerScope& scope, v1::HotSubpaths* out);
grpc::Status Answer(const pipeline::Session& session, const v1::GetCallingContextTreeRequest& req,
                    const AnswerScope& scope, v1::CallingContextTree* out);
grpc::Status Answer(const pipeline::Session& session, const v1::GetHotCallPairsRequest& req,
                    const AnswerScope& scope, v1::HotCallPairs* out);
grpc::Status Answer(const pipeline::Session& session, const v1::GetHotMethodsRequest& req,
                    const AnswerScope& scope, v1::HotMethods* out);

}  // namespace pathprof::api
