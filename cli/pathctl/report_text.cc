#include "pathctl/report_text.h"

#include <cstdio>

namespace pathctl {

namespace pl = pathprof::pipeline;

std::string Outcomes(uint64_t bits, uint32_t length) {
  std::string s;
  for (uint32_t i = 0; i < length; ++i) s += (bits >> i & 1) ? '1' : '0';
  return s;
}

void PrintHotPathsText(const pl::HotPathsResult& paths) {
  std::printf("\nhot paths (%s, %llu distinct):\n",
              std::string(pl::PathEstimatorName(paths.estimator)).c_str(),
              static_cast<unsigned long long>(paths.paths_distinct));
  int rank = 0;
  for (const pl::HotPath& p : paths.paths) {
    std::printf("  #%-2d %5.1f%%", ++rank, 100 * p.estimate.share);
    if (p.estimate.error_bound > 0 && paths.total > 0)
      std::printf(" ±%.1f%%", 100 * p.estimate.error_bound / paths.total);
    std::printf("  %u branches [%s]  %s\n", p.length, Outcomes(p.outcomes, p.length).c_str(),
                p.start.ToString().c_str());
    for (size_t i = 1; i < p.blocks.size(); ++i)
      std::printf("        -> %s\n", p.blocks[i].ToString().c_str());
  }
}

void PrintHotSubpathsText(const pl::HotSubpathsResult& subpaths) {
  std::printf("\nhot subpaths (OSP, f=%.3g):\n", subpaths.sampling_frequency);
  for (const pl::Subpath& s : subpaths.subpaths) {
    std::printf("  %5.1f%%  %u blocks:", 100 * s.estimate.share, s.length);
    for (size_t i = 0; i < s.blocks.size() && i < 4; ++i)
      std::printf(" %s%s", i ? "-> " : "", s.blocks[i].ToString().c_str());
    std::printf("%s\n", s.blocks.size() > 4 ? " ..." : "");
  }
}

void PrintHotCallPairsText(const pl::HotCallPairsResult& pairs) {
  std::printf("\nhot call pairs:\n");
  for (const pl::CallPair& c : pairs.pairs)
    std::printf("  %5.1f%%  %s -> %s\n", 100 * c.estimate.share, c.call_site.ToString().c_str(),
                c.target.ToString().c_str());
}

}  // namespace pathctl
