#include "pathprof/fleet/push_queue.h"

#include <gtest/gtest.h>

#include <condition_variable>
#include <mutex>
#include <vector>

namespace pathprof::fleet {
namespace {

using std::chrono::milliseconds;
constexpr milliseconds kForever{60'000};  // a bound for waits that must not time out

// Answers each Send from a script (then kOk), records what it was sent, and can hold a Send
// until released, which is how the tests create a backlog without timing assumptions.
class ScriptedSink : public Sink {
 public:
  struct Shared {
    std::mutex mu;
    std::condition_variable cv;
    std::vector<SendOutcome::Kind> script;
    size_t next = 0;
    std::vector<int64_t> sent_starts;  // start time of every Send call
    bool hold = false;
    int sends_started = 0;
  };
  explicit ScriptedSink(std::shared_ptr<Shared> shared) : s_(std::move(shared)) {}
  SendOutcome Send(const ProfileWindow& window) override {
    std::unique_lock<std::mutex> lock(s_->mu);
    ++s_->sends_started;
    s_->sent_starts.push_back(window.start_unix_nanos);
    s_->cv.notify_all();
    s_->cv.wait(lock, [&] { return !s_->hold; });
    const auto kind =
        s_->next < s_->script.size() ? s_->script[s_->next++] : SendOutcome::Kind::kOk;
    return {kind, kind == SendOutcome::Kind::kOk ? "" : "scripted failure"};
  }
  std::string Describe() const override { return "scripted"; }

 private:
  std::shared_ptr<Shared> s_;
};

ProfileWindow Window(int64_t start) {
  ProfileWindow w;
  w.pprof = "pprof-" + std::to_string(start);
  w.start_unix_nanos = start;
  w.end_unix_nanos = start + 1;
  w.labels = {{"host", "h"}};
  return w;
}

PushOptions FastOptions() {
  PushOptions o;
  o.queue_capacity = 3;
  o.max_attempts = 3;
  o.backoff = {.initial = milliseconds(1), .max = milliseconds(2), .multiplier = 2, .jitter = 0.5};
  o.jitter_seed = 42;
  return o;
}

void ExpectBalanced(const PushStats& s) {
  EXPECT_EQ(s.enqueued, s.sent + s.dropped_invalid + s.dropped_queue_full +
                            s.dropped_retries_exhausted + s.dropped_rejected + s.dropped_shutdown);
}

TEST(PusherTest, RetriesTransientFailuresThenSucceeds) {
  auto shared = std::make_shared<ScriptedSink::Shared>();
  shared->script = {SendOutcome::Kind::kRetryable, SendOutcome::Kind::kRetryable};
  auto pusher = Pusher::Start(std::make_unique<ScriptedSink>(shared), FastOptions());
  ASSERT_TRUE(pusher.ok());
  ASSERT_TRUE((*pusher)->Enqueue(Window(7)).ok());
  ASSERT_TRUE((*pusher)->WaitIdle(kForever));
  const PushStats s = (*pusher)->stats();
  EXPECT_EQ(s.sent, 1u);
  EXPECT_EQ(s.attempts, 3u);
  EXPECT_EQ(s.retries, 2u);
  EXPECT_EQ(s.bytes_sent, std::string("pprof-7").size());
  EXPECT_EQ(shared->sent_starts, (std::vector<int64_t>{7, 7, 7}));
  ExpectBalanced(s);
}

TEST(PusherTest, GivesUpAfterMaxAttemptsAndCountsIt) {
  auto shared = std::make_shared<ScriptedSink::Shared>();
  shared->script.assign(10, SendOutcome::Kind::kRetryable);
  auto pusher = Pusher::Start(std::make_unique<ScriptedSink>(shared), FastOptions());
  ASSERT_TRUE(pusher.ok());
  ASSERT_TRUE((*pusher)->Enqueue(Window(1)).ok());
  ASSERT_TRUE((*pusher)->WaitIdle(kForever));
  const PushStats s = (*pusher)->stats();
  EXPECT_EQ(s.sent, 0u);
  EXPECT_EQ(s.attempts, 3u);
  EXPECT_EQ(s.dropped_retries_exhausted, 1u);
  EXPECT_EQ(s.last_error, "scripted: scripted failure");
  ExpectBalanced(s);
}

TEST(PusherTest, PermanentRejectionIsNotRetried) {
  auto shared = std::make_shared<ScriptedSink::Shared>();
  shared->script = {SendOutcome::Kind::kPermanent};
  auto pusher = Pusher::Start(std::make_unique<ScriptedSink>(shared), FastOptions());
  ASSERT_TRUE(pusher.ok());
  ASSERT_TRUE((*pusher)->Enqueue(Window(1)).ok());
  ASSERT_TRUE((*pusher)->Enqueue(Window(2)).ok());
  ASSERT_TRUE((*pusher)->WaitIdle(kForever));
  const PushStats s = (*pusher)->stats();
  EXPECT_EQ(s.attempts, 2u);
  EXPECT_EQ(s.dropped_rejected, 1u);
  EXPECT_EQ(s.sent, 1u);
  ExpectBalanced(s);
}

TEST(PusherTest, FullQueueDropsTheOldestQueuedWindowAndCountsIt) {
  auto shared = std::make_shared<ScriptedSink::Shared>();
  shared->hold = true;
  auto pusher = Pusher::Start(std::make_unique<ScriptedSink>(shared), FastOptions());
  ASSERT_TRUE(pusher.ok());
  ASSERT_TRUE((*pusher)->Enqueue(Window(0)).ok());
  {
    std::unique_lock<std::mutex> lock(shared->mu);
    shared->cv.wait(lock, [&] { return shared->sends_started == 1; });  // window 0 in flight
  }
  for (int64_t i = 1; i <= 5; ++i) ASSERT_TRUE((*pusher)->Enqueue(Window(i)).ok());
  EXPECT_EQ((*pusher)->queued(), 3u);
  {
    std::lock_guard<std::mutex> lock(shared->mu);
    shared->hold = false;
    shared->cv.notify_all();
  }
  ASSERT_TRUE((*pusher)->WaitIdle(kForever));
  const PushStats s = (*pusher)->stats();
  EXPECT_EQ(s.dropped_queue_full, 2u);  // windows 1 and 2
  EXPECT_EQ(s.sent, 4u);
  EXPECT_EQ(shared->sent_starts, (std::vector<int64_t>{0, 3, 4, 5}));
  ExpectBalanced(s);
}

TEST(PusherTest, InvalidWindowIsCountedNotQueued) {
  auto shared = std::make_shared<ScriptedSink::Shared>();
  auto pusher = Pusher::Start(std::make_unique<ScriptedSink>(shared), FastOptions());
  ASSERT_TRUE(pusher.ok());
  ProfileWindow empty = Window(1);
  empty.pprof.clear();
  EXPECT_EQ((*pusher)->Enqueue(empty).code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ((*pusher)->stats().dropped_invalid, 1u);
  ExpectBalanced((*pusher)->stats());
}

TEST(PusherTest, StopWithoutDrainTimeCountsEverythingLeftAsShutdownDrops) {
  auto shared = std::make_shared<ScriptedSink::Shared>();
  shared->script.assign(10, SendOutcome::Kind::kRetryable);
  PushOptions o = FastOptions();
  o.backoff = {.initial = milliseconds(3'600'000), .max = milliseconds(3'600'000)};  // 1 h
  auto pusher = Pusher::Start(std::make_unique<ScriptedSink>(shared), o);
  ASSERT_TRUE(pusher.ok());
  for (int64_t i = 0; i < 3; ++i) ASSERT_TRUE((*pusher)->Enqueue(Window(i)).ok());
  {
    std::unique_lock<std::mutex> lock(shared->mu);
    shared->cv.wait(lock, [&] { return shared->sends_started == 1; });
  }
  (*pusher)->Stop(milliseconds(0));  // cuts the hour-long retry sleep short
  const PushStats s = (*pusher)->stats();
  EXPECT_EQ(s.dropped_shutdown, 3u);  // the one retrying + two queued
  EXPECT_EQ(s.sent, 0u);
  EXPECT_EQ((*pusher)->Enqueue(Window(9)).code(), ErrorCode::kUnavailable);
  EXPECT_EQ((*pusher)->stats().dropped_shutdown, 4u);
  ExpectBalanced((*pusher)->stats());
}

TEST(PusherTest, StopDrainsWhatIsQueued) {
  auto shared = std::make_shared<ScriptedSink::Shared>();
  auto pusher = Pusher::Start(std::make_unique<ScriptedSink>(shared), FastOptions());
  ASSERT_TRUE(pusher.ok());
  for (int64_t i = 0; i < 3; ++i) ASSERT_TRUE((*pusher)->Enqueue(Window(i)).ok());
  (*pusher)->Stop(kForever);
  EXPECT_EQ((*pusher)->stats().sent, 3u);
  EXPECT_EQ((*pusher)->stats().dropped_shutdown, 0u);
}

}  // namespace
}  // namespace pathprof::fleet
