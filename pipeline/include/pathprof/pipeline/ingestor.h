// The pipeline's middle: bounded queues between the collectors' threads and the threads that
// apply samples and windows to the ProfileStores. A full queue refuses the item and the drop is
// counted against its target ("stack_queue_full", "window_queue_full"), so a slow consumer costs
// data, never unbounded memory, and never blocks a tracer that holds a thread stopped.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>

#include "pathprof/collectors/ebpf_stack_sampler.h"
#include "pathprof/core/branch.h"
#include "pathprof/pipeline/profile_store.h"
#include "pathprof/pipeline/session_config.h"

namespace pathprof::pipeline {

class Ingestor {
 public:
  // Finds (or creates, e.g. for a child the target forked) the store of a pid; nullptr: the pid
  // is not a target, and the item is dropped and counted as "not_a_target".
  // Shared, so a store the session lets go of meanwhile (whole-host mode evicts the coldest)
  // lives until what is being applied to it is done.
  using StoreLookup = std::function<std::shared_ptr<ProfileStore>(uint32_t pid)>;

  Ingestor(const QueueSettings& queues, StoreLookup lookup);
  ~Ingestor();  // Close()
  Ingestor(const Ingestor&) = delete;
  Ingestor& operator=(const Ingestor&) = delete;

  // From collector threads; false when refused (counted).
  bool OfferStack(collectors::RawStackSample sample);
  bool OfferBranches(BranchBatch batch);

  // Stops taking items, applies what is queued, joins the consumer threads. Idempotent.
  void Close();
  // Waits until both queues are empty and the consumers idle (for reports at session end).
  void Flush();

  // Holds the consumers (they apply nothing while paused): lets tests make the consumer slow
  // deterministically.
  void SetPausedForTesting(bool paused);

  uint64_t not_a_target() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace pathprof::pipeline
