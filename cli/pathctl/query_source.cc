#include "pathctl/query_source.h"

#include <cstdio>
#include <limits>

#include "pathprof/api/convert.h"
#include "pathprof/api/resource_names.h"
#include "pathprof/pipeline/offline_analysis.h"

namespace pathctl {

namespace pl = pathprof::pipeline;
using pathprof::api::FromProto;
using pathprof::api::ToProto;

namespace {
// The daemon's defaults for a request that leaves a bound at 0 (daemon/config.h:
// limits.default_top_k; the tree's node bound).
constexpr uint32_t kDefaultTopK = 20;
constexpr uint32_t kDefaultTreeNodes = 10000;

// A recording's answer names no session: it is not a session resource.
template <typename Message>
int Answered(Message* out) {
  out->clear_session();
  return kExitOk;
}

uint32_t TopK(int32_t requested) {
  return requested <= 0 ? kDefaultTopK : static_cast<uint32_t>(requested);
}
}  // namespace

std::string QuerySource::Name(const std::string& positional) const {
  return client_ ? pathprof::api::SessionNameFromUser(positional) : positional;
}

bool QuerySource::IsRecording(const std::string& arg) {
  return arg.find('/') != std::string::npos || arg.ends_with(".pbs") || arg.ends_with(".data");
}

QuerySource::QuerySource(Args& args, std::string command) : command_(std::move(command)) {
  const auto& pos = args.positional();
  if (!(pos.size() == 1 && IsRecording(pos[0]))) client_.emplace(args);
}

const pl::Session* QuerySource::Recording(const std::string& path) {
  if (recording_) return recording_.get();
  std::vector<std::string> warnings;
  auto session = pl::SessionFromRecording(path, path, pl::AnalyzeOptions(), &warnings);
  for (const std::string& w : warnings)
    std::fprintf(stderr, "pathctl %s: %s\n", command_.c_str(), w.c_str());
  if (!session.ok()) {
    failed_ = FailLocal(command_, session.status());
    return nullptr;
  }
  recording_ = std::move(*session);
  return recording_.get();
}

int QuerySource::Get(const v1::GetHotPathsRequest& req, v1::HotPaths* out) {
  if (client_) return Ask([&](auto& stub, auto* ctx) { return stub.GetHotPaths(ctx, req, out); });
  const pl::Session* session = Recording(req.session());
  if (session == nullptr) return failed_;
  pl::HotPathsQuery q;
  q.top_k = TopK(req.top_k());
  q.metric = FromProto(req.metric());
  q.with_blocks = req.with_blocks();
  ToProto(session->HotPaths(q), session->id(), out);
  return Answered(out);
}

int QuerySource::Get(const v1::GetHotSubpathsRequest& req, v1::HotSubpaths* out) {
  if (client_)
    return Ask([&](auto& stub, auto* ctx) { return stub.GetHotSubpaths(ctx, req, out); });
  const pl::Session* session = Recording(req.session());
  if (session == nullptr) return failed_;
  pl::HotSubpathsQuery q;
  q.top_k = TopK(req.top_k());
  q.threshold = req.threshold();
  // The daemon bounds an iceberg answer by its max_top_k; here nothing is shared to protect.
  ToProto(session->HotSubpaths(q), session->id(), std::numeric_limits<size_t>::max(), out);
  return Answered(out);
}

int QuerySource::Get(const v1::GetCallingContextTreeRequest& req, v1::CallingContextTree* out) {
  if (client_)
    return Ask([&](auto& stub, auto* ctx) { return stub.GetCallingContextTree(ctx, req, out); });
  const pl::Session* session = Recording(req.session());
  if (session == nullptr) return failed_;
  pl::CctQuery q;
  if (req.max_depth()) q.max_depth = req.max_depth();
  q.min_weight = req.min_weight();
  q.root_function = req.root_function();
  q.max_nodes = req.max_nodes() ? req.max_nodes() : kDefaultTreeNodes;
  ToProto(session->Cct(q), session->id(), out);
  return Answered(out);
}

int QuerySource::Get(const v1::GetHotCallPairsRequest& req, v1::HotCallPairs* out) {
  if (client_)
    return Ask([&](auto& stub, auto* ctx) { return stub.GetHotCallPairs(ctx, req, out); });
  const pl::Session* session = Recording(req.session());
  if (session == nullptr) return failed_;
  ToProto(session->HotCallPairs(TopK(req.top_k())), session->id(), out);
  return Answered(out);
}

int QuerySource::Get(const v1::GetHotMethodsRequest& req, v1::HotMethods* out) {
  if (client_) return Ask([&](auto& stub, auto* ctx) { return stub.GetHotMethods(ctx, req, out); });
  const pl::Session* session = Recording(req.session());
  if (session == nullptr) return failed_;
  ToProto(session->HotMethods(TopK(req.top_k())), session->id(), out);
  return Answered(out);
}

}  // namespace pathctl
