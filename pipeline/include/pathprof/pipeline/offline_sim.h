// The path engine run offline, behind `pathctl sim`: a branch stream goes through the path stack
// and the Hot Path Table (or, sampled, through bursty sampling before the HPT or the window
// estimator instead of it), and what the engine found is scored against the exact path profile
// of the same stream: complete, dynamic (per window) and HPS overlap, and the top paths with
// their exact counts and ranks. docs/hwmodel.md reports these figures.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "pathprof/core/enum_words.h"
#include "pathprof/core/status.h"
#include "pathprof/hwmodel/hwmodel.h"
#include "pathprof/pipeline/batch_source.h"

namespace pathprof::pipeline {

enum class SimMode {
  kFull,    // every path goes to the HPT
  kBursty,  // bursts of calls and back-edges ([HPS 2005], see docs/references.md) go to the HPT
  kWindow,  // windows of taken branches go to the window estimator; no HPT
};

inline constexpr EnumWords<SimMode, 3> kSimModeWords{{
    {SimMode::kFull, "full"},
    {SimMode::kBursty, "bursty"},
    {SimMode::kWindow, "window"},
}};
std::string_view SimModeName(SimMode mode);  // "full", "bursty", "window"

struct PathEngineSimOptions {
  hwmodel::PathStackConfig stack = hwmodel::BallLarusPreset();
  hwmodel::HotPathTableConfig hpt;
  std::optional<hwmodel::BurstyConfig> bursty;  // set: SimMode::kBursty
  // Both >= 1: SimMode::kWindow, windows of `window` taken branches, one every window * period.
  uint64_t window = 0, period = 0;
  size_t top = 10;                     // hot paths listed in the result
  uint64_t dynamic_window = 10000000;  // branches per window of the dynamic overlap
};

// One hot path of the estimate next to its exact count.
struct SimTopPath {
  hwmodel::PathDescriptor path;
  double estimate = 0;
  double share = 0;  // of the estimate's total
  double exact = 0;
  size_t exact_rank = 0;  // 0: not in the exact profile
  double relative_error = 0;
};

struct PathEngineSimResult {
  SimMode mode = SimMode::kFull;
  std::string paths;  // the path kind, hwmodel::PathStackConfigName
  hwmodel::HotPathTableConfig hpt;
  uint64_t branches = 0;
  uint64_t paths_completed = 0;
  size_t paths_distinct = 0;
  size_t hpt_valid = 0;  // paths the estimate holds
  double overlap = 0;
  double hps_overlap = 0;
  double ideal_overlap = 0;  // share of the exact profile in its `hpt_valid` heaviest paths
  double top100 = 0;         // share of the exact profile in its 100 heaviest paths (Fig. 5.2)
  std::optional<double> dynamic_overlap;  // none in window mode or with no whole window
  size_t dynamic_windows = 0;
  uint64_t dynamic_window = 0;
  double sampling_period = 1;
  hwmodel::PathStackStats stack;
  hwmodel::HotPathTableStats table;
  std::vector<SimTopPath> top;
};

// Configuration is checked apart from the run so that a caller can tell a bad request from a
// stream that failed while being read.
class PathEngineSim {
 public:
  // Fails when the path stack, HPT, bursty controller or window estimator refuses its settings.
  static Result<PathEngineSim> Create(const PathEngineSimOptions& options);
  PathEngineSim(PathEngineSim&&) noexcept;
  PathEngineSim& operator=(PathEngineSim&&) noexcept;
  ~PathEngineSim();

  // Reads `next` to its end and scores the engine; fails only with the stream's error. Once.
  Result<PathEngineSimResult> Run(const NextBatchFn& next);

 private:
  struct Engines;
  explicit PathEngineSim(std::unique_ptr<Engines> engines);
  std::unique_ptr<Engines> engines_;
};

}  // namespace pathprof::pipeline
