#include "pathtop/format.h"

#include <cinttypes>
#include <cstdio>

namespace pathtop {

namespace {
std::string Hex(uint64_t v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%" PRIx64, v);
  return buf;
}
}  // namespace

std::string FormatLocation(const v1::Location& loc) {
  if (loc.function().empty()) return Hex(loc.address());
  return loc.function() + "+" + Hex(loc.offset());
}

std::string FormatBlocks(const google::protobuf::RepeatedPtrField<v1::Location>& blocks) {
  std::string out;
  const v1::Location* prev = nullptr;
  for (const v1::Location& b : blocks) {
    if (prev != nullptr) out += " > ";
    if (prev != nullptr && !b.function().empty() && b.function() == prev->function()) {
      out += "+" + Hex(b.offset());
    } else {
      out += FormatLocation(b);
    }
    prev = &b;
  }
  return out;
}

std::string FormatOutcomes(uint64_t outcomes, uint32_t length) {
  std::string out;
  for (uint32_t i = 0; i < length && i < 64; ++i) out += ((outcomes >> i) & 1) ? 'T' : 'N';
  return out;
}

std::string FormatPercent(double share) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", share * 100.0);
  return buf;
}

std::string FormatCount(double value) {
  char buf[32];
  if (value < 0) value = 0;
  if (value < 1000) {
    std::snprintf(buf, sizeof buf, "%.0f", value);
  } else if (value < 1e6) {
    std::snprintf(buf, sizeof buf, "%.1fk", value / 1e3);
  } else if (value < 1e9) {
    std::snprintf(buf, sizeof buf, "%.2fM", value / 1e6);
  } else {
    std::snprintf(buf, sizeof buf, "%.2fG", value / 1e9);
  }
  return buf;
}

std::string FormatBytes(uint64_t bytes) {
  char buf[32];
  double b = static_cast<double>(bytes);
  if (b < 1024) {
    std::snprintf(buf, sizeof buf, "%.0fB", b);
  } else if (b < 1024.0 * 1024) {
    std::snprintf(buf, sizeof buf, "%.1fK", b / 1024);
  } else if (b < 1024.0 * 1024 * 1024) {
    std::snprintf(buf, sizeof buf, "%.1fM", b / (1024.0 * 1024));
  } else {
    std::snprintf(buf, sizeof buf, "%.1fG", b / (1024.0 * 1024 * 1024));
  }
  return buf;
}

std::string Truncate(const std::string& in, int width) {
  if (width <= 0) return "";
  // Names come from the profiled binary: control bytes would move the cursor and multi-byte
  // characters would break the column arithmetic, so each shows as one '?'.
  std::string text = in;
  for (char& c : text) {
    unsigned char u = static_cast<unsigned char>(c);
    if (u < 0x20 || u >= 0x7f) c = '?';
  }
  if (static_cast<int>(text.size()) <= width) return text;
  return text.substr(0, width - 1) + "~";
}

std::string Fit(const std::string& text, int width, bool right_align) {
  if (width <= 0) return "";
  std::string t = Truncate(text, width);
  std::string pad(width - t.size(), ' ');
  return right_align ? pad + t : t + pad;
}

}  // namespace pathtop
