// Which CPUs are online, from devices/system/cpu/online under /sys ("0-3,5,7-8").
#pragma once

#include <string>
#include <vector>

#include "pathprof/core/status.h"
#include "pathprof/core/sysfs.h"

namespace pathprof::collectors {

Result<std::vector<int>> ParseCpuList(const std::string& text);
Result<std::vector<int>> OnlineCpus(const sysfs::Sysfs& sys = sysfs::Sysfs::Host());

}  // namespace pathprof::collectors
