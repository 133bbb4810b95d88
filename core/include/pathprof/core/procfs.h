// The one reader of /proc: every stage that asks the kernel about a process (its status, stat,
// comm, executable, cgroup, namespaces, threads, maps) asks through here, so each file has one
// parser, every read is bounded, and a test can point the reader at a fake tree.
//
// Reads use plain open/read/readlink (no iostreams, no exceptions): the tracer helper calls
// them between ptrace stops, and a malformed or hostile file is an error value, never a throw.
// The parsers are separate from the reads so that hot paths that keep a file open (a thread's
// stat read at every burst) parse the same way.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "pathprof/core/status.h"

namespace pathprof::procfs {

// /proc/PID/status, the fields pathprof uses.
struct ProcessStatus {
  std::string name;
  char state = 0;  // R, S, D, T, t, Z, ...
  pid_t tgid = 0;
  pid_t ppid = 0;
  pid_t tracer_pid = 0;
  uid_t uid[4] = {0, 0, 0, 0};  // real, effective, saved, filesystem
  gid_t gid[4] = {0, 0, 0, 0};
  uint64_t cap_effective = 0;
  uint64_t cap_permitted = 0;
  bool capabilities_known = false;  // both CapEff and CapPrm were read
  uint64_t signals_caught = 0;      // SigCgt: bit n-1 is signal n
  uint32_t threads = 0;
  pid_t innermost_pid = 0;    // the last NSpid: the pid in its innermost pid namespace (0: none)
  std::vector<gid_t> groups;  // supplementary groups (at most NGROUPS_MAX, 65536)
};

// /proc/PID/stat (or a thread's), the fields pathprof uses.
struct ProcessStat {
  std::string comm;
  char state = 0;
  pid_t ppid = 0;
  uint64_t utime_ticks = 0;
  uint64_t stime_ticks = 0;
  uint64_t start_ticks = 0;  // since boot; with the pid, names one process across pid reuse
  int processor = -1;        // the CPU it last ran on
};

// The value of "Key:" in a status file's text, blanks trimmed; nullopt when absent.
std::optional<std::string_view> StatusField(std::string_view text, std::string_view key);
// kCorrupt naming the field when Name, State, Tgid, PPid, TracerPid, Uid or Gid is missing or
// not a number.
Result<ProcessStatus> ParseStatus(std::string_view text);
// kCorrupt when the text is not "pid (comm) state ppid ..." with the fields up to processor.
// The comm may hold spaces and parentheses: fields restart after the last ')'.
Result<ProcessStat> ParseStat(std::string_view text);
// The cgroup v2 path (the "0::" line) of a /proc/PID/cgroup text; empty when there is none.
std::string CgroupV2Path(std::string_view text);

class Procfs {
 public:
  // The largest file read whole (maps of a process with very many mappings stay under it).
  static constexpr size_t kMaxFileBytes = size_t{64} << 20;

  explicit Procfs(std::string root = "/proc") : root_(std::move(root)) {}
  // The host's /proc.
  static const Procfs& Host();

  const std::string& root() const { return root_; }
  // root/PID/file (file may be empty: the process's directory) and root/PID/task/TID/file.
  std::string Path(pid_t pid, std::string_view file) const;
  std::string TaskPath(pid_t pid, pid_t tid, std::string_view file) const;
  // root/RELATIVE (e.g. "sys/kernel/ns_last_pid"), for a sysctl written rather than read.
  std::string GlobalPath(std::string_view relative) const;

  // A file whole, at most max_bytes (kResourceExhausted past it). kNotFound when the process
  // is gone; kPermission when this user may not read it; both name the path.
  Result<std::string> Read(pid_t pid, std::string_view file,
                           size_t max_bytes = kMaxFileBytes) const;
  Result<std::string> ReadTask(pid_t pid, pid_t tid, std::string_view file,
                               size_t max_bytes = kMaxFileBytes) const;
  // root/RELATIVE (e.g. "sys/kernel/perf_event_paranoid"), trimmed of its trailing newline.
  Result<std::string> ReadGlobal(std::string_view relative, size_t max_bytes = 4096) const;
  // An integer sysctl (RELATIVE, e.g. "sys/kernel/perf_event_paranoid"); `fallback` when it
  // cannot be read or does not start with a number.
  int ReadSysctlInt(std::string_view relative, int fallback) const;

  // root/PID/FILE opened with `flags` and always O_CLOEXEC (a ptrace helper forks and execs):
  // for the files read or written in place (mem, maps kept open); -1 with errno as open(2)
  // sets it. The caller closes it.
  int Open(pid_t pid, std::string_view file, int flags) const;
  // root/PID/task/TID/FILE, as Open (a thread's stat kept open and read from offset 0).
  int OpenTask(pid_t pid, pid_t tid, std::string_view file, int flags) const;

  Result<ProcessStatus> ReadStatus(pid_t pid) const;
  Result<ProcessStatus> ReadTaskStatus(pid_t pid, pid_t tid) const;
  Result<ProcessStat> ReadStat(pid_t pid) const;
  Result<ProcessStat> ReadTaskStat(pid_t pid, pid_t tid) const;
  // The command name (comm), without its newline.
  Result<std::string> Comm(pid_t pid) const;
  // readlink of exe ("... (deleted)" kept); kNotFound for a kernel thread or a gone process.
  Result<std::string> Executable(pid_t pid) const;
  Result<std::string> Cgroup(pid_t pid) const;
  // readlink of ns/NAME, e.g. "mnt:[4026531841]".
  Result<std::string> Namespace(pid_t pid, std::string_view name) const;
  // The owner of the process's directory (its real uid as /proc shows it).
  Result<uid_t> Owner(pid_t pid) const;
  // An empty command line: a kernel thread (or a zombie).
  bool HasEmptyCommandLine(pid_t pid) const;

  // The pids (root) and a process's thread ids (root/PID/task), at most `max` of them, in the
  // directory's order; empty when unreadable.
  std::vector<pid_t> Pids(size_t max = 1 << 22) const;
  std::vector<pid_t> Tasks(pid_t pid, size_t max = 1 << 16) const;
  // The numeric entries of root/PID/DIR (e.g. "fd": the open file descriptors).
  std::vector<int> NumericEntries(pid_t pid, std::string_view dir, size_t max) const;

 private:
  Result<std::string> ReadPath(const std::string& path, size_t max_bytes) const;
  Result<std::string> ReadLink(const std::string& path) const;
  std::vector<int> NumericEntriesOf(const std::string& dir, size_t max) const;

  std::string root_;
};

}  // namespace pathprof::procfs
