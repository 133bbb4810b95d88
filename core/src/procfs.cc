#include "pathprof/core/procfs.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>

#include "bounded_read.h"
#include "pathprof/core/procfs_lines.h"

namespace pathprof::procfs {
namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\n'))
    s.remove_suffix(1);
  return s;
}

template <typename T>
bool ParseNumber(std::string_view s, T* out, int base = 10) {
  s = Trim(s);
  if (s.empty()) return false;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), *out, base);
  return ec == std::errc() && end == s.data() + s.size();
}

// The first `n` whitespace-separated numbers of `s` into `out` (Uid: and Gid: lines).
template <typename T>
bool ParseNumbers(std::string_view s, T* out, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    s = Trim(s);
    const size_t end = s.find_first_of(" \t");
    if (!ParseNumber(s.substr(0, end), &out[i])) return false;
    s.remove_prefix(end == std::string_view::npos ? s.size() : end);
  }
  return true;
}

Status Missing(std::string_view what) {
  return Status(ErrorCode::kCorrupt, "/proc status: no valid '" + std::string(what) +
                                         ":' line (is this a status file?)");
}

Status OpenError(const std::string& path, int err) {
  if (err == ENOENT || err == ESRCH)
    return Status(ErrorCode::kNotFound, path + ": no such file (has the process exited?)");
  if (err == EACCES || err == EPERM)
    return Status(ErrorCode::kPermission,
                  path +
                      ": permission denied (the process belongs to another user, or "
                      "ptrace access mode checks refuse it)");
  return Status(ErrorCode::kIo, path + ": " + std::strerror(err));
}

// A parse failure names the file it came from.
template <typename T>
Result<T> Contextual(Result<T> parsed, const std::string& path) {
  if (!parsed.ok()) return WithContext(parsed.status(), path);
  return parsed;
}

}  // namespace

std::optional<std::string_view> StatusField(std::string_view text, std::string_view key) {
  while (!text.empty()) {
    const size_t nl = text.find('\n');
    const std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    if (line.size() > key.size() && line.starts_with(key) && line[key.size()] == ':')
      return Trim(line.substr(key.size() + 1));
  }
  return std::nullopt;
}

Result<ProcessStatus> ParseStatus(std::string_view text) {
  ProcessStatus s;
  auto name = StatusField(text, "Name");
  if (!name) return Missing("Name");
  s.name = std::string(*name);
  auto state = StatusField(text, "State");
  if (!state || state->empty()) return Missing("State");
  s.state = (*state)[0];
  auto number = [&](const char* key, auto* out) -> Status {
    auto v = StatusField(text, key);
    if (!v || !ParseNumber(*v, out)) return Missing(key);
    return Status::Ok();
  };
  PATHPROF_RETURN_IF_ERROR(number("Tgid", &s.tgid));
  PATHPROF_RETURN_IF_ERROR(number("PPid", &s.ppid));
  PATHPROF_RETURN_IF_ERROR(number("TracerPid", &s.tracer_pid));
  auto uid = StatusField(text, "Uid");
  if (!uid || !ParseNumbers(*uid, s.uid, 4)) return Missing("Uid");
  auto gid = StatusField(text, "Gid");
  if (!gid || !ParseNumbers(*gid, s.gid, 4)) return Missing("Gid");
  // Optional: absent in some kernels' or containers' views.
  auto eff = StatusField(text, "CapEff");
  auto prm = StatusField(text, "CapPrm");
  s.capabilities_known = eff && prm && ParseNumber(*eff, &s.cap_effective, 16) &&
                         ParseNumber(*prm, &s.cap_permitted, 16);
  if (auto v = StatusField(text, "SigCgt")) ParseNumber(*v, &s.signals_caught, 16);
  if (auto v = StatusField(text, "Threads")) ParseNumber(*v, &s.threads);
  if (auto v = StatusField(text, "Groups")) {
    std::string_view rest = *v;
    while (!rest.empty() && s.groups.size() < 65536) {
      rest = Trim(rest);
      const size_t end = rest.find_first_of(" \t");
      gid_t g = 0;
      if (!ParseNumber(rest.substr(0, end), &g)) break;
      s.groups.push_back(g);
      rest.remove_prefix(end == std::string_view::npos ? rest.size() : end);
    }
  }
  if (auto v = StatusField(text, "NSpid")) {
    const size_t last = v->find_last_of(" \t");
    ParseNumber(last == std::string_view::npos ? *v : v->substr(last + 1), &s.innermost_pid);
  }
  return s;
}

Result<ProcessStat> ParseStat(std::string_view text) {
  const size_t open = text.find('(');
  const size_t close = text.rfind(')');
  if (open == std::string_view::npos || close == std::string_view::npos || close < open ||
      close + 2 >= text.size() || text[close + 1] != ' ')
    return Error(ErrorCode::kCorrupt, "/proc stat: expected 'pid (comm) state ...'");
  ProcessStat s;
  s.comm = std::string(text.substr(open + 1, close - open - 1));
  // Fields from 3 (state) on, 1-based as proc(5) numbers them.
  std::string_view rest = text.substr(close + 2);
  std::string_view fields[40];
  size_t count = 3;
  while (count < 40 && !rest.empty()) {
    const size_t end = rest.find(' ');
    fields[count++] = rest.substr(0, end);
    rest.remove_prefix(end == std::string_view::npos ? rest.size() : end + 1);
  }
  if (count < 23 || fields[3].empty())
    return Error(ErrorCode::kCorrupt, "/proc stat: " + std::to_string(count - 1) +
                                          " fields, expected at least 22 (to starttime)");
  s.state = fields[3][0];
  if (!ParseNumber(fields[4], &s.ppid) || !ParseNumber(fields[14], &s.utime_ticks) ||
      !ParseNumber(fields[15], &s.stime_ticks) || !ParseNumber(fields[22], &s.start_ticks))
    return Error(ErrorCode::kCorrupt, "/proc stat: ppid, utime, stime or starttime not a number");
  if (count > 39) ParseNumber(Trim(fields[39]), &s.processor);
  return s;
}

std::string CgroupV2Path(std::string_view text) {
  while (!text.empty()) {
    const size_t nl = text.find('\n');
    const std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    if (line.starts_with("0::")) return std::string(line.substr(3));
  }
  return "";
}

const Procfs& Procfs::Host() {
  static const Procfs host;
  return host;
}

std::string Procfs::Path(pid_t pid, std::string_view file) const {
  std::string p = root_ + "/" + std::to_string(pid);
  if (!file.empty()) p.append("/").append(file);
  return p;
}

std::string Procfs::TaskPath(pid_t pid, pid_t tid, std::string_view file) const {
  std::string p = Path(pid, "task/" + std::to_string(tid));
  if (!file.empty()) p.append("/").append(file);
  return p;
}

std::string Procfs::GlobalPath(std::string_view relative) const {
  return root_ + "/" + std::string(relative);
}

Result<std::string> Procfs::ReadPath(const std::string& path, size_t max_bytes) const {
  return internal::ReadBounded(path, max_bytes, OpenError);
}

int Procfs::Open(pid_t pid, std::string_view file, int flags) const {
  return open(Path(pid, file).c_str(), flags | O_CLOEXEC);
}

int Procfs::OpenTask(pid_t pid, pid_t tid, std::string_view file, int flags) const {
  return open(TaskPath(pid, tid, file).c_str(), flags | O_CLOEXEC);
}

Result<std::string> Procfs::ReadLink(const std::string& path) const {
  char buf[4096];
  const ssize_t n = readlink(path.c_str(), buf, sizeof buf);
  if (n < 0) return OpenError(path, errno);
  if (static_cast<size_t>(n) == sizeof buf)
    return Error(ErrorCode::kResourceExhausted, path + ": link target longer than 4095 bytes");
  return std::string(buf, static_cast<size_t>(n));
}

Result<std::string> Procfs::Read(pid_t pid, std::string_view file, size_t max_bytes) const {
  return ReadPath(Path(pid, file), max_bytes);
}

Result<std::string> Procfs::ReadTask(pid_t pid, pid_t tid, std::string_view file,
                                     size_t max_bytes) const {
  return ReadPath(TaskPath(pid, tid, file), max_bytes);
}

Result<std::string> Procfs::ReadGlobal(std::string_view relative, size_t max_bytes) const {
  PATHPROF_ASSIGN_OR_RETURN(std::string text, ReadPath(GlobalPath(relative), max_bytes));
  while (!text.empty() && text.back() == '\n') text.pop_back();
  return text;
}

Status ForEachGlobalLine(const Procfs& procfs, std::string_view relative, size_t max_bytes,
                         size_t max_line_bytes,
                         const std::function<void(std::string_view line)>& on_line) {
  return internal::ReadBoundedLines(procfs.GlobalPath(relative), max_bytes, max_line_bytes,
                                    OpenError, on_line);
}

int Procfs::ReadSysctlInt(std::string_view relative, int fallback) const {
  auto text = ReadGlobal(relative);
  if (!text.ok()) return fallback;
  int value = fallback;
  const char* begin = text->data();
  return std::from_chars(begin, begin + text->size(), value).ec == std::errc() ? value : fallback;
}

Result<ProcessStatus> Procfs::ReadStatus(pid_t pid) const {
  PATHPROF_ASSIGN_OR_RETURN(std::string text, Read(pid, "status", 64 << 10));
  return Contextual(ParseStatus(text), Path(pid, "status"));
}

Result<ProcessStatus> Procfs::ReadTaskStatus(pid_t pid, pid_t tid) const {
  PATHPROF_ASSIGN_OR_RETURN(std::string text, ReadTask(pid, tid, "status", 64 << 10));
  return Contextual(ParseStatus(text), TaskPath(pid, tid, "status"));
}

Result<ProcessStat> Procfs::ReadStat(pid_t pid) const {
  PATHPROF_ASSIGN_OR_RETURN(std::string text, Read(pid, "stat", 4096));
  return Contextual(ParseStat(text), Path(pid, "stat"));
}

Result<ProcessStat> Procfs::ReadTaskStat(pid_t pid, pid_t tid) const {
  PATHPROF_ASSIGN_OR_RETURN(std::string text, ReadTask(pid, tid, "stat", 4096));
  return Contextual(ParseStat(text), TaskPath(pid, tid, "stat"));
}

Result<std::string> Procfs::Comm(pid_t pid) const {
  PATHPROF_ASSIGN_OR_RETURN(std::string text, Read(pid, "comm", 256));
  while (!text.empty() && text.back() == '\n') text.pop_back();
  return text;
}

Result<std::string> Procfs::Executable(pid_t pid) const {
  return ReadLink(Path(pid, "exe"));
}

Result<std::string> Procfs::Cgroup(pid_t pid) const {
  PATHPROF_ASSIGN_OR_RETURN(std::string text, Read(pid, "cgroup", 64 << 10));
  return CgroupV2Path(text);
}

Result<std::string> Procfs::Namespace(pid_t pid, std::string_view name) const {
  return ReadLink(Path(pid, "ns/" + std::string(name)));
}

Result<uid_t> Procfs::Owner(pid_t pid) const {
  struct stat st;
  const std::string path = Path(pid, "");
  if (stat(path.c_str(), &st) != 0) return OpenError(path, errno);
  return st.st_uid;
}

bool Procfs::HasEmptyCommandLine(pid_t pid) const {
  const int fd = open(Path(pid, "cmdline").c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return true;
  char c;
  const ssize_t n = read(fd, &c, 1);
  close(fd);
  return n <= 0;
}

std::vector<int> Procfs::NumericEntriesOf(const std::string& dir, size_t max) const {
  std::vector<int> out;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return out;
  while (dirent* e = readdir(d)) {
    if (out.size() >= max) break;
    int id = -1;
    if (ParseNumber(std::string_view(e->d_name), &id) && id >= 0) out.push_back(id);
  }
  closedir(d);
  return out;
}

std::vector<pid_t> Procfs::Pids(size_t max) const {
  return NumericEntriesOf(root_, max);
}

std::vector<pid_t> Procfs::Tasks(pid_t pid, size_t max) const {
  return NumericEntriesOf(Path(pid, "task"), max);
}

std::vector<int> Procfs::NumericEntries(pid_t pid, std::string_view dir, size_t max) const {
  return NumericEntriesOf(Path(pid, dir), max);
}

}  // namespace pathprof::procfs
