// Which CPUs are online, from /sys/devices/system/cpu/online ("0-3,5,7-8").
#pragma once

#include <string>
#include <vector>

#include "pathprof/core/status.h"

namespace pathprof::collectors {

Result<std::vector<int>> ParseCpuList(const std::string& text);
Result<std::vector<int>> OnlineCpus(const std::string& path = "/sys/devices/system/cpu/online");

}  // namespace pathprof::collectors
