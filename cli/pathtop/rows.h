// pathprofd's answers as pathtop table rows: one builder per view, plus each view's columns.
#pragma once

#include <vector>

#include "pathprof/v1/profiler.pb.h"
#include "pathtop/table.h"

namespace pathtop {

namespace v1 = ::pathprof::v1;

// Tree nodes whose total share is at least this are open when first seen (as perf report's
// call-graph threshold), so the hot contexts show without a key press.
inline constexpr double kCctOpenShare = 0.05;

std::vector<Column> HotPathColumns();
std::vector<Column> SubpathColumns();
std::vector<Column> CctColumns();
std::vector<Column> CallPairColumns();
std::vector<Column> MethodColumns();
std::vector<Column> TargetColumns();

std::vector<Row> HotPathRows(const v1::HotPaths& msg);
std::vector<Row> SubpathRows(const v1::HotSubpaths& msg);
std::vector<Row> CctRows(const v1::CallingContextTree& msg);
std::vector<Row> CallPairRows(const v1::HotCallPairs& msg);
std::vector<Row> MethodRows(const v1::HotMethods& msg);
std::vector<Row> TargetRows(const v1::ListTargetsResponse& msg);

}  // namespace pathtop
