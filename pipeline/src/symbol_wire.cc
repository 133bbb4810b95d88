#include "symbol_wire.h"

#include <algorithm>

#include "symbol_wire.pb.h"

namespace pathprof::pipeline::symbol_wire {
namespace {

namespace pb = pathprof::pipeline::symbol_wire::pb;

Status Corrupt(const std::string& what) {
  return Error(ErrorCode::kCorrupt, "the symbolizer helper sent " + what);
}

// What the helper writes is bounded on its side too (a name past kMaxText is cut, never sent).
std::string Text(const std::string& s) {
  return s.size() > kMaxText ? s.substr(0, kMaxText) : s;
}

template <typename Message>
bool ParseMessage(std::span<const uint8_t> bytes, Message* out) {
  return bytes.size() <= kMaxPayload &&
         out->ParseFromArray(bytes.data(), static_cast<int>(bytes.size()));
}

bool RefusalNameOk(const std::string& name) {
  return !name.empty() && name.size() <= kMaxRefusalName &&
         std::all_of(name.begin(), name.end(),
                     [](char c) { return (c >= 'a' && c <= 'z') || c == '_'; });
}

}  // namespace

std::string EncodeSymbol(const Result<decoders::Symbolization>& symbol) {
  pb::Symbol out;
  if (!symbol.ok()) {
    out.set_error_code(static_cast<uint32_t>(symbol.status().code()));
    out.set_error(Text(symbol.status().message()));
    return out.SerializeAsString();
  }
  const decoders::Symbolization& s = *symbol;
  out.set_function(Text(s.function));
  out.set_offset(s.offset);
  out.set_function_size(s.function_size);
  out.set_from_unwind_entry(s.from_unwind_entry);
  out.set_without_symbol(s.without_symbol);
  out.set_file(Text(s.file));
  out.set_line(s.line);
  for (size_t i = 0; i < std::min(s.frames.size(), kMaxSourceFrames); ++i) {
    pb::SourceFrame* f = out.add_frames();
    f->set_function(Text(s.frames[i].function));
    f->set_file(Text(s.frames[i].file));
    f->set_line(s.frames[i].line);
  }
  return out.SerializeAsString();
}

std::string EncodeUnwound(const decoders::UnwindResult& unwound) {
  pb::Unwound out;
  for (size_t i = 0; i < std::min(unwound.frames.size(), kMaxUnwindFrames); ++i)
    out.add_frames(unwound.frames[i]);
  out.set_end(static_cast<uint32_t>(unwound.end));
  out.set_frame_pointer_steps(static_cast<uint32_t>(std::max(0, unwound.frame_pointer_steps)));
  for (size_t i = 0; i < std::min(unwound.cfi_refused.size(), kMaxRefusals); ++i)
    out.add_cfi_refused(unwound.cfi_refused[i].substr(0, kMaxRefusalName));
  return out.SerializeAsString();
}

Status ParseSymbol(std::span<const uint8_t> bytes, Result<decoders::Symbolization>* answer) {
  pb::Symbol in;
  if (!ParseMessage(bytes, &in)) return Corrupt("a symbol that does not parse");
  if (in.error_code() != 0) {
    if (in.error_code() > static_cast<uint32_t>(ErrorCode::kIo))
      return Corrupt("an error code past the table (" + std::to_string(in.error_code()) + ")");
    if (in.error().size() > kMaxText) return Corrupt("an error text over 64 KiB");
    *answer = Error(static_cast<ErrorCode>(in.error_code()), in.error());
    return Status::Ok();
  }
  if (in.function().size() > kMaxText || in.file().size() > kMaxText)
    return Corrupt("a function or file name over 64 KiB");
  if (static_cast<size_t>(in.frames_size()) > kMaxSourceFrames)
    return Corrupt("more than " + std::to_string(kMaxSourceFrames) + " inline frames");
  if (in.line() < 0) return Corrupt("a negative line");
  decoders::Symbolization s;
  s.function = in.function();
  s.offset = in.offset();
  s.function_size = in.function_size();
  s.from_unwind_entry = in.from_unwind_entry();
  s.without_symbol = in.without_symbol();
  s.file = in.file();
  s.line = in.line();
  for (const pb::SourceFrame& f : in.frames()) {
    if (f.function().size() > kMaxText || f.file().size() > kMaxText)
      return Corrupt("an inline frame's name over 64 KiB");
    if (f.line() < 0) return Corrupt("a negative line");
    s.frames.push_back({f.function(), f.file(), f.line()});
  }
  *answer = std::move(s);
  return Status::Ok();
}

Result<decoders::UnwindResult> ParseUnwound(std::span<const uint8_t> bytes, size_t max_frames) {
  pb::Unwound in;
  if (!ParseMessage(bytes, &in)) return Corrupt("an unwind that does not parse");
  if (static_cast<size_t>(in.frames_size()) > max_frames)
    return Corrupt(std::to_string(in.frames_size()) + " frames, more than the " +
                   std::to_string(max_frames) + " asked for");
  if (in.end() > static_cast<uint32_t>(decoders::UnwindEnd::kMaxFrames))
    return Corrupt("an unwind end past the table (" + std::to_string(in.end()) + ")");
  if (in.frame_pointer_steps() > static_cast<uint32_t>(in.frames_size()))
    return Corrupt("more frame-pointer steps than frames");
  if (static_cast<size_t>(in.cfi_refused_size()) > kMaxRefusals)
    return Corrupt("more than " + std::to_string(kMaxRefusals) + " CFI refusals");
  decoders::UnwindResult out;
  out.frames.assign(in.frames().begin(), in.frames().end());
  out.end = static_cast<decoders::UnwindEnd>(in.end());
  out.frame_pointer_steps = static_cast<int>(in.frame_pointer_steps());
  for (const std::string& name : in.cfi_refused()) {
    if (!RefusalNameOk(name)) return Corrupt("a CFI refusal name that is none");
    out.cfi_refused.push_back(name);
  }
  return out;
}

Result<uint64_t> ParseImageQuestion(std::span<const uint8_t> bytes) {
  pb::ImageQuestion in;
  if (!ParseMessage(bytes, &in)) return Corrupt("an image question that does not parse");
  return in.address();
}

Status ParseReady(std::span<const uint8_t> bytes) {
  pb::Ready in;
  if (!ParseMessage(bytes, &in)) return Corrupt("a start message that does not parse");
  if (in.error().empty()) return Status::Ok();
  return Error(ErrorCode::kInternal,
               "the symbolizer helper could not start: " + in.error().substr(0, kMaxText));
}

}  // namespace pathprof::pipeline::symbol_wire
