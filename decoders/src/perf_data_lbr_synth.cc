// Taken-branch streams to LBR samples, and a .pbs stream to a perf.data file.
#include <algorithm>
#include <set>
#include <string>

#include "perf_data_writer.h"

namespace pathprof::decoders {

void LbrSampleSynthesizer::Add(const BranchBatch& batch, std::vector<PerfLbrSample>* out) {
  const size_t w = std::max<uint32_t>(options_.entries, 1);
  const uint64_t period = std::max<uint64_t>(options_.period, 1);
  Thread& t = threads_[batch.tid];
  if (t.ring.size() != w) t.ring.assign(w, BranchEvent{});
  if (batch.window) {
    AddWindow(batch, w, out);
    return;
  }
  if (batch.gap_before) {
    t.filled = 0;
    t.next = 0;
  }
  for (const BranchEvent& e : batch.events) {
    if (!e.taken) continue;
    ++taken_;
    t.ring[t.next] = e;
    t.next = (t.next + 1) % w;
    t.filled = std::min(t.filled + 1, w);
    if (++t.since_sample < period) continue;
    t.since_sample = 0;
    PerfLbrSample s;
    s.pid = batch.pid;
    s.tid = batch.tid;
    s.time = batch.time_ns;
    s.ip = e.to;  // the sampled instruction: where the newest branch went
    s.period = period;
    s.branches.reserve(t.filled);
    for (size_t i = 0; i < t.filled; ++i) {
      const BranchEvent& b = t.ring[(t.next + w - 1 - i) % w];
      const uint16_t cycles = static_cast<uint16_t>(std::min<uint32_t>(b.cycles, 0xffff));
      s.branches.push_back(
          {b.from, b.to, PerfBranchEntry::MakeFlags(b.mispredicted, !b.mispredicted, cycles)});
    }
    out->push_back(std::move(s));
  }
}

// A window (ptrace burst, LBR snapshot) already is what one LBR sample holds: its last W taken
// branches, newest first, sampled at a time uniform over the run. Turning it into one sample
// keeps that; drawing every period-th branch from it would favour long windows over short ones.
void LbrSampleSynthesizer::AddWindow(const BranchBatch& batch, size_t w,
                                     std::vector<PerfLbrSample>* out) {
  std::vector<const BranchEvent*> taken;
  for (const BranchEvent& e : batch.events)
    if (e.taken) taken.push_back(&e);
  taken_ += taken.size();
  ++windows_;
  if (taken.empty()) return;
  PerfLbrSample s;
  s.pid = batch.pid;
  s.tid = batch.tid;
  s.time = batch.time_ns;
  s.ip = taken.back()->to;
  s.period = 1;
  const size_t n = std::min({taken.size(), w, kMaxLbrEntriesPerRecord});
  for (size_t i = 0; i < n; ++i) {
    const BranchEvent& b = *taken[taken.size() - 1 - i];
    const uint16_t cycles = static_cast<uint16_t>(std::min<uint32_t>(b.cycles, 0xffff));
    s.branches.push_back(
        {b.from, b.to, PerfBranchEntry::MakeFlags(b.mispredicted, !b.mispredicted, cycles)});
  }
  out->push_back(std::move(s));
}

Status WriteLbrPerfData(const std::string& path, const PbsContents& pbs, const LbrSynthOptions& lbr,
                        PerfDataWriterOptions options) {
  options.sample_period = lbr.period;
  PATHPROF_ASSIGN_OR_RETURN(PerfDataWriter w, PerfDataWriter::Create(path, std::move(options)));
  std::set<std::pair<uint32_t, uint32_t>> threads;
  for (const BranchBatch& b : pbs.batches) threads.emplace(b.pid, b.tid);
  for (const auto& [pid, tid] : threads) {
    PATHPROF_RETURN_IF_ERROR(w.WriteComm(pid, tid, "pathprof-synth"));
  }
  for (const ImageRecord& img : pbs.images) {
    PerfImage m;
    m.pid = img.pid;
    m.tid = img.pid;
    m.start = img.start;
    m.len = img.end > img.start ? img.end - img.start : 0;
    m.pgoff = img.file_offset;
    m.path = img.path;
    m.build_id = img.build_id.substr(0, 20);
    PATHPROF_RETURN_IF_ERROR(w.WriteMmap2(m));
  }
  LbrSampleSynthesizer synth(lbr);
  std::vector<PerfLbrSample> samples;
  for (const BranchBatch& b : pbs.batches) {
    samples.clear();
    synth.Add(b, &samples);
    for (const PerfLbrSample& s : samples) PATHPROF_RETURN_IF_ERROR(w.WriteSample(s));
  }
  return w.Close();
}

}  // namespace pathprof::decoders
