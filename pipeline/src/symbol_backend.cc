#include "symbol_backend.h"

namespace pathprof::pipeline {
namespace {

class InProcess final : public SymbolBackend {
 public:
  Result<decoders::Symbolization> Symbolize(const std::shared_ptr<const decoders::ElfImage>& image,
                                            uint64_t vaddr, const std::string& debug_file,
                                            bool lines) override {
    return lines ? symbolizer_->Symbolize(image, vaddr, debug_file)
                 : symbolizer_->FunctionOf(image, vaddr, debug_file);
  }
  decoders::UnwindResult Unwind(uint32_t, std::span<const uint64_t> regs, uint64_t stack_start,
                                std::span<const uint8_t> stack,
                                const UnwindMappingAt& mapping_at) override {
    return unwinder_->Unwind(regs, stack_start, stack,
                             [&](uint64_t address) { return mapping_at(address).at; });
  }
  void Forget(const decoders::ElfImage* image) override {
    symbolizer_->Forget(image);
    unwinder_->Forget(image);
  }
  void ForgetAll() override {
    symbolizer_ = std::make_unique<decoders::Symbolizer>();
    unwinder_ = std::make_unique<decoders::CfiUnwinder>();
  }

 private:
  std::unique_ptr<decoders::Symbolizer> symbolizer_ = std::make_unique<decoders::Symbolizer>();
  std::unique_ptr<decoders::CfiUnwinder> unwinder_ = std::make_unique<decoders::CfiUnwinder>();
};

}  // namespace

std::unique_ptr<SymbolBackend> InProcessSymbolBackend() {
  return std::make_unique<InProcess>();
}

}  // namespace pathprof::pipeline
