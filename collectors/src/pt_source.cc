#include "pathprof/collectors/pt_source.h"

#include <algorithm>
#include <array>
#include <string>
#include <variant>

#include "pathprof/decoders/address_space.h"
#include "pathprof/decoders/perf_ring_record.h"

namespace pathprof::collectors {
namespace {

// PSB: the 16-byte sync pattern every decodable piece starts at.
constexpr std::array<uint8_t, 16> kPsb = {0x02, 0x82, 0x02, 0x82, 0x02, 0x82, 0x02, 0x82,
                                          0x02, 0x82, 0x02, 0x82, 0x02, 0x82, 0x02, 0x82};

// PERF_RECORD_AUX flags.
constexpr uint64_t kAuxTruncated = 1;
constexpr uint64_t kAuxPartial = 4;
constexpr uint64_t kAuxCollision = 8;

void Merge(const decoders::PtDecodeStats& s, decoders::PtDecodeStats* into) {
  into->syncs += s.syncs;
  into->blocks += s.blocks;
  into->block_slot_misses += s.block_slot_misses;
  into->instructions += s.instructions;
  into->branches += s.branches;
  into->overflows += s.overflows;
  into->async_transfers += s.async_transfers;
  into->gaps += s.gaps;
  into->unresolved += s.unresolved;
  into->walk_mismatches += s.walk_mismatches;
  into->errors += s.errors;
  for (const auto& [code, n] : s.errors_by_code) into->errors_by_code[code] += n;
  for (const auto& e : s.first_errors) {
    if (into->first_errors.size() >= decoders::PtDecodeStats::kMaxKeptErrors) break;
    into->first_errors.push_back(e);
  }
}

}  // namespace

Result<std::unique_ptr<PtSource>> PtSource::Start(const PtSourceOptions& options,
                                                  BranchWindowSink sink) {
  PerfPtConfig config;
  config.pid = options.pid;
  config.data_pages = options.data_pages;
  config.aux_pages = options.aux_pages;
  PATHPROF_ASSIGN_OR_RETURN(auto event, PerfEventSource::OpenPt(config));
  const decoders::PerfEventAttr attr = decoders::ParsePerfEventAttrBytes(event->attr());
  PATHPROF_ASSIGN_OR_RETURN(auto s, OverRing(&event->ring(), attr, options, std::move(sink)));
  s->event_ = std::move(event);
  PATHPROF_RETURN_IF_ERROR(s->event_->Enable());
  return s;
}

Result<std::unique_ptr<PtSource>> PtSource::OverRing(PerfRing* ring,
                                                     const decoders::PerfEventAttr& attr,
                                                     const PtSourceOptions& options,
                                                     BranchWindowSink sink) {
  PATHPROF_ASSIGN_OR_RETURN(auto cache, decoders::PtSectionCache::Create());
  auto image = std::make_shared<decoders::PtImage>(cache, "pid " + std::to_string(options.pid));
  return std::unique_ptr<PtSource>(
      new PtSource(ring, attr, options, std::move(sink), std::move(image)));
}

PtSource::PtSource(PerfRing* ring, const decoders::PerfEventAttr& attr,
                   const PtSourceOptions& options, BranchWindowSink sink,
                   std::shared_ptr<decoders::PtImage> image)
    : ring_(ring),
      attr_(attr),
      options_(options),
      sink_(std::move(sink)),
      image_(std::move(image)),
      pid_(options.pid > 0 ? uint32_t(options.pid) : 0),
      tid_(pid_) {
  if (!options_.seed_from_proc_maps || options_.pid <= 0) return;
  auto space = decoders::ReadProcMaps(options_.pid);
  if (!space.ok()) {
    local_.drops["pt_proc_maps_unreadable"] += 1;
    return;
  }
  for (const decoders::Mapping& m : space->mappings()) {
    if (!m.executable || m.IsSpecial()) continue;
    if (!image_->AddFile(m.path, m.pgoff, m.start, m.end()).ok())
      local_.drops["pt_image_file_unreadable"] += 1;
  }
}

PtSource::~PtSource() {
  if (event_) (void)event_->Disable();
}

void PtSource::Poll() {
  const uint64_t malformed_before = ring_->stats().malformed;
  if (!ring_->ReadRecords([&](std::span<const uint8_t> r) { OnRecord(r); }).ok())
    local_.decode_errors["perf_ring_read_failed"] += 1;
  if (ring_->stats().malformed > malformed_before)
    local_.decode_errors["perf_ring_malformed"] += ring_->stats().malformed - malformed_before;
  ReadAux();
  std::sort(cuts_.begin(), cuts_.end());
  const uint64_t end = pending_base_ + pending_.size();
  while (!cuts_.empty() && cuts_.front() <= end) {
    if (cuts_.front() >= pending_base_) DecodePiece(size_t(cuts_.front() - pending_base_), false);
    gap_next_ = true;
    handoff_.reset();
    cuts_.erase(cuts_.begin());
  }
  if (pending_.size() >= options_.decode_chunk_bytes) {
    // Cut at the last PSB whose PSB+ has fully arrived (the piece is decoded through it).
    auto search_end = pending_.end();
    for (int tries = 0; tries < 2; ++tries) {
      auto psb = std::find_end(pending_.begin(), search_end, kPsb.begin(), kPsb.end());
      if (psb == search_end || psb == pending_.begin()) break;
      if (DecodePiece(size_t(psb - pending_.begin()), true)) break;
      search_end = psb;
    }
  }
  SyncCounters();
}

void PtSource::Flush() {
  Poll();
  DecodePiece(pending_.size(), false);
  SyncCounters();
}

void PtSource::OnRecord(std::span<const uint8_t> record) {
  auto parsed = decoders::ParseRingRecord(record, attr_, "PT sideband ring");
  if (!parsed.ok()) {
    local_.decode_errors["perf_record_unparsable"] += 1;
    return;
  }
  ++local_.records;
  const decoders::PerfRecord& rec = *parsed;
  if (auto* m = std::get_if<decoders::PerfMmap>(&rec.body)) {
    image_->AddPerfMmap(*m);
  } else if (auto* it = std::get_if<decoders::PerfItraceStart>(&rec.body)) {
    pid_ = it->pid;
    tid_ = it->tid;
  } else if (auto* aux = std::get_if<decoders::PerfAux>(&rec.body)) {
    const bool lost = aux->flags & (kAuxTruncated | kAuxCollision);
    if (aux->flags & kAuxTruncated) local_.drops["pt_aux_truncated"] += 1;
    if (aux->flags & kAuxCollision) local_.drops["pt_aux_collision"] += 1;
    if (aux->flags & kAuxPartial) local_.drops["pt_aux_partial"] += 1;
    if (lost) cuts_.push_back(aux->aux_offset + aux->aux_size);
  } else {
    CountPerfRecordLoss(rec, &local_);
  }
}

void PtSource::ReadAux() {
  // Outside snapshot mode the kernel never overwrites unread AUX data (it truncates and says so
  // in an AUX record), so the stream position advances by exactly the bytes handed out.
  const Status st = ring_->ReadAux([&](std::span<const uint8_t> a, std::span<const uint8_t> b) {
    pending_.insert(pending_.end(), a.begin(), a.end());
    pending_.insert(pending_.end(), b.begin(), b.end());
  });
  if (!st.ok()) local_.decode_errors["pt_aux_read_failed"] += 1;
}

bool PtSource::DecodePiece(size_t n, bool continues_at_psb) {
  n = std::min(n, pending_.size());
  if (n == 0) return false;
  decoders::PtDecodeOptions decode_options;
  decode_options.continue_from = handoff_;
  handoff_.reset();
  size_t bytes = n;
  if (continues_at_psb) {
    // The trace goes on in the piece starting at the PSB at n: decode through its PSB+ and stop
    // where it says execution was, so the next piece neither repeats nor misses a branch.
    const auto psb_end = decoders::PtPsbPlusEnd(pending_, n, options_.decoder);
    if (!psb_end) {
      handoff_ = decode_options.continue_from;
      return false;  // its PSB+ has not fully arrived yet
    }
    bytes = *psb_end;
    decode_options.stop_at_psb = n;
  }
  auto decoder =
      decoders::PtBranchDecoder::Create(std::span<const uint8_t>(pending_.data(), bytes),
                                        options_.decoder, image_, pid_, tid_, decode_options);
  if (!decoder.ok()) {
    local_.decode_errors["pt_decoder_unavailable"] += 1;
    local_.drops["pt_bytes_undecoded"] += n;
  } else {
    const Status st = (*decoder)->Decode([&](BranchBatch&& b) {
      if (gap_next_) {
        b.gap_before = true;
        gap_next_ = false;
      }
      ++local_.windows;
      local_.events += b.events.size();
      if (sink_) sink_(b);
      return Status::Ok();
    });
    if (!st.ok()) local_.decode_errors["pt_decode_failed"] += 1;
    Merge((*decoder)->stats(), &decode_);
    if (continues_at_psb) handoff_ = (*decoder)->handoff();
  }
  pending_.erase(pending_.begin(), pending_.begin() + std::ptrdiff_t(n));
  pending_base_ += n;
  return true;
}

void PtSource::SyncCounters() {
  LiveSourceCounters c = local_;
  if (decode_.overflows) c.drops["pt_overflow"] += decode_.overflows;
  if (decode_.unresolved) c.drops["pt_unresolved_branch"] += decode_.unresolved;
  if (decode_.errors) c.decode_errors["pt_decode_error"] += decode_.errors;
  if (decode_.walk_mismatches) c.decode_errors["pt_walk_mismatch"] += decode_.walk_mismatches;
  std::lock_guard<std::mutex> lock(mu_);
  shared_ = std::move(c);
  shared_decode_ = decode_;
}

LiveSourceCounters PtSource::counters() const {
  std::lock_guard<std::mutex> lock(mu_);
  return shared_;
}

decoders::PtDecodeStats PtSource::decode_stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return shared_decode_;
}

}  // namespace pathprof::collectors
