#include "pathprof/pipeline/bounded_queue.h"

#include <gtest/gtest.h>

#include <thread>

#include "pathprof/core/clock.h"
#include "pathprof/pipeline/accounting.h"

namespace pathprof::pipeline {
namespace {

using std::chrono::milliseconds;

TEST(BoundedQueue, RefusesWhenFullAndTheCallerCountsTheDrop) {
  BoundedQueue<int> q(2);
  TargetAccounting acct;
  for (int i = 0; i < 5; ++i)
    if (!q.TryPush(i)) acct.drops.Add("queue_full");
  EXPECT_EQ(acct.drops.Snapshot().at("queue_full"), 3u);
  EXPECT_EQ(*q.Pop(milliseconds(0)), 0);
  EXPECT_EQ(*q.Pop(milliseconds(0)), 1);
  EXPECT_FALSE(q.Pop(milliseconds(1)).has_value());
}

TEST(BoundedQueue, CloseDrainsThenEnds) {
  BoundedQueue<int> q(4);
  ASSERT_TRUE(q.TryPush(7));
  q.Close();
  EXPECT_FALSE(q.TryPush(8));
  EXPECT_EQ(*q.Pop(milliseconds(0)), 7);
  EXPECT_FALSE(q.Pop(milliseconds(1000)).has_value()) << "a closed empty queue must not wait";
}

TEST(BoundedQueue, HeldQueueHandsOutNothingEvenToAWaitingConsumer) {
  BoundedQueue<int> q(2);
  std::atomic<bool> got{false};
  std::thread consumer([&] {
    auto v = q.Pop(milliseconds(10000));  // already waiting when the queue is held
    got = v.has_value();
    if (v) q.Done();
  });
  std::this_thread::sleep_for(milliseconds(20));
  q.Hold(true);
  ASSERT_TRUE(q.TryPush(1));
  ASSERT_TRUE(q.TryPush(2));
  EXPECT_FALSE(q.TryPush(3)) << "a held queue fills as with a stalled consumer";
  std::this_thread::sleep_for(milliseconds(50));
  EXPECT_FALSE(got.load());
  EXPECT_FALSE(q.WaitIdle(milliseconds(0))) << "items are waiting";
  q.Hold(false);
  consumer.join();
  EXPECT_TRUE(got.load());
  EXPECT_EQ(q.size(), 1u);
}

TEST(BoundedQueue, WaitIdleWaitsUntilEveryPoppedItemIsDone) {
  BoundedQueue<int> q(4);
  ASSERT_TRUE(q.TryPush(1));
  auto v = q.Pop(milliseconds(0));
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(q.size(), 0u);
  EXPECT_FALSE(q.WaitIdle(milliseconds(10))) << "popped but not finished";
  std::thread finisher([&] {
    std::this_thread::sleep_for(milliseconds(20));
    q.Done();
  });
  EXPECT_TRUE(q.WaitIdle(milliseconds(10000)));
  finisher.join();
}

TEST(BoundedQueue, ProducersAndAConsumerLoseNothingTheyWereNotToldAbout) {
  BoundedQueue<int> q(16);
  std::atomic<int> refused{0};
  std::atomic<long> pushed_sum{0};
  std::vector<std::thread> producers;
  for (int p = 0; p < 3; ++p)
    producers.emplace_back([&, p] {
      for (int i = 0; i < 2000; ++i) {
        int v = p * 10000 + i;
        if (q.TryPush(v))
          pushed_sum += v;
        else
          ++refused;
      }
    });
  long popped_sum = 0;
  int popped = 0;
  std::thread consumer([&] {
    while (true) {
      auto v = q.Pop(milliseconds(50));
      if (!v) {
        if (q.closed() && q.size() == 0) break;
        continue;  // a slow producer on a loaded machine, not the end
      }
      popped_sum += *v;
      ++popped;
    }
  });
  for (auto& t : producers) t.join();
  q.Close();
  consumer.join();
  EXPECT_EQ(popped + refused, 6000);
  EXPECT_EQ(popped_sum, pushed_sum.load());
}

// CPU time is split among the targets worked for, by item count, with one clock read per flush.
TEST(Accounting, CpuChargerSplitsOneReadAmongTheTargets) {
  TargetAccounting a, b;
  CpuCharger charger;
  const uint64_t reads = ClockReads();
  volatile double x = 0;
  for (int i = 0; i < 3000000; ++i) {
    x = x + i * 0.5;
    if (i % 1000000 == 0) charger.Note(i == 0 ? &b : &a);  // a: 2 items, b: 1
  }
  EXPECT_EQ(charger.pending(), 3u);
  charger.Flush();
  EXPECT_EQ(ClockReads() - reads, 1u) << "one clock read for the whole batch";
  EXPECT_EQ(charger.pending(), 0u);
  const uint64_t ta = a.pipeline_cpu_ns.load(), tb = b.pipeline_cpu_ns.load();
  EXPECT_GT(tb, 0u);
  EXPECT_NEAR(static_cast<double>(ta), 2.0 * static_cast<double>(tb), 2.0) << "2:1 by items";
  charger.Flush();  // nothing noted: no read, nothing charged
  EXPECT_EQ(ClockReads() - reads, 1u);
  EXPECT_EQ(a.pipeline_cpu_ns.load(), ta);
}

}  // namespace
}  // namespace pathprof::pipeline
