#include "pathtop/format.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <utility>

#include "pathprof/core/hex.h"

namespace pathtop {

using pathprof::HexAddress;

std::string FormatLocation(const v1::Location& loc) {
  if (loc.function().empty()) return HexAddress(loc.address());
  return loc.function() + "+" + HexAddress(loc.offset());
}

std::string FunctionName(const v1::Location& loc) {
  return loc.function().empty() ? HexAddress(loc.address()) : loc.function();
}

std::string ContextKey(const std::string& parent_key, const v1::CctNode& node) {
  return parent_key + "/" + FunctionName(node.function()) + "@" +
         HexAddress(node.call_site().address());
}

std::string FormatBlocks(const google::protobuf::RepeatedPtrField<v1::Location>& blocks) {
  std::string out;
  const v1::Location* prev = nullptr;
  for (const v1::Location& b : blocks) {
    if (prev != nullptr) out += " > ";
    if (prev != nullptr && !b.function().empty() && b.function() == prev->function()) {
      out += "+" + HexAddress(b.offset());
    } else {
      out += FormatLocation(b);
    }
    prev = &b;
  }
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

namespace {

// Splits at runs of two or more spaces: the status lines' fields ("pid 42  session s1 running"),
// each with the spaces before it, so that a line holding several keeps their spacing.
std::vector<std::pair<std::string, std::string>> Fields(const std::string& text) {
  std::vector<std::pair<std::string, std::string>> out;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t start = text.find_first_not_of(' ', pos);
    if (start == std::string::npos) break;
    size_t end = text.find("  ", start);
    if (end == std::string::npos) end = text.size();
    size_t last = text.find_last_not_of(' ', end - 1);
    out.emplace_back(text.substr(pos, start - pos), text.substr(start, last + 1 - start));
    pos = last + 1;
  }
  return out;
}

std::vector<std::string> Words(const std::string& text) {
  std::vector<std::string> out;
  size_t pos = 0;
  while ((pos = text.find_first_not_of(' ', pos)) != std::string::npos) {
    size_t end = std::min(text.find(' ', pos), text.size());
    out.push_back(text.substr(pos, end - pos));
    pos = end;
  }
  return out;
}

}  // namespace

std::vector<std::string> Wrap(const std::string& text, int width, int indent) {
  std::vector<std::string> lines;
  if (width <= 0) return lines;
  const size_t w = static_cast<size_t>(width);
  const std::string pad(static_cast<size_t>(std::clamp(indent, 0, width / 2)), ' ');
  std::string line;
  bool fresh = true;
  auto place = [&](const std::string& piece, const std::string& sep) {
    if (!fresh && line.size() + sep.size() + piece.size() > w) {
      lines.push_back(Truncate(line, width));
      fresh = true;
    }
    line = fresh ? (lines.empty() ? "" : pad) : line + sep;
    line += piece;
    fresh = false;
  };
  // A field goes whole onto a line that can hold it; only a field wider than a line breaks
  // between its words, so "session s1 running" does not end one line and start the next.
  bool first = true;
  for (const auto& [before, field] : Fields(text)) {
    std::string sep = before;
    if (first) {
      // The text's leading spaces stay on the first line (" 1 Paths [2 Subpaths]").
      line = before;
      fresh = before.empty();
      sep.clear();
      first = false;
    }
    if (pad.size() + field.size() <= w) {
      place(field, sep);
      continue;
    }
    for (const std::string& word : Words(field)) {
      place(word, sep);
      sep = " ";
    }
  }
  if (!fresh || lines.empty()) lines.push_back(Truncate(line, width));
  return lines;
}

}  // namespace pathtop
