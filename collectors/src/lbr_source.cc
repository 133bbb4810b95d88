#include "pathprof/collectors/lbr_source.h"

#include <sys/mman.h>

#include <string>
#include <variant>

#include "pathprof/core/hex.h"
#include "pathprof/decoders/address_space.h"
#include "pathprof/decoders/perf_data_format.h"
#include "pathprof/decoders/perf_ring_record.h"

namespace pathprof::collectors {
namespace {

// MMAP (not MMAP2) marks data mappings with this misc bit (PERF_RECORD_MISC_MMAP_DATA).
constexpr uint16_t kMiscMmapData = 1u << 13;

decoders::Mapping ToMapping(const decoders::PerfMmap& m, uint16_t misc) {
  decoders::Mapping map;
  map.start = m.start;
  map.len = m.len;
  map.pgoff = m.pgoff;
  map.path = m.filename;
  map.executable = m.is_mmap2 ? (m.prot & PROT_EXEC) != 0 : (misc & kMiscMmapData) == 0;
  map.build_id = HexBytes(m.build_id);
  return map;
}

}  // namespace

void CountPerfRecordLoss(const decoders::PerfRecord& record, LiveSourceCounters* counters) {
  if (auto* lost = std::get_if<decoders::PerfLost>(&record.body)) {
    counters->drops["perf_lost_records"] += lost->lost;
  } else if (auto* ls = std::get_if<decoders::PerfLostSamples>(&record.body)) {
    counters->drops["perf_lost_samples"] += ls->lost;
  } else if (auto* t = std::get_if<decoders::PerfThrottle>(&record.body)) {
    // Samples the kernel did not take while throttled are not countable; count the episodes.
    if (!t->unthrottle) counters->drops["perf_throttled"] += 1;
  }
}

Result<std::unique_ptr<LbrSource>> LbrSource::Start(const LbrSourceOptions& options,
                                                    BranchWindowSink sink) {
  PerfLbrConfig config;
  config.pid = options.pid;
  config.sample_period = options.sample_period;
  config.data_pages = options.data_pages;
  PATHPROF_ASSIGN_OR_RETURN(auto event, PerfEventSource::OpenLbr(config));
  const decoders::PerfEventAttr attr = decoders::ParsePerfEventAttrBytes(event->attr());
  std::unique_ptr<LbrSource> s(new LbrSource(&event->ring(), attr, options, std::move(sink)));
  s->event_ = std::move(event);
  PATHPROF_RETURN_IF_ERROR(s->event_->Enable());
  return s;
}

std::unique_ptr<LbrSource> LbrSource::OverRing(PerfRing* ring, const decoders::PerfEventAttr& attr,
                                               const LbrSourceOptions& options,
                                               BranchWindowSink sink) {
  return std::unique_ptr<LbrSource>(new LbrSource(ring, attr, options, std::move(sink)));
}

LbrSource::LbrSource(PerfRing* ring, const decoders::PerfEventAttr& attr,
                     const LbrSourceOptions& options, BranchWindowSink sink)
    : ring_(ring),
      attr_(attr),
      options_(options),
      sink_(std::move(sink)),
      images_(options.images),
      code_(&images_),
      reconstructor_(&code_) {
  if (options_.seed_from_proc_maps && options_.pid > 0) {
    auto space = decoders::ReadProcMaps(options_.pid);
    if (space.ok()) {
      code_.SetAddressSpace(static_cast<uint32_t>(options_.pid), std::move(*space));
    } else {
      // Samples in code mapped before the event opened will count as lbr_entry_no_code.
      local_.drops["lbr_proc_maps_unreadable"] += 1;
    }
  }
}

LbrSource::~LbrSource() {
  if (event_) (void)event_->Disable();
}

void LbrSource::Poll() {
  const uint64_t malformed_before = ring_->stats().malformed;
  const Status st = ring_->ReadRecords([&](std::span<const uint8_t> r) { OnRecord(r); });
  if (!st.ok()) local_.decode_errors["perf_ring_read_failed"] += 1;
  if (ring_->stats().malformed > malformed_before)
    local_.decode_errors["perf_ring_malformed"] += ring_->stats().malformed - malformed_before;
  SyncCounters();
}

void LbrSource::OnRecord(std::span<const uint8_t> record) {
  auto parsed = decoders::ParseRingRecord(record, attr_, "LBR ring");
  if (!parsed.ok()) {
    local_.decode_errors["perf_record_unparsable"] += 1;
    return;
  }
  ++local_.records;
  const decoders::PerfRecord& rec = *parsed;
  if (auto* s = std::get_if<decoders::PerfSample>(&rec.body)) {
    if (s->branches.empty()) {
      local_.drops["lbr_sample_without_branches"] += 1;
      return;
    }
    entries_.resize(s->branches.size());
    for (size_t i = 0; i < s->branches.size(); ++i) {
      const decoders::PerfBranchEntry& b = s->branches[i];
      entries_[i] = {b.from, b.to, b.cycles(), b.mispredicted()};
    }
    decoders::LbrSample sample;
    sample.pid = s->pid;
    sample.tid = s->tid;
    sample.time_ns = s->time;
    sample.ip = s->ip;
    sample.entries = entries_;
    sample.call_stack_mode = (attr_.branch_sample_type & decoders::perf::kBranchCallStack) != 0;
    batches_.clear();
    reconstructor_.Reconstruct(sample, &batches_);
    for (const BranchBatch& b : batches_) {
      ++local_.windows;
      local_.events += b.events.size();
      if (sink_) sink_(b);
    }
  } else if (auto* m = std::get_if<decoders::PerfMmap>(&rec.body)) {
    code_.AddMapping(m->pid, ToMapping(*m, rec.misc));
  } else if (auto* f = std::get_if<decoders::PerfForkExit>(&rec.body)) {
    if (!f->is_exit && f->pid != f->ppid) code_.Fork(f->ppid, f->pid);
  } else {
    CountPerfRecordLoss(rec, &local_);
  }
}

void LbrSource::SyncCounters() {
  const decoders::LbrStats& st = reconstructor_.stats();
  LiveSourceCounters c = local_;
  using decoders::LbrEntryDrop;
  using decoders::LbrRangeBreak;
  for (size_t i = 0; i < st.entries_dropped.size(); ++i) {
    if (st.entries_dropped[i] == 0) continue;
    c.drops["lbr_entry_" + std::string(decoders::LbrEntryDropName(LbrEntryDrop(i)))] +=
        st.entries_dropped[i];
  }
  for (size_t i = 0; i < st.ranges_broken.size(); ++i) {
    if (st.ranges_broken[i] == 0) continue;
    const std::string name =
        "lbr_range_" + std::string(decoders::LbrRangeBreakName(LbrRangeBreak(i)));
    if (LbrRangeBreak(i) == LbrRangeBreak::kDecodeError) {
      c.decode_errors[name] += st.ranges_broken[i];
    } else {
      c.drops[name] += st.ranges_broken[i];
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  shared_ = std::move(c);
  shared_lbr_ = st;
}

LiveSourceCounters LbrSource::counters() const {
  std::lock_guard<std::mutex> lock(mu_);
  return shared_;
}

decoders::LbrStats LbrSource::lbr_stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return shared_lbr_;
}

}  // namespace pathprof::collectors
