// Real pprof bytes for the push tests, made by the profiles stage's exporter, so the tests push
// what the daemon will push.
#pragma once

#include <string>

#include "pathprof/profiles/pprof_export.h"

namespace pathprof::fleet::testing {

inline std::string MakePprof(const std::string& leaf_function) {
  namespace pp = profiles::pprof;
  pp::ProfileOptions options;
  options.sample_types = {{"cpu", "nanoseconds"}};
  options.period_type = {"cpu", "nanoseconds"};
  options.period = 10'101'010;  // 99 Hz
  options.time_nanos = 1'700'000'000'000'000'000;
  options.duration_nanos = 60'000'000'000;
  auto builder = pp::ProfileBuilder::Create(options);
  if (!builder.ok()) return "";
  pp::Sample sample;
  pp::Location leaf, root;
  leaf.address = 0x401000;
  leaf.frames.emplace_back().function = leaf_function;
  root.address = 0x400800;
  root.frames.emplace_back().function = "main";
  sample.stack = {leaf, root};
  sample.values = {30'303'030};
  if (!builder->AddSample(sample).ok()) return "";
  auto bytes = builder->SerializeGzip();
  return bytes.ok() ? *bytes : "";
}

}  // namespace pathprof::fleet::testing
