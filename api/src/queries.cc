#include "pathprof/api/queries.h"

#include <algorithm>
#include <string>

#include "pathprof/api/convert.h"
#include "pathprof/api/grpc_status.h"

namespace pathprof::api {
namespace {

// Negated so that NaN, which compares false with everything, is refused.
grpc::Status Share(const char* field, double value) {
  if (value >= 0 && value <= 1) return grpc::Status::OK;
  return InvalidArgument(std::string(field) + " must be a share in [0, 1]", field);
}

}  // namespace

grpc::Status AboveLimit(const char* field, uint64_t value, uint64_t max, const char* key) {
  return MakeError(
      grpc::StatusCode::INVALID_ARGUMENT,
      std::string(field) + " " + std::to_string(value) + " is above the server maximum " +
          std::to_string(max) + " (limits." + key + ")",
      {.reason = v1::ABOVE_LIMIT, .field = field, .limit = std::string("limits.") + key});
}

grpc::Status NonNegative(const char* field, int64_t value) {
  if (value >= 0) return grpc::Status::OK;
  return InvalidArgument(std::string(field) + " " + std::to_string(value) + " is negative", field);
}

grpc::Status Bounded(const char* field, int64_t value, uint64_t max, const char* key) {
  if (grpc::Status s = NonNegative(field, value); !s.ok()) return s;
  if (static_cast<uint64_t>(value) > max) return AboveLimit(field, value, max, key);
  return grpc::Status::OK;
}

grpc::Status TopK(int32_t requested, const QueryLimits& limits, uint32_t* out) {
  if (grpc::Status s = Bounded("top_k", requested, limits.max_top_k, "max_top_k"); !s.ok())
    return s;
  *out = requested == 0 ? limits.default_top_k : static_cast<uint32_t>(requested);
  return grpc::Status::OK;
}

grpc::Status ToQuery(const v1::GetHotPathsRequest& req, const QueryLimits& limits,
                     pipeline::HotPathsQuery* out) {
  if (grpc::Status s = TopK(req.top_k(), limits, &out->top_k); !s.ok()) return s;
  out->metric = FromProto(req.metric());
  out->with_blocks = req.with_blocks();
  if (grpc::Status s =
          Bounded("contexts_per_path", req.contexts_per_path(), limits.max_top_k, "max_top_k");
      !s.ok())
    return s;
  out->contexts_per_path = static_cast<uint32_t>(req.contexts_per_path());
  if (req.has_context()) {
    const v1::ContextSelector& c = req.context();
    if (grpc::Status s = NonNegative("context.pid", c.pid()); !s.ok()) return s;
    if (grpc::Status s = NonNegative("context.node", c.node()); !s.ok()) return s;
    if (c.node() == 0 && c.functions().empty())
      return InvalidArgument(
          "context names no node and no functions: set context.node (a CctNode.context_id from "
          "GetCallingContextTree) or context.functions (root side first)",
          "context");
    if (c.node() != 0 && !c.functions().empty())
      return InvalidArgument("context has both a node and functions: set one", "context");
    if (grpc::Status s =
            Bounded("context.functions size", c.functions_size(), limits.max_depth, "max_depth");
        !s.ok())
      return s;
    pipeline::ContextSelector sel;
    sel.pid = static_cast<uint32_t>(c.pid());
    sel.node = static_cast<uint64_t>(c.node());
    for (const std::string& f : c.functions()) {
      if (grpc::Status s = Bounded("context.functions length", static_cast<int64_t>(f.size()),
                                   limits.max_name_length, "max_name_length");
          !s.ok())
        return s;
      sel.functions.push_back(f);
    }
    out->context = std::move(sel);
  }
  return grpc::Status::OK;
}

grpc::Status ToQuery(const v1::GetHotSubpathsRequest& req, const QueryLimits& limits,
                     pipeline::HotSubpathsQuery* out) {
  if (grpc::Status s = TopK(req.top_k(), limits, &out->top_k); !s.ok()) return s;
  if (grpc::Status s = Share("threshold", req.threshold()); !s.ok()) return s;
  out->threshold = req.threshold();
  return grpc::Status::OK;
}

grpc::Status ToQuery(const v1::GetCallingContextTreeRequest& req, const QueryLimits& limits,
                     pipeline::CctQuery* out) {
  for (grpc::Status s : {
           Bounded("max_depth", req.max_depth(), limits.max_depth, "max_depth"),
           Share("min_weight", req.min_weight()),
           Bounded("root_function length", static_cast<int64_t>(req.root_function().size()),
                   limits.max_name_length, "max_name_length"),
           Bounded("max_nodes", req.max_nodes(), limits.max_tree_nodes, "max_tree_nodes"),
       })
    if (!s.ok()) return s;
  if (req.max_depth()) out->max_depth = static_cast<uint32_t>(req.max_depth());
  out->min_weight = req.min_weight();
  out->root_function = req.root_function();
  out->max_nodes = req.max_nodes() ? static_cast<uint32_t>(req.max_nodes())
                                   : std::min(limits.default_tree_nodes, limits.max_tree_nodes);
  return grpc::Status::OK;
}

}  // namespace pathprof::api
