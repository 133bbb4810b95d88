#include "pathprof/core/status.h"

namespace pathprof {

const char* ErrorCodeName(ErrorCode code) {
  switch (code) {
    case ErrorCode::kOk:
      return "ok";
    case ErrorCode::kInvalidArgument:
      return "invalid argument";
    case ErrorCode::kNotFound:
      return "not found";
    case ErrorCode::kCorrupt:
      return "corrupt";
    case ErrorCode::kTruncated:
      return "truncated";
    case ErrorCode::kUnsupported:
      return "unsupported";
    case ErrorCode::kPermission:
      return "permission denied";
    case ErrorCode::kUnavailable:
      return "unavailable";
    case ErrorCode::kResourceExhausted:
      return "resource exhausted";
    case ErrorCode::kInternal:
      return "internal error";
    case ErrorCode::kIo:
      return "i/o error";
  }
  return "unknown error";
}

std::string Status::ToString() const {
  if (ok()) return "ok";
  return std::string(ErrorCodeName(code_)) + ": " + message_;
}

Status Error(ErrorCode code, std::string message) {
  return Status(code, std::move(message));
}

Status WithContext(const Status& status, std::string_view context) {
  if (status.ok() || context.empty()) return status;
  return Status(status.code(), std::string(context) + ": " + status.message());
}

Status OkStatusWithoutValue() {
  return Status(ErrorCode::kInternal,
                "a function returned an OK status where a value or an error was due (a bug: "
                "please report it with the command that printed this)");
}

}  // namespace pathprof
