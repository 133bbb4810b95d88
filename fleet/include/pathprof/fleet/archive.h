// ProfileArchive: continuous mode's on-disk memory. The daemon hands it every window (e.g. each
// 60 s); it keeps the newest ones as pprof files under a bound on both file count and bytes,
// deleting the oldest first and counting every deletion. Windows survive a daemon restart: the
// archive re-reads its folder when opened. Files are written mode 0640 and a folder it creates
// 0750, whatever the process's umask.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "pathprof/core/status.h"
#include "pathprof/fleet/window.h"

namespace pathprof::fleet {

struct ArchiveOptions {
  std::string directory;          // created (mode 0750) if missing
  size_t max_windows = 60;        // at least 1
  uint64_t max_bytes = 64 << 20;  // pprof + metadata + branch bytes of all kept windows; >= 1
};

// One stored window. File layout, per window:
//   <start_ns, 20 digits>-<seq, 8 digits>_<labels>.pb.gz   the pprof bytes, untouched
//   <same stem>.labels                                     metadata, one `key=value` a line
//   <same stem>.pbs                                        the window's branch windows, when
//                                                          it has them (core/pbs.h)
// <labels> is `name=value` pairs joined by '+', percent-encoded so any value is a safe file
// name, and cut at 120 bytes (the .labels file always has them whole). Sorting names sorts by
// time, which is what "oldest first" uses.
struct ArchivedWindow {
  std::string profile_path;
  std::string labels_path;
  std::string branches_path;  // empty: the window has no branches archived
  int64_t start_unix_nanos = 0;
  int64_t end_unix_nanos = 0;
  uint64_t sequence = 0;
  uint64_t bytes = 0;  // all of its files
  LabelSet labels;
};

struct ArchiveStats {
  uint64_t windows_written = 0;
  uint64_t bytes_written = 0;
  uint64_t windows_deleted_count_limit = 0;  // evicted to stay within max_windows
  uint64_t windows_deleted_byte_limit = 0;   // evicted to stay within max_bytes
  uint64_t bytes_deleted = 0;
  uint64_t windows_rejected_too_large = 0;  // one window alone exceeded max_bytes: not stored
  uint64_t windows_with_branches = 0;       // stored with their .pbs
  // The profile fitted max_bytes but not with its branches: stored without them.
  uint64_t branches_rejected_too_large = 0;
  uint64_t windows_rejected_invalid = 0;  // failed ValidateWindow
  uint64_t write_errors = 0;              // I/O failures writing or deleting
  uint64_t foreign_files_ignored = 0;     // files in the folder that are not ours (at Open)
};

class ProfileArchive {
 public:
  // Creates the folder if needed and adopts the windows already in it (oldest dropped at once if
  // they exceed the bounds, counted like any eviction).
  static Result<ProfileArchive> Open(ArchiveOptions options);

  // Stores one window, then evicts the oldest until both bounds hold again. The new window is
  // never the one evicted. Written via a temporary name + rename, so a crash leaves no half file.
  Status Add(const ProfileWindow& window);

  // Oldest first: in the order added; after Open, by (start time, sequence).
  const std::vector<ArchivedWindow>& windows() const { return windows_; }
  uint64_t total_bytes() const { return total_bytes_; }
  const ArchiveStats& stats() const { return stats_; }

  // The stored window back (for replay to a backend that was down).
  Result<ProfileWindow> Read(const ArchivedWindow& entry) const;

 private:
  explicit ProfileArchive(ArchiveOptions options) : options_(std::move(options)) {}
  Status Scan();
  void Evict();
  Status Remove(const ArchivedWindow& entry);

  ArchiveOptions options_;
  std::vector<ArchivedWindow> windows_;
  uint64_t total_bytes_ = 0;
  uint64_t next_sequence_ = 0;
  ArchiveStats stats_;
};

// Percent-encodes everything but [A-Za-z0-9._-] (RFC 3986 unreserved minus '~').
std::string PercentEncode(const std::string& s);

}  // namespace pathprof::fleet
