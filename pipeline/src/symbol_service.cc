#include "pathprof/pipeline/symbol_service.h"

#include <algorithm>
#include <charconv>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <string_view>
#include <vector>

#include "pathprof/core/procfs.h"
#include "pathprof/decoders/image_store.h"
#include "pathprof/decoders/symbolizer.h"

namespace pathprof::pipeline {
namespace {

// Names and modules point into the kallsyms text the table keeps: 120k symbols as two strings
// each were most of the table's build (an allocation per name) and twice its memory.
struct KernelSymbol {
  uint64_t address;
  std::string_view name;
  std::string_view module;
};

struct KernelSymbols {
  // /proc/kallsyms as read; never changed once parsed. Behind a pointer so that moving the
  // table keeps the views valid (a moved short string's bytes would move with it).
  std::unique_ptr<const std::string> text;
  std::vector<KernelSymbol> sorted;
};

// The next whitespace-separated field of `line` from `*pos` on (empty at the end).
std::string_view NextField(std::string_view line, size_t* pos) {
  size_t b = line.find_first_not_of(" \t", *pos);
  if (b == std::string_view::npos) {
    *pos = line.size();
    return {};
  }
  size_t e = line.find_first_of(" \t", b);
  if (e == std::string_view::npos) e = line.size();
  *pos = e;
  return line.substr(b, e - b);
}

// /proc/kallsyms text symbols, sorted. Addresses read as 0 without CAP_SYSLOG (kptr_restrict):
// then the table is empty and kernel frames show as raw addresses. The file is read whole and
// parsed in place: it has 100-200k lines, and a stream per line took 1.5 s of a sanitizer
// build's start (the first kernel frame of a session waits for it under the service's lock).
// Bounded at 64 MiB (a kernel's table is a few MiB).
KernelSymbols ReadKallsyms() {
  constexpr size_t kMaxBytes = 64u << 20;
  KernelSymbols table;
  auto text = procfs::Procfs::Host().ReadGlobal("kallsyms", kMaxBytes);
  if (!text.ok()) return table;  // unreadable or absurdly large: kernel frames stay addresses
  table.text = std::make_unique<const std::string>(std::move(*text));
  std::vector<KernelSymbol>& out = table.sorted;
  std::string_view rest(*table.text);
  while (!rest.empty()) {
    const size_t nl = rest.find('\n');
    const std::string_view line = rest.substr(0, nl);
    rest = nl == std::string_view::npos ? std::string_view() : rest.substr(nl + 1);
    size_t pos = 0;
    const std::string_view addr = NextField(line, &pos);
    const std::string_view type = NextField(line, &pos);
    const std::string_view name = NextField(line, &pos);
    std::string_view module = NextField(line, &pos);
    if (name.empty() || type.size() != 1) continue;
    if (type != "t" && type != "T" && type != "w" && type != "W") continue;
    uint64_t a = 0;
    if (std::from_chars(addr.data(), addr.data() + addr.size(), a, 16).ec != std::errc() || a == 0)
      continue;
    if (module.size() >= 2 && module.front() == '[' && module.back() == ']')
      module = module.substr(1, module.size() - 2);
    out.push_back({a, name, module});
  }
  std::sort(out.begin(), out.end(),
            [](const KernelSymbol& a, const KernelSymbol& b) { return a.address < b.address; });
  return table;
}

}  // namespace

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
  KernelSymbols kallsyms;
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

  const KernelSymbol* Kernel(uint64_t address) {
    if (!kallsyms_loaded) {
      kallsyms = ReadKallsyms();
      kallsyms_loaded = true;
    }
    const std::vector<KernelSymbol>& sorted = kallsyms.sorted;
    auto it = std::upper_bound(sorted.begin(), sorted.end(), address,
                               [](uint64_t a, const KernelSymbol& s) { return a < s.address; });
    if (it == sorted.begin()) return nullptr;
    return &*std::prev(it);
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
  if (const KernelSymbol* s = impl_->Kernel(address)) {
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
  const KernelSymbol* s = impl_->Kernel(address);
  return s ? s->address : address;
}

}  // namespace pathprof::pipeline
