#include "pathprof/pipeline/ingestor.h"

#include <atomic>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "pathprof/pipeline/bounded_queue.h"

namespace pathprof::pipeline {

struct Ingestor::Impl {
  StoreLookup lookup;
  BoundedQueue<collectors::RawStackSample> stacks;
  BoundedQueue<BranchBatch> branches;
  std::atomic<uint64_t> not_a_target{0};

  std::mutex mu;
  bool closed = false;
  std::thread stack_thread, branch_thread;

  Impl(const QueueSettings& q, StoreLookup l)
      : lookup(std::move(l)), stacks(q.stack_queue), branches(q.window_queue) {}

  // Applies items as they come; CPU time is charged per run of items (up to kChargeEvery, or
  // until the queue runs dry), not per item.
  template <typename T, typename Apply>
  void Consume(BoundedQueue<T>& queue, Apply apply) {
    constexpr size_t kChargeEvery = 64;
    CpuCharger charger;
    // The stores the charger holds accounting pointers of, kept alive until it flushes (the
    // session may let go of one meanwhile).
    std::vector<std::shared_ptr<ProfileStore>> noted;
    auto flush = [&] {
      charger.Flush();
      noted.clear();
    };
    for (;;) {
      std::optional<T> item = queue.Pop(std::chrono::milliseconds(50));
      if (!item) {
        flush();
        if (queue.closed() && queue.size() == 0) return;
        continue;
      }
      if (std::shared_ptr<ProfileStore> store = apply(*item)) {
        charger.Note(&store->accounting());
        if (noted.empty() || noted.back() != store) noted.push_back(std::move(store));
      }
      if (charger.pending() >= kChargeEvery || queue.size() == 0) flush();
      queue.Done();
    }
  }
};

Ingestor::Ingestor(const QueueSettings& queues, StoreLookup lookup)
    : impl_(std::make_unique<Impl>(queues, std::move(lookup))) {
  Impl* s = impl_.get();
  s->stack_thread = std::thread([s] {
    s->Consume(s->stacks, [s](const collectors::RawStackSample& sample) {
      std::shared_ptr<ProfileStore> store = s->lookup(sample.pid);
      if (store)
        store->AddStackSample(sample);
      else
        s->not_a_target.fetch_add(1, std::memory_order_relaxed);
      return store;
    });
  });
  s->branch_thread = std::thread([s] {
    s->Consume(s->branches, [s](const BranchBatch& batch) {
      std::shared_ptr<ProfileStore> store = s->lookup(batch.pid);
      if (store)
        store->AddBranches(batch);
      else
        s->not_a_target.fetch_add(1, std::memory_order_relaxed);
      return store;
    });
  });
}

Ingestor::~Ingestor() {
  Close();
}

bool Ingestor::OfferStack(collectors::RawStackSample sample) {
  const uint32_t pid = sample.pid;
  if (impl_->stacks.TryPush(std::move(sample))) return true;
  if (std::shared_ptr<ProfileStore> store = impl_->lookup(pid))
    store->accounting().drops.Add(impl_->stacks.closed() ? "session_closed" : "stack_queue_full");
  else
    impl_->not_a_target.fetch_add(1, std::memory_order_relaxed);
  return false;
}

bool Ingestor::OfferBranches(BranchBatch batch) {
  const uint32_t pid = batch.pid;
  if (impl_->branches.TryPush(std::move(batch))) return true;
  if (std::shared_ptr<ProfileStore> store = impl_->lookup(pid))
    store->accounting().drops.Add(impl_->branches.closed() ? "session_closed"
                                                           : "window_queue_full");
  else
    impl_->not_a_target.fetch_add(1, std::memory_order_relaxed);
  return false;
}

void Ingestor::Flush() {
  // Each queue is idle once every item offered so far was applied (or at once while paused).
  impl_->stacks.WaitIdle(std::chrono::seconds(30));
  impl_->branches.WaitIdle(std::chrono::seconds(30));
}

void Ingestor::Close() {
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    if (impl_->closed) return;
    impl_->closed = true;
  }
  impl_->stacks.Close();
  impl_->branches.Close();
  if (impl_->stack_thread.joinable()) impl_->stack_thread.join();
  if (impl_->branch_thread.joinable()) impl_->branch_thread.join();
}

void Ingestor::SetPausedForTesting(bool paused) {
  impl_->stacks.Hold(paused);
  impl_->branches.Hold(paused);
}

uint64_t Ingestor::not_a_target() const {
  return impl_->not_a_target.load();
}

}  // namespace pathprof::pipeline
