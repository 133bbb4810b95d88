#include "pathctl/query_source.h"

#include <cstdio>
#include <limits>

#include "pathprof/api/convert.h"
#include "pathprof/api/queries.h"
#include "pathprof/api/resource_names.h"
#include "pathprof/pipeline/offline_analysis.h"

namespace pathctl {

namespace pl = pathprof::pipeline;
using pathprof::api::ToProto;

namespace {
// A recording's answers name no session (an empty id): it is not a session resource.
constexpr char kNoSession[] = "";

// The daemon's defaults, without its upper bounds: a recording read here is nobody else's.
const pathprof::api::QueryLimits kHere;
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

int QuerySource::Refused(const grpc::Status& s) const {
  std::fprintf(stderr, "pathctl %s: invalid request: %s\n", command_.c_str(),
               s.error_message().c_str());
  return ExitCodeFor(s.error_code());
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
  if (grpc::Status s = pathprof::api::ToQuery(req, kHere, &q); !s.ok()) return Refused(s);
  ToProto(session->HotPaths(q), kNoSession, out);
  return kExitOk;
}

int QuerySource::Get(const v1::GetHotSubpathsRequest& req, v1::HotSubpaths* out) {
  if (client_)
    return Ask([&](auto& stub, auto* ctx) { return stub.GetHotSubpaths(ctx, req, out); });
  const pl::Session* session = Recording(req.session());
  if (session == nullptr) return failed_;
  pl::HotSubpathsQuery q;
  if (grpc::Status s = pathprof::api::ToQuery(req, kHere, &q); !s.ok()) return Refused(s);
  // The daemon bounds an iceberg answer by its max_top_k; here nothing is shared to protect.
  ToProto(session->HotSubpaths(q), kNoSession, std::numeric_limits<size_t>::max(), out);
  return kExitOk;
}

int QuerySource::Get(const v1::GetCallingContextTreeRequest& req, v1::CallingContextTree* out) {
  if (client_)
    return Ask([&](auto& stub, auto* ctx) { return stub.GetCallingContextTree(ctx, req, out); });
  const pl::Session* session = Recording(req.session());
  if (session == nullptr) return failed_;
  pl::CctQuery q;
  if (grpc::Status s = pathprof::api::ToQuery(req, kHere, &q); !s.ok()) return Refused(s);
  ToProto(session->Cct(q), kNoSession, out);
  return kExitOk;
}

int QuerySource::Get(const v1::GetHotCallPairsRequest& req, v1::HotCallPairs* out) {
  if (client_)
    return Ask([&](auto& stub, auto* ctx) { return stub.GetHotCallPairs(ctx, req, out); });
  const pl::Session* session = Recording(req.session());
  if (session == nullptr) return failed_;
  uint32_t k;
  if (grpc::Status s = pathprof::api::TopK(req.top_k(), kHere, &k); !s.ok()) return Refused(s);
  ToProto(session->HotCallPairs(k), kNoSession, out);
  return kExitOk;
}

int QuerySource::Get(const v1::GetHotMethodsRequest& req, v1::HotMethods* out) {
  if (client_) return Ask([&](auto& stub, auto* ctx) { return stub.GetHotMethods(ctx, req, out); });
  const pl::Session* session = Recording(req.session());
  if (session == nullptr) return failed_;
  uint32_t k;
  if (grpc::Status s = pathprof::api::TopK(req.top_k(), kHere, &k); !s.ok()) return Refused(s);
  ToProto(session->HotMethods(k), kNoSession, out);
  return kExitOk;
}

}  // namespace pathctl
