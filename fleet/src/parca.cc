// Parca WriteRaw client over gRPC. Message shapes and field numbers: our restatement of
// parca-dev/parca proto/parca/profilestore/v1alpha1/profilestore.proto (see fleet/proto/).
#include "pathprof/fleet/parca.h"

#include <grpcpp/grpcpp.h>

#include <algorithm>

#include "grpc_channel.h"
#include "parca/profilestore/v1alpha1/profilestore.grpc.pb.h"

namespace pathprof::fleet {

namespace pb = parca::profilestore::v1alpha1;

pb::WriteRawRequest BuildParcaRequest(const ParcaOptions& options, const ProfileWindow& window) {
  LabelSet labels = window.labels;
  labels.push_back({"__name__", options.profile_name});
  std::stable_sort(labels.begin(), labels.end(),
                   [](const Label& a, const Label& b) { return a.name < b.name; });
  pb::WriteRawRequest request;
  request.set_normalized(options.normalized);
  pb::RawProfileSeries* series = request.add_series();
  for (const Label& label : labels) {
    pb::Label* out = series->mutable_labels()->add_labels();
    out->set_name(label.name);
    out->set_value(label.value);
  }
  series->add_samples()->set_raw_profile(window.pprof);
  return request;
}

struct ParcaSink::Impl {
  ParcaOptions options;
  std::unique_ptr<pb::ProfileStoreService::Stub> stub;
};

ParcaSink::ParcaSink(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ParcaSink::~ParcaSink() = default;

Result<std::unique_ptr<ParcaSink>> ParcaSink::Create(ParcaOptions options) {
  if (options.target.empty()) {
    return Error(ErrorCode::kInvalidArgument, "parca target is empty: give host:port");
  }
  PATHPROF_ASSIGN_OR_RETURN(auto credentials,
                            MakeChannelCredentials("parca", options.use_tls, options.tls));
  auto impl = std::make_unique<Impl>();
  impl->stub = pb::ProfileStoreService::NewStub(grpc::CreateChannel(options.target, credentials));
  impl->options = std::move(options);
  return std::unique_ptr<ParcaSink>(new ParcaSink(std::move(impl)));
}

SendOutcome ParcaSink::Send(const ProfileWindow& window) {
  const pb::WriteRawRequest request = BuildParcaRequest(impl_->options, window);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + impl_->options.timeout);
  AddCallMetadata(context, impl_->options.bearer_token, impl_->options.extra_metadata);
  pb::WriteRawResponse response;
  const grpc::Status status = impl_->stub->WriteRaw(&context, request, &response);
  const SendOutcome::Kind kind = ClassifyGrpcStatus(status.error_code());
  if (kind == SendOutcome::Kind::kOk) return SendOutcome::Ok();
  return {kind, "WriteRaw failed: gRPC code " + std::to_string(status.error_code()) + ": " +
                    status.error_message()};
}

std::string ParcaSink::Describe() const {
  return "parca " + impl_->options.target;
}

}  // namespace pathprof::fleet
