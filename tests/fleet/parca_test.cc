#include "pathprof/fleet/parca.h"

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <mutex>

#include "parca/profilestore/v1alpha1/profilestore.grpc.pb.h"
#include "push_test_support.h"
#include "test_profiles.h"

namespace pathprof::fleet {
namespace {

namespace pb = parca::profilestore::v1alpha1;
using testing::Bytes;
using testing::PushOne;

// Proves the field numbers and wire types: the encoding below is computed by hand from the
// protobuf wire format (tag = field << 3 | wire type; 2 = length-delimited, 0 = varint).
TEST(ParcaWireTest, TinyRequestEncodesToHandComputedBytes) {
  pb::WriteRawRequest request;
  request.set_normalized(true);
  pb::RawProfileSeries* series = request.add_series();
  pb::Label* label = series->mutable_labels()->add_labels();
  label->set_name("a");
  label->set_value("b");
  series->add_samples()->set_raw_profile("xy");
  EXPECT_EQ(request.SerializeAsString(),
            Bytes({0x12, 0x10,                        // series (2), 16 bytes
                   0x0a, 0x08,                        //   labels (1): LabelSet, 8 bytes
                   0x0a, 0x06,                        //     labels (1): Label, 6 bytes
                   0x0a, 0x01, 'a', 0x12, 0x01, 'b',  //       name (1) "a", value (2) "b"
                   0x12, 0x04,                        //   samples (2): RawSample, 4 bytes
                   0x0a, 0x02, 'x', 'y',              //     raw_profile (1) "xy"
                   0x18, 0x01}));                     // normalized (3) = true
}

TEST(ParcaWireTest, BuiltRequestAddsNameLabelAndSortsLabels) {
  ParcaOptions o;
  o.profile_name = "p";
  ProfileWindow w;
  w.pprof = "xy";
  w.labels = {{"host", "a"}};
  EXPECT_EQ(
      BuildParcaRequest(o, w).SerializeAsString(),
      Bytes({0x12, 0x22,  // series, 34 bytes
             0x0a, 0x1a,  //   LabelSet, 26 bytes
             0x0a, 0x0d,  //     Label, 13 bytes: __name__ = p
             0x0a, 0x08, '_',  '_',  'n',  'a',  'm',  'e',
             '_',  '_',  0x12, 0x01, 'p',  0x0a, 0x09,  //     Label, 9 bytes: host = a
             0x0a, 0x04, 'h',  'o',  's',  't',  0x12, 0x01,
             'a',  0x12, 0x04, 0x0a, 0x02, 'x',  'y'}));  // one sample; normalized=false omitted
}

// The profile store side: records each request and its authorization metadata, answers from a
// script of status codes (then OK).
class FakeProfileStore final : public pb::ProfileStoreService::Service,
                               public testing::ScriptedBackend<pb::WriteRawRequest> {
 public:
  using ScriptedBackend::ScriptedBackend;
  grpc::Status WriteRaw(grpc::ServerContext* context, const pb::WriteRawRequest* request,
                        pb::WriteRawResponse*) override {
    const grpc::StatusCode code = Record(*context, *request);
    return code == grpc::StatusCode::OK ? grpc::Status::OK : grpc::Status(code, "scripted");
  }
};

using RunningServer = testing::RunningFake<FakeProfileStore>;

ProfileWindow Window(std::string pprof) {
  ProfileWindow w;
  w.pprof = std::move(pprof);
  w.start_unix_nanos = 1'700'000'000'000'000'000;
  w.end_unix_nanos = w.start_unix_nanos + 60'000'000'000;
  w.labels = ToLabels({.host = "web-1",
                       .unit = "nginx.service",
                       .cgroup = "/system.slice/x",
                       .executable = "/usr/sbin/nginx",
                       .build_id = "ab12",
                       .extra = {}});
  return w;
}

TEST(ParcaSinkTest, RetriesUnavailableThenStoresExactBytesAndLabels) {
  RunningServer server({grpc::StatusCode::UNAVAILABLE});
  ASSERT_NE(server.port, 0);
  const std::string pprof = testing::MakePprof("hot_loop");
  ASSERT_FALSE(pprof.empty());
  ParcaOptions o;
  o.target = server.Target();
  o.bearer_token = "tok";
  o.profile_name = "pathprof_cpu";
  auto sink = ParcaSink::Create(o);
  ASSERT_TRUE(sink.ok()) << sink.status().ToString();
  const PushStats stats = PushOne(std::move(sink).value(), Window(pprof), 3);
  EXPECT_EQ(stats.sent, 1u);
  EXPECT_EQ(stats.attempts, 2u);
  EXPECT_EQ(stats.retries, 1u);
  const auto requests = server.service.requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(server.service.authorization(), (std::vector<std::string>{"Bearer tok", "Bearer tok"}));
  const pb::WriteRawRequest& r = requests[1];
  EXPECT_FALSE(r.normalized());
  EXPECT_EQ(r.tenant(), "");
  ASSERT_EQ(r.series_size(), 1);
  std::vector<std::pair<std::string, std::string>> labels;
  for (const pb::Label& l : r.series(0).labels().labels()) labels.emplace_back(l.name(), l.value());
  EXPECT_EQ(labels,
            (std::vector<std::pair<std::string, std::string>>{{"__name__", "pathprof_cpu"},
                                                              {"build_id", "ab12"},
                                                              {"cgroup", "/system.slice/x"},
                                                              {"executable", "/usr/sbin/nginx"},
                                                              {"host", "web-1"},
                                                              {"unit", "nginx.service"}}));
  ASSERT_EQ(r.series(0).samples_size(), 1);
  EXPECT_TRUE(r.series(0).samples(0).raw_profile() == pprof);
}

TEST(ParcaSinkTest, InvalidArgumentIsARejection) {
  RunningServer server({grpc::StatusCode::INVALID_ARGUMENT});
  ParcaOptions o;
  o.target = server.Target();
  auto sink = ParcaSink::Create(o);
  ASSERT_TRUE(sink.ok());
  const PushStats stats = PushOne(std::move(sink).value(), Window("p"), 5);
  EXPECT_EQ(stats.attempts, 1u);
  EXPECT_EQ(stats.dropped_rejected, 1u);
  EXPECT_EQ(server.service.authorization(), (std::vector<std::string>{"<absent>"}));
  EXPECT_NE(stats.last_error.find("scripted"), std::string::npos) << stats.last_error;
}

TEST(ParcaSinkTest, MissingTlsFilesAreReportedAtCreate) {
  ParcaOptions o;
  o.use_tls = true;
  o.tls.ca_file = "/nonexistent/ca.pem";
  EXPECT_EQ(ParcaSink::Create(o).status().code(), ErrorCode::kNotFound);
  o.target.clear();
  EXPECT_EQ(ParcaSink::Create(o).status().code(), ErrorCode::kInvalidArgument);
}

}  // namespace
}  // namespace pathprof::fleet
