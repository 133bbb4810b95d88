// Errors are values: every fallible call returns a Status or a Result<T> whose message says
// what failed, on which input, and what to do about it.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace pathprof {

enum class ErrorCode {
  kOk = 0,
  kInvalidArgument,  // the caller asked for something malformed or out of bounds
  kNotFound,         // a file, process, image or symbol does not exist
  kCorrupt,          // input bytes do not follow their format (names the offset)
  kTruncated,        // input ended in the middle of a record (names the offset)
  kUnsupported,      // valid input we do not handle (other architecture, newer version)
  kPermission,       // the kernel or a policy refused (ptrace, perf_event_open, bpf)
  kUnavailable,      // a capability is missing on this host (no PMU, no PT, no BTF)
  kResourceExhausted,
  kInternal,
  kIo,
};

const char* ErrorCodeName(ErrorCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(ErrorCode code, std::string message) : code_(code), message_(std::move(message)) {}
  static Status Ok() { return Status(); }

  bool ok() const { return code_ == ErrorCode::kOk; }
  ErrorCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "corrupt: pbs file x.pbs: bad checksum at offset 120"
  std::string ToString() const;

 private:
  ErrorCode code_ = ErrorCode::kOk;
  std::string message_;
};

Status Error(ErrorCode code, std::string message);

// The same failure with what the caller was doing in front: "reading maps of pid 42: <message>".
// The code is kept, so callers that branch on it still can. An OK status stays OK.
Status WithContext(const Status& status, std::string_view context);

// What a Result holds when it was made from an OK status: a function that returns a Result must
// return a value or a failure, and an OK status with no value is a bug in that function. It is
// turned into this internal error (never a failure whose status says "ok", which callers would
// print as an empty message), rather than an abort: nothing in a daemon should crash on it.
Status OkStatusWithoutValue();

// A value or the Status that explains why there is none. (std::expected is C++23; Debian 12's
// GCC 12 does not ship it, so this is the minimal stand-in.)
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}  // NOLINT: implicit by design
  Result(Status status)                      // NOLINT: implicit by design
      : v_(status.ok() ? OkStatusWithoutValue() : std::move(status)) {}

  bool ok() const { return std::holds_alternative<T>(v_); }
  const Status& status() const {
    static const Status kOk;
    return ok() ? kOk : std::get<Status>(v_);
  }
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace pathprof

// Propagates a failed Status from an expression returning Status.
#define PATHPROF_RETURN_IF_ERROR(expr)       \
  do {                                       \
    ::pathprof::Status _pp_status = (expr);  \
    if (!_pp_status.ok()) return _pp_status; \
  } while (0)

// `PATHPROF_ASSIGN_OR_RETURN(auto x, ReadThing(path));` declares x as the value of a Result, or
// returns its failed Status from the enclosing function (which returns a Status or any Result).
// A type with a comma in it (std::pair<A, B>) needs `auto` or an alias.
#define PATHPROF_ASSIGN_OR_RETURN(lhs, ...) \
  PATHPROF_ASSIGN_OR_RETURN_IMPL_(PATHPROF_STATUS_CONCAT_(_pp_result_, __LINE__), lhs, __VA_ARGS__)
#define PATHPROF_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, ...) \
  auto tmp = (__VA_ARGS__);                            \
  if (!tmp.ok()) return tmp.status();                  \
  lhs = std::move(tmp).value()
#define PATHPROF_STATUS_CONCAT_(a, b) PATHPROF_STATUS_CONCAT_INNER_(a, b)
#define PATHPROF_STATUS_CONCAT_INNER_(a, b) a##b
