// The perf events and BPF ring buffers a process holds open, read from /proc/PID/fd (the link
// names the kernel gives anonymous inodes) and /proc/PID/fdinfo (a BPF map's type).
#pragma once

#include <dirent.h>
#include <sys/types.h>
#include <unistd.h>

#include <fstream>
#include <string>

namespace pathprof::testing {

struct OpenKernelObjects {
  int perf_events = 0;
  int ring_buffers = 0;
};

inline OpenKernelObjects CountOpenKernelObjects(pid_t pid) {
  constexpr int kBpfMapTypeRingbuf = 27;  // enum bpf_map_type's BPF_MAP_TYPE_RINGBUF
  OpenKernelObjects out;
  const std::string proc = "/proc/" + std::to_string(pid);
  DIR* dir = opendir((proc + "/fd").c_str());
  if (!dir) return out;
  while (dirent* e = readdir(dir)) {
    const std::string fd = e->d_name;
    if (fd == "." || fd == "..") continue;
    char target[256] = {};
    const ssize_t n = readlink((proc + "/fd/" + fd).c_str(), target, sizeof(target) - 1);
    if (n <= 0) continue;
    const std::string link(target, static_cast<size_t>(n));
    if (link == "anon_inode:[perf_event]") ++out.perf_events;
    if (link != "anon_inode:bpf-map") continue;
    std::ifstream info(proc + "/fdinfo/" + fd);
    for (std::string line; std::getline(info, line);)
      if (line.rfind("map_type:", 0) == 0 && std::stoi(line.substr(9)) == kBpfMapTypeRingbuf)
        ++out.ring_buffers;
  }
  closedir(dir);
  return out;
}

}  // namespace pathprof::testing
