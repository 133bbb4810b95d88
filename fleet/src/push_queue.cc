#include "pathprof/fleet/push_queue.h"

#include <random>

namespace pathprof::fleet {

Result<std::unique_ptr<Pusher>> Pusher::Start(std::unique_ptr<Sink> sink, PushOptions options) {
  if (!sink) return Error(ErrorCode::kInvalidArgument, "pusher needs a sink (backend client)");
  if (options.queue_capacity == 0 || options.max_attempts == 0) {
    return Error(ErrorCode::kInvalidArgument,
                 "pusher needs queue_capacity >= 1 and max_attempts >= 1");
  }
  std::unique_ptr<Pusher> pusher(new Pusher(std::move(sink), options));
  pusher->worker_ = std::thread([p = pusher.get()] { p->Run(); });
  return pusher;
}

Pusher::Pusher(std::unique_ptr<Sink> sink, PushOptions options)
    : sink_(std::move(sink)), options_(options) {}

Pusher::~Pusher() {
  Stop(std::chrono::milliseconds(0));
}

Status Pusher::Enqueue(ProfileWindow window) {
  Status valid = ValidateWindow(window);
  std::lock_guard<std::mutex> lock(mu_);
  ++stats_.enqueued;
  if (!valid.ok()) {
    ++stats_.dropped_invalid;
    stats_.last_error = valid.message();
    return valid;
  }
  if (stopping_) {
    ++stats_.dropped_shutdown;
    return Error(ErrorCode::kUnavailable, "pusher to " + sink_->Describe() + " is stopping");
  }
  if (queue_.size() >= options_.queue_capacity) {
    queue_.pop_front();
    ++stats_.dropped_queue_full;
    stats_.last_error = "queue full (" + std::to_string(options_.queue_capacity) +
                        " windows): backend " + sink_->Describe() + " is too slow or down";
  }
  queue_.push_back(std::move(window));
  wake_.notify_all();
  return Status::Ok();
}

void Pusher::Run() {
  std::mt19937_64 rng(
      options_.jitter_seed != 0
          ? options_.jitter_seed
          : static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count()));
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    wake_.wait(lock, [&] { return !queue_.empty() || stopping_; });
    if (abandon_ || queue_.empty()) break;
    ProfileWindow window = std::move(queue_.front());
    queue_.pop_front();
    in_flight_ = true;
    for (uint32_t attempt = 0;; ++attempt) {
      lock.unlock();
      const SendOutcome outcome = sink_->Send(window);
      lock.lock();
      ++stats_.attempts;
      if (outcome.kind == SendOutcome::Kind::kOk) {
        ++stats_.sent;
        stats_.bytes_sent += window.pprof.size();
        break;
      }
      stats_.last_error = sink_->Describe() + ": " + outcome.message;
      if (outcome.kind == SendOutcome::Kind::kPermanent) {
        ++stats_.dropped_rejected;
        break;
      }
      if (attempt + 1 >= options_.max_attempts) {
        ++stats_.dropped_retries_exhausted;
        break;
      }
      const auto delay = BackoffDelay(options_.backoff, attempt, uniform(rng));
      wake_.wait_for(lock, delay, [&] { return abandon_; });
      if (abandon_) {
        ++stats_.dropped_shutdown;
        break;
      }
      ++stats_.retries;
    }
    in_flight_ = false;
    idle_.notify_all();
  }
  stats_.dropped_shutdown += queue_.size();
  queue_.clear();
  in_flight_ = false;
  idle_.notify_all();
}

bool Pusher::WaitIdle(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  return idle_.wait_for(lock, timeout, [&] { return queue_.empty() && !in_flight_; });
}

void Pusher::Stop(std::chrono::milliseconds drain) {
  {
    std::unique_lock<std::mutex> lock(mu_);
    if (!worker_.joinable()) return;
    stopping_ = true;
    wake_.notify_all();
    if (!idle_.wait_for(lock, drain, [&] { return queue_.empty() && !in_flight_; })) {
      abandon_ = true;
      wake_.notify_all();
    }
  }
  worker_.join();
}

PushStats Pusher::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

size_t Pusher::queued() const {
  std::lock_guard<std::mutex> lock(mu_);
  return queue_.size();
}

}  // namespace pathprof::fleet
