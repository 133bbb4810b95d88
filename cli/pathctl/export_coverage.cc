#include "pathctl/export_coverage.h"

#include <cstdio>
#include <vector>

#include "pathprof/decoders/elf_function_symbols.h"
#include "pathprof/decoders/elf_image.h"

namespace pathctl {
namespace {

namespace dec = pathprof::decoders;

// When a profile is thin for its binary. Optimizers order code by counts, and code without
// counts keeps its place: a profile helps only what the training run reached, and only as far
// as its counts are more than noise. The case these were set by was zstd, whose
// level-19 evaluation spent 53% of its time in a function a profile from a small training
// input never reached:
// - kMinFunctionShare: the profile reaches under 1 in 10 of the functions the binary names.
//   One ordinary use of a program reaches more: zstd names 1,022 functions, and one
//   compression run goes through its command line, file I/O, the block compressor of its
//   level, the entropy coders and the checksum, well over a hundred. A small input leaves whole
//   strategies and the large-input paths unreached, and falls under it.
// - kMinWindows: a sampled profile (ptrace bursts, LBR) of under 1,000 windows. Windows start
//   at times drawn uniformly, so a function that takes 5% of the run is in 50 +- 7 of 1,000
//   windows but in 5 +- 2 of 100: counts a layout cannot tell from noise, and a function
//   that takes half of another run can have none. At the default rates 1,000 windows is one
//   second emulated, 50 s stepped; a small training input is over sooner.
// - kMinNamedShare: under half of the binary's branches lie in functions it names (a
//   stripped binary, JIT or PLT code): BOLT lays out named functions only.
constexpr double kMinFunctionShare = 0.10;
constexpr uint64_t kMinWindows = 1000;
constexpr double kMinNamedShare = 0.5;

double Share(uint64_t part, uint64_t whole) {
  return whole == 0 ? 0 : static_cast<double>(part) / static_cast<double>(whole);
}

std::string Percent(double share) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f%%", 100 * share);
  return buf;
}

// The binary's address of `address` in process `pid`, through the recording's mappings of it.
bool BinaryAddress(const std::vector<const pathprof::ImageRecord*>& mappings,
                   const dec::ElfImage& image, uint32_t pid, uint64_t address, uint64_t* vaddr) {
  for (const pathprof::ImageRecord* m : mappings) {
    if ((m->pid != 0 && pid != 0 && m->pid != pid) || address < m->start || address >= m->end)
      continue;
    if (image.FileOffsetToVaddr(address - m->start + m->file_offset, vaddr)) return true;
  }
  return false;
}

}  // namespace

pathprof::Result<ProfileCoverage> MeasureCoverage(const pathprof::PbsContents& recording,
                                                  const std::string& binary) {
  PATHPROF_ASSIGN_OR_RETURN(auto image, dec::ElfImage::Open(binary));
  PATHPROF_ASSIGN_OR_RETURN(auto functions, dec::ReadFunctionSymbols(*image));
  std::vector<const pathprof::ImageRecord*> mappings;
  for (const pathprof::ImageRecord& m : recording.images)
    if (m.path == binary) mappings.push_back(&m);
  ProfileCoverage c;
  c.binary = binary;
  c.functions = functions.size();
  std::vector<bool> reached(functions.size());
  for (const pathprof::BranchBatch& batch : recording.batches) {
    c.windows += batch.window ? 1 : 0;
    for (const pathprof::BranchEvent& e : batch.events) {
      // What an optimizer lays out, as the fdata writer counts it.
      if (e.kind == pathprof::BranchKind::kFarTransfer || e.kind == pathprof::BranchKind::kUnknown)
        continue;
      if (!e.taken && e.kind != pathprof::BranchKind::kConditional) continue;
      ++c.branches;
      uint64_t vaddr = 0;
      if (!BinaryAddress(mappings, *image, batch.pid, e.from, &vaddr)) continue;
      ++c.in_binary;
      if (const dec::FunctionSymbol* f = dec::FindFunction(functions, vaddr)) {
        ++c.in_named;
        reached[static_cast<size_t>(f - functions.data())] = true;
      }
    }
  }
  for (bool r : reached) c.functions_reached += r ? 1 : 0;
  return c;
}

std::string CoverageLine(const ProfileCoverage& c) {
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "coverage: %llu of the recording's %llu branches are in %s (%s); %s of those "
                "lie in functions it names; the profile reaches %llu of its %llu named "
                "functions (%s)",
                (unsigned long long)c.in_binary, (unsigned long long)c.branches, c.binary.c_str(),
                Percent(Share(c.in_binary, c.branches)).c_str(),
                Percent(Share(c.in_named, c.in_binary)).c_str(),
                (unsigned long long)c.functions_reached, (unsigned long long)c.functions,
                Percent(Share(c.functions_reached, c.functions)).c_str());
  return buf;
}

std::vector<std::string> ThinProfileWarnings(const ProfileCoverage& c) {
  std::vector<std::string> w;
  if (c.in_binary == 0) {
    w.push_back("no branch of the profile is in " + c.binary +
                ": the optimizer gets nothing; name the binary the recording ran (--binary)");
    return w;
  }
  if (Share(c.in_named, c.in_binary) < kMinNamedShare)
    w.push_back("only " + Percent(Share(c.in_named, c.in_binary)) + " of its branches in " +
                c.binary +
                " lie in functions the binary names (stripped? JIT or PLT code?): BOLT lays "
                "out named functions only");
  if (c.windows > 0 && c.windows < kMinWindows)
    w.push_back("only " + std::to_string(c.windows) + " sampled windows (under " +
                std::to_string(kMinWindows) +
                "): a function that takes a few percent of the run gets a handful of counts or "
                "none; record longer, or on a larger input");
  if (c.functions > 0 && Share(c.functions_reached, c.functions) < kMinFunctionShare)
    w.push_back("the profile reaches " + std::to_string(c.functions_reached) + " of the " +
                std::to_string(c.functions) + " functions " + c.binary + " names (" +
                Percent(Share(c.functions_reached, c.functions)) + ", under " +
                Percent(kMinFunctionShare) +
                "): code the training run did not reach keeps its layout, and may be where "
                "the real runs spend their time; train on inputs like theirs");
  return w;
}

}  // namespace pathctl
