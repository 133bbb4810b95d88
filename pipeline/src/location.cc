#include "pathprof/pipeline/location.h"

#include <cstdio>

namespace pathprof::pipeline {

std::string Location::ToString() const {
  char buf[64];
  std::string out;
  if (!function.empty()) {
    out = function;
    if (offset != 0) {
      std::snprintf(buf, sizeof buf, "+0x%llx", static_cast<unsigned long long>(offset));
      out += buf;
    }
  } else {
    std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(address));
    out = buf;
  }
  if (!file.empty()) {
    const size_t slash = file.rfind('/');
    out += " (" + (slash == std::string::npos ? file : file.substr(slash + 1)) + ":" +
           std::to_string(line) + ")";
  } else if (!image.empty()) {
    const size_t slash = image.rfind('/');
    out += " (" + (slash == std::string::npos ? image : image.substr(slash + 1)) + ")";
  }
  return out;
}

}  // namespace pathprof::pipeline
