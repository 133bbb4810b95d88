// What the tracer tells the collector: windows in batches, counters, notes.
#include <poll.h>

#include "burst_tracer_impl.h"
#include "burst_wire.h"

namespace pathprof::stepping::burst {

void BurstTracer::EmitWindow(pid_t tid, uint64_t t0, SteppedWindow w, ThreadStack stack) {
  BranchBatch batch;
  batch.pid = static_cast<uint32_t>(options_.pid);
  batch.tid = static_cast<uint32_t>(tid);
  batch.time_ns = t0;
  batch.gap_before = true;
  batch.window = true;
  batch.events = std::move(w.events);
  if (stack.regs.empty())
    ++stats_.stacks_unreadable;
  else
    ++stats_.stacks_read;
  batch.stack = std::move(stack);
  if (outbox_.empty()) outbox_since_ns_ = MonotonicNs();
  wire::AppendWindow(batch, &outbox_);
  ++outbox_windows_;
  const bool is_short = w.taken < options_.window_taken;
  outbox_short_ += is_short;
  outbox_events_ += batch.events.size();
  outbox_taken_ += w.taken;
  outbox_instructions_ += w.instructions;
  ++stats_.windows;
  stats_.windows_short += is_short;
  stats_.events += batch.events.size();
  stats_.taken += w.taken;
  stats_.instructions += w.instructions;
  if (outbox_.size() >= kOutboxBytes) Flush();
}

void BurstTracer::Flush() {
  if (outbox_.empty()) return;
  const wire::SendResult sent = wire::SendBytes(data_fd_, outbox_.data(), outbox_.size());
  if (sent == wire::SendResult::kBroken) quit_ = true;  // the collector is gone
  if (sent == wire::SendResult::kFull) {
    stats_.windows_dropped_pipe += outbox_windows_;
    stats_.windows -= outbox_windows_;
    stats_.windows_short -= outbox_short_;
    stats_.events -= outbox_events_;
    stats_.taken -= outbox_taken_;
    stats_.instructions -= outbox_instructions_;
  }
  outbox_.clear();
  outbox_windows_ = outbox_short_ = outbox_events_ = outbox_taken_ = outbox_instructions_ = 0;
}

void BurstTracer::SendStats(bool final) {
  Flush();  // the counters describe the windows before them
  stats_sent_ns_ = MonotonicNs();
  stats_.elapsed_ns = MonotonicNs() - start_ns_;
  if (!ending_counts_.empty()) FillEndingInstructions();
  const wire::SendResult r = wire::Send(data_fd_, wire::Type::kStats, &stats_, sizeof stats_);
  if (r == wire::SendResult::kBroken) quit_ = true;
  if (r == wire::SendResult::kFull && final) {
    // The last counters matter: give the collector a moment to drain.
    pollfd p{data_fd_, POLLOUT, 0};
    if (poll(&p, 1, 200) > 0) wire::Send(data_fd_, wire::Type::kStats, &stats_, sizeof stats_);
  }
}

void BurstTracer::Note(const std::string& text) {
  Flush();  // after the windows that came before it
  wire::Send(data_fd_, wire::Type::kNote, text.data(), static_cast<uint32_t>(text.size()));
}

}  // namespace pathprof::stepping::burst
