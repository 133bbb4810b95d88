#include "pathprof/decoders/code_blocks.h"

#include <algorithm>
#include <string>
#include <unordered_set>

#include "zydis_decoder.h"

namespace pathprof::decoders {
namespace {

bool IsPadding(const ZydisDecodedInstruction& insn) {
  return insn.meta.category == ZYDIS_CATEGORY_NOP || insn.meta.category == ZYDIS_CATEGORY_WIDENOP ||
         insn.mnemonic == ZYDIS_MNEMONIC_INT3;
}

// Every block of the executable bytes from `vaddr` on, `size` long.
void SweepSegment(const ElfImage& image, uint64_t vaddr, uint64_t size,
                  const CodeBlockSampling& sampling, std::unordered_set<std::string>* seen,
                  std::vector<CodeBlock>* out) {
  const std::span<const uint8_t> code = image.CodeAt(vaddr);
  const size_t end = std::min<uint64_t>(size, code.size());
  CodeBlock block;
  for (size_t at = 0; at < end;) {
    ZydisDecodedInstruction insn;
    ZydisDecodedOperand operands[ZYDIS_MAX_OPERAND_COUNT];
    if (!ZYAN_SUCCESS(ZydisDecoderDecodeFull(&ZydisDecoder64(), code.data() + at, end - at, &insn,
                                             operands))) {
      block = CodeBlock{};
      ++at;
      continue;
    }
    if (block.instructions == 0 && IsPadding(insn)) {
      at += insn.length;
      continue;
    }
    if (block.instructions == 0) block.address = vaddr + at;
    block.bytes.insert(block.bytes.end(), code.data() + at, code.data() + at + insn.length);
    ++block.instructions;
    at += insn.length;
    if (insn.meta.branch_type != ZYDIS_BRANCH_TYPE_NONE) {
      if (seen->insert(std::string(block.bytes.begin(), block.bytes.end())).second)
        out->push_back(std::move(block));
      block = CodeBlock{};
    } else if (block.instructions == sampling.max_instructions) {
      block = CodeBlock{};
    }
  }
}

}  // namespace

Result<std::vector<CodeBlock>> SampleCodeBlocks(const ElfImage& image,
                                                const CodeBlockSampling& sampling) {
  std::unordered_set<std::string> seen;
  std::vector<CodeBlock> all;
  for (const ElfSegment& s : image.segments())
    if (s.executable && s.file_size > 0)
      SweepSegment(image, s.vaddr, s.file_size, sampling, &seen, &all);
  if (all.empty())
    return Error(ErrorCode::kNotFound, image.path() + ": no executable code to sample");
  if (all.size() <= sampling.max_blocks) return all;
  std::vector<CodeBlock> kept;
  kept.reserve(sampling.max_blocks);
  for (size_t i = 0; i < sampling.max_blocks; ++i)
    kept.push_back(std::move(all[i * all.size() / sampling.max_blocks]));
  return kept;
}

}  // namespace pathprof::decoders
