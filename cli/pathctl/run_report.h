// pathctl run's report: every query's answer from its session once the run ended, as the
// v1::RunReport the daemon's messages make up (each answered by api/answers.h, as the daemon
// answers it), printed as text for a person (printers.h) or as its JSON mapping.
#pragma once

#include <cstdint>

#include "pathprof/pipeline/session.h"
#include "pathprof/pipeline/symbol_service.h"
#include "pathprof/v1/reports.pb.h"

namespace pathctl {

// `top` entries per table, and the top of the calling context tree. `exit_status` is the
// command's (-1 for a --pid target). `symbols` is the session's: with `function_lines` false the
// hot methods and the tree are named without source lines (the text report prints their
// function names alone; the JSON report has their files and lines).
pathprof::v1::RunReport MakeRunReport(const pathprof::pipeline::Session& session,
                                      pathprof::pipeline::SymbolService& symbols, uint32_t top,
                                      int exit_status, bool function_lines);
void PrintRunText(const pathprof::v1::RunReport& r);

}  // namespace pathctl
