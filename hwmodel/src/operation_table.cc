#include "pathprof/hwmodel/operation_table.h"

#include <charconv>
#include <string>

namespace pathprof::hwmodel {
namespace {

OperationTable Table51() {
  OperationTable t;
  t.Set(BranchClass::kCall, kOpUpdateCount | kOpPush);
  t.Set(BranchClass::kReturn, kOpUpdateCount | kOpPop);
  t.Set(BranchClass::kForward, kOpUpdate);
  t.Set(BranchClass::kBackward, kOpUpdate | kOpPop | kOpPush);
  t.Set(BranchClass::kIndirect, kOpUpdate | kOpPop | kOpPush);
  t.Set(BranchClass::kFar, kOpUpdateCount);
  return t;
}

OperationTable Table52() {
  OperationTable t = Table51();
  t.Set(BranchClass::kCall, kOpUpdateCount | kOpPop | kOpPush);
  t.Set(BranchClass::kReturn, kOpUpdateCount | kOpPop | kOpPush);
  return t;
}

bool ParseNumber(std::string_view s, unsigned* out) {
  if (s.empty()) return false;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && ptr == s.data() + s.size();
}

Status BadSpec(std::string_view spec, std::string_view why) {
  return Error(ErrorCode::kInvalidArgument,
               "path stack spec '" + std::string(spec) + "': " + std::string(why) +
                   "; expected bl, wpp, extended:loops:N or extended:calls:N (N in 1..255), "
                   "optionally followed by ,maxlen=L (1..64) and ,depth=D (1..65535)");
}

}  // namespace

std::string_view BranchClassName(BranchClass c) {
  switch (c) {
    case BranchClass::kCall:
      return "call";
    case BranchClass::kReturn:
      return "return";
    case BranchClass::kForward:
      return "forward";
    case BranchClass::kBackward:
      return "backward";
    case BranchClass::kIndirect:
      return "indirect";
    case BranchClass::kFar:
      return "far";
  }
  return "unknown";
}

Status OperationTable::Validate() const {
  for (int i = 0; i < kBranchClassCount; ++i) {
    const uint8_t op = ops[i];
    const auto name = std::string(BranchClassName(static_cast<BranchClass>(i)));
    if (op & ~(kOpUpdate | kOpUpdateCount | kOpPop | kOpPush)) {
      return Error(ErrorCode::kInvalidArgument,
                   "operation table: unknown operation bits for " + name + " branches");
    }
    if ((op & kOpUpdate) && (op & kOpUpdateCount)) {
      return Error(ErrorCode::kInvalidArgument,
                   "operation table: " + name +
                       " branches ask for both update and update-count; choose one");
    }
  }
  return Status::Ok();
}

Status PathStackConfig::Validate() const {
  PATHPROF_RETURN_IF_ERROR(table.Validate());
  if (max_path_length < 1 || max_path_length > kMaxPathLength) {
    return Error(ErrorCode::kInvalidArgument, "path stack: max_path_length " +
                                                  std::to_string(max_path_length) +
                                                  " is out of range; use 1..64");
  }
  if (max_depth < 1) {
    return Error(ErrorCode::kInvalidArgument, "path stack: max_depth must be at least 1");
  }
  if (extension != ExtensionMode::kNone && max_extension < 1) {
    return Error(ErrorCode::kInvalidArgument,
                 "path stack: extended paths need a maximum extension count of at least 1");
  }
  return Status::Ok();
}

PathStackConfig BallLarusPreset() {
  PathStackConfig c;
  c.table = Table51();
  return c;
}

PathStackConfig WholeProgramPathPreset() {
  PathStackConfig c;
  c.table = Table52();
  return c;
}

PathStackConfig ExtendedLoopsPreset(uint8_t n) {
  PathStackConfig c = BallLarusPreset();
  c.extension = ExtensionMode::kLoops;
  c.max_extension = n;
  return c;
}

PathStackConfig ExtendedCallsPreset(uint8_t n) {
  PathStackConfig c = BallLarusPreset();
  c.extension = ExtensionMode::kCalls;
  c.max_extension = n;
  return c;
}

Result<PathStackConfig> ParsePathStackConfig(std::string_view spec) {
  std::string_view head = spec.substr(0, spec.find(','));
  std::string_view options = head.size() < spec.size() ? spec.substr(head.size() + 1) : "";
  PathStackConfig config;
  if (head == "bl") {
    config = BallLarusPreset();
  } else if (head == "wpp") {
    config = WholeProgramPathPreset();
  } else if (head.starts_with("extended:loops:") || head.starts_with("extended:calls:")) {
    const bool loops = head.starts_with("extended:loops:");
    unsigned n = 0;
    if (!ParseNumber(head.substr(15), &n) || n < 1 || n > 255) {
      return BadSpec(spec, "the extension count must be a number in 1..255");
    }
    config = loops ? ExtendedLoopsPreset(static_cast<uint8_t>(n))
                   : ExtendedCallsPreset(static_cast<uint8_t>(n));
  } else {
    return BadSpec(spec, "unknown path kind '" + std::string(head) + "'");
  }
  while (!options.empty()) {
    std::string_view opt = options.substr(0, options.find(','));
    options = opt.size() < options.size() ? options.substr(opt.size() + 1) : "";
    unsigned v = 0;
    if (opt.starts_with("maxlen=")) {
      if (!ParseNumber(opt.substr(7), &v) || v < 1 || v > kMaxPathLength) {
        return BadSpec(spec, "maxlen must be in 1..64");
      }
      config.max_path_length = static_cast<uint8_t>(v);
    } else if (opt.starts_with("depth=")) {
      if (!ParseNumber(opt.substr(6), &v) || v < 1 || v > 65535) {
        return BadSpec(spec, "depth must be in 1..65535");
      }
      config.max_depth = static_cast<uint16_t>(v);
    } else {
      return BadSpec(spec, "unknown option '" + std::string(opt) + "'");
    }
  }
  return config;
}

std::string PathStackConfigName(const PathStackConfig& c) {
  std::string name;
  if (c.table == Table51()) {
    switch (c.extension) {
      case ExtensionMode::kNone:
        name = "bl";
        break;
      case ExtensionMode::kLoops:
        name = "extended:loops:" + std::to_string(c.max_extension);
        break;
      case ExtensionMode::kCalls:
        name = "extended:calls:" + std::to_string(c.max_extension);
        break;
    }
  } else if (c.table == Table52() && c.extension == ExtensionMode::kNone) {
    name = "wpp";
  } else {
    return "custom";
  }
  if (c.max_path_length != kDefaultMaxPathLength) {
    name += ",maxlen=" + std::to_string(c.max_path_length);
  }
  if (c.max_depth != 32) name += ",depth=" + std::to_string(c.max_depth);
  return name;
}

}  // namespace pathprof::hwmodel
