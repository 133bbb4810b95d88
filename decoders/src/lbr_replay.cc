#include "pathprof/decoders/lbr_replay.h"

#include <sys/mman.h>

#include <map>
#include <variant>

#include "pathprof/core/hex.h"
#include "pathprof/decoders/perf_data_format.h"
#include "pathprof/decoders/perf_data_reader.h"
#include "pathprof/decoders/process_code_map.h"

namespace pathprof::decoders {
namespace {

// MMAP (not MMAP2) marks data mappings with this misc bit (PERF_RECORD_MISC_MMAP_DATA).
constexpr uint16_t kMiscMmapData = 1u << 13;

}  // namespace

Result<LbrReplayResult> ReplayLbr(const std::string& perf_data, const LbrReplayOptions& options,
                                  const std::function<void(std::vector<BranchBatch>&)>& sink) {
  PATHPROF_ASSIGN_OR_RETURN(auto reader, PerfDataReader::Open(perf_data));
  return ReplayLbr(&reader, options, sink);
}

Result<LbrReplayResult> ReplayLbr(PerfDataReader* reader, const LbrReplayOptions& options,
                                  const std::function<void(std::vector<BranchBatch>&)>& sink) {
  PATHPROF_RETURN_IF_ERROR(reader->RequireX86_64());

  // Build-ids from the header feature, for MMAP records that carry none.
  std::map<std::string, std::string> header_build_ids;
  for (const PerfBuildId& b : reader->info().build_ids) {
    header_build_ids[b.filename] = HexBytes(b.build_id);
  }

  ImageStore store(options.images);
  ProcessCodeMap code(&store);
  LbrReconstructor reconstructor(&code);
  if (options.on_range) reconstructor.set_range_observer(options.on_range);
  LbrReplayResult result;
  std::vector<BranchBatch> batches;
  PerfRecord rec;
  while (true) {
    PATHPROF_ASSIGN_OR_RETURN(bool more, reader->Next(&rec));
    if (!more) break;
    ++result.records;
    if (auto* s = std::get_if<PerfSample>(&rec.body)) {
      if (s->branches.empty()) {
        ++result.samples_without_branches;
        continue;
      }
      if (options.pid && s->pid != *options.pid) {
        ++result.samples_other_pid;
        continue;
      }
      thread_local std::vector<LbrEntry> entries;
      entries.resize(s->branches.size());
      for (size_t i = 0; i < s->branches.size(); ++i) {
        const PerfBranchEntry& b = s->branches[i];
        entries[i] = {b.from, b.to, b.cycles(), b.mispredicted()};
      }
      LbrSample sample;
      sample.pid = s->pid;
      sample.tid = s->tid;
      sample.time_ns = s->time;
      sample.ip = s->ip;
      sample.entries = entries;
      sample.call_stack_mode =
          (reader->attr(s->attr_index).branch_sample_type & perf::kBranchCallStack) != 0;
      batches.clear();
      reconstructor.Reconstruct(sample, &batches);
      if (sink && !batches.empty()) sink(batches);
    } else if (auto* m = std::get_if<PerfMmap>(&rec.body)) {
      ++result.mmaps;
      Mapping map;
      map.start = m->start;
      map.len = m->len;
      map.pgoff = m->pgoff;
      map.path = m->filename;
      map.executable = m->is_mmap2 ? (m->prot & PROT_EXEC) != 0 : (rec.misc & kMiscMmapData) == 0;
      map.build_id = HexBytes(m->build_id);
      if (map.build_id.empty()) {
        auto it = header_build_ids.find(m->filename);
        if (it != header_build_ids.end()) map.build_id = it->second;
      }
      code.AddMapping(m->pid, std::move(map));
    } else if (auto* f = std::get_if<PerfForkExit>(&rec.body)) {
      if (!f->is_exit && f->pid != f->ppid) code.Fork(f->ppid, f->pid);
    }
  }
  result.lbr = reconstructor.stats();
  result.images = store.stats();
  return result;
}

}  // namespace pathprof::decoders
