// A bounded multi-producer queue between a source thread and the decode thread. When the
// consumer cannot keep up the producer's item is refused (and the caller counts the drop):
// back-pressure never turns into unbounded memory, and never blocks a tracer that holds a
// stopped thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <mutex>
#include <optional>

namespace pathprof::pipeline {

template <typename T>
class BoundedQueue {
 public:
  explicit BoundedQueue(size_t capacity) : capacity_(capacity ? capacity : 1) {}

  // False when full or closed: the item was not taken.
  bool TryPush(T item) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (closed_ || items_.size() >= capacity_) return false;
      items_.push_back(std::move(item));
    }
    ready_.notify_one();
    return true;
  }

  // Waits up to `timeout` for an item; nullopt on timeout or when closed and drained. Each item
  // handed out is unfinished until the consumer calls Done() (WaitIdle waits for that).
  std::optional<T> Pop(std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> lock(mu_);
    if (!ready_.wait_for(lock, timeout, [&] { return (!items_.empty() && !held_) || closed_; }))
      return std::nullopt;
    if (items_.empty()) return std::nullopt;
    T item = std::move(items_.front());
    items_.pop_front();
    ++unfinished_;
    return item;
  }

  // The consumer has finished with an item Pop gave it.
  void Done() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (unfinished_ > 0) --unfinished_;
    }
    idle_.notify_all();
  }

  // Waits up to `timeout` until every item pushed so far was popped and finished. False on
  // timeout, and at once while held (nothing would drain).
  bool WaitIdle(std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> lock(mu_);
    if (held_ && !closed_) return items_.empty() && unfinished_ == 0;
    return idle_.wait_for(lock, timeout, [&] { return items_.empty() && unfinished_ == 0; });
  }

  // While held, Pop hands out nothing (the queue fills and refuses, as with a stalled
  // consumer); Close releases. Tests use it to make back-pressure deterministic.
  void Hold(bool held) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      held_ = held;
    }
    ready_.notify_all();
  }

  // Refuses further pushes; items already queued can still be popped.
  void Close() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      closed_ = true;
    }
    ready_.notify_all();
  }

  bool closed() const {
    std::lock_guard<std::mutex> lock(mu_);
    return closed_;
  }
  size_t size() const {
    std::lock_guard<std::mutex> lock(mu_);
    return items_.size();
  }
  size_t capacity() const { return capacity_; }

 private:
  const size_t capacity_;
  mutable std::mutex mu_;
  std::condition_variable ready_;
  std::condition_variable idle_;
  std::deque<T> items_;
  size_t unfinished_ = 0;  // popped, Done() not called yet
  bool held_ = false;
  bool closed_ = false;
};

}  // namespace pathprof::pipeline
