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
#include "symbol_backend.h"
#include "symbolizer_client.h"

namespace pathprof::pipeline {

struct SymbolService::Impl {
  Impl(const decoders::ImageStoreOptions& options, SymbolizeIn where) : images(options) {
    if (where == SymbolizeIn::kHelper) {
      SymbolHelperOptions o;
      o.max_image_bytes = options.max_image_bytes;
      backend = std::make_unique<HelperSymbolBackend>(o);
    } else {
      backend = InProcessSymbolBackend();
    }
  }
  std::mutex mu;
  decoders::ImageStore images;
  std::unique_ptr<SymbolBackend> backend;
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
      backend->ForgetAll();
      debug_files.clear();
      return;
    }
    for (const decoders::ElfImage* gone : evicted) {
      backend->Forget(gone);
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

SymbolService::SymbolService()
    : impl_(std::make_unique<Impl>(decoders::ImageStoreOptions{}, SymbolizeIn::kThisProcess)) {}
SymbolService::SymbolService(const decoders::ImageStoreOptions& options, SymbolizeIn where)
    : impl_(std::make_unique<Impl>(options, where)) {}
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
  auto sym = impl_->backend->Symbolize(image, vaddr, impl_->DebugFile(image), impl_->source_lines);
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
  auto sym = impl_->backend->Symbolize(image, vaddr, impl_->DebugFile(image), /*lines=*/false);
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
  return impl_->backend->Unwind(pid, regs, stack_start, stack, [&](uint64_t address) {
    UnwindMapping at;
    uint64_t vaddr = 0;
    const decoders::Mapping* m = nullptr;
    at.at.image = impl_->ImageFor(pid, space, address, &vaddr, &m);
    if (at.at.image) {
      at.at.bias = address - vaddr;
      at.start = m->start;
      at.end = m->end();
    }
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

SymbolHelperStats SymbolService::HelperCounts() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->backend->HelperStats();
}

int SymbolService::HelperPid() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->backend->HelperPid();
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
