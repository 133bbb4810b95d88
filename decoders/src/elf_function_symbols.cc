#include "pathprof/decoders/elf_function_symbols.h"

#include <gelf.h>
#include <libelf.h>

#include <algorithm>
#include <map>

namespace pathprof::decoders {
namespace {

struct RawSymbol {
  uint64_t vaddr;
  uint64_t size;
  uint64_t section_end;
  std::string name;
  bool local;
};

// Symbols of the first section of type `type` (SHT_SYMTAB or SHT_DYNSYM); false if none.
bool ReadTable(Elf* elf, Elf64_Word type, std::vector<RawSymbol>* out) {
  for (Elf_Scn* scn = elf_nextscn(elf, nullptr); scn != nullptr; scn = elf_nextscn(elf, scn)) {
    GElf_Shdr sh;
    if (gelf_getshdr(scn, &sh) == nullptr || sh.sh_type != type || sh.sh_entsize == 0) continue;
    Elf_Data* data = elf_getdata(scn, nullptr);
    if (data == nullptr) return false;
    const size_t count = sh.sh_size / sh.sh_entsize;
    for (size_t i = 0; i < count; ++i) {
      GElf_Sym sym;
      if (gelf_getsym(data, static_cast<int>(i), &sym) == nullptr) continue;
      const int kind = GELF_ST_TYPE(sym.st_info);
      if ((kind != STT_FUNC && kind != STT_GNU_IFUNC) || sym.st_shndx == SHN_UNDEF ||
          sym.st_shndx >= SHN_LORESERVE)
        continue;
      GElf_Shdr home;
      Elf_Scn* home_scn = elf_getscn(elf, sym.st_shndx);
      if (home_scn == nullptr || gelf_getshdr(home_scn, &home) == nullptr) continue;
      const char* name = elf_strptr(elf, sh.sh_link, sym.st_name);
      if (name == nullptr || *name == '\0') continue;
      out->push_back({sym.st_value, sym.st_size, home.sh_addr + home.sh_size, name,
                      GELF_ST_BIND(sym.st_info) == STB_LOCAL});
    }
    return true;
  }
  return false;
}

}  // namespace

Result<std::vector<FunctionSymbol>> ReadFunctionSymbols(const ElfImage& image) {
  auto bytes = image.bytes();
  // libelf only reads the bytes (ELF_C_READ semantics for elf_memory); ElfImage::Open has
  // negotiated the libelf version already.
  Elf* elf =
      elf_memory(const_cast<char*>(reinterpret_cast<const char*>(bytes.data())), bytes.size());
  if (elf == nullptr) {
    return Error(ErrorCode::kCorrupt, "ELF image " + image.path() + ": symbol tables unreadable (" +
                                          elf_errmsg(-1) + ")");
  }
  std::vector<RawSymbol> raw;
  if (!ReadTable(elf, SHT_SYMTAB, &raw)) ReadTable(elf, SHT_DYNSYM, &raw);
  elf_end(elf);
  std::stable_sort(raw.begin(), raw.end(),
                   [](const RawSymbol& a, const RawSymbol& b) { return a.vaddr < b.vaddr; });
  // Assembly and crt code (_init, frame_dummy) declare functions without a size; BOLT takes
  // them to run to the next function or the end of their section, and so does this.
  for (size_t i = 0; i < raw.size(); ++i) {
    if (raw[i].size != 0) continue;
    uint64_t end = raw[i].section_end;
    for (size_t j = i + 1; j < raw.size(); ++j) {
      if (raw[j].vaddr > raw[i].vaddr) {
        end = std::min(end, raw[j].vaddr);
        break;
      }
    }
    raw[i].size = end > raw[i].vaddr ? end - raw[i].vaddr : 0;
  }
  std::vector<FunctionSymbol> out;
  out.reserve(raw.size());
  std::map<std::string, int> local_uses;
  for (const RawSymbol& r : raw) {
    // BOLT numbers every local symbol it meets, aliases included.
    std::string name = r.name;
    if (r.local) name += "/" + std::to_string(++local_uses[r.name]);
    // Aliases (two names, one address) are one function to BOLT: keep the first name.
    if ((!out.empty() && out.back().vaddr == r.vaddr) || r.size == 0) continue;
    out.push_back({r.vaddr, r.size, std::move(name)});
  }
  return out;
}

const FunctionSymbol* FindFunction(const std::vector<FunctionSymbol>& sorted, uint64_t vaddr) {
  auto it = std::upper_bound(sorted.begin(), sorted.end(), vaddr,
                             [](uint64_t v, const FunctionSymbol& f) { return v < f.vaddr; });
  if (it == sorted.begin()) return nullptr;
  --it;
  return vaddr < it->vaddr + it->size ? &*it : nullptr;
}

Result<FunctionSymbol> ReadFunctionNamed(const std::string& path, std::string_view name) {
  PATHPROF_ASSIGN_OR_RETURN(auto image, ElfImage::Open(path));
  PATHPROF_ASSIGN_OR_RETURN(std::vector<FunctionSymbol> functions, ReadFunctionSymbols(*image));
  for (const FunctionSymbol& f : functions) {
    const std::string_view n = f.bolt_name;
    if (n == name || (n.starts_with(name) && n.size() > name.size() && n[name.size()] == '/'))
      return f;
  }
  return Error(ErrorCode::kNotFound,
               "no function " + std::string(name) + " in the symbols of " + path);
}

}  // namespace pathprof::decoders
