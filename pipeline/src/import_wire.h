// The pipe between the import helper (pathprof-import, pipeline/helper/) and the daemon: frames
// {u32 little-endian size, import_wire.proto Frame}. The helper parses the recording and the
// binaries it names; the daemon parses only these frames, and as hostile (a helper whose decoder
// a crafted file took over may write anything): every size, count and enum is checked here
// before a frame becomes a Begin, a batch, a summary or a failure.
//
//   helper                                daemon
//   Begin (windows, processes)       ->
//   Batch ... (in order)             ->
//   Summary (or Failure, at any time) ->   then EOF
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "pathprof/core/branch.h"
#include "pathprof/core/status.h"
#include "recording_decode.h"

namespace pathprof::pipeline::import_wire {

// Largest frame either side writes or accepts.
inline constexpr uint32_t kMaxFrameBytes = 64u << 20;
// Events in one batch frame at most (21 bytes an event or more: within kMaxFrameBytes). A longer
// continuous batch goes in pieces, the later ones without gap_before: the same stream to a store.
inline constexpr size_t kMaxBatchEvents = 1u << 20;
inline constexpr size_t kMaxProcesses = 1u << 16;
inline constexpr size_t kMaxMappings = 1u << 20;  // in one Begin, all processes together
inline constexpr size_t kMaxText = 4096;          // a path, a comm, a name, a warning
inline constexpr size_t kMaxNamedCounts = 4096;   // counts and warnings in one summary

struct BeginFrame {
  BranchWindows windows = BranchWindows::kNone;
  std::map<uint32_t, RecordedProcess> processes;
};
// A Status frame is the helper's failure (never OK).
using Frame = std::variant<BeginFrame, BranchBatch, DecodeSummary, Status>;

// The frame's bytes without the size (the helper writes them; tests and the fuzzer make them).
std::string Serialize(const Frame& frame);
// One frame's bytes, checked: kCorrupt naming what was wrong.
Result<Frame> Parse(std::span<const uint8_t> bytes);

// The helper's side. Each call writes whole frames; false once the daemon is gone.
class Writer {
 public:
  explicit Writer(int fd) : fd_(fd) {}
  bool Write(const Frame& frame);
  // A batch in pieces of at most kMaxBatchEvents events.
  bool WriteBatch(const BranchBatch& batch);
  // Whether the last failed write failed because its frame was over kMaxFrameBytes (not sent:
  // the pipe still works), rather than because the daemon is gone.
  bool too_large() const { return too_large_; }

 private:
  bool WriteBytes(const std::string& payload);
  int fd_;
  bool too_large_ = false;
};

// The daemon's side: frames from a pipe, each waited for at most `silence_ms`.
class Reader {
 public:
  explicit Reader(int fd) : fd_(fd) {}
  // True and *out: a frame; false: the helper closed the pipe between frames; an error: it
  // was silent past `silence_ms`, closed it inside a frame, or sent one too large or malformed.
  Result<bool> Next(int silence_ms, Frame* out);

 private:
  // Reads exactly `n` bytes; false at EOF before the first byte when `eof_ok`.
  Result<bool> ReadExact(void* dst, size_t n, int silence_ms, bool eof_ok);
  int fd_;
  std::vector<uint8_t> payload_;
};

}  // namespace pathprof::pipeline::import_wire
