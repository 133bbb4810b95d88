// One continuous-mode window as the fleet layer sees it: the pprof bytes the profiles stage
// produced (ProfileBuilder::SerializeGzip) plus the labels that say where it came from.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "pathprof/core/status.h"

namespace pathprof::fleet {

struct Label {
  std::string name;
  std::string value;
  bool operator==(const Label&) const = default;
};
using LabelSet = std::vector<Label>;

// The label names every window carries when known (empty values are left out). Names follow the
// Prometheus rule [a-zA-Z_][a-zA-Z0-9_]* because both Parca and Pyroscope store series labels
// that way; hence "build_id", not "build-id".
inline constexpr const char* kLabelHost = "host";
inline constexpr const char* kLabelUnit = "unit";
inline constexpr const char* kLabelCgroup = "cgroup";
inline constexpr const char* kLabelExecutable = "executable";
inline constexpr const char* kLabelBuildId = "build_id";
inline constexpr const char* kLabelPid = "pid";

struct WindowIdentity {
  std::string host;
  std::string unit;    // systemd unit, e.g. "nginx.service"
  std::string cgroup;  // e.g. "/system.slice/nginx.service"
  std::string executable;
  std::string build_id;  // hex GNU build-id of the executable
  // The one process of the window, when it has one (a one-process session's export); 0 for a
  // series, whose samples each carry their pid.
  uint32_t pid = 0;
  LabelSet extra;  // anything else, e.g. {"env", "prod"}
};

// The identity as labels: the standard names in the order above, then `extra`.
LabelSet ToLabels(const WindowIdentity& identity);

// Fails (kInvalidArgument, naming the label) on an empty or non-Prometheus name, or a name that
// appears twice.
Status ValidateLabels(const LabelSet& labels);

struct ProfileWindow {
  std::string pprof;  // profile.proto bytes, normally gzip-compressed
  LabelSet labels;
  int64_t start_unix_nanos = 0;
  int64_t end_unix_nanos = 0;
  int64_t sample_rate_hz = 0;  // 0: not known
  // The window's branch windows as a .pbs recording (core/pbs.h), for the archive only (pathctl
  // paths and pathctl export read it); never pushed. Empty: none (stacks only).
  std::string branches;
};

// kInvalidArgument when the window is unusable: no bytes, end before start, bad labels.
Status ValidateWindow(const ProfileWindow& window);

}  // namespace pathprof::fleet
