// The BOLT commands that work on this host, for the hints `pathctl export` prints.
//
// BOLT is one executable that decides what to do from the name it is run by: run as a file
// named exactly `perf2bolt` it aggregates a perf.data into fdata, under any other name it
// optimizes. Debian's bolt-15 puts /usr/bin/perf2bolt-15 on PATH, a link to llvm-bolt whose
// name BOLT does not recognise: it optimizes, and writes an ELF where the fdata was to go.
// /usr/lib/llvm-15/bin/perf2bolt (named so) aggregates, as does llvm-bolt -aggregate-only.
#pragma once

#include <string>
#include <vector>

namespace pathctl {

// How to name a tool in a hint: where it was found, or why none was.
struct ToolCommand {
  bool found = false;
  std::string command;  // a command line to run as printed (found), else what to install
};

// llvm-bolt: `llvm-bolt` or the newest `llvm-bolt-N` on PATH, else the newest
// /usr/lib/llvm-N/bin/llvm-bolt. `path_dirs` and `llvm_root` are where to look (tests);
// the defaults are $PATH and /usr/lib.
std::string FindLlvmBolt(const std::vector<std::string>& path_dirs,
                         const std::string& llvm_root = "/usr/lib");
std::vector<std::string> PathDirs();  // $PATH, split

// The command that turns `data` (a perf.data of branch stacks) into `fdata` for `binary`: a
// `perf2bolt` on PATH, else the newest /usr/lib/llvm-N/bin/perf2bolt, else llvm-bolt in its
// perf2bolt mode (-aggregate-only); never a perf2bolt-N. Arguments are shell-quoted.
ToolCommand Perf2BoltCommand(const std::string& data, const std::string& fdata,
                             const std::string& binary, const std::vector<std::string>& path_dirs,
                             const std::string& llvm_root = "/usr/lib");

// The command that optimizes `binary` with `fdata` (llvm-bolt BINARY -data FDATA -o OUT).
ToolCommand LlvmBoltCommand(const std::string& binary, const std::string& fdata,
                            const std::vector<std::string>& path_dirs,
                            const std::string& llvm_root = "/usr/lib");

// `word` as one shell word: unchanged when it needs no quoting, else in single quotes.
std::string ShellWord(const std::string& word);

}  // namespace pathctl
