// The socket between the daemon's SymbolService and its symbolizer helper (pathprof-symbolizer,
// pipeline/helper/): stepping's framed messages (helper_socket.h), payloads of
// symbol_wire.proto, one request in flight at a time. The helper reads DWARF and CFI somebody
// else wrote, so the daemon parses what it says as hostile: every size, count and enum is
// checked here before it becomes a Symbolization or an UnwindResult.
//
//   daemon                                   helper
//                                         <- kReady (or its error, then exit)
//   kImage (+ memfd), kDebugFile (+ fd)  ->   once per image, before a request names it
//   kSymbolize                           ->
//                                         <- kSymbol
//   kUnwind                              ->
//                                         <- kImageQuestion (an address it needs the image of)
//   kImage ..., kImageAnswer             ->
//                                         <- kUnwound
//   kForget                              ->   images the daemon's cache evicted
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "pathprof/core/status.h"
#include "pathprof/decoders/cfi_unwinder.h"
#include "pathprof/decoders/symbolizer.h"

namespace pathprof::pipeline::symbol_wire {

enum class Type : uint32_t {
  kReady = 1,
  kImage = 2,
  kDebugFile = 3,
  kSymbolize = 4,
  kUnwind = 5,
  kImageAnswer = 6,
  kForget = 7,
  kSymbol = 8,
  kImageQuestion = 9,
  kUnwound = 10,
};

// Largest payload either side accepts: an unwind request's stack copy (the sampler's is 16-64
// KiB) or a symbol with its inline frames.
inline constexpr uint32_t kMaxPayload = 1u << 20;
inline constexpr size_t kMaxText = 64u << 10;     // a demangled name (C++ templates run long)
inline constexpr size_t kMaxSourceFrames = 256;   // inline depth of one address
inline constexpr size_t kMaxUnwindFrames = 1024;  // an unwind's frames (the caller asks fewer)
inline constexpr size_t kMaxRefusalName = 64;     // a CFI refusal's counted name
inline constexpr size_t kMaxRefusals = 64;        // images refused in one unwind

// The helper's side: answers as payloads.
std::string EncodeSymbol(const Result<decoders::Symbolization>& symbol);
std::string EncodeUnwound(const decoders::UnwindResult& unwound);

// The daemon's side, checked: kCorrupt naming what was wrong with the message. A well-formed
// kSymbol puts what the helper answered in *answer (a symbol, or its reason for none).
Status ParseSymbol(std::span<const uint8_t> bytes, Result<decoders::Symbolization>* answer);
// At most `max_frames` frames.
Result<decoders::UnwindResult> ParseUnwound(std::span<const uint8_t> bytes, size_t max_frames);
Result<uint64_t> ParseImageQuestion(std::span<const uint8_t> bytes);
// The helper's start: OK, or the error it reported.
Status ParseReady(std::span<const uint8_t> bytes);

}  // namespace pathprof::pipeline::symbol_wire
