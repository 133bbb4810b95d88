// Text formatting for pathtop cells: numbers in a few columns, symbolized locations, paths as
// block sequences, and fitting a line to the terminal width. Pure functions, no terminal.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "pathprof/v1/profiler.pb.h"

namespace pathtop {

namespace v1 = ::pathprof::v1;

// "main+0x1a", or "0x401a2b" when the location has no function.
std::string FormatLocation(const v1::Location& loc);
// The function's name, or its address when it has none: "hot", "0x401a2b".
std::string FunctionName(const v1::Location& loc);
// A calling-context tree node's identity across refreshes: node ids may change between answers,
// the chain of (function, call site) from the root does not. The tree view and the flame graph
// key their open/closed, selection and zoom state on it.
std::string ContextKey(const std::string& parent_key, const v1::CctNode& node);
// The blocks first to last; a block in the same function as the one before is shown as its
// offset only: "loop+0x10 > +0x24 > +0x30 > sum+0x0".
std::string FormatBlocks(const google::protobuf::RepeatedPtrField<v1::Location>& blocks);
// Share 0..1 as a percentage with one decimal: "12.3".
std::string FormatPercent(double share);
// A count with a k/M/G suffix to fit 6 columns: "999", "12.3k", "4.56M".
std::string FormatCount(double value);
// Bytes as "12.3M".
std::string FormatBytes(uint64_t bytes);

// Cuts `text` to at most `width` columns; a cut line ends in "~" so the reader knows. Bytes
// outside printable ASCII show as "?".
std::string Truncate(const std::string& text, int width);
// Pads or cuts to exactly `width` columns, aligned right or left.
std::string Fit(const std::string& text, int width, bool right_align);
// Word-wraps `text` into lines of at most `width` columns, breaking at spaces; lines after the
// first start with `indent` spaces. Status and notes wrap instead of being cut, so what pathtop
// says is readable whole at 80 columns; only a single word wider than a line is cut ("~").
std::vector<std::string> Wrap(const std::string& text, int width, int indent = 2);

}  // namespace pathtop
