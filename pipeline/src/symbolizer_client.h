// The daemon's side of pathprof-symbolizer (pipeline/helper/): a SymbolBackend whose libdw runs
// in an unprivileged, sandboxed helper process (symbol_backend.h says why). The helper is
// started at the first request and again after it failed; images go to it once each, as sealed
// memfds of the bytes this process read (so it opens nothing a requester named), separate DWARF
// as the descriptor this process opened. A helper that dies, stalls past its bound or says
// something malformed is killed and counted by reason; the request it failed gets no symbol
// (an unwind falls back to the frame-pointer chain, which reads only the stack copy), and the
// next request starts a new helper, at most kMaxStartsPerMinute times a minute.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "pathprof/core/status.h"
#include "pathprof/pipeline/symbol_service.h"
#include "symbol_backend.h"

namespace pathprof::pipeline {

struct SymbolHelperOptions {
  // How long one answer may take (a first source-line lookup indexes a debug file's DWARF:
  // seconds for the largest libraries).
  int reply_timeout_ms = 60'000;
  int start_timeout_ms = 10'000;
  uint64_t max_image_bytes = decoders::kDefaultMaxImageBytes;
};

inline constexpr int kMaxStartsPerMinute = 10;

// Where pathprof-symbolizer is: $PATHPROF_SYMBOLIZER, next to this executable, the installed
// path, the build tree's.
Result<std::string> SymbolizerHelperPath();

class HelperSymbolBackend final : public SymbolBackend {
 public:
  explicit HelperSymbolBackend(const SymbolHelperOptions& options);
  ~HelperSymbolBackend() override;

  Result<decoders::Symbolization> Symbolize(const std::shared_ptr<const decoders::ElfImage>& image,
                                            uint64_t vaddr, const std::string& debug_file,
                                            bool lines) override;
  decoders::UnwindResult Unwind(uint32_t pid, std::span<const uint64_t> regs, uint64_t stack_start,
                                std::span<const uint8_t> stack,
                                const UnwindMappingAt& mapping_at) override;
  void Forget(const decoders::ElfImage* image) override;
  void ForgetAll() override;

  SymbolHelperStats HelperStats() const override;
  // The running helper's pid, 0 when none (tests read its /proc status).
  int HelperPid() const override;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace pathprof::pipeline
