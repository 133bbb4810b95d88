#include "pprof_strings.h"

#include <cstdint>

namespace pathprof::profiles::pprof {
namespace {

// Length of the well-formed UTF-8 sequence at in[i], or 0 if there is none.
size_t Utf8SequenceLength(std::string_view in, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<uint8_t>(in[k]); };
  const uint8_t b0 = byte(i);
  if (b0 < 0x80) return 1;
  size_t len = 0;
  uint8_t lo = 0x80, hi = 0xBF;  // allowed range of the second byte
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    len = 2;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    len = 3;
    if (b0 == 0xE0) lo = 0xA0;  // overlong
    if (b0 == 0xED) hi = 0x9F;  // surrogates
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    len = 4;
    if (b0 == 0xF0) lo = 0x90;  // overlong
    if (b0 == 0xF4) hi = 0x8F;  // above U+10FFFF
  } else {
    return 0;
  }
  if (i + len > in.size()) return 0;
  if (byte(i + 1) < lo || byte(i + 1) > hi) return 0;
  for (size_t k = 2; k < len; ++k) {
    if (byte(i + k) < 0x80 || byte(i + k) > 0xBF) return 0;
  }
  return len;
}

}  // namespace

bool IsClean(std::string_view in, size_t max_bytes) {
  if (in.size() > max_bytes) return false;
  for (size_t i = 0; i < in.size();) {
    if (static_cast<uint8_t>(in[i]) < 0x80) {
      ++i;
      continue;
    }
    const size_t len = Utf8SequenceLength(in, i);
    if (len == 0) return false;
    i += len;
  }
  return true;
}

CleanedString CleanString(std::string_view in, size_t max_bytes) {
  CleanedString out;
  out.text.reserve(in.size() < max_bytes ? in.size() : max_bytes);
  constexpr std::string_view kEllipsis = "...";
  // Keep room for the ellipsis while scanning; decide at the end whether it was needed.
  const size_t keep = max_bytes > kEllipsis.size() ? max_bytes - kEllipsis.size() : max_bytes;
  size_t kept_end = 0;  // out.text size at the last character that fits in `keep`
  for (size_t i = 0; i < in.size();) {
    size_t len = Utf8SequenceLength(in, i);
    if (len == 0) {
      out.sanitized = true;
      out.text.push_back('?');
      len = 1;
    } else {
      out.text.append(in.substr(i, len));
    }
    i += len;
    if (out.text.size() <= keep) kept_end = out.text.size();
    if (out.text.size() > max_bytes) {
      out.truncated = true;
      out.text.resize(kept_end);
      if (max_bytes > kEllipsis.size()) out.text.append(kEllipsis);
      return out;
    }
  }
  return out;
}

}  // namespace pathprof::profiles::pprof
