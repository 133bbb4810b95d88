// Kernel frames for callers who may not see kernel addresses: the host's policy (kptr_restrict,
// perf_event_paranoid) hides them from unprivileged users in /proc/kallsyms and perf, and every
// reply, export and push of pathprof follows it. A hidden kernel frame becomes one "[kernel]"
// frame with no address; a run of them (a kernel stack) becomes one such frame.
#pragma once

#include <string>

#include "pathprof/pipeline/results.h"

namespace pathprof::pipeline {

inline constexpr const char* kHiddenKernelFrame = "[kernel]";

bool IsKernelLocation(const Location& l);
// "[kernel]", address 0, nothing else; other locations unchanged.
void HideKernel(Location* l);

// Each maximal chain of kernel nodes becomes one "[kernel]" node: its children move up to it and
// siblings that both become "[kernel]" merge, weights added; ids stay unique, parents first.
void HideKernelFrames(CallingContextTree* tree);
void HideKernelFrames(HotMethodsResult* methods);  // kernel methods merge into one "[kernel]"
void HideKernelFrames(HotCallPairsResult* pairs);
void HideKernelFrames(HotPathsResult* paths);
void HideKernelFrames(HotSubpathsResult* subpaths);

}  // namespace pathprof::pipeline
