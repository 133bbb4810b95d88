// Unwinds a user stack with DWARF call frame information (.eh_frame) from a copy of the stack
// and the registers at the sample, as perf's --call-graph dwarf does, so that programs built
// without frame pointers (Debian's own, at -O2) still show their callers up to main. Where an
// address has no CFI (JIT code, hand-written assembly) it follows the frame-pointer chain. An
// image's CFI is checked before libdw reads it (src/cfi_validation.h): an image whose CFI fails
// the check is unwound by frame pointers too, and the refusal reported by reason.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "pathprof/decoders/elf_image.h"

namespace pathprof::decoders {

// x86-64 DWARF register numbers.
inline constexpr int kDwarfRbp = 6;
inline constexpr int kDwarfRsp = 7;
inline constexpr int kDwarfRip = 16;
inline constexpr int kDwarfRegisterCount = 17;

// The image behind a runtime address and its load bias (runtime = image vaddr + bias).
struct UnwindImage {
  std::shared_ptr<const ElfImage> image;  // null: no file backs the address
  uint64_t bias = 0;
};

// Why an unwind stopped. kOutermost is the only complete one.
enum class UnwindEnd {
  kOutermost,     // the CFI says there is no caller (_start, thread start) or the chain ends
  kStackCopyEnd,  // a caller's frame lies above the copied part of the stack
  kNoImage,       // an address no mapped file covers, and no frame pointer to follow
  kNoRule,        // CFI that cannot be evaluated (an unsupported expression)
  kNoProgress,    // the stack pointer did not move up: a corrupt or looping chain
  kMaxFrames,     // the frame limit was reached
};
std::string_view UnwindEndName(UnwindEnd end);

struct UnwindResult {
  // Leaf first: the sampled instruction pointer, then each caller's return address (the same
  // convention as the kernel's frame-pointer stacks, so call sites are frame - 1).
  std::vector<uint64_t> frames;
  UnwindEnd end = UnwindEnd::kOutermost;
  int frame_pointer_steps = 0;  // callers found by the frame-pointer chain, not by CFI
  // One reason per image whose CFI this unwind refused (a name such as
  // "register_out_of_range"): each image's CFI is checked once, when an unwind first meets it,
  // and a refused image is unwound by frame pointers from then on.
  std::vector<std::string> cfi_refused;
};

class CfiUnwinder {
 public:
  CfiUnwinder();
  ~CfiUnwinder();
  CfiUnwinder(const CfiUnwinder&) = delete;
  CfiUnwinder& operator=(const CfiUnwinder&) = delete;

  using ImageAt = std::function<UnwindImage(uint64_t address)>;
  // `regs` holds kDwarfRegisterCount registers; `stack` is the user memory from `stack_start`
  // (the sampled stack pointer) upwards. Never reads outside `stack`.
  UnwindResult Unwind(std::span<const uint64_t> regs, uint64_t stack_start,
                      std::span<const uint8_t> stack, const ImageAt& image_at,
                      size_t max_frames = 127);

  // Images whose CFI is held (one libelf handle and one parsed .eh_frame each).
  size_t cached_images() const { return cache_.size(); }
  // Why the CFI of `image` was refused: what, where in which section; OK when it was accepted
  // or no unwind has met the image yet.
  Status RefusedCfi(const ElfImage* image) const;
  // Drops the tables of `image` (the image cache evicted it).
  void Forget(const ElfImage* image);

 private:
  struct Tables;
  Tables* TablesFor(const std::shared_ptr<const ElfImage>& image, UnwindResult* out);
  static constexpr size_t kMaxImages = 1024;
  std::map<const ElfImage*, std::unique_ptr<Tables>> cache_;
};

}  // namespace pathprof::decoders
