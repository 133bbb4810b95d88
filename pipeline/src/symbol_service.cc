#include "pathprof/pipeline/symbol_service.h"

#include <algorithm>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string_view>
#include <vector>

#include "kernel_symbols.h"
#include "pathprof/core/procfs.h"
#include "pathprof/decoders/image_store.h"
#include "pathprof/decoders/symbolizer.h"

namespace pathprof::pipeline {

struct SymbolService::Impl {
  explicit Impl(const decoders::ImageStoreOptions& options) : images(options) {}
  std::mutex mu;
  decoders::ImageStore images;
  std::unique_ptr<decoders::Symbolizer> symbolizer = std::make_unique<decoders::Symbolizer>();
  std::unique_ptr<decoders::CfiUnwinder> unwinder = std::make_unique<decoders::CfiUnwinder>();
  std::map<const decoders::ElfImage*, std::string> debug_files;
  uint64_t eviction_seq = 0;
  std::vector<const decoders::ElfImage*> evicted;
  bool kallsyms_loaded = false;
  KernelSymbolTable kallsyms;
  bool source_lines = true;

  // The image and image vaddr of a runtime address; nullptr when no file backs it.
  std::shared_ptr<const decoders::ElfImage> ImageFor(uint32_t pid,
                                                     const decoders::AddressSpace& space,
                                                     uint64_t address, uint64_t* vaddr,
                                                     const decoders::Mapping** mapping) {
    const decoders::Mapping* m = space.Find(address);
    *mapping = m;
    if (m == nullptr) return nullptr;
    std::shared_ptr<const decoders::ElfImage> image;
    if (m->IsVdso()) {
      auto r = images.GetVdso(static_cast<int>(pid), m->start, m->len);
      if (!r.ok()) return nullptr;
      image = *r;
      // The vdso image is read from memory starting at the mapping: file offset = address - start.
      if (!image->FileOffsetToVaddr(address - m->start, vaddr)) return nullptr;
      return image;
    }
    if (m->IsSpecial()) return nullptr;
    auto r = images.GetMapped(*m, space.access());
    if (!r.ok()) return nullptr;
    image = *r;
    if (!image->FileOffsetToVaddr(address - m->start + m->pgoff, vaddr)) return nullptr;
    return image;
  }

  // What was built from images the cache has evicted (libdw modules, unwind tables, debug
  // file names) goes with them, so the cache's bound is the bound on memory. Called on entry
  // to each public call under `mu`, never while the symbolizer or unwinder is in a call.
  void DropEvicted() {
    evicted.clear();
    if (!images.cache().EvictedSince(&eviction_seq, &evicted)) {
      symbolizer = std::make_unique<decoders::Symbolizer>();
      unwinder = std::make_unique<decoders::CfiUnwinder>();
      debug_files.clear();
      return;
    }
    for (const decoders::ElfImage* gone : evicted) {
      symbolizer->Forget(gone);
      unwinder->Forget(gone);
      debug_files.erase(gone);
    }
  }

  const std::string& DebugFile(const std::shared_ptr<const decoders::ElfImage>& image) {
    auto it = debug_files.find(image.get());
    if (it == debug_files.end())
      it = debug_files.emplace(image.get(), images.FindDebugFile(*image)).first;
    return it->second;
  }

  std::optional<KernelSymbol> Kernel(uint64_t address) {
    if (!kallsyms_loaded) {
      kallsyms = KernelSymbolTable::Read(procfs::Procfs::Host());
      kallsyms_loaded = true;
    }
    return kallsyms.Find(address);
  }
};

SymbolService::SymbolService() : impl_(std::make_unique<Impl>(decoders::ImageStoreOptions{})) {}
SymbolService::SymbolService(const decoders::ImageStoreOptions& options)
    : impl_(std::make_unique<Impl>(options)) {}
SymbolService::~SymbolService() = default;

Location SymbolService::Symbolize(uint32_t pid, const decoders::AddressSpace& space,
                                  uint64_t address) {
  if (decoders::IsKernelAddress(address)) return SymbolizeKernel(address);
  Location loc;
  loc.address = address;
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->DropEvicted();
  uint64_t vaddr = 0;
  const decoders::Mapping* m = nullptr;
  auto image = impl_->ImageFor(pid, space, address, &vaddr, &m);
  if (m != nullptr) {
    loc.image = m->path;
    loc.map_start = m->start;
    loc.map_limit = m->end();
    loc.map_offset = m->pgoff;
  }
  if (image == nullptr) return loc;
  loc.build_id = image->build_id();
  auto sym = impl_->source_lines
                 ? impl_->symbolizer->Symbolize(image, vaddr, impl_->DebugFile(image))
                 : impl_->symbolizer->FunctionOf(image, vaddr, impl_->DebugFile(image));
  if (!sym.ok()) return loc;
  loc.function = sym->function;
  loc.offset = sym->offset;
  loc.name_without_symbol = sym->without_symbol;
  loc.function_size = sym->function_size;
  loc.file = sym->file;
  loc.line = static_cast<uint32_t>(std::max(0, sym->line));
  // frames[0] is the code at the address; the ones after it are the functions it was inlined
  // into (the last is the out-of-line function).
  if (sym->frames.size() > 1) {
    for (size_t i = 0; i < sym->frames.size(); ++i) {
      Location inl;
      inl.address = address;
      inl.function = sym->frames[i].function;
      inl.file = sym->frames[i].file;
      inl.line = static_cast<uint32_t>(std::max(0, sym->frames[i].line));
      loc.inlined_by.push_back(std::move(inl));
    }
  }
  return loc;
}

void SymbolService::SetSourceLines(bool on) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->source_lines = on;
}

uint64_t SymbolService::FunctionStart(uint32_t pid, const decoders::AddressSpace& space,
                                      uint64_t address) {
  if (decoders::IsKernelAddress(address)) return KernelFunctionStart(address);
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->DropEvicted();
  uint64_t vaddr = 0;
  const decoders::Mapping* m = nullptr;
  auto image = impl_->ImageFor(pid, space, address, &vaddr, &m);
  if (image == nullptr) return address;
  // The symbol table alone: source lines are read when a report asks (Symbolize), not per frame.
  auto sym = impl_->symbolizer->FunctionOf(image, vaddr, impl_->DebugFile(image));
  if (!sym.ok() || sym->function.empty() || sym->offset > address) return address;
  return address - sym->offset;
}

SymbolService::Code SymbolService::CodeAt(uint32_t pid, const decoders::AddressSpace& space,
                                          uint64_t address) {
  Code code;
  if (decoders::IsKernelAddress(address)) return code;
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->DropEvicted();
  uint64_t vaddr = 0;
  const decoders::Mapping* m = nullptr;
  code.owner = impl_->ImageFor(pid, space, address, &vaddr, &m);
  if (code.owner != nullptr) code.bytes = code.owner->CodeAt(vaddr);
  return code;
}

Result<std::shared_ptr<const decoders::ElfImage>> SymbolService::MappedImage(
    const decoders::AddressSpace& space, const decoders::Mapping& m) {
  if (m.IsSpecial())
    return Error(ErrorCode::kNotFound, "mapping " + m.path + " is backed by no file");
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->DropEvicted();
  return impl_->images.GetMapped(m, space.access());
}

decoders::UnwindResult SymbolService::UnwindUser(uint32_t pid, const decoders::AddressSpace& space,
                                                 std::span<const uint64_t> regs,
                                                 uint64_t stack_start,
                                                 std::span<const uint8_t> stack) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->DropEvicted();
  return impl_->unwinder->Unwind(regs, stack_start, stack, [&](uint64_t address) {
    decoders::UnwindImage at;
    uint64_t vaddr = 0;
    const decoders::Mapping* m = nullptr;
    at.image = impl_->ImageFor(pid, space, address, &vaddr, &m);
    if (at.image) at.bias = address - vaddr;
    return at;
  });
}

decoders::ImageCacheStats SymbolService::ImageCacheCounts() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->images.cache().stats();
}

decoders::ImageStoreStats SymbolService::ImageStoreCounts() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->images.stats();
}

Location SymbolService::SymbolizeKernel(uint64_t address) {
  Location loc;
  loc.address = address;
  loc.image = "[kernel.kallsyms]";
  std::lock_guard<std::mutex> lock(impl_->mu);
  if (const std::optional<KernelSymbol> s = impl_->Kernel(address)) {
    loc.function = std::string(s->name);
    loc.offset = address - s->address;
    if (!s->module.empty()) loc.image = "[" + std::string(s->module) + "]";
  }
  return loc;
}

bool SymbolService::KernelSymbolsRead() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->kallsyms_loaded;
}

uint64_t SymbolService::KernelFunctionStart(uint64_t address) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  const std::optional<KernelSymbol> s = impl_->Kernel(address);
  return s ? s->address : address;
}

}  // namespace pathprof::pipeline
