// The daemon's side of pathprof-import (pipeline/helper/): decodes a recording in that helper
// and builds the profile stores from the frames it sends (import_wire.h). The recording is
// opened here with the requester's rights and handed over as a descriptor; the helper runs as
// the requester (nobody for root) under seccomp, so a crafted perf.data, .pbs or binary that
// takes over a decoder has an unprivileged process's rights, and what it sends is checked.
// Every wait on the helper is bounded: silence for options.helper_silence_ms ends it.
#pragma once

#include <string>

#include "pathprof/core/status.h"
#include "pathprof/pipeline/offline_analysis.h"

namespace pathprof::pipeline {

// AnalyzeFile for options.decode_in_helper_for.
Result<AnalyzeResult> AnalyzeFileInHelper(const std::string& path, const AnalyzeOptions& options);

// Where pathprof-import is looked for ($PATHPROF_IMPORT, beside the running executable, the
// installed path, the build's bin/).
Result<std::string> ImportHelperPath();

}  // namespace pathprof::pipeline
