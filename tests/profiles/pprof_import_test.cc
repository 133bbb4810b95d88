// Reads back what ProfileBuilder writes, and what a hostile or broken file holds: references
// that resolve to nothing, gzip cut short, a gzip bomb, random bytes.
#include "pathprof/profiles/pprof_import.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "gzip.h"
#include "pathprof/profiles/pprof_export.h"
#include "pprof/profile.pb.h"

namespace pathprof::profiles::pprof {
namespace {

namespace pb = ::perftools::profiles;

Frame Fn(const std::string& name, int64_t line) {
  Frame f;
  f.function = name;
  f.file = name + ".c";
  f.line = line;
  return f;
}

// Three samples over two sample types: one with an inlined call and a mapped, build-id'd leaf,
// one that only counts paths, and a repeated stack.
ProfileBuilder ThreeSamples() {
  ProfileOptions o;
  o.sample_types = {{"samples", "count"}, {"path_count", "count"}};
  o.period_type = {"cpu", "nanoseconds"};
  o.period = 10'101'010;
  o.time_nanos = 1'700'000'000'000'000'000;
  o.duration_nanos = 5'000'000'000;
  o.comments = {"window 7"};
  auto b = ProfileBuilder::Create(o);
  EXPECT_TRUE(b.ok());
  Location leaf;
  leaf.address = 0x401010;
  leaf.mapping = {0x400000, 0x500000, 0x1000, "/usr/bin/zstd", "beef"};
  leaf.frames = {Fn("memcpy_inline", 12), Fn("compress_block", 40)};  // memcpy inlined
  Location caller;
  caller.address = 0x400900;
  caller.mapping = leaf.mapping;
  caller.frames = {Fn("main", 7)};
  Sample a;
  a.stack = {leaf, caller};
  a.values = {30, 0};
  a.num_labels = {{"pid", 4242, ""}};
  a.labels = {{"thread", "worker"}};
  EXPECT_TRUE(b->AddSample(a).ok());
  Sample paths;
  paths.stack = {caller};
  paths.values = {0, 5};
  paths.num_labels = {{"path_length", 9, ""}};
  EXPECT_TRUE(b->AddSample(paths).ok());
  a.values = {12, 0};
  EXPECT_TRUE(b->AddSample(a).ok());
  return std::move(b).value();
}

std::vector<std::string> FunctionNames(const ImportedProfile& p, const ImportedSample& s) {
  std::vector<std::string> out;
  for (size_t at : s.locations)
    for (const ImportedLine& line : p.locations[at].lines)
      out.push_back(p.functions[line.function].name + "@" + std::to_string(line.line));
  return out;
}

TEST(PprofImport, ReadsBackWhatTheBuilderWrote) {
  ProfileBuilder b = ThreeSamples();
  auto gz = b.SerializeGzip();
  ASSERT_TRUE(gz.ok());
  auto p = ImportProfile(*gz);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  ASSERT_EQ(p->sample_types.size(), 2u);
  EXPECT_EQ(p->sample_types[1].type, "path_count");
  EXPECT_EQ(p->period_type.type, "cpu");
  EXPECT_EQ(p->period, 10'101'010);
  EXPECT_EQ(p->time_nanos, 1'700'000'000'000'000'000);
  EXPECT_EQ(p->duration_nanos, 5'000'000'000);
  EXPECT_EQ(p->comments, std::vector<std::string>{"window 7"});
  EXPECT_EQ(p->Totals(), (std::vector<int64_t>{42, 5}));
  ASSERT_EQ(p->samples.size(), 3u);
  // Leaf first, the inlined callee before the function it was inlined into.
  EXPECT_EQ(FunctionNames(*p, p->samples[0]),
            (std::vector<std::string>{"memcpy_inline@12", "compress_block@40", "main@7"}));
  EXPECT_EQ(FunctionNames(*p, p->samples[1]), std::vector<std::string>{"main@7"});
  EXPECT_EQ(p->samples[2].locations, p->samples[0].locations);  // one location table
  ASSERT_EQ(p->mappings.size(), 1u);
  EXPECT_EQ(p->mappings[0].file, "/usr/bin/zstd");
  EXPECT_EQ(p->mappings[0].build_id, "beef");
  EXPECT_EQ(p->mappings[0].offset, 0x1000u);
  const ImportedLocation& leaf = p->locations[p->samples[0].locations[0]];
  EXPECT_EQ(leaf.address, 0x401010u);
  ASSERT_TRUE(leaf.mapping.has_value());
  EXPECT_EQ(*leaf.mapping, 0u);
  ASSERT_EQ(p->samples[0].num_labels.size(), 1u);
  EXPECT_EQ(p->samples[0].num_labels[0].key, "pid");
  EXPECT_EQ(p->samples[0].num_labels[0].value, 4242);
  ASSERT_EQ(p->samples[0].labels.size(), 1u);
  EXPECT_EQ(p->samples[0].labels[0].value, "worker");

  auto raw = b.SerializeUncompressed();
  ASSERT_TRUE(raw.ok());
  auto plain = ImportProfile(*raw);
  ASSERT_TRUE(plain.ok()) << plain.status().ToString();
  EXPECT_EQ(plain->Totals(), p->Totals());
}

// Ids are only unique, not dense: a writer may number its tables in any order.
TEST(PprofImport, IdsAreLookedUpNotCounted) {
  pb::Profile p;
  for (const char* s : {"", "samples", "count", "f"}) p.add_string_table(s);
  p.add_sample_type()->set_type(1);
  p.mutable_sample_type(0)->set_unit(2);
  pb::Function* f = p.add_function();
  f->set_id(90);
  f->set_name(3);
  pb::Location* l = p.add_location();
  l->set_id(17);
  l->add_line()->set_function_id(90);
  pb::Sample* s = p.add_sample();
  s->add_location_id(17);
  s->add_value(3);
  auto read = ImportProfile(p.SerializeAsString());
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  ASSERT_EQ(read->samples.size(), 1u);
  EXPECT_EQ(read->functions[read->locations[read->samples[0].locations[0]].lines[0].function].name,
            "f");
}

TEST(PprofImport, AReferenceToNothingIsAnErrorNamingIt) {
  pb::Profile p;
  for (const char* s : {"", "samples", "count"}) p.add_string_table(s);
  p.add_sample_type()->set_type(1);
  p.mutable_sample_type(0)->set_unit(2);
  pb::Sample* s = p.add_sample();
  s->add_location_id(7);
  s->add_value(1);
  auto read = ImportProfile(p.SerializeAsString());
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(read.status().message().find("location 7 not found"), std::string::npos)
      << read.status().message();

  s->clear_location_id();
  s->add_value(2);  // two values, one sample type
  read = ImportProfile(p.SerializeAsString());
  ASSERT_FALSE(read.ok());
  EXPECT_NE(read.status().message().find("2 values for 1 sample types"), std::string::npos)
      << read.status().message();

  s->clear_value();
  s->add_value(1);
  p.mutable_sample_type(0)->set_unit(99);
  read = ImportProfile(p.SerializeAsString());
  ASSERT_FALSE(read.ok());
  EXPECT_NE(read.status().message().find("string 99 of 3"), std::string::npos)
      << read.status().message();
}

TEST(PprofImport, GzipCutShortOrInflatingPastTheBoundIsRefused) {
  auto gz = ThreeSamples().SerializeGzip();
  ASSERT_TRUE(gz.ok());
  auto cut = ImportProfile(gz->substr(0, gz->size() - 9));
  ASSERT_FALSE(cut.ok());
  EXPECT_EQ(cut.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(cut.status().message().find("cut short"), std::string::npos) << cut.status().message();

  // 64 MiB of zeros gzip to about 64 KiB: refused at a 1 MiB bound before it is all inflated.
  auto bomb = GzipCompress(std::string(64u << 20, '\0'));
  ASSERT_TRUE(bomb.ok());
  ASSERT_LT(bomb->size(), 1u << 20);
  auto read = ImportProfile(*bomb, {.max_uncompressed_bytes = 1u << 20});
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.status().code(), ErrorCode::kResourceExhausted);
  EXPECT_NE(read.status().message().find("more than 1048576"), std::string::npos)
      << read.status().message();
}

TEST(PprofImport, RandomBytesAndTruncationsNeverCrash) {
  auto raw = ThreeSamples().SerializeUncompressed();
  ASSERT_TRUE(raw.ok());
  std::mt19937 rng(11);
  int accepted = 0;
  for (int round = 0; round < 2000; ++round) {
    std::string bytes = *raw;
    if (round % 2 == 0) {
      bytes.resize(rng() % bytes.size());
    } else {
      for (int k = 0; k < 4; ++k) bytes[rng() % bytes.size()] = static_cast<char>(rng());
    }
    auto read = ImportProfile(bytes);
    if (!read.ok()) {
      EXPECT_EQ(read.status().code(), ErrorCode::kInvalidArgument) << read.status().ToString();
      continue;
    }
    ++accepted;
    // Whatever was accepted resolves: every index is in range.
    for (const ImportedSample& s : read->samples) {
      EXPECT_EQ(s.values.size(), read->sample_types.size());
      for (size_t at : s.locations) {
        ASSERT_LT(at, read->locations.size());
        for (const ImportedLine& line : read->locations[at].lines)
          EXPECT_LT(line.function, read->functions.size());
      }
    }
  }
  EXPECT_GT(accepted, 0);  // some damage leaves a valid profile: the checks above ran
}

}  // namespace
}  // namespace pathprof::profiles::pprof
