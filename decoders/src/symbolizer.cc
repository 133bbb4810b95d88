#include "pathprof/decoders/symbolizer.h"

#include <cxxabi.h>
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <unordered_map>

#include "code_names.h"

namespace pathprof::decoders {

std::string Demangle(const std::string& name) {
  if (!name.starts_with("_Z")) return name;
  int status = 0;
  char* out = abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status);
  if (status != 0 || out == nullptr) {
    std::free(out);
    return name;
  }
  std::string s(out);
  std::free(out);
  return s;
}

std::string Symbolization::ToString() const {
  char off[32];
  std::snprintf(off, sizeof off, "+0x%llx", static_cast<unsigned long long>(offset));
  std::string s = function.empty() ? std::string("??") : function + off;
  if (!file.empty()) s += " (" + file + ":" + std::to_string(line) + ")";
  return s;
}

// Per address: the symbol part, and the source lines once Symbolize asked for them.
struct Symbolizer::Cached {
  Symbolization s;
  bool lines_read = false;
};

struct Symbolizer::Module {
  Dwfl* dwfl = nullptr;
  Dwfl_Module* mod = nullptr;
  std::shared_ptr<const ElfImage> image;  // owns the bytes libdw reads
  Dwarf_Addr base = 0;                    // where libdwfl placed the image's vaddr 0
  std::unordered_map<uint64_t, Cached> cache;
  std::optional<CodeNames> code_names;  // read at the first address without a symbol
  ~Module() {
    if (dwfl != nullptr) dwfl_end(dwfl);
  }
};

namespace {

// libdwfl's own search for separate debug info opens files named after the image's path and its
// .gnu_debuglink as this process (root in the daemon): a user's symlink or FIFO there would be
// opened, or block the open. Debug files are found by build-id instead (ImageStore::
// FindDebugFile) and passed in; libdwfl is told there are none to find.
int NoSeparateDebugInfo(Dwfl_Module*, void**, const char*, Dwarf_Addr, const char*, const char*,
                        GElf_Word, char**) {
  return -1;
}

const Dwfl_Callbacks kOfflineCallbacks = {
    .find_elf = dwfl_build_id_find_elf,
    .find_debuginfo = NoSeparateDebugInfo,
    .section_address = dwfl_offline_section_address,
    .debuginfo_path = nullptr,
};

std::string DieName(Dwarf_Die* die) {
  Dwarf_Attribute attr;
  const char* name = nullptr;
  if (dwarf_attr_integrate(die, DW_AT_linkage_name, &attr) != nullptr ||
      dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &attr) != nullptr) {
    name = dwarf_formstring(&attr);
  }
  if (name == nullptr) name = dwarf_diename(die);
  if (name == nullptr && dwarf_attr_integrate(die, DW_AT_name, &attr) != nullptr) {
    name = dwarf_formstring(&attr);
  }
  return name == nullptr ? std::string() : Demangle(name);
}

std::string Basename(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

}  // namespace

// Code with no symbol at all (stripped, static functions of a stripped library): PLT entries,
// _start and main are named by what the image proves; other functions by their unwind entry
// (FDE), whose range is the function's, `image+0xSTART`, so that hot methods show one row per
// function and every address of it the same name (code_names.h says why not a CFI row's range).
void Symbolizer::NameUnsymbolized(Module* m, uint64_t vaddr, Symbolization* s) {
  if (!m->code_names) m->code_names = CodeNames::Read(m->image->bytes());
  if (const NamedRange* r = m->code_names->NameAt(vaddr)) {
    s->function = r->name;
    s->offset = vaddr - r->start;
    s->function_size = r->end - r->start;
    s->without_symbol = true;
    ++proved_names_;
    return;
  }
  if (const AddressRange* f = m->code_names->FunctionAt(vaddr)) {
    char name[32];
    std::snprintf(name, sizeof name, "+0x%llx", static_cast<unsigned long long>(f->start));
    s->function = Basename(m->image->path()) + name;
    s->offset = vaddr - f->start;
    s->function_size = f->end - f->start;
    s->from_unwind_entry = true;
    s->without_symbol = true;
    ++unwind_entry_names_;
  }
}

Symbolizer::Symbolizer() = default;
Symbolizer::~Symbolizer() = default;

Result<Symbolizer::Module*> Symbolizer::ModuleFor(const std::shared_ptr<const ElfImage>& image,
                                                  const std::string& debug_file, int debug_fd) {
  auto it = modules_.find(image.get());
  if (it != modules_.end()) return it->second.get();
  if (modules_.size() >= kMaxModules) {
    // Bounded: drop every module at once; each is rebuilt from its image on its next use.
    modules_.clear();
    ++modules_dropped_;
  }
  auto m = std::make_unique<Module>();
  m->image = image;
  m->dwfl = dwfl_begin(&kOfflineCallbacks);
  if (m->dwfl == nullptr) {
    return Error(ErrorCode::kInternal, std::string("dwfl_begin: ") + dwfl_errmsg(-1));
  }
  if (debug_file.empty()) {
    // The image's own bytes, already read (and bounded) by ElfImage: reopening image->path()
    // would read whatever the path names now, and libdw maps files, so a file its owner
    // truncates would raise SIGBUS here. libelf only reads these bytes (native-endian ELF).
    auto bytes = image->bytes();
    m->mod = dwfl_report_offline_memory(m->dwfl, image->path().c_str(), image->path().c_str(),
                                        reinterpret_cast<char*>(const_cast<uint8_t*>(bytes.data())),
                                        bytes.size());
  } else {
    // Separate debug info found by build-id under the debug directories (root's, read-only), or
    // handed over open; libdwfl owns (and closes) the descriptor it is given.
    int fd = debug_fd >= 0 ? ::fcntl(debug_fd, F_DUPFD_CLOEXEC, 0)
                           : ::open(debug_file.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return Error(ErrorCode::kNotFound, "symbolizer: cannot open " + debug_file);
    m->mod = dwfl_report_offline(m->dwfl, image->path().c_str(), debug_file.c_str(), fd);
    if (m->mod == nullptr) ::close(fd);
  }
  if (m->mod == nullptr) {
    return Error(ErrorCode::kCorrupt,
                 "symbolizer: " + image->path() + ": " + std::string(dwfl_errmsg(-1)));
  }
  dwfl_report_end(m->dwfl, nullptr, nullptr);
  // Offline reporting places a module at an address of libdwfl's choosing; `base` is where the
  // image's vaddr 0 landed, added to every address asked about.
  Dwarf_Addr bias = 0;
  if (dwfl_module_getelf(m->mod, &bias) == nullptr) {
    return Error(ErrorCode::kCorrupt,
                 "symbolizer: " + image->path() + ": " + std::string(dwfl_errmsg(-1)));
  }
  m->base = bias;
  Module* raw = m.get();
  modules_.emplace(image.get(), std::move(m));
  return raw;
}

void Symbolizer::Forget(const ElfImage* image) {
  modules_.erase(image);
}

// The symbol table's part only: what names the function and where it starts. Reading the
// symbol table is cheap; the source lines below decompress and parse DWARF, which a session's
// ingest (one lookup per new stack frame, for its function's start) must not pay for.
Symbolizer::Cached& Symbolizer::FunctionPart(Module* m, uint64_t vaddr) {
  auto [it, added] = m->cache.try_emplace(vaddr);
  if (!added) return it->second;
  Symbolization& s = it->second.s;
  GElf_Sym sym;
  GElf_Off off = 0;
  const char* name =
      dwfl_module_addrinfo(m->mod, vaddr + m->base, &off, &sym, nullptr, nullptr, nullptr);
  // A code address is never named after a data symbol: stripped binaries keep their exported
  // objects (python3's PyFunction_Type) in .dynsym, and the nearest symbol libdw finds may be
  // one. Such an address stays unnamed, as perf shows it ([unknown]).
  const int type = name != nullptr ? GELF_ST_TYPE(sym.st_info) : STT_NOTYPE;
  const bool names_code = type == STT_FUNC || type == STT_GNU_IFUNC || type == STT_NOTYPE;
  if (name != nullptr && names_code) {
    s.function = Demangle(name);
    s.offset = off;
  } else {
    if (name != nullptr) ++data_symbols_refused_;
    NameUnsymbolized(m, vaddr, &s);
  }
  return it->second;
}

Result<Symbolization> Symbolizer::FunctionOf(const std::shared_ptr<const ElfImage>& image,
                                             uint64_t vaddr, const std::string& debug_file,
                                             int debug_fd) {
  PATHPROF_ASSIGN_OR_RETURN(auto mod, ModuleFor(image, debug_file, debug_fd));
  return FunctionPart(mod, vaddr).s;
}

Result<Symbolization> Symbolizer::Symbolize(const std::shared_ptr<const ElfImage>& image,
                                            uint64_t vaddr, const std::string& debug_file,
                                            int debug_fd) {
  PATHPROF_ASSIGN_OR_RETURN(auto mod, ModuleFor(image, debug_file, debug_fd));
  Module* m = mod;
  Cached& cached = FunctionPart(m, vaddr);
  Symbolization& s = cached.s;
  if (cached.lines_read) return s;
  cached.lines_read = true;
  const Dwarf_Addr at = vaddr + m->base;
  if (Dwfl_Line* line = dwfl_module_getsrc(m->mod, at)) {
    int lineno = 0;
    const char* file = dwfl_lineinfo(line, nullptr, &lineno, nullptr, nullptr, nullptr);
    if (file != nullptr) s.file = file;
    s.line = lineno;
  }
  Dwarf_Addr bias = 0;
  if (Dwarf_Die* cu = dwfl_module_addrdie(m->mod, at, &bias)) {
    // The innermost scope at the address, then the scopes that contain that DIE where it sits:
    // dwarf_getscopes alone goes on from an inline instance through the scopes of its abstract
    // origin (the inlined function's own definition), which skips the function it was inlined
    // into; dwarf_getscopes_die follows the concrete tree, caller by caller (as eu-addr2line -i).
    Dwarf_Die* innermost = nullptr;
    Dwarf_Die* scopes = nullptr;
    int n = dwarf_getscopes(cu, at - bias, &innermost);
    if (n > 0) n = dwarf_getscopes_die(&innermost[0], &scopes);
    std::free(innermost);
    std::string file = s.file;
    int line = s.line;
    Dwarf_Files* files = nullptr;
    dwarf_getsrcfiles(cu, &files, nullptr);
    for (int i = 0; i < n; ++i) {
      Dwarf_Die* die = &scopes[i];
      const int tag = dwarf_tag(die);
      if (tag != DW_TAG_inlined_subroutine && tag != DW_TAG_subprogram) continue;
      s.frames.push_back({DieName(die), file, line});
      if (tag == DW_TAG_subprogram) break;
      // The caller's position is where this inline instance was called from.
      Dwarf_Attribute attr;
      Dwarf_Word call_file = 0, call_line = 0;
      if (dwarf_formudata(dwarf_attr(die, DW_AT_call_file, &attr), &call_file) == 0 &&
          files != nullptr) {
        const char* f = dwarf_filesrc(files, call_file, nullptr, nullptr);
        file = f != nullptr ? f : "";
      }
      if (dwarf_formudata(dwarf_attr(die, DW_AT_call_line, &attr), &call_line) == 0) {
        line = static_cast<int>(call_line);
      }
    }
    std::free(scopes);
  }
  return s;
}

}  // namespace pathprof::decoders
