// A process's memory map: which file (and where in it) backs each address range. Built from
// /proc/PID/maps for live processes and from MMAP/MMAP2 records in perf.data replays.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "pathprof/core/status.h"
#include "pathprof/decoders/mapped_file.h"

namespace pathprof::decoders {

struct Mapping {
  uint64_t start = 0;
  uint64_t len = 0;
  uint64_t pgoff = 0;  // file offset of `start`
  bool executable = true;
  std::string path;      // "[vdso]", "[kernel.kallsyms]...", "//anon" for non-file mappings
  std::string build_id;  // lower-case hex when the record carried one, else empty
  // Where this host reads the file when `path` (as the process sees it) is not it: for a process
  // in another mount namespace (a container), /proc/PID/root/PATH. Empty: read `path`.
  std::string read_path;
  // The mapped file's device (makedev) and inode from /proc/PID/maps; 0 when unknown (a
  // recording). Opening by path checks them (mapped_file.h).
  uint64_t device = 0;
  uint64_t inode = 0;
  // Permissions from /proc/PID/maps (a recording's mappings are readable, not writable).
  bool readable = true;
  bool writable = false;
  bool shared = false;  // MAP_SHARED: another mapping of the file may change its bytes

  uint64_t end() const { return start + len; }
  bool Contains(uint64_t addr) const { return addr >= start && addr - start < len; }
  bool operator==(const Mapping&) const = default;
  // Mappings that have no file to read code from.
  bool IsSpecial() const { return path.empty() || path[0] == '[' || path.starts_with("//anon"); }
  bool IsVdso() const { return path == "[vdso]"; }
  bool IsKernel() const;
};

// Non-overlapping mappings sorted by start; a new mapping replaces whatever it overlaps, as
// mmap(2) does.
class AddressSpace {
 public:
  // Most mappings kept: Overlay keeps an earlier image's mappings where nothing replaced them,
  // and a process that maps and unmaps at new addresses (ASLR, an exec loop) would otherwise
  // grow this without end. Past the cap the mappings that are not in the newest read go first.
  static constexpr size_t kMaxMappings = 16384;

  void Add(Mapping m);
  // Every mapping of `newer` added at once (a fresh read of /proc/PID/maps): what it overlaps is
  // replaced, what it leaves alone stays (so an earlier image's samples still resolve).
  void Overlay(const AddressSpace& newer);
  // `newer` in place of everything (after an exec: the old image is gone, and its addresses
  // may be reused by the new one).
  void Replace(const AddressSpace& newer);
  const Mapping* Find(uint64_t addr) const;
  const std::vector<Mapping>& mappings() const { return maps_; }
  // How the files behind the mappings are opened (live pid, requester's credentials).
  const FileAccess& access() const { return access_; }
  void set_access(FileAccess access) { access_ = std::move(access); }
  // Bumped on every Add and Overlay so that users caching lookups can notice changes.
  uint64_t generation() const { return generation_; }

 private:
  std::vector<Mapping> maps_;
  uint64_t generation_ = 0;
  FileAccess access_;
};

// Parses the text of /proc/PID/maps; non-executable mappings are kept (flagged) so that offsets
// of every file-backed range are known. Malformed lines are an error naming the line.
Result<AddressSpace> ParseProcMaps(std::string_view text);
// Reads /proc/PID/maps (access().live_pid = pid); for a process in another mount namespace than
// ours, each file mapping's read_path goes through /proc/PID/root.
Result<AddressSpace> ReadProcMaps(int pid);

// Per mapping of `space` (in its order), whether its pages cannot change while the process
// runs, so that an emulator may keep them, and the instructions decoded from them, across
// windows: read-only private mappings of files (code, .rodata, RELRO), which change only by an
// mprotect or a new mapping that the next read of the maps shows, and the vdso. Not a shared
// mapping, nor a memfd, nor any mapping of a file that the process also maps writable and
// shared: their bytes change through another mapping without any change to this one (a JIT
// that writes its code through a read-write view of a memfd and runs it from a read-execute
// one).
std::vector<bool> StableMappings(const AddressSpace& space);

// x86-64 canonical kernel half.
inline bool IsKernelAddress(uint64_t addr) {
  return (addr >> 63) != 0;
}

}  // namespace pathprof::decoders
