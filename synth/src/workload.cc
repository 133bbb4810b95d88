#include "pathprof/synth/workload.h"

#include <array>

namespace pathprof::synth {
namespace {

struct Bundled {
  const char* name;
  const char* description;
  WorkloadSpec (*make)();
};

// A few hot nested loops with rare branches in their bodies: a small path working set, like a
// numeric kernel (the easy case of thesis Figure 5.2).
WorkloadSpec Loops() {
  WorkloadSpec s;
  s.functions = 6;
  s.call_levels = 2;
  s.statements = 3;
  s.diamonds = 2;
  s.loop_prob = 0.5;
  s.max_loop_nesting = 3;
  s.mean_trip_count = 16;
  s.call_prob = 0.15;
  s.indirect_call_prob = 0.0;
  s.skew = 3.0;
  s.correlation = 0.5;
  return s;
}

// An interpreter-like mix: dozens of functions with several diamonds per loop body, some
// switches, skewed but not extreme branch biases.
WorkloadSpec Branchy() {
  WorkloadSpec s;
  s.functions = 24;
  s.call_levels = 3;
  s.statements = 4;
  s.diamonds = 3;
  s.loop_prob = 0.3;
  s.max_loop_nesting = 2;
  s.mean_trip_count = 10;
  s.call_prob = 0.12;
  s.indirect_call_prob = 0.03;
  s.switch_prob = 0.08;
  s.main_dispatch = 12;
  // Most branches strongly biased, as measured in real programs; half of the diamonds follow
  // the previous branch's outcome (correlated conditions such as repeated null checks).
  s.skew = 3.0;
  s.correlation = 0.5;
  s.zipf = 1.2;
  return s;
}

// Object-oriented style: many small functions, deep call chains, virtual (indirect) calls and
// bounded recursion.
WorkloadSpec Calls() {
  WorkloadSpec s;
  s.functions = 120;
  s.call_levels = 5;
  s.statements = 3;
  s.diamonds = 1;
  s.loop_prob = 0.2;
  s.max_loop_nesting = 1;
  s.mean_trip_count = 4;
  s.call_prob = 0.3;
  s.indirect_call_prob = 0.15;
  s.indirect_targets = 6;
  s.recursive_fraction = 0.15;
  s.max_recursion = 6;
  s.main_dispatch = 16;
  s.skew = 2.0;
  s.correlation = 0.3;
  return s;
}

// gcc-like: over a thousand functions, branchy bodies, a flat popularity curve: thousands of
// warm paths compete for the Hot Path Table.
WorkloadSpec Large() {
  WorkloadSpec s;
  s.functions = 1200;
  s.call_levels = 4;
  s.statements = 5;
  s.diamonds = 4;
  s.loop_prob = 0.2;
  s.max_loop_nesting = 2;
  s.mean_trip_count = 6;
  s.call_prob = 0.12;
  s.indirect_call_prob = 0.05;
  s.switch_prob = 0.05;
  s.main_dispatch = 400;
  s.skew = 1.0;
  s.correlation = 0.2;
  s.zipf = 0.7;
  return s;
}

constexpr std::array<Bundled, 4> kBundled = {{
    {"loops", "a few hot nested loops with rare branches: small path working set", Loops},
    {"branchy",
     "interpreter-like: several diamonds per loop body, switches, ~1000-1500 distinct paths",
     Branchy},
    {"calls", "call-heavy: deep call chains, indirect calls, bounded recursion", Calls},
    {"large", "gcc-like: 1200 functions, flat popularity, thousands of warm paths", Large},
}};

}  // namespace

std::vector<std::string> BundledWorkloadNames() {
  std::vector<std::string> names;
  for (const auto& b : kBundled) names.emplace_back(b.name);
  return names;
}

std::string BundledWorkloadDescription(std::string_view name) {
  for (const auto& b : kBundled)
    if (name == b.name) return b.description;
  return "";
}

Result<WorkloadSpec> BundledWorkload(std::string_view name, uint64_t seed) {
  for (const auto& b : kBundled) {
    if (name == b.name) {
      WorkloadSpec s = b.make();
      s.name = b.name;
      s.seed = seed;
      return s;
    }
  }
  std::string known;
  for (const auto& b : kBundled) known += std::string(known.empty() ? "" : ", ") + b.name;
  return Error(ErrorCode::kNotFound,
               "no bundled synthetic workload '" + std::string(name) + "' (known: " + known + ")");
}

}  // namespace pathprof::synth
