// The tables that `pathctl run` and `pathctl analyze` both print for a person, in one wording.
#pragma once

#include <cstdint>
#include <string>

#include "pathprof/pipeline/results.h"

namespace pathctl {

// A path's outcomes as bits, first branch first: "0111" (1 taken or unconditional).
std::string Outcomes(uint64_t bits, uint32_t length);

// "hot paths (ESTIMATOR, N distinct):" and a ranked row per path with its blocks.
void PrintHotPathsText(const pathprof::pipeline::HotPathsResult& paths);
// "hot subpaths (OSP, f=F):" and a row per subpath, its first four blocks.
void PrintHotSubpathsText(const pathprof::pipeline::HotSubpathsResult& subpaths);
// "hot call pairs:" and a row per pair.
void PrintHotCallPairsText(const pathprof::pipeline::HotCallPairsResult& pairs);

}  // namespace pathctl
