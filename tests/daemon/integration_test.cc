// pathprofd end to end: the real daemon binary, the real pathctl binary, a raw gRPC client.
#include <google/protobuf/util/json_util.h>
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/impl/codegen/client_unary_call.h>
#include <grpcpp/support/sync_stream.h>
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <thread>
#include <tuple>

#include "daemon_harness.h"
#include "opentelemetry/proto/collector/profiles/v1development/profiles_service.pb.h"
#include "pathprof/profiles/pprof_import.h"
#include "pathprof/v1/profiler.pb.h"

namespace pathprof::daemon::testing {
namespace {

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// The "function" of the first hot path in `pathctl paths --json` output.
std::string FirstFunction(const std::string& json, const std::string& array_key) {
  auto at = json.find("\"" + array_key + "\":[");
  if (at == std::string::npos) return "";
  auto f = json.find("\"function\":\"", at);
  if (f == std::string::npos) return "";
  f += 12;
  return json.substr(f, json.find('"', f) - f);
}

class DaemonSession : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(daemon_.Ready()) << daemon_.Log();
    auto r = daemon_.Ctl("start --pid " + std::to_string(loop_.pid()));
    ASSERT_EQ(r.rc, 0) << r.out << daemon_.Log();
    id_ = FirstLine(r.out);
    // Enough windows and stack samples for a stable top entry: written for a quiet 2-core host,
    // where 3 s give ~60 windows (bursts at 20/s) and ~300 samples (99 Hz). A busy host (two CPU
    // hogs beside a sanitizer-built daemon) slows the tracer and the sampler down many times,
    // so the test waits for the data itself, up to a minute, instead of for a fixed time.
    ASSERT_TRUE(WaitForData(60, 250)) << daemon_.Ctl("stats " + id_ + " --json").out;
  }
  // Polls the session's stats until it has `windows` branch windows and `samples` stack
  // samples, or 60 s have passed.
  bool WaitForData(long long windows, long long samples) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (std::chrono::steady_clock::now() < deadline) {
      const std::string json = daemon_.Ctl("stats " + id_ + " --json").out;
      if (Count(json, "windows") >= windows && Count(json, "stack_samples") >= samples) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(250));
    }
    return false;
  }
  // The first "key": N (or "key": "N", as protobuf's JSON writes int64) in `json`; 0 if none.
  static long long Count(const std::string& json, const std::string& key) {
    std::smatch m;
    if (!std::regex_search(json, m, std::regex("\"" + key + "\":\"?([0-9]+)"))) return 0;
    return std::stoll(m[1].str());
  }
  Daemon daemon_;
  HotLoop loop_;
  std::string id_;
};

TEST_F(DaemonSession, HotPathTreeAndMethodsNameTheHotLoop) {
  auto paths = daemon_.Ctl("paths " + id_ + " --top 5 --json");
  ASSERT_EQ(paths.rc, 0) << paths.out;
  // hot()'s loop paths are in the top 3. (Which single path ranks first is up to the window
  // estimator: 3 s of ptrace bursts give ~60 windows, and warm()'s one path can edge out hot()'s
  // commonest one within the error bounds.)
  auto top3 = daemon_.Ctl("paths " + id_ + " --top 3 --json");
  EXPECT_NE(top3.out.find("\"function\":\"hot\""), std::string::npos) << top3.out;
  EXPECT_NE(paths.out.find("\"estimator\":\"PATH_ESTIMATOR_WINDOWS\""), std::string::npos);

  auto methods = daemon_.Ctl("methods " + id_ + " --top 3 --json");
  ASSERT_EQ(methods.rc, 0) << methods.out;
  EXPECT_EQ(FirstFunction(methods.out, "methods"), "hot") << methods.out;

  auto tree = daemon_.Ctl("tree " + id_ + " --json");
  ASSERT_EQ(tree.rc, 0) << tree.out;
  // Both loops are in the tree (the example has no frame pointers, so hot and warm hang under
  // the libc start frame rather than main).
  EXPECT_NE(tree.out.find("\"function\":\"hot\""), std::string::npos) << tree.out;
  EXPECT_NE(tree.out.find("\"function\":\"warm\""), std::string::npos) << tree.out;
  EXPECT_NE(tree.out.find("\"samples\":"), std::string::npos);

  auto stats = daemon_.Ctl("stats " + id_ + " --json");
  ASSERT_EQ(stats.rc, 0) << stats.out;
  EXPECT_NE(stats.out.find("\"pid\":" + std::to_string(loop_.pid())), std::string::npos);

  auto table = daemon_.Ctl("paths " + id_ + " --top 3");
  ASSERT_EQ(table.rc, 0);
  EXPECT_NE(table.out.find("hot+0x"), std::string::npos) << table.out;

  // A method is a function: named without the "+0x0" of a location at its start.
  auto methods_table = daemon_.Ctl("methods " + id_ + " --top 3");
  ASSERT_EQ(methods_table.rc, 0) << methods_table.out;
  EXPECT_NE(methods_table.out.find("  hot\n"), std::string::npos) << methods_table.out;
  EXPECT_EQ(methods_table.out.find("+0x0"), std::string::npos) << methods_table.out;
  // A --root that names no node says so, and exits 3 (no data).
  auto no_root = daemon_.Ctl("tree " + id_ + " --root no_such_function");
  EXPECT_EQ(no_root.rc, 3) << no_root.out;
  EXPECT_NE(no_root.out.find("no node of the tree is named 'no_such_function'"), std::string::npos)
      << no_root.out;
}

TEST_F(DaemonSession, ExportPassesGoPprofWithHotFirst) {
  std::string file = daemon_.dir() + "/profile.pb.gz";
  auto r = daemon_.Ctl("export " + id_ + " -o " + file + " --paths");
  ASSERT_EQ(r.rc, 0) << r.out;
  auto top = Sh("go tool pprof -top " + file);
  ASSERT_EQ(top.rc, 0) << top.out;
  // The first row after the header names the hottest function.
  auto header = top.out.find("flat%");
  ASSERT_NE(header, std::string::npos) << top.out;
  std::string first_row = FirstLine(top.out.substr(top.out.find('\n', header) + 1));
  EXPECT_NE(first_row.find(" hot"), std::string::npos) << top.out;
}

// One profile, three views: the tree's sample count, the pprof's and the OTLP request's totals
// (both sample types) are the same numbers once the session has stopped.
TEST_F(DaemonSession, TreePprofAndOtlpAgreeOnTotals) {
  ASSERT_EQ(daemon_.Ctl("stop " + id_).rc, 0);
  const auto tree = daemon_.Ctl("tree " + id_ + " --json");
  ASSERT_EQ(tree.rc, 0) << tree.out;
  const long long tree_samples = Count(tree.out, "samples");
  ASSERT_GT(tree_samples, 0) << tree.out;

  const std::string pprof_file = daemon_.dir() + "/same.pb.gz";
  const std::string otlp_file = daemon_.dir() + "/same.otlp";
  auto r = daemon_.Ctl("export " + id_ + " --paths -o " + pprof_file);
  ASSERT_EQ(r.rc, 0) << r.out;
  r = daemon_.Ctl("export " + id_ + " --paths --format otlp -o " + otlp_file + " --json");
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("EXPORT_FORMAT_OTLP"), std::string::npos) << r.out;

  auto pprof = profiles::pprof::ImportProfile(ReadFile(pprof_file));
  ASSERT_TRUE(pprof.ok()) << pprof.status().ToString();
  ASSERT_EQ(pprof->sample_types.size(), 2u);
  ASSERT_EQ(pprof->sample_types[0].type, "samples");
  const std::vector<int64_t> pprof_totals = pprof->Totals();
  EXPECT_EQ(pprof_totals[0], tree_samples);
  EXPECT_GT(pprof_totals[1], 0);  // path counts: the session ran a branch source

  opentelemetry::proto::collector::profiles::v1development::ExportProfilesServiceRequest otlp;
  ASSERT_TRUE(otlp.ParseFromString(ReadFile(otlp_file)));
  ASSERT_EQ(otlp.resource_profiles_size(), 1);
  const auto& d = otlp.dictionary();
  std::map<std::string, int64_t> otlp_totals;
  for (const auto& p : otlp.resource_profiles(0).scope_profiles(0).profiles())
    for (const auto& sample : p.samples())
      otlp_totals[d.string_table(p.sample_type().type_strindex())] += sample.values(0);
  EXPECT_EQ(otlp_totals["samples"], tree_samples);
  EXPECT_EQ(otlp_totals["path_count"], pprof_totals[1]);
}

// The OTLP export of a session, decoded as a collector would: every dictionary table starts with
// its zero value (the link table's was a Link with 16 and 8 zero bytes of ids), and the resource
// says which host and process the profile is of, under the semantic-convention names continuous
// mode uses (it was empty: a collector filed the profile under no process and no host).
TEST_F(DaemonSession, OtlpExportHasZeroValueFirstEntriesAndNamesHostAndProcess) {
  ASSERT_EQ(daemon_.Ctl("stop " + id_).rc, 0);
  const std::string otlp_file = daemon_.dir() + "/resource.otlp";
  auto r = daemon_.Ctl("export " + id_ + " --paths --format otlp -o " + otlp_file);
  ASSERT_EQ(r.rc, 0) << r.out;
  opentelemetry::proto::collector::profiles::v1development::ExportProfilesServiceRequest otlp;
  ASSERT_TRUE(otlp.ParseFromString(ReadFile(otlp_file)));
  const auto& d = otlp.dictionary();
  ASSERT_GT(d.mapping_table_size(), 1);
  ASSERT_GT(d.location_table_size(), 1);
  ASSERT_GT(d.function_table_size(), 1);
  ASSERT_GT(d.link_table_size(), 0);
  ASSERT_GT(d.attribute_table_size(), 1);
  ASSERT_GT(d.stack_table_size(), 1);
  ASSERT_GT(d.string_table_size(), 1);
  EXPECT_EQ(d.mapping_table(0).ByteSizeLong(), 0u);
  EXPECT_EQ(d.location_table(0).ByteSizeLong(), 0u);
  EXPECT_EQ(d.function_table(0).ByteSizeLong(), 0u);
  EXPECT_EQ(d.link_table(0).ByteSizeLong(), 0u);
  EXPECT_EQ(d.attribute_table(0).ByteSizeLong(), 0u);
  EXPECT_EQ(d.stack_table(0).ByteSizeLong(), 0u);
  EXPECT_EQ(d.string_table(0), "");

  ASSERT_EQ(otlp.resource_profiles_size(), 1);
  std::map<std::string, std::string> strings;
  int64_t pid = 0;
  for (const auto& kv : otlp.resource_profiles(0).resource().attributes()) {
    if (kv.value().has_int_value())
      pid = kv.key() == "process.pid" ? kv.value().int_value() : pid;
    else
      strings[kv.key()] = kv.value().string_value();
  }
  char host[256] = {};
  ASSERT_EQ(gethostname(host, sizeof host - 1), 0);
  EXPECT_EQ(strings["host.name"], host);
  EXPECT_EQ(strings["process.executable.name"], "example_hotloop");
  EXPECT_TRUE(strings["process.executable.path"].ends_with("/example_hotloop"))
      << strings["process.executable.path"];
  EXPECT_EQ(pid, loop_.pid());
}

// pprof's consumers finish what we could not name from the mapping: its runtime range and
// file offset must be real (they were 0x0-0x0 @ 0), and a leaf's samples keep their addresses
// and lines.
TEST_F(DaemonSession, ExportedMappingsCarryTheirRangesAndLeavesTheirLines) {
  std::string file = daemon_.dir() + "/raw.pb.gz";
  auto r = daemon_.Ctl("export " + id_ + " -o " + file);
  ASSERT_EQ(r.rc, 0) << r.out;
  auto raw = Sh("go tool pprof -raw " + file);
  ASSERT_EQ(raw.rc, 0) << raw.out;
  const size_t mappings = raw.out.find("\nMappings\n");
  ASSERT_NE(mappings, std::string::npos) << raw.out;
  // "1: 0x55d0c0a01000/0x55d0c0a02000/0x1000 /path/example_hotloop [FN]"
  std::regex line(R"((0x[0-9a-f]+)/(0x[0-9a-f]+)/(0x[0-9a-f]+) (\S*example_hotloop)\b)");
  std::smatch m;
  const std::string tail = raw.out.substr(mappings);
  ASSERT_TRUE(std::regex_search(tail, m, line)) << tail;
  const uint64_t start = std::stoull(m[1].str(), nullptr, 16);
  const uint64_t limit = std::stoull(m[2].str(), nullptr, 16);
  EXPECT_GT(start, 0u) << m[0];
  EXPECT_GT(limit, start) << m[0];
  // hot()'s samples stand at the addresses they were taken at (they all stood at one, the
  // function's, before), each with its line. Distinct addresses, not lines: where a timer
  // sample's instruction pointer lands in the loop is the host's (on an AMD EPYC KVM guest
  // one run put all 233 of hot()'s samples on eight addresses of hotloop.c:12, the
  // instructions after its two stores and its loop counter's).
  std::set<std::string> hot_addresses;
  std::regex hot_location(R"( (0x[0-9a-f]+) M=\d+ hot (\S+):(\d+) )");
  const std::string locations = raw.out.substr(0, mappings);
  for (auto it = std::sregex_iterator(locations.begin(), locations.end(), hot_location);
       it != std::sregex_iterator(); ++it) {
    hot_addresses.insert((*it)[1].str());
    EXPECT_TRUE((*it)[2].str().ends_with("hotloop.c")) << (*it)[0].str();
    EXPECT_GT(std::stoi((*it)[3].str()), 0) << (*it)[0].str();
  }
  EXPECT_GE(hot_addresses.size(), 2u) << locations;
}

// A running session's newest branch windows as optimizer profiles: BOLT's fdata
// names the target's executable and counts hot()'s loop above warm()'s; the perf.data of
// the same windows is read by perf and matched to the binary by perf2bolt.
TEST_F(DaemonSession, BranchProfileExportsOfARunningSession) {
  const std::string fdata = daemon_.dir() + "/session.fdata";
  // The first windows arrive a second or two after the start (later on a loaded host): until
  // then the export says there are none, which is right, so it is asked again (up to 30 s).
  auto r = daemon_.Ctl("export --format bolt " + id_ + " -o " + fdata + " --json");
  for (int i = 0; i < 60 && r.rc != 0 && r.out.find("no branch windows yet") != std::string::npos;
       ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    r = daemon_.Ctl("export --format bolt " + id_ + " -o " + fdata + " --json");
  }
  ASSERT_EQ(r.rc, 0) << r.out << daemon_.Log();
  EXPECT_NE(r.out.find("example_hotloop\""), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"format\":\"EXPORT_FORMAT_BOLT_FDATA\""), std::string::npos) << r.out;
  // hot()'s loop runs 4 times as long as warm()'s: most branch counts are within hot.
  std::ifstream in(fdata);
  std::string line, all;
  long long in_hot = 0, in_warm = 0;
  while (std::getline(in, line)) {
    all += line + "\n";
    const long long count = std::stoll(line.substr(line.rfind(' ') + 1));
    if (line.rfind("1 hot ", 0) == 0 && line.find(" 1 hot ") != std::string::npos) in_hot += count;
    if (line.rfind("1 warm ", 0) == 0 && line.find(" 1 warm ") != std::string::npos)
      in_warm += count;
  }
  EXPECT_GT(in_hot, 2 * in_warm) << all;
  EXPECT_GT(in_warm, 0) << all;

  const std::string data = daemon_.dir() + "/session.data";
  auto p = daemon_.Ctl("export --format perf-lbr " + id_ + " -o " + data + " --json");
  ASSERT_EQ(p.rc, 0) << p.out;
  EXPECT_NE(p.out.find("one sample per ptrace-burst window"), std::string::npos) << p.out;
  if (Sh("command -v perf").rc == 0) {
    auto script = Sh("perf script -F brstack -i " + data + " | grep -c /");
    EXPECT_GT(std::atoi(script.out.c_str()), 0) << script.out;
  }
  if (access("/usr/bin/llvm-bolt-15", X_OK) == 0) {
    auto agg = Sh("llvm-bolt-15 " + kBin + "/example_hotloop -aggregate-only -p " + data + " -o " +
                  daemon_.dir() + "/agg.fdata");
    EXPECT_NE(agg.out.find("matched build-id"), std::string::npos) << agg.out;
  }
  // A process the session does not have, and a format that does not exist, are named.
  auto other = daemon_.Ctl("export --format bolt " + id_ + " --pid 1 -o " + fdata);
  EXPECT_NE(other.rc, 0);
  EXPECT_NE(other.out.find("no process 1"), std::string::npos) << other.out;
}

TEST(DaemonBranchExport, AStacksOnlySessionSaysItHasNoWindows) {
  Daemon daemon;
  ASSERT_TRUE(daemon.Ready()) << daemon.Log();
  HotLoop loop;
  auto r = daemon.Ctl("start --source none --pid " + std::to_string(loop.pid()));
  ASSERT_EQ(r.rc, 0) << r.out;
  const std::string id = FirstLine(r.out);
  auto e = daemon.Ctl("export --format bolt " + id + " -o " + daemon.dir() + "/x.fdata");
  EXPECT_NE(e.rc, 0);
  EXPECT_NE(e.out.find("no branch windows"), std::string::npos) << e.out;
}

// A stripped program (example_hotloop with every symbol removed): the daemon names its code
// after the unwind entries (one hot method per function, hotloop_stripped+0xSTART), and exports
// those names without marking the mapping symbolized by them, so that pprof, given the
// unstripped file, names them again, with lines. Upstream pprof is built from Debian's
// golang-github-google-pprof-dev source: the pprof in Go 1.19 (`go tool pprof`) reads no build-id
// from binaries whose first note segment is .note.gnu.property (every Debian 12 GCC binary) and
// ignores them as mismatched.
TEST(DaemonStripped, PprofNamesAStrippedProgramFromTheUnstrippedFile) {
  if (Sh("go version").rc != 0) GTEST_SKIP() << "go (Debian golang-go) is not installed";
  char dir_template[] = "/tmp/pathprof-stripped-XXXXXX";
  const std::string dir = mkdtemp(dir_template);
  const std::string go_env = "GOCACHE=" + dir + "/gocache HOME=" + dir + " ";
  auto built = Sh(go_env + "GOPATH=/usr/share/gocode GO111MODULE=off GOFLAGS= go build -o " + dir +
                  "/pprof github.com/google/pprof");
  if (built.rc != 0)
    GTEST_SKIP() << "cannot build upstream pprof from golang-github-google-pprof-dev: "
                 << built.out;
  const std::string stripped = dir + "/hotloop_stripped";
  auto strip =
      Sh("objcopy --strip-all " + kBin + "/example_hotloop " + stripped + " && mkdir " + dir +
         "/symbols && cp " + kBin + "/example_hotloop " + dir + "/symbols/hotloop_stripped");
  ASSERT_EQ(strip.rc, 0) << strip.out;
  ASSERT_EQ(Sh("nm " + stripped).out.find(" hot"), std::string::npos) << "not stripped";
  Daemon daemon;
  ASSERT_TRUE(daemon.Ready()) << daemon.Log();
  const pid_t target = Spawn({stripped, "0"});
  auto r = daemon.Ctl("start --source none --pid " + std::to_string(target));
  ASSERT_EQ(r.rc, 0) << r.out << daemon.Log();
  const std::string id = FirstLine(r.out);
  std::this_thread::sleep_for(std::chrono::seconds(3));
  auto methods = daemon.Ctl("methods " + id + " --top 3 --json");
  EXPECT_EQ(FirstFunction(methods.out, "methods").rfind("hotloop_stripped+0x", 0), 0u)
      << methods.out;
  const std::string file = dir + "/profile.pb.gz";
  r = daemon.Ctl("export " + id + " -o " + file);
  ASSERT_EQ(r.rc, 0) << r.out;
  kill(target, SIGKILL);
  waitpid(target, nullptr, 0);
  const std::string pprof = go_env + "PPROF_BINARY_PATH=" + dir + "/symbols " + dir + "/pprof";
  auto top = Sh(pprof + " -top " + file);
  ASSERT_EQ(top.rc, 0) << top.out;
  const auto header = top.out.find("flat%");
  ASSERT_NE(header, std::string::npos) << top.out;
  EXPECT_NE(FirstLine(top.out.substr(top.out.find('\n', header) + 1)).find(" hot"),
            std::string::npos)
      << top.out;
  EXPECT_EQ(top.out.find("hotloop_stripped+0x"), std::string::npos) << top.out;
  // With lines from the unstripped file's DWARF, at the sampled addresses inside hot(), not one
  // address per function (an export of functions' start addresses would give pprof one).
  // Distinct addresses, not distinct lines: which instructions the samples hit depends on the
  // host's timer skid, and hot()'s first instruction, its loop test and the instruction after
  // each volatile store are all line 12 (a fresh AMD EPYC KVM guest put all 143 samples of a
  // run on that line; other runs had 12, 14 and 19).
  auto lines = Sh(pprof + " -top -addresses " + file);
  std::set<std::string> hot_addresses;
  const std::regex hot_address(R"(([0-9a-f]{16}) hot \S*hotloop\.c:\d+)");
  for (auto it = std::sregex_iterator(lines.out.begin(), lines.out.end(), hot_address);
       it != std::sregex_iterator(); ++it)
    hot_addresses.insert((*it)[1].str());
  EXPECT_GE(hot_addresses.size(), 2u) << lines.out;
  Sh("rm -rf " + dir);
}

TEST_F(DaemonSession, AbsurdSizesAreInvalidArgument) {
  // pathctl refuses what is outside a flag's own range before it sends anything...
  auto r = daemon_.Ctl("paths " + id_ + " --top 1000000000");
  EXPECT_EQ(r.rc, 2) << r.out;
  EXPECT_NE(r.out.find("--top expects an integer in [1, 1000000], got '1000000000'"),
            std::string::npos)
      << r.out;
  r = daemon_.Ctl("start --pid " + std::to_string(loop_.pid()) + " --hpt-entries 4000000000");
  EXPECT_EQ(r.rc, 2) << r.out;
  EXPECT_NE(r.out.find("--hpt-entries expects an integer"), std::string::npos) << r.out;
  // ...and the daemon refuses what is above its own limits (defaults: top_k 1000, depth 512,
  // 2^20 HPT entries, watch every 100 ms at most), naming the request field and the limit.
  r = daemon_.Ctl("paths " + id_ + " --top 5000");
  EXPECT_EQ(r.rc, 2) << r.out;
  EXPECT_NE(r.out.find("invalid request: top_k 5000 is above the server maximum 1000"),
            std::string::npos)
      << r.out;
  r = daemon_.Ctl("tree " + id_ + " --depth 1000");
  EXPECT_EQ(r.rc, 2) << r.out;
  EXPECT_NE(r.out.find("max_depth"), std::string::npos) << r.out;
  r = daemon_.Ctl("start --pid " + std::to_string(loop_.pid()) + " --hpt-entries 4000000");
  EXPECT_EQ(r.rc, 2) << r.out;
  EXPECT_NE(r.out.find("engine.hpt_entries"), std::string::npos) << r.out;
  r = daemon_.Ctl("watch " + id_ + " --interval 50");
  EXPECT_EQ(r.rc, 2) << r.out;
  EXPECT_NE(r.out.find("min_watch_interval_ms"), std::string::npos) << r.out;
  r = daemon_.Ctl("paths no-such-session");
  EXPECT_EQ(r.rc, 6) << r.out;
  EXPECT_TRUE(daemon_.Alive());
}

// A raw gRPC client: health and reflection need no generated code (hand-encoded protobuf).
grpc::ByteBuffer Bytes(const std::string& s) {
  grpc::Slice slice(s);
  return grpc::ByteBuffer(&slice, 1);
}
std::string Str(const grpc::ByteBuffer& b) {
  std::vector<grpc::Slice> slices;
  std::string out;
  if (!b.Dump(&slices).ok()) return out;
  for (const auto& s : slices) out.append(reinterpret_cast<const char*>(s.begin()), s.size());
  return out;
}

// `pathctl caps` probes the host itself, or asks the daemon: either way one v1::Capabilities
// (the same api::ToProto), so the two --json documents parse as the same message and, on the
// same host as the same user (root), say the same about every source.
TEST(DaemonCaps, TheLocalProbeAndTheDaemonAnswerWithOneDocument) {
  Daemon d;
  ASSERT_TRUE(d.Ready()) << d.Log();
  const CmdResult remote = d.Ctl("caps --json");
  const CmdResult local = Sh(kBin + "/pathctl caps --json");
  ASSERT_EQ(remote.rc, 0) << remote.out;
  ASSERT_EQ(local.rc, 0) << local.out;
  v1::Capabilities from_daemon, here;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(remote.out, &from_daemon).ok())
      << remote.out;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(local.out, &here).ok()) << local.out;
  EXPECT_FALSE(from_daemon.daemon_version().empty());
  EXPECT_TRUE(here.daemon_version().empty());  // nobody but pathctl answered
  EXPECT_EQ(here.kernel_release(), from_daemon.kernel_release());
  EXPECT_EQ(here.running_as_root(), from_daemon.running_as_root());
  EXPECT_EQ(here.best_branch_source(), from_daemon.best_branch_source());
  for (const auto& [name, a, b] :
       {std::tuple{"ebpf_stacks", &here.ebpf_stacks(), &from_daemon.ebpf_stacks()},
        std::tuple{"lbr", &here.lbr(), &from_daemon.lbr()},
        std::tuple{"intel_pt", &here.intel_pt(), &from_daemon.intel_pt()},
        std::tuple{"ptrace_bursts", &here.ptrace_bursts(), &from_daemon.ptrace_bursts()}})
    EXPECT_EQ(a->available(), b->available())
        << name << ": " << a->detail() << " / " << b->detail();
  EXPECT_EQ(here.has_step_mechanisms(), from_daemon.has_step_mechanisms());
}

TEST(DaemonGrpc, HealthAndReflectionAnswer) {
  Daemon d;
  ASSERT_TRUE(d.Ready()) << d.Log();
  auto channel = grpc::CreateChannel("unix:" + d.socket(), grpc::InsecureChannelCredentials());
  {
    std::string service = "pathprof.v1.PathProfiler";
    grpc::ClientContext ctx;
    grpc::ByteBuffer resp;
    auto s = grpc::internal::BlockingUnaryCall<grpc::ByteBuffer, grpc::ByteBuffer>(
        channel.get(),
        grpc::internal::RpcMethod("/grpc.health.v1.Health/Check",
                                  grpc::internal::RpcMethod::NORMAL_RPC),
        &ctx, Bytes(std::string("\x0a") + char(service.size()) + service), &resp);
    ASSERT_TRUE(s.ok()) << s.error_message();
    EXPECT_EQ(Str(resp), std::string("\x08\x01", 2));  // status: SERVING
  }
  {
    grpc::ClientContext ctx;
    std::unique_ptr<grpc::ClientReaderWriter<grpc::ByteBuffer, grpc::ByteBuffer>> stream(
        grpc::internal::ClientReaderWriterFactory<grpc::ByteBuffer, grpc::ByteBuffer>::Create(
            channel.get(),
            grpc::internal::RpcMethod(
                "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo",
                grpc::internal::RpcMethod::BIDI_STREAMING),
            &ctx));
    ASSERT_TRUE(stream->Write(Bytes(std::string("\x3a\x00", 2))));  // list_services: ""
    stream->WritesDone();
    grpc::ByteBuffer resp;
    ASSERT_TRUE(stream->Read(&resp));
    std::string listed = Str(resp);
    EXPECT_NE(listed.find("pathprof.v1.PathProfiler"), std::string::npos);
    EXPECT_NE(listed.find("grpc.health.v1.Health"), std::string::npos);
    EXPECT_TRUE(stream->Finish().ok());
  }
}

TEST(DaemonAuth, NonRootUserSeesOnlyItsOwnProcesses) {
  std::string as = EnsureTestUser();
  Daemon d("", {"--socket-group", kTestGroup, "--admin-group", "pathprof-test-admins"});
  ASSERT_TRUE(d.Ready()) << d.Log();
  HotLoop roots;  // owned by root
  pid_t mine = Spawn({"/usr/bin/setpriv", std::string("--reuid=") + kTestUser,
                      std::string("--regid=") + kTestGroup, "--clear-groups",
                      kBin + "/example_hotloop", "0"});
  std::this_thread::sleep_for(std::chrono::milliseconds(300));

  auto denied = d.Ctl("start --pid " + std::to_string(roots.pid()), as);
  EXPECT_EQ(denied.rc, 5) << denied.out << d.Log();
  EXPECT_NE(denied.out.find("permission denied: pid " + std::to_string(roots.pid()) +
                            " belongs to uid 0"),
            std::string::npos)
      << denied.out;

  auto allowed = d.Ctl("start --pid " + std::to_string(mine) + " --stack-hz 0", as);
  EXPECT_EQ(allowed.rc, 0) << allowed.out << d.Log();

  auto ps = d.Ctl("ps --json", as);
  EXPECT_EQ(ps.rc, 0) << ps.out;
  EXPECT_NE(ps.out.find("\"pid\":" + std::to_string(mine) + ","), std::string::npos) << ps.out;
  EXPECT_EQ(ps.out.find("\"pid\":" + std::to_string(roots.pid()) + ","), std::string::npos);

  // Root's session is invisible and inaccessible to the user.
  auto root_session = d.Ctl("start --pid " + std::to_string(roots.pid()) + " --stack-hz 0");
  ASSERT_EQ(root_session.rc, 0) << root_session.out;
  std::string rid = FirstLine(root_session.out);
  auto peek = d.Ctl("paths " + rid, as);
  EXPECT_EQ(peek.rc, 5) << peek.out;
  EXPECT_NE(peek.out.find("belongs to uid 0"), std::string::npos) << peek.out;
  auto list = d.Ctl("sessions", as);
  EXPECT_EQ(list.out.find(rid), std::string::npos) << list.out;
  // Root sees both.
  auto all = d.Ctl("sessions");
  EXPECT_NE(all.out.find(rid), std::string::npos);
  EXPECT_NE(all.out.find(FirstLine(allowed.out)), std::string::npos);

  kill(mine, SIGKILL);
  waitpid(mine, nullptr, 0);
}

}  // namespace
}  // namespace pathprof::daemon::testing
