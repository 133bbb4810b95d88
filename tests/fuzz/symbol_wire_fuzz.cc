// libFuzzer target for what the daemon reads from its symbolizer helper
// (pipeline/src/symbol_wire.h): the helper runs libdw over binaries somebody else wrote, so once
// taken over it can send any answer. Input: the first byte picks the message (0 a symbol, 1 an
// unwind, 2 an image question, 3 the start message), the rest is its payload.
// Properties: no crash or sanitizer report; an accepted symbol keeps its bounds (texts of at
// most kMaxText bytes, at most kMaxSourceFrames inline frames, no negative line) and an accepted
// unwind its own (at most the frames asked for, an end inside its table, no more frame-pointer
// steps than frames, refusal names of a-z and _); either encodes back to bytes that parse to the
// same answer.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <span>

#include "symbol_wire.h"

namespace {

namespace wire = pathprof::pipeline::symbol_wire;
namespace dec = pathprof::decoders;

constexpr size_t kAsked = 127;

void Check(bool ok, const char* what) {
  if (ok) return;
  std::fprintf(stderr, "symbol_wire_fuzz: %s\n", what);
  std::abort();
}

std::span<const uint8_t> Bytes(const std::string& s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

bool SameSymbol(const dec::Symbolization& a, const dec::Symbolization& b) {
  if (a.function != b.function || a.offset != b.offset || a.function_size != b.function_size ||
      a.from_unwind_entry != b.from_unwind_entry || a.without_symbol != b.without_symbol ||
      a.file != b.file || a.line != b.line || a.frames.size() != b.frames.size())
    return false;
  for (size_t i = 0; i < a.frames.size(); ++i)
    if (a.frames[i].function != b.frames[i].function || a.frames[i].file != b.frames[i].file ||
        a.frames[i].line != b.frames[i].line)
      return false;
  return true;
}

void Symbol(std::span<const uint8_t> bytes) {
  pathprof::Result<dec::Symbolization> answer =
      pathprof::Error(pathprof::ErrorCode::kInternal, "unset");
  if (!wire::ParseSymbol(bytes, &answer).ok()) return;
  pathprof::Result<dec::Symbolization> again =
      pathprof::Error(pathprof::ErrorCode::kInternal, "unset");
  Check(wire::ParseSymbol(Bytes(wire::EncodeSymbol(answer)), &again).ok(),
        "a symbol that does not parse after a round trip");
  Check(answer.ok() == again.ok(), "a round trip that changed a symbol's kind");
  if (!answer.ok()) {
    Check(answer.status().code() != pathprof::ErrorCode::kOk, "a failure that is OK");
    Check(answer.status().code() == again.status().code() &&
              answer.status().message() == again.status().message(),
          "a round trip that changed a failure");
    return;
  }
  const dec::Symbolization& s = *answer;
  Check(s.function.size() <= wire::kMaxText && s.file.size() <= wire::kMaxText,
        "a text over the bound");
  Check(s.frames.size() <= wire::kMaxSourceFrames, "more inline frames than allowed");
  Check(s.line >= 0, "a negative line");
  for (const dec::SourceFrame& f : s.frames) Check(f.line >= 0, "a negative inline line");
  Check(SameSymbol(s, *again), "a round trip that changed a symbol");
}

void Unwound(std::span<const uint8_t> bytes) {
  auto r = wire::ParseUnwound(bytes, kAsked);
  if (!r.ok()) return;
  Check(r->frames.size() <= kAsked, "more frames than asked for");
  Check(r->end <= dec::UnwindEnd::kMaxFrames, "an end past its table");
  Check(r->frame_pointer_steps >= 0 &&
            static_cast<size_t>(r->frame_pointer_steps) <= r->frames.size(),
        "more frame-pointer steps than frames");
  for (const std::string& n : r->cfi_refused)
    for (char c : n) Check((c >= 'a' && c <= 'z') || c == '_', "a refusal name that is none");
  auto again = wire::ParseUnwound(Bytes(wire::EncodeUnwound(*r)), kAsked);
  Check(again.ok(), "an unwind that does not parse after a round trip");
  Check(again->frames == r->frames && again->end == r->end &&
            again->frame_pointer_steps == r->frame_pointer_steps &&
            again->cfi_refused == r->cfi_refused,
        "a round trip that changed an unwind");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::span<const uint8_t> payload(data + 1, size - 1);
  switch (data[0] % 4) {
    case 0:
      Symbol(payload);
      break;
    case 1:
      Unwound(payload);
      break;
    case 2:
      (void)wire::ParseImageQuestion(payload);
      break;
    default:
      (void)wire::ParseReady(payload);
      break;
  }
  return 0;
}
