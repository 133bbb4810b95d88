// The live Intel PT source: a PerfEventSource on the intel_pt PMU for one task, whose sideband
// records (MMAP2 for the code image, ITRACE_START for the thread, AUX for truncation and
// collisions, LOST/THROTTLE) are parsed with the event's attr and whose AUX bytes go through the
// PT decoder into BranchBatches. OverRing() drives the same handling from any ring and AUX area
// (tests use a fake mmap area holding synthesized PT packets).
//
// Decoding happens in pieces that start at a PSB (the decoder's sync point): a poll decodes the
// pending bytes up to the last PSB once `decode_chunk_bytes` are pending and keeps the rest, so a
// piece never starts mid-packet. A piece is decoded through the next piece's PSB+ and stops at
// the address its FUP gives, where the next piece starts: the stream runs on across pieces with
// no gap and no branch lost or repeated. A truncated or colliding AUX record is a
// discontinuity: what came before it is decoded on its own and the next batch has gap_before.
//
// Limits: the trace of one AUX buffer is decoded as one stream attributed to the thread of the
// latest ITRACE_START; with several threads (inherit) their interleaving is not split by the
// SWITCH records (that needs timestamps matched to the packets), so switches are only counted.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <vector>

#include "pathprof/collectors/lbr_source.h"
#include "pathprof/collectors/live_source_counters.h"
#include "pathprof/collectors/perf_event_source.h"
#include "pathprof/core/branch.h"
#include "pathprof/core/status.h"
#include "pathprof/decoders/perf_data_records.h"
#include "pathprof/decoders/pt_config.h"
#include "pathprof/decoders/pt_decoder.h"
#include "pathprof/decoders/pt_image.h"

namespace pathprof::collectors {

struct PtSourceOptions {
  pid_t pid = -1;
  int data_pages = 64;
  int aux_pages = 1024;  // 4 MiB of trace
  bool seed_from_proc_maps = true;
  // Unknown CPU and timing ratios: no errata workarounds, timing packets ignored.
  decoders::PtDecoderConfig decoder;
  size_t decode_chunk_bytes = 1 << 20;
};

class PtSource {
 public:
  static Result<std::unique_ptr<PtSource>> Start(const PtSourceOptions& options,
                                                 BranchWindowSink sink);
  static Result<std::unique_ptr<PtSource>> OverRing(PerfRing* ring,
                                                    const decoders::PerfEventAttr& attr,
                                                    const PtSourceOptions& options,
                                                    BranchWindowSink sink);
  ~PtSource();

  // Reads sideband records and new AUX bytes; decodes what is complete.
  void Poll();
  // Decodes everything pending (at stop).
  void Flush();
  LiveSourceCounters counters() const;
  decoders::PtDecodeStats decode_stats() const;

 private:
  PtSource(PerfRing* ring, const decoders::PerfEventAttr& attr, const PtSourceOptions& options,
           BranchWindowSink sink, std::shared_ptr<decoders::PtImage> image);
  void OnRecord(std::span<const uint8_t> record);
  void ReadAux();
  // Decodes pending_[0, n) as one piece and drops it from pending_. With continues_at_psb, n is
  // the PSB the next piece starts at; false (nothing done) while its PSB+ is incomplete.
  bool DecodePiece(size_t n, bool continues_at_psb);
  void SyncCounters();

  std::unique_ptr<PerfEventSource> event_;
  PerfRing* ring_;
  decoders::PerfEventAttr attr_;
  PtSourceOptions options_;
  BranchWindowSink sink_;
  std::shared_ptr<decoders::PtImage> image_;
  uint32_t pid_ = 0;
  uint32_t tid_ = 0;
  std::vector<uint8_t> pending_;                // AUX bytes not decoded yet
  uint64_t pending_base_ = 0;                   // AUX stream position of pending_[0]
  std::vector<uint64_t> cuts_;                  // stream positions where the trace is discontinuous
  bool gap_next_ = false;                       // the next batch follows lost trace
  std::optional<decoders::PtHandoff> handoff_;  // where the last piece stopped, if at a PSB
  LiveSourceCounters local_;
  decoders::PtDecodeStats decode_;  // summed over pieces
  mutable std::mutex mu_;
  LiveSourceCounters shared_;
  decoders::PtDecodeStats shared_decode_;
};

}  // namespace pathprof::collectors
