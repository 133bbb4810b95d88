#include "pathprof/hwmodel/bursty_controller.h"

namespace pathprof::hwmodel {

Status BurstyConfig::Validate() const {
  if (burst_length < 1) {
    return Error(ErrorCode::kInvalidArgument,
                 "bursty sampling: burst_length must be at least 1 call or back-edge");
  }
  return Status::Ok();
}

Result<BurstyController> BurstyController::Create(const BurstyConfig& config) {
  PATHPROF_RETURN_IF_ERROR(config.Validate());
  return BurstyController(config);
}

BurstyController::BurstyController(const BurstyConfig& config)
    : config_(config), skip_left_(config.sample_interval), burst_left_(config.burst_length) {}

BurstyDecision BurstyController::Observe(const BranchEvent& e) {
  BurstyDecision d;
  const bool tick = IsBurstyTick(e);
  stats_.events += 1;
  stats_.ticks += tick ? 1 : 0;
  if (!on_ && config_.sample_interval == 0) {
    on_ = true;
    burst_left_ = config_.burst_length;
  }
  if (!on_) {
    if (tick && --skip_left_ == 0) {
      on_ = true;  // from the next event on
      skip_left_ = config_.sample_interval;
      burst_left_ = config_.burst_length;
    }
    return d;
  }
  d.sampled = true;
  d.starts_window = !window_open_;
  if (d.starts_window) stats_.windows += 1;
  window_open_ = true;
  stats_.sampled_events += 1;
  if (tick && --burst_left_ == 0) {
    d.ends_window = true;
    on_ = false;
    window_open_ = false;
    skip_left_ = config_.sample_interval;
  }
  return d;
}

std::vector<EventRange> BurstyController::WindowRanges(std::span<const BranchEvent> events) {
  std::vector<EventRange> out;
  bool open = false;
  if (window_open_) {
    // A window carried over from the previous call restarts at this call's first event.
    window_open_ = false;
  }
  for (size_t i = 0; i < events.size(); ++i) {
    const BurstyDecision d = Observe(events[i]);
    if (!d.sampled) continue;
    if (!open) {
      out.push_back(EventRange{i, i + 1});
      open = true;
    } else {
      out.back().end = i + 1;
    }
    if (d.ends_window) open = false;
  }
  return out;
}

void BurstyController::Apply(const BranchBatch& batch, std::vector<BranchBatch>* out) {
  if (batch.gap_before && window_open_) {
    stats_.windows_cut += 1;
    window_open_ = false;
  }
  BranchBatch* current = nullptr;
  for (const BranchEvent& e : batch.events) {
    const BurstyDecision d = Observe(e);
    if (!d.sampled) continue;
    if (current == nullptr || d.starts_window) {
      // A window open at the end of the previous batch continues here without a gap.
      out->push_back(
          BranchBatch{batch.pid, batch.tid, batch.time_ns, d.starts_window, true, {}, {}});
      current = &out->back();
    }
    current->events.push_back(e);
  }
}

}  // namespace pathprof::hwmodel
