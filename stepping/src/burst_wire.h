// The pipe protocol between the burst tracer process (pathprof-tracer) and the collector that
// started it: framed messages {type, size, payload}. The first message is a hello that carries
// the protocol version and the sizes of the structs that travel as bytes, so a tracer binary
// from another build is refused with a clear error instead of misread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "pathprof/stepping/ptrace_bursts.h"

namespace pathprof::stepping::wire {

// 3: each window carries the top of its thread's stack (StackHeader + bytes).
inline constexpr uint32_t kVersion = 3;

enum class Type : uint32_t {
  kHello = 1,   // Hello
  kReady = 2,   // uint8 StepMode in use: every thread is seized
  kError = 3,   // ErrorHeader + message: the tracer could not start (it then exits)
  kWindow = 4,  // WindowHeader + StackHeader + events + stack bytes
  kStats = 5,   // PtraceBurstStats
  kNote = 6,    // text
  kExec = 7,    // no payload: the target exec'd
};

struct Hello {
  uint32_t version;
  uint32_t stats_size;
  uint32_t event_size;
  uint32_t reserved;
};
Hello OurHello();

struct ErrorHeader {
  int32_t code;  // pathprof::ErrorCode
  int32_t sys_errno;
};

struct Header {
  Type type;
  uint32_t size;
};

struct WindowHeader {
  uint32_t pid;
  uint32_t tid;
  uint64_t time_ns;
  uint32_t count;        // branch events
  uint32_t stack_bytes;  // stack bytes after the events (at most kMaxThreadStackBytes)
};

// The thread's registers at the window's start, for unwinding the stack bytes that follow.
struct StackHeader {
  uint64_t regs[17];  // x86-64 DWARF numbering; meaningful when reg_count == 17
  uint64_t stack_start;
  int32_t error;  // errno of a failed read: no registers, no bytes
  uint32_t reg_count;
};

// Largest payload a reader accepts (a window of 4096 taken branches and their not-taken
// conditionals fits many times over); anything bigger is a broken stream.
inline constexpr uint32_t kMaxPayload = 8u << 20;

enum class SendResult { kSent, kFull, kBroken };

// The tracer's side: its data pipe is non-blocking, so a collector that stops reading costs
// windows (counted), never a tracer stuck in write() while the target waits on it.
SendResult Send(int fd, Type type, const void* payload, uint32_t size);
SendResult SendWindow(int fd, const BranchBatch& batch);
// Appends a framed window message to `out`, to be sent with others in one SendBytes.
void AppendWindow(const BranchBatch& batch, std::vector<uint8_t>* out);
// Writes whole framed messages: all of them, or (kFull: the pipe had no room) none.
SendResult SendBytes(int fd, const uint8_t* data, size_t size);
SendResult SendError(int fd, ErrorCode code, int sys_errno, const std::string& message);

// The collector's side. Reads one message, waiting at most `timeout_ms` for it to begin (and as
// long again for the rest); kMessage, kTimeout (nothing arrived), kEof or kBroken (a malformed or
// truncated stream).
enum class ReceiveResult { kMessage, kTimeout, kEof, kBroken };
ReceiveResult Receive(int fd, int timeout_ms, Header* header, std::vector<uint8_t>* payload);

// A window whose stack part is malformed (sizes that do not add up, too many bytes) keeps its
// events and gets stack.error = EBADMSG, so the collector counts it instead of unwinding junk.
BranchBatch DecodeWindow(const std::vector<uint8_t>& payload);

}  // namespace pathprof::stepping::wire
