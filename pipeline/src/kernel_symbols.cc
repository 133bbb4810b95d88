#include "kernel_symbols.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstring>
#include <utility>

#include "pathprof/core/procfs_lines.h"

namespace pathprof::pipeline {
namespace {

constexpr size_t kPopulateStep = size_t{1} << 20;

size_t PageRoundUp(size_t bytes) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return (bytes + page - 1) / page * page;
}

// The next space- or tab-separated field of `line` from `*pos` on (empty at the end).
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

}  // namespace

PopulatedArena::PopulatedArena(size_t max_bytes) {
  if (max_bytes == 0) return;
  reserved_ = PageRoundUp(max_bytes);
  // Address space only: MAP_NORESERVE commits nothing until a page is populated.
  void* p = mmap(nullptr, reserved_, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) {
    reserved_ = 0;
    return;
  }
  base_ = static_cast<char*>(p);
}

PopulatedArena::PopulatedArena(PopulatedArena&& other) noexcept
    : base_(std::exchange(other.base_, nullptr)),
      reserved_(std::exchange(other.reserved_, 0)),
      populated_(std::exchange(other.populated_, 0)),
      used_(std::exchange(other.used_, 0)) {}

PopulatedArena& PopulatedArena::operator=(PopulatedArena&& other) noexcept {
  if (this != &other) {
    if (base_ != nullptr) munmap(base_, reserved_);
    base_ = std::exchange(other.base_, nullptr);
    reserved_ = std::exchange(other.reserved_, 0);
    populated_ = std::exchange(other.populated_, 0);
    used_ = std::exchange(other.used_, 0);
  }
  return *this;
}

PopulatedArena::~PopulatedArena() {
  if (base_ != nullptr) munmap(base_, reserved_);
}

char* PopulatedArena::Append(size_t bytes) {
  if (base_ == nullptr || bytes > reserved_ - used_) return nullptr;
  if (used_ + bytes > populated_) {
    const size_t step = std::min(std::max(kPopulateStep, PageRoundUp(used_ + bytes - populated_)),
                                 reserved_ - populated_);
    // One call faults in the whole step (Linux 5.14+). Where it is refused the pages fault in
    // one by one as they are written, as any memory would.
#ifdef MADV_POPULATE_WRITE
    (void)madvise(base_ + populated_, step, MADV_POPULATE_WRITE);
#endif
    populated_ += step;
  }
  char* at = base_ + used_;
  used_ += bytes;
  return at;
}

void PopulatedArena::Trim() {
  if (base_ == nullptr) return;
  const size_t keep = PageRoundUp(std::max<size_t>(used_, 1));
  if (keep < reserved_) {
    munmap(base_ + keep, reserved_ - keep);
    reserved_ = keep;
    populated_ = std::min(populated_, keep);
  }
}

KernelSymbolTable KernelSymbolTable::Read(const procfs::Procfs& procfs) {
  static_assert(kMaxLineBytes <= UINT16_MAX);
  KernelSymbolTable table;
  // Every line is at least 16 bytes, so a table from kMaxBytes of text fits these bounds.
  table.entries_ = PopulatedArena(kMaxBytes);
  table.names_ = PopulatedArena(kMaxBytes);
  bool full = false;
  uint16_t last_module = 0;
  // Each line: "ADDRESS TYPE NAME [MODULE]". Only code (t, T, w, W) names frames.
  const Status read = procfs::ForEachGlobalLine(
      procfs, "kallsyms", kMaxBytes, kMaxLineBytes, [&](std::string_view line) {
        size_t pos = 0;
        const std::string_view addr = NextField(line, &pos);
        const std::string_view type = NextField(line, &pos);
        if (type.size() != 1) return;
        const char t = type[0];
        if (t != 't' && t != 'T' && t != 'w' && t != 'W') return;
        uint64_t a = 0;
        if (std::from_chars(addr.data(), addr.data() + addr.size(), a, 16).ec != std::errc() ||
            a == 0)
          return;
        const std::string_view name = NextField(line, &pos);
        if (name.empty()) return;
        std::string_view module = NextField(line, &pos);
        if (module.size() >= 2 && module.front() == '[' && module.back() == ']')
          module = module.substr(1, module.size() - 2);
        // A module's lines come together: most lines name the last one again.
        uint16_t module_index = 0;
        if (!module.empty()) {
          if (last_module != 0 && table.modules_[last_module - 1] == module) {
            module_index = last_module;
          } else {
            auto it = std::find(table.modules_.begin(), table.modules_.end(), module);
            if (it == table.modules_.end() && table.modules_.size() < UINT16_MAX - 1)
              it = table.modules_.emplace(table.modules_.end(), module);
            if (it != table.modules_.end())
              module_index = static_cast<uint16_t>(it - table.modules_.begin() + 1);
          }
          last_module = module_index;
        }
        const uint32_t name_offset = static_cast<uint32_t>(table.names_.size());
        char* name_at = table.names_.Append(name.size());
        char* entry_at = table.entries_.Append(sizeof(Entry));
        if (name_at == nullptr || entry_at == nullptr) {
          full = true;
          return;
        }
        std::memcpy(name_at, name.data(), name.size());
        const Entry e{a, name_offset, static_cast<uint16_t>(name.size()), module_index};
        std::memcpy(entry_at, &e, sizeof e);
      });
  // Unreadable, too large, a corrupt line or no memory reserved: no table rather than part of
  // one (kernel frames stay addresses, as without CAP_SYSLOG).
  if (!read.ok() || full) return KernelSymbolTable();
  // The kernel lists its own image in address order and then each module's: sorted once, in
  // place (a stable sort would allocate a second table); aliases of one address keep file order.
  Entry* first = reinterpret_cast<Entry*>(table.entries_.data());
  Entry* last = first + table.size();
  auto by_address = [](const Entry& x, const Entry& y) {
    return x.address != y.address ? x.address < y.address : x.name_offset < y.name_offset;
  };
  if (!std::is_sorted(first, last, by_address)) std::sort(first, last, by_address);
  table.entries_.Trim();
  table.names_.Trim();
  return table;
}

std::optional<KernelSymbol> KernelSymbolTable::Find(uint64_t address) const {
  const Entry* it = std::upper_bound(begin(), end(), address,
                                     [](uint64_t a, const Entry& s) { return a < s.address; });
  if (it == begin()) return std::nullopt;
  const Entry& e = *std::prev(it);
  KernelSymbol s;
  s.address = e.address;
  s.name = std::string_view(names_.data() + e.name_offset, e.name_bytes);
  if (e.module != 0) s.module = modules_[e.module - 1];
  return s;
}

}  // namespace pathprof::pipeline
