// The one printer family: how pathctl shows each v1 message, as JSON (--json) or as text for a
// person. The query commands print the daemon's answers (or a recording's, answered here by the
// same code: api/answers.h), `pathctl run` and `pathctl analyze` print their reports' messages,
// all through these, so a table reads the same whichever command printed it.
#pragma once

#include <string>

#include <google/protobuf/message.h>
#include <google/protobuf/repeated_ptr_field.h>

#include "pathprof/v1/profiler.pb.h"
#include "pathprof/v1/reports.pb.h"

namespace pathctl {

// A v1 message as protobuf's JSON mapping (proto field names, every field printed, 64-bit
// integers as strings, enums by name), one line: what every command's --json prints.
void PrintJson(const google::protobuf::Message& message);

std::string LocationText(const pathprof::v1::Location& l);  // "func+0x1a (file.c:12)"
// A function as hot methods name it: its name alone ("func", "memcmp@plt", "zstd+0x97210"),
// the address and image where it has none.
std::string FunctionText(const pathprof::v1::Location& l);
std::string EstimateText(const pathprof::v1::Estimate& e);  // "1234 ±56" or "1234"
const char* SessionStateName(pathprof::v1::SessionState s);
const char* BranchSourceName(pathprof::v1::BranchSource s);

// Each answer as a table under a line naming what it is. `how` says how the paths were
// obtained (default: the estimator).
void PrintHotPaths(const pathprof::v1::HotPaths& hp, const std::string& how = "");
// "path N:" and the blocks of each path (an answer to a request with_blocks).
void PrintPathBlocks(const pathprof::v1::HotPaths& hp);
void PrintHotSubpaths(const pathprof::v1::HotSubpaths& sp);
void PrintHotCallPairs(const pathprof::v1::HotCallPairs& pairs);
void PrintHotMethods(const pathprof::v1::HotMethods& methods);
void PrintTree(const pathprof::v1::CallingContextTree& tree);
// A report's four tables under their titles (pathctl run's and analyze's): hot paths with their
// blocks, subpaths, call pairs, and methods under `methods_title`.
void PrintReportTables(const pathprof::v1::HotPaths& paths,
                       const pathprof::v1::HotSubpaths& subpaths,
                       const pathprof::v1::HotCallPairs& pairs,
                       const pathprof::v1::HotMethods& methods, const char* methods_title);
// The pipeline's accounting per target: samples, windows, CPU, memory, and every drop and
// decode error by reason.
void PrintTargetStats(const google::protobuf::RepeatedPtrField<pathprof::v1::TargetStats>& stats);
// How a recording decoded (pathctl analyze): counts, and what was lost by reason.
void PrintDecodeSummary(const pathprof::v1::DecodeSummary& d);

}  // namespace pathctl
