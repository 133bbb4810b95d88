// v1 query requests -> pipeline queries, with the request checks (negative counts, values
// above the server's bounds, shares outside [0, 1]) and the defaults for what a request leaves
// at 0. The daemon passes its configured limits; pathctl's embedded commands pass the same
// defaults with no upper bounds (nothing is shared to protect), so that a query of a recording
// and the same query of a daemon session ask the pipeline the same thing.
#pragma once

#include <grpcpp/support/status.h>

#include <cstdint>
#include <limits>

#include "pathprof/pipeline/results.h"
#include "pathprof/v1/profiler.pb.h"

namespace pathprof::api {

// Each maximum comes with the pathprofd.toml key that sets it, named when it refuses.
struct QueryLimits {
  static constexpr uint32_t kUnbounded = std::numeric_limits<uint32_t>::max();
  uint32_t default_top_k = 20;
  uint32_t max_top_k = kUnbounded;        // limits.max_top_k
  uint32_t max_depth = kUnbounded;        // limits.max_depth
  uint32_t default_tree_nodes = 10000;    // at most max_tree_nodes
  uint32_t max_tree_nodes = kUnbounded;   // limits.max_tree_nodes
  uint32_t max_name_length = kUnbounded;  // limits.max_name_length
};

// Each fills `out` and returns OK, or returns INVALID_ARGUMENT with an ErrorInfo naming the
// field (and the limit it was above).
grpc::Status TopK(int32_t requested, const QueryLimits& limits, uint32_t* out);
grpc::Status ToQuery(const v1::GetHotPathsRequest& req, const QueryLimits& limits,
                     pipeline::HotPathsQuery* out);
grpc::Status ToQuery(const v1::GetHotSubpathsRequest& req, const QueryLimits& limits,
                     pipeline::HotSubpathsQuery* out);
grpc::Status ToQuery(const v1::GetCallingContextTreeRequest& req, const QueryLimits& limits,
                     pipeline::CctQuery* out);

// The checks themselves, for requests that are not queries (StartSession's settings).
grpc::Status AboveLimit(const char* field, uint64_t value, uint64_t max, const char* key);
grpc::Status NonNegative(const char* field, int64_t value);
// Negative, or above `max` (set by limits.`key`), is refused.
grpc::Status Bounded(const char* field, int64_t value, uint64_t max, const char* key);

}  // namespace pathprof::api
