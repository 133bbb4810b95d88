#include "pathprof/decoders/address_space.h"

#include <algorithm>
#include <charconv>
#include <fstream>
#include <sstream>

namespace pathprof::decoders {

bool Mapping::IsKernel() const {
  return path.starts_with("[kernel") || IsKernelAddress(start);
}

void AddressSpace::Add(Mapping m) {
  ++generation_;
  if (m.len == 0) return;
  std::vector<Mapping> out;
  out.reserve(maps_.size() + 2);
  for (Mapping& old : maps_) {
    if (old.end() <= m.start || old.start >= m.end()) {
      out.push_back(std::move(old));
      continue;
    }
    if (old.start < m.start) {  // keep the head
      Mapping head = old;
      head.len = m.start - old.start;
      out.push_back(std::move(head));
    }
    if (old.end() > m.end()) {  // keep the tail, with its file offset moved along
      Mapping tail = old;
      tail.start = m.end();
      tail.len = old.end() - m.end();
      tail.pgoff = old.pgoff + (m.end() - old.start);
      out.push_back(std::move(tail));
    }
  }
  out.push_back(std::move(m));
  std::sort(out.begin(), out.end(),
            [](const Mapping& a, const Mapping& b) { return a.start < b.start; });
  maps_ = std::move(out);
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
    m.executable = perms[2] == 'x';
    m.path = std::string(path);
    space.Add(std::move(m));
  }
  return space;
}

Result<AddressSpace> ReadProcMaps(int pid) {
  const std::string path = "/proc/" + std::to_string(pid) + "/maps";
  std::ifstream in(path);
  if (!in) {
    return Error(ErrorCode::kNotFound, path + ": cannot open; is process " + std::to_string(pid) +
                                           " alive and visible to this user?");
  }
  std::stringstream ss;
  ss << in.rdbuf();
  return ParseProcMaps(ss.str());
}

}  // namespace pathprof::decoders
