#include "pathctl/query_source.h"

#include <cstdio>

#include "pathprof/api/answers.h"
#include "pathprof/api/resource_names.h"
#include "pathprof/pipeline/offline_analysis.h"

namespace pathctl {

namespace pl = pathprof::pipeline;

namespace {
// The daemon's defaults without its upper bounds (a recording read here is nobody else's), no
// kernel frames hidden (the user recorded them), and no session named: a recording is no
// session resource.
const pathprof::api::AnswerScope kHere;
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

template <typename Request, typename Response>
int QuerySource::AnswerHere(const Request& req, Response* out) {
  const pl::Session* session = Recording(req.session());
  if (session == nullptr) return failed_;
  if (grpc::Status s = pathprof::api::Answer(*session, req, kHere, out); !s.ok()) return Refused(s);
  return kExitOk;
}

int QuerySource::Get(const v1::GetHotPathsRequest& req, v1::HotPaths* out) {
  if (client_) return Ask([&](auto& stub, auto* ctx) { return stub.GetHotPaths(ctx, req, out); });
  return AnswerHere(req, out);
}

int QuerySource::Get(const v1::GetHotSubpathsRequest& req, v1::HotSubpaths* out) {
  if (client_)
    return Ask([&](auto& stub, auto* ctx) { return stub.GetHotSubpaths(ctx, req, out); });
  return AnswerHere(req, out);
}

int QuerySource::Get(const v1::GetCallingContextTreeRequest& req, v1::CallingContextTree* out) {
  if (client_)
    return Ask([&](auto& stub, auto* ctx) { return stub.GetCallingContextTree(ctx, req, out); });
  return AnswerHere(req, out);
}

int QuerySource::Get(const v1::GetHotCallPairsRequest& req, v1::HotCallPairs* out) {
  if (client_)
    return Ask([&](auto& stub, auto* ctx) { return stub.GetHotCallPairs(ctx, req, out); });
  return AnswerHere(req, out);
}

int QuerySource::Get(const v1::GetHotMethodsRequest& req, v1::HotMethods* out) {
  if (client_) return Ask([&](auto& stub, auto* ctx) { return stub.GetHotMethods(ctx, req, out); });
  return AnswerHere(req, out);
}

}  // namespace pathctl
