// What the live side asks /proc about the processes it watches: whether one still runs, and
// which processes descend from the targets.
#pragma once

#include <cstdint>
#include <vector>

namespace pathprof::pipeline {

// True while the process exists and is not a zombie.
bool ProcessAlive(uint32_t pid);

// True while the pid is taken: the process runs, or exited and was not reaped yet (a zombie). A
// signal 0 to it, no /proc read: a fraction of ProcessAlive's cost.
bool ProcessExists(uint32_t pid);

// Every live descendant of `roots` now, from the parent pids in /proc/*/stat (at most 4096, what
// the stack sampler's filter can hold).
std::vector<uint32_t> Descendants(const std::vector<uint32_t>& roots);

}  // namespace pathprof::pipeline
