// The emulator against the CPU on code nobody chose, at scale
// (tests/emulator/differential_harness.h says how): PATHPROF_DIFFERENTIAL_INSTRUCTIONS random
// instructions (default 10^6; issue 40's figure is 10^8) from seed PATHPROF_DIFFERENTIAL_SEED
// (default 1), then a Markdown table of what was drawn, what diverged and what ended early, by
// mnemonic.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "differential_harness.h"

namespace {

using pathprof::emulator::differential::kBlock;
using pathprof::emulator::differential::Totals;

Totals g_totals;

void BM_Differential(benchmark::State& state) {
  const char* env = std::getenv("PATHPROF_DIFFERENTIAL_INSTRUCTIONS");
  const uint64_t wanted = env ? std::strtoull(env, nullptr, 10) : 1'000'000;
  const char* seed_env = std::getenv("PATHPROF_DIFFERENTIAL_SEED");
  const uint64_t seed = seed_env ? std::strtoull(seed_env, nullptr, 10) : 1;
  if (const std::string missing = pathprof::emulator::differential::MissingCpuFeatures();
      !missing.empty()) {
    static std::string why;  // the library may keep the pointer past this call
    why = "this CPU lacks what the drawn instructions need:" + missing;
    state.SkipWithError(why.c_str());
    return;
  }
  for (auto _ : state) {
    if (!pathprof::emulator::differential::RunBlocks(wanted, seed, g_totals)) {
      state.SkipWithError("cannot map the arena");
      return;
    }
  }
  const Totals& t = g_totals;
  state.counters["instructions"] = static_cast<double>(t.instructions);
  state.counters["blocks"] = static_cast<double>(t.blocks);
  uint64_t diverged = 0;
  for (const auto& [k, v] : t.divergences) diverged += v;
  state.counters["diverged_blocks"] = static_cast<double>(diverged);
  state.counters["native_faults"] = static_cast<double>(t.native_faults);
  uint64_t disagreed = 0;
  for (const auto& [k, v] : t.tracked_disagreements) disagreed += v;
  state.counters["tracked_blocks"] = static_cast<double>(t.tracked_blocks);
  state.counters["tracked_disagreed"] = static_cast<double>(disagreed);
}
BENCHMARK(BM_Differential)->Iterations(1)->Unit(benchmark::kSecond);

void PrintTable() {
  const Totals& t = g_totals;
  if (t.blocks == 0) return;
  std::printf("\n### Emulator against the CPU: %llu random instructions in %llu blocks of %d\n\n",
              static_cast<unsigned long long>(t.instructions),
              static_cast<unsigned long long>(t.blocks), kBlock);
  std::printf("compared blocks: %llu; native faults: %llu\n\n",
              static_cast<unsigned long long>(t.compared_blocks),
              static_cast<unsigned long long>(t.native_faults));
  for (const auto& [k, v] : t.faults_by)
    std::printf("native fault at %s: %llu\n", k.c_str(), static_cast<unsigned long long>(v));
  std::printf("| early end (block not compared) | blocks |\n|---|---:|\n");
  for (const auto& [k, v] : t.early_ends)
    std::printf("| %s | %llu |\n", k.c_str(), static_cast<unsigned long long>(v));
  std::printf(
      "\n| mnemonic | generated | diverging blocks | per million generated |\n"
      "|---|---:|---:|---:|\n");
  for (const auto& [k, v] : t.generated) {
    auto it = t.divergences.find(k);
    const uint64_t d = it == t.divergences.end() ? 0 : it->second;
    std::printf("| %s | %llu | %llu | %.2f |\n", k.c_str(), static_cast<unsigned long long>(v),
                static_cast<unsigned long long>(d), 1e6 * static_cast<double>(d) / v);
  }
  std::printf(
      "\nTracked (part of the buffer and registers unheld, the vector state in half the "
      "blocks): %llu blocks, probes reached %.1f taken branches of %d a block; disagreements:",
      static_cast<unsigned long long>(t.tracked_blocks),
      t.tracked_blocks ? static_cast<double>(t.tracked_taken) / t.tracked_blocks : 0.0, 19);
  if (t.tracked_disagreements.empty()) std::printf(" none");
  for (const auto& [k, v] : t.tracked_disagreements)
    std::printf(" %s %llu", k.c_str(), static_cast<unsigned long long>(v));
  std::printf("\n");
  for (const std::string& e : t.examples) std::printf("example: %s\n", e.c_str());
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  PrintTable();
  return 0;
}
