#include "pathprof/decoders/pt_synth.h"

#include <intel-pt.h>

#include <cstring>
#include <map>
#include <memory>

namespace pathprof::decoders {
namespace {

class ThreadEncoder {
 public:
  ThreadEncoder(PtSynthTrace* out, const PtSynthOptions& options) : out_(out), options_(options) {}

  Status Event(const BranchEvent& e, bool gap_before) {
    if (!enabled_ || gap_before) PATHPROF_RETURN_IF_ERROR(StartSegment(e.from));
    switch (e.kind) {
      case BranchKind::kConditional:
        PATHPROF_RETURN_IF_ERROR(Tnt(e.taken));
        break;
      case BranchKind::kDirectJump:
      case BranchKind::kDirectCall:
        break;
      case BranchKind::kIndirectJump:
      case BranchKind::kIndirectCall:
      case BranchKind::kReturn:
      case BranchKind::kUnknown:
        PATHPROF_RETURN_IF_ERROR(FlushTnt());
        PATHPROF_RETURN_IF_ERROR(Ip(ppt_tip, e.to));
        break;
      case BranchKind::kFarTransfer: {
        PATHPROF_RETURN_IF_ERROR(FlushTnt());
        bool sync =
            !options_.is_far_branch_instruction || options_.is_far_branch_instruction(e.from);
        if (!sync) PATHPROF_RETURN_IF_ERROR(Ip(ppt_fup, e.from));
        PATHPROF_RETURN_IF_ERROR(Suppressed(ppt_tip_pgd));
        PATHPROF_RETURN_IF_ERROR(Mode());
        PATHPROF_RETURN_IF_ERROR(Ip(ppt_tip_pge, e.to));
        break;
      }
    }
    last_to_ = e.to;
    ++out_->events;
    if (Offset() - last_psb_ >= options_.psb_period) PATHPROF_RETURN_IF_ERROR(PeriodicPsb());
    return Status::Ok();
  }

  Status Finish() {
    if (enabled_) PATHPROF_RETURN_IF_ERROR(Disable());
    out_->bytes.resize(Offset());
    pt_free_encoder(encoder_);
    encoder_ = nullptr;
    return Status::Ok();
  }

  ~ThreadEncoder() {
    if (encoder_) pt_free_encoder(encoder_);
  }

  Status Reserve(uint64_t events) {
    // Worst case per event is a 7-byte TIP plus a PGD/MODE/PGE triple; PSB+ adds ~30 bytes per
    // period. Sized once because libipt's encoder writes into a fixed buffer.
    out_->bytes.resize(events * 24 + (events * 24 / options_.psb_period + 4) * 64 + 4096);
    pt_config config;
    pt_config_init(&config);
    config.begin = out_->bytes.data();
    config.end = out_->bytes.data() + out_->bytes.size();
    encoder_ = pt_alloc_encoder(&config);
    if (!encoder_)
      return Error(ErrorCode::kResourceExhausted, "libipt: cannot allocate an encoder");
    return Status::Ok();
  }

 private:
  uint64_t Offset() const {
    uint64_t off = 0;
    pt_enc_get_offset(encoder_, &off);
    return off;
  }

  Status Put(pt_packet& p) {
    int n = pt_enc_next(encoder_, &p);
    if (n < 0)
      return Error(ErrorCode::kInternal,
                   std::string("PT synthesis: libipt encoder failed: ") + pt_errstr(pt_errcode(n)));
    ++out_->packets;
    return Status::Ok();
  }
  Status Simple(pt_packet_type type) {
    pt_packet p;
    std::memset(&p, 0, sizeof p);
    p.type = type;
    return Put(p);
  }
  Status Ip(pt_packet_type type, uint64_t ip) {
    pt_packet p;
    std::memset(&p, 0, sizeof p);
    p.type = type;
    p.payload.ip.ipc = pt_ipc_sext_48;
    p.payload.ip.ip = ip;
    return Put(p);
  }
  Status Suppressed(pt_packet_type type) {
    pt_packet p;
    std::memset(&p, 0, sizeof p);
    p.type = type;
    p.payload.ip.ipc = pt_ipc_suppressed;
    return Put(p);
  }
  Status Mode() {
    pt_packet p;
    std::memset(&p, 0, sizeof p);
    p.type = ppt_mode;
    p.payload.mode.leaf = pt_mol_exec;
    p.payload.mode.bits.exec.csl = 1;
    return Put(p);
  }

  Status Tnt(bool taken) {
    tnt_ = (tnt_ << 1) | (taken ? 1 : 0);  // the oldest branch ends up in the highest bit
    if (++tnt_bits_ == 47) return FlushTnt();
    return Status::Ok();
  }
  Status FlushTnt() {
    if (tnt_bits_ == 0) return Status::Ok();
    pt_packet p;
    std::memset(&p, 0, sizeof p);
    p.type = tnt_bits_ <= 6 ? ppt_tnt_8 : ppt_tnt_64;
    p.payload.tnt.bit_size = static_cast<uint8_t>(tnt_bits_);
    p.payload.tnt.payload = tnt_;
    tnt_ = 0;
    tnt_bits_ = 0;
    return Put(p);
  }

  Status StartSegment(uint64_t ip) {
    if (enabled_) {
      PATHPROF_RETURN_IF_ERROR(Disable());
      PATHPROF_RETURN_IF_ERROR(Simple(ppt_ovf));
    }
    PATHPROF_RETURN_IF_ERROR(Simple(ppt_psb));
    PATHPROF_RETURN_IF_ERROR(Simple(ppt_psbend));
    last_psb_ = Offset();
    PATHPROF_RETURN_IF_ERROR(Mode());
    PATHPROF_RETURN_IF_ERROR(Ip(ppt_tip_pge, ip));
    enabled_ = true;
    last_to_ = ip;
    return Status::Ok();
  }

  Status Disable() {
    PATHPROF_RETURN_IF_ERROR(FlushTnt());
    PATHPROF_RETURN_IF_ERROR(Ip(ppt_fup, last_to_));
    PATHPROF_RETURN_IF_ERROR(Suppressed(ppt_tip_pgd));
    enabled_ = false;
    return Status::Ok();
  }

  Status PeriodicPsb() {
    PATHPROF_RETURN_IF_ERROR(FlushTnt());
    last_psb_ = Offset();
    PATHPROF_RETURN_IF_ERROR(Simple(ppt_psb));
    PATHPROF_RETURN_IF_ERROR(Mode());
    PATHPROF_RETURN_IF_ERROR(Ip(ppt_fup, last_to_));
    return Simple(ppt_psbend);
  }

  PtSynthTrace* out_;
  const PtSynthOptions& options_;
  pt_encoder* encoder_ = nullptr;
  bool enabled_ = false;
  uint64_t last_to_ = 0;
  uint64_t last_psb_ = 0;
  uint64_t tnt_ = 0;
  int tnt_bits_ = 0;
};

}  // namespace

Result<std::vector<PtSynthTrace>> SynthesizePt(const std::vector<BranchBatch>& batches,
                                               const PtSynthOptions& options) {
  if (options.psb_period == 0)
    return Error(ErrorCode::kInvalidArgument, "PT synthesis: psb_period must be positive");
  std::vector<PtSynthTrace> traces;
  std::map<uint32_t, size_t> index;  // tid -> trace
  std::map<uint32_t, uint64_t> events;
  for (const auto& b : batches) {
    if (index.emplace(b.tid, traces.size()).second) {
      traces.push_back(PtSynthTrace{b.pid, b.tid, {}, 0, 0});
    }
    events[b.tid] += b.events.size();
  }
  std::vector<std::unique_ptr<ThreadEncoder>> encoders;
  for (auto& t : traces) {
    encoders.push_back(std::make_unique<ThreadEncoder>(&t, options));
    PATHPROF_RETURN_IF_ERROR(encoders.back()->Reserve(events[t.tid]));
  }
  for (const auto& b : batches) {
    ThreadEncoder& enc = *encoders[index[b.tid]];
    for (size_t i = 0; i < b.events.size(); ++i)
      PATHPROF_RETURN_IF_ERROR(enc.Event(b.events[i], i == 0 && b.gap_before));
  }
  for (auto& e : encoders) PATHPROF_RETURN_IF_ERROR(e->Finish());
  return traces;
}

}  // namespace pathprof::decoders
