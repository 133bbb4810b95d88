// Pieces shared by the offline path engine simulation (offline_sim.cc) and the HPT sweep
// (hpt_sweep.cc): profiles as weighted lists for the overlap measures, and the cut of a stream
// into dynamic-overlap windows.
#pragma once

#include <algorithm>
#include <cstdint>

#include "pathprof/core/branch.h"
#include "pathprof/hwmodel/hwmodel.h"
#include "pathprof/profiles/accuracy.h"

namespace pathprof::pipeline {

profiles::WeightedProfile<hwmodel::PathDescriptor> ExactWeights(
    const hwmodel::ExactPathProfile& exact, hwmodel::Metric metric);

profiles::WeightedProfile<hwmodel::PathDescriptor> HptWeights(const hwmodel::HotPathTable& hpt);

// Cuts a batch at dynamic-window boundaries (every `window` events of the stream) so that each
// piece lies in one window; calls piece_fn(piece) for each and window_end() after a piece that
// completes a window. `in_window` carries the position across batches.
template <typename PieceFn, typename EndFn>
void SplitAtWindows(const BranchBatch& batch, uint64_t window, uint64_t* in_window,
                    BranchBatch* piece, PieceFn&& piece_fn, EndFn&& window_end) {
  size_t pos = 0;
  while (pos < batch.events.size()) {
    size_t n =
        static_cast<size_t>(std::min<uint64_t>(batch.events.size() - pos, window - *in_window));
    piece->pid = batch.pid;
    piece->tid = batch.tid;
    piece->time_ns = batch.time_ns;
    piece->window = batch.window;
    piece->gap_before = pos == 0 && batch.gap_before;
    piece->events.assign(batch.events.begin() + pos, batch.events.begin() + pos + n);
    piece_fn(static_cast<const BranchBatch&>(*piece));
    pos += n;
    *in_window += n;
    if (*in_window == window) {
      window_end();
      *in_window = 0;
    }
  }
}

}  // namespace pathprof::pipeline
