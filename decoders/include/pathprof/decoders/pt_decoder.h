// Intel PT decoding into branch events: libipt's block decoder over a PtImage, synchronized on
// PSB and resynchronized after every error, emitting taken and not-taken BranchEvents per
// thread. Also a packet-level pass (libipt's packet decoder) for checking raw AUX data.
//
// What becomes what:
//   blocks         walked instruction by instruction (x86_branch): direct jumps and calls
//                  inside a block become taken events; the branch ending a block is resolved
//                  by where execution continues (the next block, or the next event's address)
//   syscall        (block ends at a far branch, TIP.PGD, TIP.PGE) one far-transfer event
//   async disable  at X then enable at Y != X: a far transfer X -> Y (a signal); Y == X: the
//                  thread was only interrupted, nothing is emitted
//   overflow, decode error, enable without a known origin: a gap (gap_before on the next batch)
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "pathprof/core/branch.h"
#include "pathprof/core/status.h"
#include "pathprof/decoders/pt_config.h"
#include "pathprof/decoders/pt_image.h"

struct pt_block_decoder;
struct pt_block;
struct pt_event;

namespace pathprof::decoders {

struct PtDecodeError {
  uint64_t offset = 0;  // in the trace buffer
  int code = 0;         // libipt's pt_error_code
  std::string reason;
};

struct PtDecodeStats {
  uint64_t syncs = 0;
  uint64_t blocks = 0;
  uint64_t block_slot_misses = 0;  // blocks not found in the image's one-line slot cache
  uint64_t instructions = 0;
  uint64_t branches = 0;  // events emitted
  uint64_t overflows = 0;
  uint64_t async_transfers = 0;
  uint64_t gaps = 0;
  uint64_t unresolved = 0;       // block-ending branches dropped at a gap (outcome unknown)
  uint64_t walk_mismatches = 0;  // a block our instruction walk could not follow
  uint64_t errors = 0;           // decode errors (each followed by a resync)
  std::map<int, uint64_t> errors_by_code;
  std::vector<PtDecodeError> first_errors;  // the first kMaxKeptErrors, with offsets
  static constexpr size_t kMaxKeptErrors = 32;
};

// Where a piece of a continuous trace stopped (see PtDecodeOptions::stop_at_psb): the address
// the next piece starts at, and the instructions already run in the block that address is in.
struct PtHandoff {
  uint64_t ip = 0;
  uint32_t instructions = 0;
};

struct PtDecodeOptions {
  // 512 events = 16 KiB per batch: small enough that malloc recycles it instead of mapping and
  // unmapping fresh pages for every batch (4096 did that: ~15% of decode time), and that the
  // hand-over copy reads and writes L1-resident lines (1024 was ~1.5% slower; 256 no faster).
  size_t batch_events = 512;
  // For a trace decoded in pieces as it arrives (a live AUX stream): the trace continues in a
  // piece that starts at the PSB at this offset, so decoding stops where that PSB+ says
  // execution was (its FUP) instead of walking on without trace past direct branches, which the
  // next piece would then decode again. The buffer must hold that PSB+ through its PSBEND.
  uint64_t stop_at_psb = UINT64_MAX;
  // This piece continues one that stopped at this piece's first PSB (the previous decoder's
  // handoff()): if decoding synchronizes there, the first batch is no gap and the
  // instructions already run in the current block count towards its first event.
  std::optional<PtHandoff> continue_from;
};

class PtBranchDecoder {
 public:
  // `trace` and `image` must outlive the decoder.
  static Result<std::unique_ptr<PtBranchDecoder>> Create(std::span<const uint8_t> trace,
                                                         const PtDecoderConfig& config,
                                                         std::shared_ptr<PtImage> image,
                                                         uint32_t pid, uint32_t tid,
                                                         PtDecodeOptions options = {});
  ~PtBranchDecoder();

  // Decodes the whole buffer, handing over batches in order. Decode errors are counted in
  // stats() and decoding resumes at the next PSB; a Status comes back only when `on_batch`
  // fails or libipt cannot run at all.
  Status Decode(const std::function<Status(BranchBatch&&)>& on_batch);
  const PtDecodeStats& stats() const { return stats_; }
  // Set when decoding stopped at options.stop_at_psb: what the next piece continues from.
  const std::optional<PtHandoff>& handoff() const { return handoff_; }

 private:
  struct Pending {
    bool valid = false;
    uint64_t from = 0;
    uint64_t next = 0;  // a conditional's not-taken address; ~0 for every other kind
    BranchKind kind = BranchKind::kUnknown;
  };

  PtBranchDecoder() = default;
  int DecodeFromSync(int status);
  // The hot path returns nothing: a failing on_batch is kept in sink_status_ and stops Decode.
  void HandleBlock(const pt_block& block);
  void HandleEvent(const pt_event& ev);
  const PtBlockSlot& Summarize(const pt_block& block);
  const PtBlockSummary& Walk(const pt_block& block, PtBlockSummary& s);
  void Resolve(uint64_t next_ip);
  void Emit(uint64_t from, uint64_t to, BranchKind kind, bool taken);
  void FlushFull();
  void HandOver();
  void MarkGap();
  void StopAtPsb(uint64_t ip);
  void RecordError(int code, uint64_t offset, std::string reason);

  pt_block_decoder* decoder_ = nullptr;
  std::shared_ptr<PtImage> image_;
  PtDecodeOptions options_;
  const std::function<Status(BranchBatch&&)>* on_batch_ = nullptr;
  Status sink_status_;
  PtDecodeStats stats_;
  // Events are written into one reused buffer and copied into a batch when it is handed over:
  // cheaper than per-event push_back bookkeeping, and than value-initializing a fresh batch.
  BranchBatch batch_;
  std::unique_ptr<BranchEvent[]> events_;
  BranchEvent* out_ = nullptr;      // the next event to write in events_; always < out_end_
  BranchEvent* out_end_ = nullptr;  // events_ + options_.batch_events
  uint32_t insns_ = 0;
  Pending pending_;
  bool disabled_ = false;
  bool async_from_valid_ = false;
  uint64_t async_from_ = 0;
  uint64_t last_ip_ = 0;
  PtBlockSlot* slots_ = nullptr;  // the image's (its size is fixed once made)
  std::optional<PtHandoff> handoff_;
};

struct PtPacketStats {
  uint64_t packets = 0;  // PAD excluded (as ptdump-based counts are usually quoted)
  uint64_t pads = 0;
  uint64_t syncs = 0;
  uint64_t errors = 0;
  std::map<int, uint64_t> packets_by_type;  // libipt's pt_packet_type
  std::vector<PtDecodeError> first_errors;
};

// The offset just past the PSBEND of the PSB+ that starts at `psb`, or nothing when the buffer
// ends before it (or holds no valid PSB+ there).
std::optional<size_t> PtPsbPlusEnd(std::span<const uint8_t> trace, size_t psb,
                                   const PtDecoderConfig& config);

// Packet-level decode of a raw PT buffer from its first PSB on (resync after errors).
PtPacketStats CountPtPackets(std::span<const uint8_t> trace, const PtDecoderConfig& config);

}  // namespace pathprof::decoders
