// OTLP profiles export: the field numbers against hand-computed bytes, the conversion of a real
// pprof window (decoded again from the bytes we send, totals and stacks checked against the
// pprof's), and the sink against a real gRPC server on loopback.
#include "pathprof/fleet/otlp.h"

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <map>
#include <mutex>
#include <set>

#include "opentelemetry/proto/collector/profiles/v1development/profiles_service.grpc.pb.h"
#include "pathprof/profiles/pprof_export.h"
#include "push_test_support.h"

namespace pathprof::fleet {
namespace {

namespace otlp = opentelemetry::proto::profiles::v1development;
namespace collector = opentelemetry::proto::collector::profiles::v1development;
namespace pp = profiles::pprof;
using testing::Bytes;
using testing::PushOne;

// Proves the field numbers and wire types of the messages a receiver reads first (tag = field
// << 3 | wire type: 0 varint, 1 fixed64, 2 length-delimited; repeated scalars are packed).
TEST(OtlpWireTest, ProfileAndDictionaryEncodeToHandComputedBytes) {
  otlp::Profile profile;
  profile.mutable_sample_type()->set_type_strindex(1);
  profile.mutable_sample_type()->set_unit_strindex(2);
  otlp::Sample* sample = profile.add_samples();
  sample->set_stack_index(1);
  sample->add_attribute_indices(2);
  sample->add_values(5);
  profile.set_time_unix_nano(0x0102030405060708ull);
  profile.set_duration_nano(3);
  profile.set_period(9);
  EXPECT_EQ(profile.SerializeAsString(),
            Bytes({0x0a, 0x04, 0x08, 0x01, 0x10, 0x02,  // sample_type (1): type 1, unit 2
                   0x12, 0x08,                          // samples (2), 8 bytes
                   0x08, 0x01,                          //   stack_index (1) = 1
                   0x12, 0x01, 0x02,                    //   attribute_indices (2) = [2]
                   0x22, 0x01, 0x05,                    //   values (4) = [5]
                   0x19, 0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01,  // time (3), fixed64
                   0x20, 0x03,                                            // duration_nano (4)
                   0x30, 0x09}));                                         // period (6)

  collector::ExportProfilesServiceRequest request;
  otlp::ProfilesDictionary* d = request.mutable_dictionary();
  d->add_string_table("f");
  otlp::Location* l = d->add_location_table();
  l->set_mapping_index(1);
  l->set_address(0x10);
  l->add_lines()->set_function_index(2);
  l->mutable_lines(0)->set_line(3);
  d->add_stack_table()->add_location_indices(1);
  EXPECT_EQ(request.SerializeAsString(),
            Bytes({0x12, 0x14,                       // dictionary (2), 20 bytes
                   0x12, 0x0a,                       //   location_table (2), 10 bytes
                   0x08, 0x01, 0x10, 0x10,           //     mapping_index (1) 1, address (2) 0x10
                   0x1a, 0x04,                       //     lines (3), 4 bytes
                   0x08, 0x02, 0x10, 0x03,           //       function_index (1) 2, line (2) 3
                   0x2a, 0x01, 'f',                  //   string_table (5) "f"
                   0x3a, 0x03, 0x0a, 0x01, 0x01}));  // stack_table (7): location_indices [1]
}

TEST(OtlpExport, ContainerIdsAreFoundInTheCgroupPathsRuntimesWrite) {
  const std::string id(64, 'a');
  EXPECT_EQ(ContainerIdFromCgroup("/system.slice/docker-" + id + ".scope"), id);
  EXPECT_EQ(ContainerIdFromCgroup("/kubepods.slice/kubepods-burstable.slice/"
                                  "kubepods-burstable-pod1.slice/cri-containerd-" +
                                  id + ".scope"),
            id);
  EXPECT_EQ(ContainerIdFromCgroup("/machine.slice/libpod-" + id + ".scope/container"), id);
  EXPECT_EQ(ContainerIdFromCgroup("/docker/" + id), id);
  EXPECT_EQ(ContainerIdFromCgroup("/system.slice/nginx.service"), "");
  EXPECT_EQ(ContainerIdFromCgroup("/docker/" + id.substr(1)), "");  // 63 digits
  EXPECT_EQ(ContainerIdFromCgroup("/docker/" + std::string(63, 'a') + "g"), "");
}

pp::Frame Fn(const std::string& name, int64_t line) {
  pp::Frame f;
  f.function = name;
  f.file = name + ".c";
  f.line = line;
  return f;
}

// A window as the daemon makes it: two sample types (CPU samples, path counts), a pid label,
// a mapped binary with a build id, an inlined call.
struct TestWindow {
  ProfileWindow window;
  std::map<std::string, int64_t> samples_by_leaf;  // what pprof says, per leaf function
  int64_t total_samples = 0, total_paths = 0;
};

TestWindow MakeWindow() {
  pp::ProfileOptions o;
  o.sample_types = {{"samples", "count"}, {"path_count", "count"}};
  o.period_type = {"cpu", "nanoseconds"};
  o.period = 52'631'578;  // 19 Hz
  o.time_nanos = 1'700'000'000'000'000'000;
  auto b = pp::ProfileBuilder::Create(o);
  EXPECT_TRUE(b.ok());
  pp::Location leaf;
  leaf.address = 0x401010;
  leaf.mapping = {0x400000, 0x500000, 0, "/usr/bin/zstd", "beef01"};
  leaf.frames = {Fn("memcpy_inline", 12), Fn("compress_block", 40)};
  pp::Location other = leaf;
  other.address = 0x402000;
  other.frames = {Fn("hash", 80)};
  pp::Location main_loc;
  main_loc.address = 0x400900;
  main_loc.mapping = leaf.mapping;
  main_loc.frames = {Fn("main", 7)};
  TestWindow t;
  auto add = [&](const pp::Location& l, int64_t samples, int64_t paths, int64_t pid) {
    pp::Sample s;
    s.stack = {l, main_loc};
    s.values = {samples, paths};
    s.num_labels = {{"pid", pid, ""}};
    EXPECT_TRUE(b->AddSample(s).ok());
    if (samples != 0) t.samples_by_leaf[l.frames[0].function] += samples;
    t.total_samples += samples;
    t.total_paths += paths;
  };
  add(leaf, 30, 0, 100);
  add(other, 11, 0, 100);
  add(leaf, 4, 0, 101);
  add(main_loc, 0, 6, 100);
  auto gz = b->SerializeGzip();
  EXPECT_TRUE(gz.ok());
  t.window.pprof = *gz;
  t.window.start_unix_nanos = 1'700'000'000'000'000'000;
  t.window.end_unix_nanos = t.window.start_unix_nanos + 10'000'000'000;
  t.window.labels = ToLabels({.host = "web-1",
                              .unit = "zstd.service",
                              .cgroup = "/system.slice/docker-" + std::string(64, 'c') + ".scope",
                              .executable = "/usr/bin/zstd",
                              .build_id = "beef01",
                              .extra = {{"env", "prod"}}});
  return t;
}

std::map<std::string, std::string> ResourceAttributes(
    const collector::ExportProfilesServiceRequest& r) {
  std::map<std::string, std::string> out;
  for (const auto& kv : r.resource_profiles(0).resource().attributes())
    out[kv.key()] = kv.value().string_value();
  return out;
}

// The receiver's view: decode the bytes we send, then walk every reference.
TEST(OtlpExport, TheDecodedRequestHasThePprofsTotalsStacksAndLabels) {
  const TestWindow t = MakeWindow();
  OtlpOptions o;
  o.scope_version = "9.9";
  auto built = BuildOtlpRequest(o, t.window);
  ASSERT_TRUE(built.ok()) << built.status().ToString();
  collector::ExportProfilesServiceRequest r;
  ASSERT_TRUE(r.ParseFromString(built->SerializeAsString()));

  const otlp::ProfilesDictionary& d = r.dictionary();
  // Entry 0 of every table is the empty value.
  ASSERT_GT(d.string_table_size(), 0);
  EXPECT_EQ(d.string_table(0), "");
  EXPECT_EQ(d.mapping_table(0).ByteSizeLong(), 0u);
  EXPECT_EQ(d.location_table(0).ByteSizeLong(), 0u);
  EXPECT_EQ(d.function_table(0).ByteSizeLong(), 0u);
  EXPECT_EQ(d.attribute_table(0).ByteSizeLong(), 0u);
  EXPECT_EQ(d.stack_table(0).ByteSizeLong(), 0u);
  // Link{} too: no ids at all, not ids of zero bytes (a 16- and an 8-byte id once stood here).
  ASSERT_GT(d.link_table_size(), 0);
  EXPECT_EQ(d.link_table(0).ByteSizeLong(), 0u);
  // Strings are stored once.
  std::set<std::string> distinct(d.string_table().begin(), d.string_table().end());
  EXPECT_EQ(distinct.size(), static_cast<size_t>(d.string_table_size()));

  EXPECT_EQ(ResourceAttributes(r),
            (std::map<std::string, std::string>{
                {"host.name", "web-1"},
                {"pathprof.systemd.unit", "zstd.service"},
                {"pathprof.cgroup", "/system.slice/docker-" + std::string(64, 'c') + ".scope"},
                {"container.id", std::string(64, 'c')},
                {"process.executable.path", "/usr/bin/zstd"},
                {"process.executable.name", "zstd"},
                {"process.executable.build_id.gnu", "beef01"},
                {"env", "prod"}}));
  ASSERT_EQ(r.resource_profiles(0).scope_profiles_size(), 1);
  const otlp::ScopeProfiles& scope = r.resource_profiles(0).scope_profiles(0);
  EXPECT_EQ(scope.scope().name(), "pathprof");
  EXPECT_EQ(scope.scope().version(), "9.9");
  ASSERT_EQ(scope.profiles_size(), 2);  // one per pprof sample type

  auto str = [&](int32_t i) { return d.string_table(i); };
  std::map<std::string, int64_t> totals;
  std::map<std::string, int64_t> samples_by_leaf;
  std::set<int64_t> pids;
  for (const otlp::Profile& p : scope.profiles()) {
    const std::string type = str(p.sample_type().type_strindex());
    EXPECT_EQ(str(p.sample_type().unit_strindex()), "count");
    EXPECT_EQ(str(p.period_type().type_strindex()), "cpu");
    EXPECT_EQ(p.period(), 52'631'578);
    EXPECT_EQ(p.time_unix_nano(), 1'700'000'000'000'000'000u);
    EXPECT_EQ(p.duration_nano(), 10'000'000'000u);
    EXPECT_EQ(p.profile_id().size(), 16u);
    EXPECT_TRUE(p.original_payload().empty());
    for (const otlp::Sample& s : p.samples()) {
      ASSERT_EQ(s.values_size(), 1);
      EXPECT_NE(s.values(0), 0);
      totals[type] += s.values(0);
      ASSERT_GT(s.stack_index(), 0);
      ASSERT_LT(s.stack_index(), d.stack_table_size());
      std::vector<std::string> frames;
      for (int32_t li : d.stack_table(s.stack_index()).location_indices()) {
        ASSERT_GT(li, 0);
        ASSERT_LT(li, d.location_table_size());
        const otlp::Location& loc = d.location_table(li);
        ASSERT_GT(loc.mapping_index(), 0);
        const otlp::Mapping& m = d.mapping_table(loc.mapping_index());
        EXPECT_EQ(str(m.filename_strindex()), "/usr/bin/zstd");
        ASSERT_EQ(m.attribute_indices_size(), 1);
        const auto& build_id = d.attribute_table(m.attribute_indices(0));
        EXPECT_EQ(str(build_id.key_strindex()), "process.executable.build_id.gnu");
        EXPECT_EQ(build_id.value().string_value(), "beef01");
        for (const otlp::Line& line : loc.lines())
          frames.push_back(str(d.function_table(line.function_index()).name_strindex()) + "@" +
                           std::to_string(line.line()));
      }
      ASSERT_FALSE(frames.empty());
      EXPECT_EQ(frames.back(), "main@7");
      if (type == "samples") {
        samples_by_leaf[frames[0].substr(0, frames[0].find('@'))] += s.values(0);
        if (frames[0] == "memcpy_inline@12") {  // inlined: callee first, then its caller
          EXPECT_EQ(frames,
                    (std::vector<std::string>{"memcpy_inline@12", "compress_block@40", "main@7"}));
        }
      }
      ASSERT_EQ(s.attribute_indices_size(), 1);
      const auto& pid = d.attribute_table(s.attribute_indices(0));
      EXPECT_EQ(str(pid.key_strindex()), "process.pid");
      pids.insert(pid.value().int_value());
    }
  }
  EXPECT_EQ(totals["samples"], t.total_samples);
  EXPECT_EQ(totals["path_count"], t.total_paths);
  EXPECT_EQ(samples_by_leaf, t.samples_by_leaf);
  EXPECT_EQ(pids, (std::set<int64_t>{100, 101}));
}

// A one-process window (a session's export) names its process in the resource: process.pid as
// the int the semantic conventions say, beside the executable's path and name.
TEST(OtlpExport, AOneProcessWindowNamesItsPidInTheResource) {
  TestWindow t = MakeWindow();
  WindowIdentity one;
  one.host = "web-1";
  one.executable = "/usr/bin/zstd";
  one.pid = 4242;
  t.window.labels = ToLabels(one);
  auto built = BuildOtlpRequest(OtlpOptions{}, t.window);
  ASSERT_TRUE(built.ok()) << built.status().ToString();
  const auto& attributes = built->resource_profiles(0).resource().attributes();
  std::map<std::string, std::string> strings;
  int64_t pid = 0;
  for (const auto& kv : attributes) {
    if (kv.key() == "process.pid") {
      ASSERT_TRUE(kv.value().has_int_value());
      pid = kv.value().int_value();
    } else {
      strings[kv.key()] = kv.value().string_value();
    }
  }
  EXPECT_EQ(pid, 4242);
  EXPECT_EQ(strings,
            (std::map<std::string, std::string>{{"host.name", "web-1"},
                                                {"process.executable.path", "/usr/bin/zstd"},
                                                {"process.executable.name", "zstd"}}));
}

TEST(OtlpExport, TheOriginalPprofRidesAlongOnlyWhenAskedAndOnce) {
  const TestWindow t = MakeWindow();
  OtlpOptions o;
  o.include_pprof = true;
  auto r = BuildOtlpRequest(o, t.window);
  ASSERT_TRUE(r.ok());
  const auto& profiles = r->resource_profiles(0).scope_profiles(0).profiles();
  EXPECT_EQ(profiles[0].original_payload_format(), "pprof");
  EXPECT_TRUE(profiles[0].original_payload() == t.window.pprof);
  EXPECT_TRUE(profiles[1].original_payload().empty());
  EXPECT_TRUE(profiles[1].original_payload_format().empty());
}

TEST(OtlpExport, AWindowThatIsNotAProfileIsAnErrorNotACrash) {
  ProfileWindow w = MakeWindow().window;
  w.pprof = "not a profile";
  auto r = BuildOtlpRequest({}, w);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kInvalidArgument);
  w.pprof = MakeWindow().window.pprof.substr(0, 40);
  EXPECT_FALSE(BuildOtlpRequest({}, w).ok());
}

// The collector side: records each request and its authorization, answers from a script of
// status codes (then OK), optionally with a partial success.
class FakeCollector final
    : public collector::ProfilesService::Service,
      public testing::ScriptedBackend<collector::ExportProfilesServiceRequest> {
 public:
  explicit FakeCollector(std::vector<grpc::StatusCode> script, int64_t reject = 0)
      : ScriptedBackend(std::move(script)), reject_(reject) {}
  grpc::Status Export(grpc::ServerContext* context,
                      const collector::ExportProfilesServiceRequest* request,
                      collector::ExportProfilesServiceResponse* response) override {
    const grpc::StatusCode code = Record(*context, *request);
    if (code != grpc::StatusCode::OK) return grpc::Status(code, "scripted");
    if (reject_ > 0) {
      response->mutable_partial_success()->set_rejected_profiles(reject_);
      response->mutable_partial_success()->set_error_message("path_count is not a known type");
    }
    return grpc::Status::OK;
  }

 private:
  int64_t reject_;
};

using RunningCollector = testing::RunningFake<FakeCollector>;

TEST(OtlpSinkTest, RetriesUnavailableThenExportsTheWindow) {
  RunningCollector collector({grpc::StatusCode::UNAVAILABLE});
  ASSERT_NE(collector.port, 0);
  const TestWindow t = MakeWindow();
  OtlpOptions o;
  o.target = collector.Target();
  o.bearer_token = "tok";
  auto sink = OtlpSink::Create(o);
  ASSERT_TRUE(sink.ok()) << sink.status().ToString();
  EXPECT_EQ((*sink)->Describe(), "otlp " + collector.Target());
  const PushStats stats = PushOne(std::move(sink).value(), t.window, 3);
  EXPECT_EQ(stats.sent, 1u);
  EXPECT_EQ(stats.retries, 1u);
  EXPECT_EQ(collector.service.authorization(),
            (std::vector<std::string>{"Bearer tok", "Bearer tok"}));
  const auto requests = collector.service.requests();
  ASSERT_EQ(requests.size(), 2u);
  int64_t samples = 0;
  const auto& d = requests[1].dictionary();
  for (const otlp::Profile& p : requests[1].resource_profiles(0).scope_profiles(0).profiles())
    if (d.string_table(p.sample_type().type_strindex()) == "samples")
      for (const otlp::Sample& s : p.samples()) samples += s.values(0);
  EXPECT_EQ(samples, t.total_samples);
}

TEST(OtlpSinkTest, APartialSuccessIsARejectionNamingTheReceiversReason) {
  RunningCollector collector({}, /*reject=*/1);
  OtlpOptions o;
  o.target = collector.Target();
  auto sink = OtlpSink::Create(o);
  ASSERT_TRUE(sink.ok());
  const PushStats stats = PushOne(std::move(sink).value(), MakeWindow().window, 5);
  EXPECT_EQ(stats.attempts, 1u);
  EXPECT_EQ(stats.dropped_rejected, 1u);
  EXPECT_NE(stats.last_error.find("rejected 1 of 2 profiles: path_count is not a known type"),
            std::string::npos)
      << stats.last_error;
}

TEST(OtlpSinkTest, AWindowThatDoesNotConvertIsRefusedWithoutASend) {
  RunningCollector collector({});
  OtlpOptions o;
  o.target = collector.Target();
  auto sink = OtlpSink::Create(o);
  ASSERT_TRUE(sink.ok());
  ProfileWindow w = MakeWindow().window;
  w.pprof = "garbage";
  EXPECT_EQ(PushOne(std::move(sink).value(), w, 5).dropped_rejected, 1u);
  EXPECT_TRUE(collector.service.requests().empty());
}

TEST(OtlpSinkTest, BadTargetsAndTlsFilesAreReportedAtCreate) {
  OtlpOptions o;
  o.use_tls = true;
  o.tls.ca_file = "/nonexistent/ca.pem";
  auto missing = OtlpSink::Create(o);
  EXPECT_EQ(missing.status().code(), ErrorCode::kNotFound);
  EXPECT_NE(missing.status().message().find("otlp CA file '/nonexistent/ca.pem'"),
            std::string::npos);
  o.target.clear();
  EXPECT_EQ(OtlpSink::Create(o).status().code(), ErrorCode::kInvalidArgument);
}

}  // namespace
}  // namespace pathprof::fleet
