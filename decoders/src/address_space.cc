#include "pathprof/decoders/address_space.h"

#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <iterator>
#include <set>

#include "pathprof/core/procfs.h"

namespace pathprof::decoders {

bool Mapping::IsKernel() const {
  return path.starts_with("[kernel") || IsKernelAddress(start);
}

namespace {

// The part [from, to) of `m`, its file offset moved along.
Mapping Piece(const Mapping& m, uint64_t from, uint64_t to) {
  Mapping p = m;
  p.start = from;
  p.len = to - from;
  p.pgoff = m.pgoff + (from - m.start);
  return p;
}

}  // namespace

// In place, without re-sorting: a live process's map holds thousands of mappings (a sanitizer
// build's shadow alone hundreds), and a re-read of /proc/PID/maps adds every one of them.
void AddressSpace::Add(Mapping m) {
  ++generation_;
  if (m.len == 0) return;
  // Ends are sorted too (the mappings do not overlap): [first, last) is what `m` overlaps.
  auto first = std::partition_point(maps_.begin(), maps_.end(),
                                    [&](const Mapping& old) { return old.end() <= m.start; });
  auto last = std::partition_point(first, maps_.end(),
                                   [&](const Mapping& old) { return old.start < m.end(); });
  std::vector<Mapping> replacement;
  if (first != last && first->start < m.start)
    replacement.push_back(Piece(*first, first->start, m.start));
  const bool keep_tail = first != last && std::prev(last)->end() > m.end();
  Mapping tail = keep_tail ? Piece(*std::prev(last), m.end(), std::prev(last)->end()) : Mapping{};
  replacement.push_back(std::move(m));
  if (keep_tail) replacement.push_back(std::move(tail));
  const auto at = maps_.erase(first, last);
  maps_.insert(at, std::make_move_iterator(replacement.begin()),
               std::make_move_iterator(replacement.end()));
}

void AddressSpace::Overlay(const AddressSpace& newer) {
  ++generation_;
  const std::vector<Mapping>& fresh = newer.maps_;
  std::vector<Mapping> out;
  out.reserve(maps_.size() + fresh.size());
  size_t j = 0;
  for (const Mapping& old : maps_) {
    while (j < fresh.size() && fresh[j].end() <= old.start) ++j;
    uint64_t from = old.start;
    for (size_t k = j; from < old.end(); ++k) {
      if (k == fresh.size() || fresh[k].start >= old.end()) {
        out.push_back(Piece(old, from, old.end()));
        break;
      }
      if (fresh[k].start > from) out.push_back(Piece(old, from, fresh[k].start));
      from = std::max(from, fresh[k].end());
    }
  }
  // Over the cap, the leftovers of earlier reads go: the current map resolves what comes next.
  if (out.size() + fresh.size() > kMaxMappings) out.clear();
  out.insert(out.end(), fresh.begin(), fresh.end());
  std::sort(out.begin(), out.end(),
            [](const Mapping& a, const Mapping& b) { return a.start < b.start; });
  maps_ = std::move(out);
  access_ = newer.access_;
}

void AddressSpace::Replace(const AddressSpace& newer) {
  ++generation_;
  maps_ = newer.maps_;
  access_ = newer.access_;
}

const Mapping* AddressSpace::Find(uint64_t addr) const {
  auto it = std::upper_bound(maps_.begin(), maps_.end(), addr,
                             [](uint64_t a, const Mapping& m) { return a < m.start; });
  if (it == maps_.begin()) return nullptr;
  --it;
  return it->Contains(addr) ? &*it : nullptr;
}

namespace {

bool ParseHex(std::string_view s, uint64_t* out) {
  auto r = std::from_chars(s.data(), s.data() + s.size(), *out, 16);
  return r.ec == std::errc() && r.ptr == s.data() + s.size();
}

std::string_view NextField(std::string_view* line) {
  size_t b = line->find_first_not_of(' ');
  if (b == std::string_view::npos) {
    *line = {};
    return {};
  }
  line->remove_prefix(b);
  size_t e = line->find(' ');
  std::string_view f = line->substr(0, e);
  line->remove_prefix(e == std::string_view::npos ? line->size() : e);
  return f;
}

}  // namespace

namespace {

// Whether `pid` sees another file system tree than we do (a container's mount namespace).
bool InOtherMountNamespace(int pid) {
  const procfs::Procfs& proc = procfs::Procfs::Host();
  auto theirs = proc.Namespace(pid, "mnt");
  auto ours = proc.Namespace(getpid(), "mnt");
  return theirs.ok() && ours.ok() && *theirs != *ours;
}

}  // namespace

Result<AddressSpace> ParseProcMaps(std::string_view text) {
  AddressSpace space;
  int line_no = 0;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    ++line_no;
    if (line.empty()) continue;
    // 55d0c0a00000-55d0c0a02000 r-xp 00002000 fd:01 1234   /usr/bin/cat
    std::string_view range = NextField(&line), perms = NextField(&line), offset = NextField(&line),
                     dev = NextField(&line), inode = NextField(&line);
    size_t dash = range.find('-');
    uint64_t start = 0, end = 0, pgoff = 0;
    if (dash == std::string_view::npos || !ParseHex(range.substr(0, dash), &start) ||
        !ParseHex(range.substr(dash + 1), &end) || end < start || perms.size() < 4 ||
        !ParseHex(offset, &pgoff) || dev.empty() || inode.empty()) {
      return Error(ErrorCode::kCorrupt, "/proc maps line " + std::to_string(line_no) +
                                            ": expected 'start-end perms offset dev inode path'");
    }
    size_t b = line.find_first_not_of(' ');
    std::string_view path = b == std::string_view::npos ? std::string_view() : line.substr(b);
    Mapping m;
    m.start = start;
    m.len = end - start;
    m.pgoff = pgoff;
    m.readable = perms[0] == 'r';
    m.writable = perms[1] == 'w';
    m.shared = perms[3] == 's';
    m.executable = perms[2] == 'x';
    m.path = std::string(path);
    // dev is "major:minor" in hex, the inode decimal; both 0 for anonymous mappings.
    uint64_t major = 0, minor = 0;
    const size_t colon = dev.find(':');
    if (colon != std::string_view::npos && ParseHex(dev.substr(0, colon), &major) &&
        ParseHex(dev.substr(colon + 1), &minor))
      m.device = makedev(major, minor);
    std::from_chars(inode.data(), inode.data() + inode.size(), m.inode);
    space.Add(std::move(m));
  }
  return space;
}

Result<AddressSpace> ReadProcMaps(int pid) {
  auto text = procfs::Procfs::Host().Read(pid, "maps");
  if (!text.ok()) {
    return WithContext(text.status(), "reading the maps of process " + std::to_string(pid) +
                                          " (is it alive and visible to this user?)");
  }
  auto space = ParseProcMaps(*text);
  if (!space.ok()) return space;
  space->set_access(FileAccess{pid, std::nullopt});
  if (!InOtherMountNamespace(pid)) return space;
  const std::string root = procfs::Procfs::Host().Path(pid, "root");
  AddressSpace rooted;
  rooted.set_access(space->access());
  for (Mapping m : space->mappings()) {
    if (!m.IsSpecial() && m.path.starts_with('/')) m.read_path = root + m.path;
    rooted.Add(std::move(m));
  }
  return rooted;
}

std::vector<bool> StableMappings(const AddressSpace& space) {
  std::set<std::pair<uint64_t, uint64_t>> written_files;  // (device, inode) mapped rw and shared
  for (const Mapping& m : space.mappings())
    if (m.writable && m.shared && m.inode != 0) written_files.insert({m.device, m.inode});
  std::vector<bool> out;
  out.reserve(space.mappings().size());
  for (const Mapping& m : space.mappings()) {
    bool stable = false;
    if (m.readable && !m.writable)
      stable = m.IsVdso() || (m.inode != 0 && !m.shared && !m.path.starts_with("/memfd:") &&
                              written_files.count({m.device, m.inode}) == 0);
    out.push_back(stable);
  }
  return out;
}

}  // namespace pathprof::decoders
