// Writes pprof profiles, decodes them back with pprof's own generated classes, and (when Go is
// installed) checks that `go tool pprof` reads them as intended.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <cstdio>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "pathprof/profiles/pprof_export.h"
#include "pprof/profile.pb.h"
#include "pprof_samples.h"

namespace pathprof::profiles::pprof {
namespace {

namespace pb = ::perftools::profiles;

std::string Gunzip(const std::string& in) {
  z_stream zs{};
  EXPECT_EQ(inflateInit2(&zs, 15 + 16), Z_OK);
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  zs.avail_in = static_cast<uInt>(in.size());
  std::string out;
  int rc = Z_OK;
  while (rc == Z_OK) {
    char buf[4096];
    zs.next_out = reinterpret_cast<Bytef*>(buf);
    zs.avail_out = sizeof buf;
    rc = inflate(&zs, Z_NO_FLUSH);
    out.append(buf, sizeof buf - zs.avail_out);
  }
  EXPECT_EQ(rc, Z_STREAM_END);
  inflateEnd(&zs);
  return out;
}

pb::Profile Decode(const ProfileBuilder& b) {
  Result<std::string> gz = b.SerializeGzip();
  EXPECT_TRUE(gz.ok()) << gz.status().ToString();
  pb::Profile p;
  EXPECT_TRUE(p.ParseFromString(Gunzip(*gz)));
  return p;
}

const std::string& Str(const pb::Profile& p, int64_t i) {
  return p.string_table(static_cast<int>(i));
}

// "name@line" for each line of a location, innermost first.
std::vector<std::string> LinesOf(const pb::Profile& p, uint64_t location_id) {
  const pb::Location& loc = p.location(static_cast<int>(location_id - 1));
  EXPECT_EQ(loc.id(), location_id);
  std::vector<std::string> out;
  for (const pb::Line& l : loc.line()) {
    const pb::Function& f = p.function(static_cast<int>(l.function_id() - 1));
    EXPECT_EQ(f.id(), l.function_id());
    out.push_back(Str(p, f.name()) + "@" + std::to_string(l.line()));
  }
  return out;
}

std::vector<std::string> LabelsOf(const pb::Profile& p, const pb::Sample& s) {
  std::vector<std::string> out;
  for (const pb::Label& l : s.label()) {
    out.push_back(
        Str(p, l.key()) + "=" +
        (l.str() != 0 ? Str(p, l.str()) : std::to_string(l.num()) + Str(p, l.num_unit())));
  }
  return out;
}

Mapping AppMapping() {
  return Mapping{.start = 0x400000,
                 .limit = 0x500000,
                 .offset = 0,
                 .file = "/usr/bin/app",
                 .build_id = "abc123"};
}

Location Loc(uint64_t address, std::vector<Frame> frames, Mapping m = AppMapping()) {
  return Location{.address = address, .mapping = std::move(m), .frames = std::move(frames)};
}

Frame Fn(std::string name, int64_t line, std::string file = "app.cc") {
  return Frame{.function = std::move(name),
               .system_name = {},
               .file = std::move(file),
               .line = line,
               .start_line = 0};
}

ProfileOptions CpuOptions() {
  ProfileOptions o;
  o.sample_types = {{"samples", "count"}, {"cpu", "nanoseconds"}};
  o.period_type = {"cpu", "nanoseconds"};
  o.period = 10'000'000;
  o.time_nanos = 1'700'000'000'000'000'000;
  o.duration_nanos = 5'000'000'000;
  o.common_labels = {{"host", "h1"}, {"unit", "app.service"}};
  return o;
}

TEST(PprofExport, TablesAreExactAfterDecode) {
  auto b = ProfileBuilder::Create(CpuOptions());
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  // work() with helper() inlined into it, called from main(); then main() alone.
  Location inlined = Loc(0x401010, {Fn("helper", 5), Fn("work", 12)});
  Location main_site = Loc(0x401100, {Fn("main", 30)});
  ASSERT_TRUE(b->AddSample({.stack = {inlined, main_site},
                            .values = {3, 30'000'000},
                            .labels = {{"thread", "t1"}},
                            .num_labels = {{"cpu_id", 2, ""}}})
                  .ok());
  ASSERT_TRUE(
      b->AddSample(
           {.stack = {main_site}, .values = {1, 10'000'000}, .labels = {}, .num_labels = {}})
          .ok());
  EXPECT_EQ(b->stats().samples_added, 2u);

  pb::Profile p = Decode(*b);
  const std::vector<std::string> strings(p.string_table().begin(), p.string_table().end());
  EXPECT_EQ(strings,
            (std::vector<std::string>{"", "samples", "count", "cpu", "nanoseconds", "host", "h1",
                                      "unit", "app.service", "/usr/bin/app", "abc123", "helper",
                                      "app.cc", "work", "main", "thread", "t1", "cpu_id"}));
  EXPECT_EQ(std::set<std::string>(strings.begin(), strings.end()).size(), strings.size());

  ASSERT_EQ(p.sample_type_size(), 2);
  EXPECT_EQ(Str(p, p.sample_type(1).type()), "cpu");
  EXPECT_EQ(Str(p, p.sample_type(1).unit()), "nanoseconds");
  EXPECT_EQ(Str(p, p.period_type().type()), "cpu");
  EXPECT_EQ(p.period(), 10'000'000);
  EXPECT_EQ(p.time_nanos(), 1'700'000'000'000'000'000);
  EXPECT_EQ(p.duration_nanos(), 5'000'000'000);

  ASSERT_EQ(p.mapping_size(), 1);
  const pb::Mapping& m = p.mapping(0);
  EXPECT_EQ(m.id(), 1u);
  EXPECT_EQ(m.memory_start(), 0x400000u);
  EXPECT_EQ(m.memory_limit(), 0x500000u);
  EXPECT_EQ(Str(p, m.filename()), "/usr/bin/app");
  EXPECT_EQ(Str(p, m.build_id()), "abc123");
  EXPECT_TRUE(m.has_functions() && m.has_filenames() && m.has_line_numbers() &&
              m.has_inline_frames());

  ASSERT_EQ(p.function_size(), 3);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(p.function(i).id(), static_cast<uint64_t>(i + 1));
  EXPECT_EQ(Str(p, p.function(0).name()), "helper");
  EXPECT_EQ(Str(p, p.function(0).system_name()), "helper");
  EXPECT_EQ(Str(p, p.function(0).filename()), "app.cc");

  ASSERT_EQ(p.location_size(), 2);  // main_site is stored once
  EXPECT_EQ(p.location(0).address(), 0x401010u);
  EXPECT_EQ(p.location(0).mapping_id(), 1u);
  EXPECT_EQ(LinesOf(p, 1), (std::vector<std::string>{"helper@5", "work@12"}));
  EXPECT_EQ(LinesOf(p, 2), (std::vector<std::string>{"main@30"}));

  ASSERT_EQ(p.sample_size(), 2);
  EXPECT_EQ(
      std::vector<uint64_t>(p.sample(0).location_id().begin(), p.sample(0).location_id().end()),
      (std::vector<uint64_t>{1, 2}));
  EXPECT_EQ(std::vector<int64_t>(p.sample(0).value().begin(), p.sample(0).value().end()),
            (std::vector<int64_t>{3, 30'000'000}));
  EXPECT_EQ(LabelsOf(p, p.sample(0)),
            (std::vector<std::string>{"thread=t1", "cpu_id=2", "host=h1", "unit=app.service"}));
  EXPECT_EQ(
      std::vector<uint64_t>(p.sample(1).location_id().begin(), p.sample(1).location_id().end()),
      (std::vector<uint64_t>{2}));
  EXPECT_EQ(LabelsOf(p, p.sample(1)), (std::vector<std::string>{"host=h1", "unit=app.service"}));
}

TEST(PprofExport, SameAddressWithDifferentFramesIsTwoLocations) {
  auto b = ProfileBuilder::Create(CpuOptions());
  ASSERT_TRUE(b.ok());
  ASSERT_TRUE(b->AddSample({.stack = {Loc(0x401000, {Fn("f", 1)})},
                            .values = {1, 1},
                            .labels = {},
                            .num_labels = {}})
                  .ok());
  ASSERT_TRUE(b->AddSample({.stack = {Loc(0x401000, {Fn("g", 1)})},
                            .values = {1, 1},
                            .labels = {},
                            .num_labels = {}})
                  .ok());
  // Unknown mapping: no mapping record, mapping_id 0.
  ASSERT_TRUE(b->AddSample({.stack = {Loc(0x401000, {Fn("f", 1)}, Mapping{})},
                            .values = {1, 1},
                            .labels = {},
                            .num_labels = {}})
                  .ok());
  pb::Profile p = Decode(*b);
  EXPECT_EQ(p.function_size(), 2);
  ASSERT_EQ(p.location_size(), 3);
  EXPECT_EQ(p.location(2).mapping_id(), 0u);
  EXPECT_EQ(p.mapping_size(), 1);
}

TEST(PprofExport, GzipMagicAndRoundTrip) {
  auto b = ProfileBuilder::Create(CpuOptions());
  ASSERT_TRUE(b.ok());
  ASSERT_TRUE(b->AddSample({.stack = {Loc(0x401000, {Fn("f", 1)})},
                            .values = {1, 10},
                            .labels = {},
                            .num_labels = {}})
                  .ok());
  Result<std::string> gz = b->SerializeGzip();
  Result<std::string> raw = b->SerializeUncompressed();
  ASSERT_TRUE(gz.ok() && raw.ok());
  ASSERT_GE(gz->size(), 10u);
  EXPECT_EQ(static_cast<uint8_t>((*gz)[0]), 0x1f);
  EXPECT_EQ(static_cast<uint8_t>((*gz)[1]), 0x8b);
  EXPECT_EQ(static_cast<uint8_t>((*gz)[2]), 0x08);  // deflate
  EXPECT_EQ(Gunzip(*gz), *raw);
}

TEST(PprofExport, BadOptionsAreErrors) {
  ProfileOptions none;
  EXPECT_EQ(ProfileBuilder::Create(none).status().code(), ErrorCode::kInvalidArgument);
  ProfileOptions empty_unit;
  empty_unit.sample_types = {{"cpu", ""}};
  EXPECT_EQ(ProfileBuilder::Create(empty_unit).status().code(), ErrorCode::kInvalidArgument);
  ProfileOptions bad_default = CpuOptions();
  bad_default.default_sample_type = "wall";
  EXPECT_EQ(ProfileBuilder::Create(bad_default).status().code(), ErrorCode::kInvalidArgument);
  ProfileOptions tiny = CpuOptions();
  tiny.max_string_bytes = 3;
  EXPECT_EQ(ProfileBuilder::Create(tiny).status().code(), ErrorCode::kInvalidArgument);
}

TEST(PprofExport, BadSamplesAreCountedNeverCrash) {
  ProfileOptions o = CpuOptions();
  o.max_string_bytes = 64;
  auto b = ProfileBuilder::Create(o);
  ASSERT_TRUE(b.ok());
  // Wrong value count and an empty label key: errors, nothing added.
  Status wrong = b->AddSample({.stack = {}, .values = {1}, .labels = {}, .num_labels = {}});
  EXPECT_EQ(wrong.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(wrong.message().find("1 values but the profile has 2"), std::string::npos);
  EXPECT_EQ(
      b->AddSample({.stack = {}, .values = {1, 1}, .labels = {{"", "x"}}, .num_labels = {}}).code(),
      ErrorCode::kInvalidArgument);
  // All-zero values: skipped and counted.
  EXPECT_TRUE(
      b->AddSample(
           {.stack = {Loc(1, {Fn("z", 1)})}, .values = {0, 0}, .labels = {}, .num_labels = {}})
          .ok());
  // Empty stack: kept under a named frame so totals stay right.
  EXPECT_TRUE(b->AddSample({.stack = {}, .values = {2, 20}, .labels = {}, .num_labels = {}}).ok());
  // A 1 MiB name and bytes that are not UTF-8.
  const std::string huge(1 << 20, 'x');
  const std::string bad_utf8 =
      std::string("f\xff\xc3") + "x\xe2\x82\xac";  // ...then a valid euro sign
  EXPECT_TRUE(b->AddSample({.stack = {Loc(2, {Fn(huge, 1), Fn(bad_utf8, 2)})},
                            .values = {1, 1},
                            .labels = {{"k", std::string(1000, '\xe2')}},
                            .num_labels = {}})
                  .ok());
  const ExportStats& s = b->stats();
  EXPECT_EQ(s.samples_added, 2u);
  EXPECT_EQ(s.samples_rejected, 2u);
  EXPECT_EQ(s.zero_samples_skipped, 1u);
  EXPECT_EQ(s.empty_stacks, 1u);
  EXPECT_EQ(s.strings_truncated, 2u);  // the huge name and the label value
  EXPECT_EQ(s.strings_sanitized, 2u);  // bad_utf8 and the label value

  pb::Profile p = Decode(*b);  // proto3 parsing checks UTF-8: this fails on a bad string
  ASSERT_EQ(p.sample_size(), 2);
  EXPECT_EQ(LinesOf(p, p.sample(0).location_id(0)),
            (std::vector<std::string>{std::string(kEmptyStackFunction) + "@0"}));
  const std::vector<std::string> lines = LinesOf(p, p.sample(1).location_id(0));
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0], std::string(61, 'x') + "...@1");
  EXPECT_EQ(lines[1],
            "f?"
            "?x\xe2\x82\xac@2");
  for (const std::string& str : p.string_table()) EXPECT_LE(str.size(), 64u);
}

TEST(PprofSamples, StacksBecomeWeightedSamples) {
  std::vector<WeightedStack> stacks = {
      {.frames = {Loc(0x401000, {Fn("leaf", 1)}), Loc(0x401100, {Fn("main", 2)})},
       .weight = 7,
       .labels = {{"tid", "42"}}},
      {.frames = {}, .weight = 0, .labels = {}},
  };
  const std::vector<int64_t> per_weight = {1, 10'000'000, 0};
  auto samples = SamplesFromStacks(stacks, per_weight);
  ASSERT_TRUE(samples.ok()) << samples.status().ToString();
  ASSERT_EQ(samples->size(), 2u);
  EXPECT_EQ((*samples)[0].values, (std::vector<int64_t>{7, 70'000'000, 0}));
  EXPECT_EQ((*samples)[0].stack.size(), 2u);
  EXPECT_EQ((*samples)[0].stack[0].frames[0].function, "leaf");
  EXPECT_EQ((*samples)[0].labels[0].value, "42");
  EXPECT_EQ((*samples)[1].values, (std::vector<int64_t>{0, 0, 0}));

  stacks[1].weight = -1;
  EXPECT_EQ(SamplesFromStacks(stacks, per_weight).status().code(), ErrorCode::kInvalidArgument);
  stacks[1].weight = INT64_MAX / 2;
  EXPECT_EQ(SamplesFromStacks(stacks, per_weight).status().code(), ErrorCode::kResourceExhausted);
}

HotPath ThreeBlockPath() {
  return HotPath{.function = Loc(0x401000, {Fn("parse", 10)}),
                 .blocks = {{.address = 0x401000, .name = "B0", .file = "p.cc", .line = 10},
                            {.address = 0x401020, .name = "B2", .file = "p.cc", .line = 14},
                            {.address = 0x401040, .name = "", .file = "p.cc", .line = 19}},
                 .count = 900,
                 .path_id = 5,
                 .labels = {}};
}

TEST(PprofSamples, PathIsFunctionThenBlocksLeafLast) {
  auto s = SampleFromPath(ThreeBlockPath(), 3, 2);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->values, (std::vector<int64_t>{0, 0, 900}));
  ASSERT_EQ(s->stack.size(), 4u);
  EXPECT_EQ(s->stack[0].frames[0].function, "0x401040 in parse");  // leaf: the last block
  EXPECT_EQ(s->stack[0].address, 0x401040u);
  EXPECT_EQ(s->stack[0].frames[0].line, 19);
  EXPECT_EQ(s->stack[1].frames[0].function, "B2 in parse");
  EXPECT_EQ(s->stack[2].frames[0].function, "B0 in parse");
  EXPECT_EQ(s->stack[3].frames[0].function, "parse");  // root
  EXPECT_EQ(s->stack[0].mapping.file, "/usr/bin/app");
  ASSERT_EQ(s->num_labels.size(), 1u);
  EXPECT_EQ(s->num_labels[0].key, "path_id");
  EXPECT_EQ(s->num_labels[0].value, 5);

  HotPath bad = ThreeBlockPath();
  EXPECT_EQ(SampleFromPath(bad, 3, 3).status().code(), ErrorCode::kInvalidArgument);
  bad.blocks.clear();
  EXPECT_EQ(SampleFromPath(bad, 3, 2).status().code(), ErrorCode::kInvalidArgument);
  bad = ThreeBlockPath();
  bad.function.frames.clear();
  EXPECT_EQ(SampleFromPath(bad, 3, 2).status().code(), ErrorCode::kInvalidArgument);
  bad = ThreeBlockPath();
  bad.count = -4;
  EXPECT_EQ(SampleFromPath(bad, 3, 2).status().code(), ErrorCode::kInvalidArgument);
}

// --- go tool pprof reads what we write ---

bool HaveGo() {
  return std::system("command -v go >/dev/null 2>&1") == 0;
}

class TempDir {
 public:
  TempDir() {
    std::string tmpl = ::testing::TempDir() + "pprof_export_XXXXXX";
    char* made = mkdtemp(tmpl.data());
    EXPECT_NE(made, nullptr);
    path_ = tmpl;
  }
  ~TempDir() { std::system(("rm -rf '" + path_ + "'").c_str()); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Runs `go tool pprof <args> <file>` offline with every cache under `dir`; returns stdout.
std::string RunPprof(const TempDir& dir, const std::string& args, const std::string& file) {
  const std::string& d = dir.path();
  const std::string cmd = "env GOFLAGS= GOPROXY=off GOCACHE='" + d + "/gocache' HOME='" + d +
                          "' PPROF_TMPDIR='" + d + "' PPROF_BINARY_PATH='" + d +
                          "' go tool pprof " + args + " '" + file + "' 2>/dev/null";
  std::FILE* pipe = popen(cmd.c_str(), "r");
  EXPECT_NE(pipe, nullptr);
  if (pipe == nullptr) return "";
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, pipe)) > 0) out.append(buf, n);
  EXPECT_EQ(pclose(pipe), 0) << cmd << "\n" << out;
  return out;
}

std::vector<std::string> SplitLines(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

// A CPU profile whose hottest function is `hot` (70 ms flat) plus two hot paths.
std::string WriteMixedProfile(const TempDir& dir) {
  ProfileOptions o = CpuOptions();
  o.sample_types.push_back({"path_count", "count"});
  o.default_sample_type = "cpu";
  auto b = ProfileBuilder::Create(o);
  EXPECT_TRUE(b.ok()) << b.status().ToString();
  const Location main_site = Loc(0x401100, {Fn("main", 30)});
  const std::vector<WeightedStack> stacks = {
      {.frames = {Loc(0x401200, {Fn("hot", 40)}), main_site}, .weight = 7, .labels = {}},
      {.frames = {Loc(0x401300, {Fn("warm", 50)}), main_site}, .weight = 2, .labels = {}},
      {.frames = {main_site}, .weight = 1, .labels = {}},
  };
  const std::vector<int64_t> per_weight = {1, o.period, 0};
  auto samples = SamplesFromStacks(stacks, per_weight);
  EXPECT_TRUE(samples.ok());
  for (const Sample& s : *samples) EXPECT_TRUE(b->AddSample(s).ok());
  auto path = SampleFromPath(ThreeBlockPath(), 3, 2);
  EXPECT_TRUE(path.ok());
  EXPECT_TRUE(b->AddSample(*path).ok());
  HotPath cold = ThreeBlockPath();
  cold.blocks.erase(cold.blocks.begin() + 1);
  cold.count = 100;
  cold.path_id = 1;
  auto cold_sample = SampleFromPath(cold, 3, 2);
  EXPECT_TRUE(cold_sample.ok());
  EXPECT_TRUE(b->AddSample(*cold_sample).ok());
  auto gz = b->SerializeGzip();
  EXPECT_TRUE(gz.ok());
  const std::string file = dir.path() + "/cpu.pb.gz";
  EXPECT_TRUE(WriteProfileFile(file, *gz).ok());
  return file;
}

TEST(PprofWithGo, TopListsHottestFunctionFirst) {
  if (!HaveGo()) GTEST_SKIP() << "go not installed (apt-get install golang-go): skipping";
  TempDir dir;
  const std::string file = WriteMixedProfile(dir);
  const std::vector<std::string> lines = SplitLines(RunPprof(dir, "-top -sample_index=cpu", file));
  size_t header = 0;
  while (header < lines.size() && lines[header].find("flat%") == std::string::npos) ++header;
  ASSERT_LT(header + 3, lines.size()) << "no -top table in pprof output";
  // "      70ms 70.00% 70.00%       70ms 70.00%  hot"
  std::istringstream first(lines[header + 1]);
  std::string flat, flat_pct, sum_pct, cum, cum_pct, name;
  first >> flat >> flat_pct >> sum_pct >> cum >> cum_pct >> name;
  EXPECT_EQ(flat, "70ms");
  EXPECT_EQ(flat_pct, "70.00%");
  EXPECT_EQ(name, "hot");
  EXPECT_NE(lines[header + 2].find("20ms"), std::string::npos);
  EXPECT_NE(lines[header + 2].find("warm"), std::string::npos);
}

TEST(PprofWithGo, TracesShowPathCountsBlockByBlock) {
  if (!HaveGo()) GTEST_SKIP() << "go not installed (apt-get install golang-go): skipping";
  TempDir dir;
  const std::string file = WriteMixedProfile(dir);
  const std::string out = RunPprof(dir, "-traces -sample_index=path_count", file);
  // Each trace is printed leaf first: the hot path's blocks in reverse, then its function.
  const std::string hot_trace =
      "       900   0x401040 in parse\n"
      "             B2 in parse\n"
      "             B0 in parse\n"
      "             parse\n";
  EXPECT_NE(out.find(hot_trace), std::string::npos) << out;
  const std::string cold_trace =
      "       100   0x401040 in parse\n"
      "             B0 in parse\n"
      "             parse\n";
  EXPECT_NE(out.find(cold_trace), std::string::npos) << out;
  // Path counts alone make the total; the CPU stacks are there with path_count 0.
  EXPECT_NE(out.find("Total samples = 1000 \n"), std::string::npos) << out;
  EXPECT_NE(out.find("         0   hot\n             main\n"), std::string::npos) << out;
}

}  // namespace
}  // namespace pathprof::profiles::pprof
