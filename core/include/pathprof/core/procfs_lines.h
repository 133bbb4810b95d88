// A large kernel file under /proc read line by line, never held whole: /proc/kallsyms is 5 MB
// and 120k lines, of which a reader keeps a few fields of some lines. Reading it whole first
// (Procfs::ReadGlobal) cost a string grown by doubling, a copy per doubling and twice its size
// in fresh pages: a third of a short `pathctl run`'s CPU on a host whose stacks reach the
// kernel. Kept apart from procfs.h, which most stages include, as the one reader's streaming
// form.
#pragma once

#include <cstddef>
#include <functional>
#include <string_view>

#include "pathprof/core/procfs.h"
#include "pathprof/core/status.h"

namespace pathprof::procfs {

// root/RELATIVE (e.g. "kallsyms") line by line: `on_line` gets each line without its newline, a
// last line without one too. At most `max_bytes` are read (kResourceExhausted past them) and no
// line may pass `max_line_bytes` (kCorrupt); lines handed out before an error stay handed out.
// Errors name the path, as Procfs::ReadGlobal's.
Status ForEachGlobalLine(const Procfs& procfs, std::string_view relative, size_t max_bytes,
                         size_t max_line_bytes,
                         const std::function<void(std::string_view line)>& on_line);

}  // namespace pathprof::procfs
