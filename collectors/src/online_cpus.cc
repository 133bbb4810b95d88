#include "online_cpus.h"

#include <cstdlib>
#include <sstream>

namespace pathprof::collectors {

Result<std::vector<int>> ParseCpuList(const std::string& text) {
  std::vector<int> cpus;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    while (!item.empty() && (item.back() == '\n' || item.back() == ' ')) item.pop_back();
    if (item.empty()) continue;
    // "N" or "N-M", nothing else.
    char* end = nullptr;
    long lo = std::strtol(item.c_str(), &end, 10), hi = lo;
    bool ok = end != item.c_str();
    if (ok && *end == '-') {
      const char* second = end + 1;
      hi = std::strtol(second, &end, 10);
      ok = end != second;
    }
    if (!ok || *end || lo < 0 || hi < lo || hi > 65535)
      return Error(ErrorCode::kCorrupt, "bad CPU list entry '" + item + "' in '" + text + "'");
    for (int c = lo; c <= hi; ++c) cpus.push_back(c);
  }
  return cpus;
}

Result<std::vector<int>> OnlineCpus(const sysfs::Sysfs& sys) {
  PATHPROF_ASSIGN_OR_RETURN(std::string text, sys.Read("devices/system/cpu/online"));
  return ParseCpuList(text);
}

}  // namespace pathprof::collectors
