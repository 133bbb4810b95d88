#include "pathprof/api/answers.h"

#include "pathprof/api/convert.h"
#include "pathprof/pipeline/kernel_frames.h"

namespace pathprof::api {

grpc::Status Answer(const pipeline::Session& session, const v1::GetHotPathsRequest& req,
                    const AnswerScope& scope, v1::HotPaths* out) {
  pipeline::HotPathsQuery q;
  if (grpc::Status s = ToQuery(req, scope.limits, &q); !s.ok()) return s;
  auto r = session.HotPaths(q);
  if (scope.hide_kernel) pipeline::HideKernelFrames(&r);
  ToProto(r, scope.session_id, out);
  return grpc::Status::OK;
}

grpc::Status Answer(const pipeline::Session& session, const v1::GetHotSubpathsRequest& req,
                    const AnswerScope& scope, v1::HotSubpaths* out) {
  pipeline::HotSubpathsQuery q;
  if (grpc::Status s = ToQuery(req, scope.limits, &q); !s.ok()) return s;
  auto r = session.HotSubpaths(q);
  if (scope.hide_kernel) pipeline::HideKernelFrames(&r);
  // An iceberg query (no top_k, a share threshold) is bounded by max_top_k too: it may not
  // return an unbounded list.
  ToProto(r, scope.session_id, scope.limits.max_top_k, out);
  return grpc::Status::OK;
}

grpc::Status Answer(const pipeline::Session& session, const v1::GetCallingContextTreeRequest& req,
                    const AnswerScope& scope, v1::CallingContextTree* out) {
  pipeline::CctQuery q;
  if (grpc::Status s = ToQuery(req, scope.limits, &q); !s.ok()) return s;
  auto t = session.Cct(q);
  if (scope.hide_kernel) pipeline::HideKernelFrames(&t);
  ToProto(t, scope.session_id, out);
  return grpc::Status::OK;
}

grpc::Status Answer(const pipeline::Session& session, const v1::GetHotCallPairsRequest& req,
                    const AnswerScope& scope, v1::HotCallPairs* out) {
  uint32_t k;
  if (grpc::Status s = TopK(req.top_k(), scope.limits, &k); !s.ok()) return s;
  auto pairs = session.HotCallPairs(k);
  if (scope.hide_kernel) pipeline::HideKernelFrames(&pairs);
  ToProto(pairs, scope.session_id, out);
  return grpc::Status::OK;
}

grpc::Status Answer(const pipeline::Session& session, const v1::GetHotMethodsRequest& req,
                    const AnswerScope& scope, v1::HotMethods* out) {
  uint32_t k;
  if (grpc::Status s = TopK(req.top_k(), scope.limits, &k); !s.ok()) return s;
  auto methods = session.HotMethods(k);
  if (scope.hide_kernel) pipeline::HideKernelFrames(&methods);
  ToProto(methods, scope.session_id, out);
  return grpc::Status::OK;
}

}  // namespace pathprof::api
