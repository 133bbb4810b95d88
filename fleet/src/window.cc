#include "pathprof/fleet/window.h"

#include <set>

namespace pathprof::fleet {

LabelSet ToLabels(const WindowIdentity& identity) {
  LabelSet labels;
  auto add = [&](const char* name, const std::string& value) {
    if (!value.empty()) labels.push_back({name, value});
  };
  add(kLabelHost, identity.host);
  add(kLabelUnit, identity.unit);
  add(kLabelCgroup, identity.cgroup);
  add(kLabelExecutable, identity.executable);
  add(kLabelBuildId, identity.build_id);
  if (identity.pid != 0) add(kLabelPid, std::to_string(identity.pid));
  labels.insert(labels.end(), identity.extra.begin(), identity.extra.end());
  return labels;
}

namespace {
bool IsPrometheusName(const std::string& name) {
  if (name.empty()) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    const bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
    const bool digit = c >= '0' && c <= '9';
    if (!(alpha || (i > 0 && digit))) return false;
  }
  return true;
}
}  // namespace

Status ValidateLabels(const LabelSet& labels) {
  std::set<std::string> seen;
  for (const Label& label : labels) {
    if (!IsPrometheusName(label.name)) {
      return Error(ErrorCode::kInvalidArgument,
                   "label name '" + label.name +
                       "' is not [a-zA-Z_][a-zA-Z0-9_]*: rename it (fleet backends store labels "
                       "under Prometheus naming rules)");
    }
    if (!seen.insert(label.name).second) {
      return Error(ErrorCode::kInvalidArgument,
                   "label '" + label.name + "' appears twice: keep one value per name");
    }
  }
  return Status::Ok();
}

Status ValidateWindow(const ProfileWindow& window) {
  if (window.pprof.empty()) {
    return Error(ErrorCode::kInvalidArgument, "window has no pprof bytes: nothing to store");
  }
  if (window.end_unix_nanos < window.start_unix_nanos) {
    return Error(ErrorCode::kInvalidArgument,
                 "window ends (" + std::to_string(window.end_unix_nanos) +
                     " ns) before it starts (" + std::to_string(window.start_unix_nanos) + " ns)");
  }
  if (window.start_unix_nanos < 0 || window.sample_rate_hz < 0) {
    return Error(ErrorCode::kInvalidArgument, "window has a negative start time or sample rate");
  }
  return ValidateLabels(window.labels);
}

}  // namespace pathprof::fleet
