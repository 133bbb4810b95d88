// Session::ExportPprof: the session's stack samples (and hot paths) as a pprof profile.proto.
#include <algorithm>
#include <cstdio>
#include <map>

#include "pathprof/decoders/address_space.h"
#include "pathprof/pipeline/kernel_frames.h"
#include "pathprof/profiles/pprof_export.h"
#include "session_impl.h"

namespace pathprof::pipeline {

Result<std::string> Session::ExportPprof(bool include_paths, bool kernel_addresses) const {
  namespace pp = profiles::pprof;
  pp::ProfileOptions options;
  options.sample_types = {{"samples", "count"}};
  if (include_paths) options.sample_types.push_back({"path_count", "count"});
  options.period_type = {"cpu", "nanoseconds"};
  const uint32_t hz = std::max(1u, impl_->config.sampling.stack_hz);
  options.period = 1000000000LL / hz;
  options.time_nanos = impl_->info.started_unix_ms * 1000000LL;
  options.default_sample_type = "samples";
  PATHPROF_ASSIGN_OR_RETURN(auto builder, pp::ProfileBuilder::Create(options));
  auto to_pprof = [](const Location& l) {
    pp::Location out;
    out.address = l.address;
    out.mapping.file = l.image;
    out.mapping.build_id = l.build_id;
    out.mapping.start = l.map_start;
    out.mapping.limit = l.map_limit;
    out.mapping.offset = l.map_offset;
    // Code without a symbol (a PLT entry, _start, main, or one function per unwind entry,
    // image+0xSTART) is named so in every view; its system name adds the function's size (the
    // name has its start), and the mapping is not marked symbolized by it
    // (pp::Frame::name_from_address), so a backend with the unstripped file still names it.
    if (l.name_without_symbol) {
      char size[48];
      std::snprintf(size, sizeof size, " (0x%llx bytes)",
                    static_cast<unsigned long long>(l.function_size));
      out.frames.push_back({l.function, l.function + size, l.file, l.line, 0, true});
      return out;
    }
    if (l.inlined_by.empty()) {
      if (!l.function.empty()) out.frames.push_back({l.function, "", l.file, l.line, 0});
    } else {
      for (const Location& f : l.inlined_by)
        out.frames.push_back({f.function, "", f.file, f.line, 0});
    }
    return out;
  };
  CctQuery q;
  q.max_depth = 4096;
  q.max_nodes = 1000000;
  CallingContextTree tree = Cct(q);
  if (!kernel_addresses) HideKernelFrames(&tree);
  std::map<uint64_t, const CctNode*> by_id;
  for (const CctNode& n : tree.nodes) by_id[n.id] = &n;
  // A leaf's samples are spread over the addresses they were taken at, in proportion to its
  // function's sampled addresses (the PCCT keeps functions, not addresses: per line the totals
  // are exact, per context a share), so pprof's line view matches perf annotate's.
  std::map<std::pair<uint32_t, uint64_t>, std::vector<std::pair<Location, uint64_t>>> leaves_of;
  auto leaves = [&](const CctNode& n) -> const std::vector<std::pair<Location, uint64_t>>& {
    const auto key = std::make_pair(n.pid, n.function.address);
    auto it = leaves_of.find(key);
    if (it != leaves_of.end()) return it->second;
    std::vector<std::pair<Location, uint64_t>> found;
    if (n.function.address != 0 && !decoders::IsKernelAddress(n.function.address))
      if (auto store = Store(n.pid)) found = store->LeafAddresses(n.function.address);
    return leaves_of.emplace(key, std::move(found)).first->second;
  };
  for (const CctNode& n : tree.nodes) {
    if (n.self_weight <= 0) continue;
    // Each caller's location is where it made the call (its child's call site: own address,
    // own line), so pprof and Parca spread a caller's samples over its call lines; a frame
    // without a known call site (a hidden kernel frame) stands at its function.
    std::vector<pp::Location> callers;
    const Location* site = &n.call_site;
    for (auto it = by_id.find(n.parent_id); it != by_id.end();
         it = by_id.find(it->second->parent_id)) {
      const CctNode* c = it->second;
      callers.push_back(to_pprof(site->address != 0 ? *site : c->function));
      site = &c->call_site;
    }
    const int64_t self = int64_t(n.self_weight);
    std::vector<std::pair<pp::Location, int64_t>> split;
    const auto& at = leaves(n);
    uint64_t seen = 0;
    for (const auto& [loc, count] : at) seen += count;
    if (seen == 0) {
      split.emplace_back(to_pprof(n.function), self);
    } else {
      // Largest remainder: the parts add up to the node's own count exactly.
      std::vector<std::pair<uint64_t, size_t>> remainders;
      int64_t given = 0;
      for (size_t i = 0; i < at.size(); ++i) {
        const unsigned __int128 scaled = (unsigned __int128)at[i].second * uint64_t(self);
        split.emplace_back(to_pprof(at[i].first), int64_t(scaled / seen));
        given += split.back().second;
        remainders.emplace_back(uint64_t(scaled % seen), i);
      }
      std::sort(remainders.rbegin(), remainders.rend());
      for (size_t k = 0; given < self && k < remainders.size(); ++k, ++given)
        ++split[remainders[k].second].second;
    }
    for (auto& [leaf, value] : split) {
      if (value <= 0) continue;
      pp::Sample sample;
      sample.stack.push_back(std::move(leaf));
      sample.stack.insert(sample.stack.end(), callers.begin(), callers.end());
      sample.values = {value};
      if (include_paths) sample.values.push_back(0);
      sample.num_labels.push_back({"pid", int64_t(n.pid), ""});
      PATHPROF_RETURN_IF_ERROR(builder.AddSample(sample));
    }
  }
  if (include_paths) {
    HotPathsQuery hq;
    hq.top_k = 1000;
    hq.with_blocks = false;
    HotPathsResult paths = HotPaths(hq);
    if (!kernel_addresses) HideKernelFrames(&paths);
    for (const HotPath& p : paths.paths) {
      pp::Sample sample;
      sample.stack.push_back(to_pprof(p.start));
      sample.values = {0, int64_t(p.estimate.value + 0.5)};
      sample.num_labels.push_back({"pid", int64_t(p.pid), ""});
      sample.num_labels.push_back({"path_length", int64_t(p.length), ""});
      sample.num_labels.push_back({"path_outcomes", int64_t(p.outcomes), ""});
      PATHPROF_RETURN_IF_ERROR(builder.AddSample(sample));
    }
  }
  return builder.SerializeGzip();
}

}  // namespace pathprof::pipeline
