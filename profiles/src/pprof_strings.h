// Makes arbitrary bytes (symbol names from binaries, user labels) fit for a proto3 string field:
// valid UTF-8, bounded length.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace pathprof::profiles::pprof {

struct CleanedString {
  std::string text;
  bool sanitized = false;  // some bytes were not UTF-8 and became '?'
  bool truncated = false;  // cut to max_bytes, ending in "..."
};

// Replaces each byte that does not start a well-formed UTF-8 sequence (RFC 3629: no overlong
// forms, no surrogates, nothing above U+10FFFF) with '?', then cuts the result to at most
// max_bytes at a character boundary.
CleanedString CleanString(std::string_view in, size_t max_bytes);

// True when CleanString would return `in` unchanged (the common case, checked without copying).
bool IsClean(std::string_view in, size_t max_bytes);

}  // namespace pathprof::profiles::pprof
