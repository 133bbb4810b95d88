#include "pprof_samples.h"

#include <cinttypes>
#include <cstdio>
#include <string>

namespace pathprof::profiles::pprof {
namespace {

std::string HexAddress(uint64_t address) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%" PRIx64, address);
  return buf;
}

}  // namespace

Result<std::vector<Sample>> SamplesFromStacks(std::span<const WeightedStack> stacks,
                                              std::span<const int64_t> per_weight) {
  std::vector<Sample> out;
  out.reserve(stacks.size());
  for (size_t i = 0; i < stacks.size(); ++i) {
    const WeightedStack& s = stacks[i];
    if (s.weight < 0) {
      return Error(ErrorCode::kInvalidArgument, "pprof export: stack " + std::to_string(i) +
                                                    " has negative weight " +
                                                    std::to_string(s.weight));
    }
    Sample sample;
    sample.stack = s.frames;
    sample.labels = s.labels;
    sample.values.reserve(per_weight.size());
    for (int64_t factor : per_weight) {
      int64_t v = 0;
      if (__builtin_mul_overflow(s.weight, factor, &v)) {
        return Error(ErrorCode::kResourceExhausted, "pprof export: stack " + std::to_string(i) +
                                                        " weight " + std::to_string(s.weight) +
                                                        " times " + std::to_string(factor) +
                                                        " overflows int64");
      }
      sample.values.push_back(v);
    }
    out.push_back(std::move(sample));
  }
  return out;
}

Result<Sample> SampleFromPath(const HotPath& path, size_t num_values, size_t value_index) {
  if (value_index >= num_values) {
    return Error(ErrorCode::kInvalidArgument,
                 "pprof export: path value index " + std::to_string(value_index) +
                     " is out of range for " + std::to_string(num_values) + " sample types");
  }
  if (path.blocks.empty()) {
    return Error(ErrorCode::kInvalidArgument, "pprof export: hot path has no blocks");
  }
  if (path.function.frames.empty() || path.function.frames.back().function.empty()) {
    return Error(ErrorCode::kInvalidArgument, "pprof export: hot path's function has no name (at " +
                                                  HexAddress(path.function.address) + ")");
  }
  if (path.count < 0) {
    return Error(ErrorCode::kInvalidArgument,
                 "pprof export: hot path has negative count " + std::to_string(path.count));
  }
  // The outermost frame names the function even if the entry location has inlined frames.
  const std::string& function = path.function.frames.back().function;
  Sample sample;
  sample.stack.reserve(path.blocks.size() + 1);
  for (auto it = path.blocks.rbegin(); it != path.blocks.rend(); ++it) {
    const PathBlock& block = *it;
    Location loc;
    loc.address = block.address;
    loc.mapping = path.function.mapping;
    const std::string name = block.name.empty() ? HexAddress(block.address) : block.name;
    loc.frames.push_back(Frame{.function = name + " in " + function,
                               .system_name = {},
                               .file = block.file,
                               .line = block.line,
                               .start_line = 0});
    sample.stack.push_back(std::move(loc));
  }
  sample.stack.push_back(path.function);
  sample.values.assign(num_values, 0);
  sample.values[value_index] = path.count;
  sample.labels = path.labels;
  if (path.path_id >= 0)
    sample.num_labels.push_back(NumLabel{.key = "path_id", .value = path.path_id, .unit = {}});
  return sample;
}

}  // namespace pathprof::profiles::pprof
