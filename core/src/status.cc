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

}  // namespace pathprof
