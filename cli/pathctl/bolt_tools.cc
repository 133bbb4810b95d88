#include "pathctl/bolt_tools.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <sstream>

namespace pathctl {
namespace {

namespace fs = std::filesystem;

constexpr const char* kInstall =
    "install BOLT (Debian 12: apt-get install bolt-15; it puts llvm-bolt-15 on PATH)";

bool Executable(const std::string& path) {
  std::error_code ec;
  return fs::is_regular_file(path, ec) && access(path.c_str(), X_OK) == 0;
}

// The number after `prefix` in `name` ("llvm-bolt-15" -> 15), or -1 when the rest is not one.
int VersionSuffix(const std::string& name, const std::string& prefix) {
  if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0) return -1;
  const std::string rest = name.substr(prefix.size());
  if (!std::all_of(rest.begin(), rest.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return -1;
  return rest.size() > 6 ? -1 : std::atoi(rest.c_str());
}

// `name` in the first PATH directory that has it, as the bare name (what a user types).
bool OnPath(const std::string& name, const std::vector<std::string>& dirs) {
  for (const std::string& d : dirs)
    if (Executable(d + "/" + name)) return true;
  return false;
}

// The newest `stem-N` on PATH, or "".
std::string NewestVersionedOnPath(const std::string& stem, const std::vector<std::string>& dirs) {
  std::string best;
  int best_version = -1;
  for (const std::string& d : dirs) {
    std::error_code ec;
    for (const fs::directory_entry& e : fs::directory_iterator(d, ec)) {
      const std::string name = e.path().filename().string();
      const int v = VersionSuffix(name, stem + "-");
      if (v > best_version && Executable(e.path().string())) {
        best_version = v;
        best = name;
      }
    }
  }
  return best;
}

// The newest `llvm_root`/llvm-N/bin/`tool`, or "".
std::string NewestInLlvmDirs(const std::string& tool, const std::string& llvm_root) {
  std::string best;
  int best_version = -1;
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(llvm_root, ec)) {
    const int v = VersionSuffix(e.path().filename().string(), "llvm-");
    const std::string path = e.path().string() + "/bin/" + tool;
    if (v > best_version && Executable(path)) {
      best_version = v;
      best = path;
    }
  }
  return best;
}

}  // namespace

std::vector<std::string> PathDirs() {
  std::vector<std::string> dirs;
  const char* path = std::getenv("PATH");
  std::istringstream in(path ? path : "");
  for (std::string d; std::getline(in, d, ':');)
    if (!d.empty()) dirs.push_back(d);
  return dirs;
}

std::string ShellWord(const std::string& word) {
  const bool plain = !word.empty() && std::all_of(word.begin(), word.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           std::string("_-./+=:,@%").find(c) != std::string::npos;
  });
  if (plain) return word;
  std::string quoted = "'";
  for (char c : word) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

std::string FindLlvmBolt(const std::vector<std::string>& path_dirs, const std::string& llvm_root) {
  if (OnPath("llvm-bolt", path_dirs)) return "llvm-bolt";
  if (std::string v = NewestVersionedOnPath("llvm-bolt", path_dirs); !v.empty()) return v;
  return NewestInLlvmDirs("llvm-bolt", llvm_root);
}

ToolCommand Perf2BoltCommand(const std::string& data, const std::string& fdata,
                             const std::string& binary, const std::vector<std::string>& path_dirs,
                             const std::string& llvm_root) {
  ToolCommand c;
  std::string perf2bolt = OnPath("perf2bolt", path_dirs) ? "perf2bolt" : "";
  if (perf2bolt.empty()) perf2bolt = NewestInLlvmDirs("perf2bolt", llvm_root);
  if (!perf2bolt.empty()) {
    c.found = true;
    c.command = ShellWord(perf2bolt) + " -p " + ShellWord(data) + " -o " + ShellWord(fdata) + " " +
                ShellWord(binary);
    return c;
  }
  if (const std::string bolt = FindLlvmBolt(path_dirs, llvm_root); !bolt.empty()) {
    c.found = true;
    c.command = ShellWord(bolt) + " " + ShellWord(binary) + " -aggregate-only -p " +
                ShellWord(data) + " -o " + ShellWord(fdata);
    return c;
  }
  c.command = kInstall;
  return c;
}

ToolCommand LlvmBoltCommand(const std::string& binary, const std::string& fdata,
                            const std::vector<std::string>& path_dirs,
                            const std::string& llvm_root) {
  ToolCommand c;
  const std::string bolt = FindLlvmBolt(path_dirs, llvm_root);
  if (bolt.empty()) {
    c.command = kInstall;
    return c;
  }
  c.found = true;
  c.command = ShellWord(bolt) + " " + ShellWord(binary) + " -data " + ShellWord(fdata) + " -o OUT";
  return c;
}

}  // namespace pathctl
