// Live tests of the process's one stack sampler: real eBPF, real perf events, real children.
// Several subscriptions share one perf event per CPU and one ring buffer; each gets its own
// targets' samples, at its own rate, cut to what it asked for.
#include "pathprof/collectors/shared_stack_sampler.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <mutex>
#include <set>
#include <string>
#include <thread>

#include "common/kernel_objects.h"

namespace pathprof::collectors {
namespace {

using ::pathprof::testing::OpenKernelObjects;

// A child that spins until killed, as `uid` when set (dropping every capability with root).
pid_t SpinningChild(std::optional<uid_t> uid = std::nullopt) {
  pid_t child = fork();
  if (child == 0) {
    if (uid && (setgid(*uid) != 0 || setuid(*uid) != 0)) _exit(2);
    volatile uint64_t counter = 1;
    for (;;) counter = counter * 6364136223846793005ull + 1442695040888963407ull;
  }
  return child;
}

void EndChild(pid_t child) {
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
}

OpenKernelObjects CountOpenKernelObjects() {
  return ::pathprof::testing::CountOpenKernelObjects(getpid());
}

// What one subscription received.
struct Received {
  std::mutex mu;
  std::vector<RawStackSample> samples;
  StackSubscription::Sink Sink() {
    return [this](const RawStackSample& s) {
      std::lock_guard<std::mutex> lock(mu);
      samples.push_back(s);
    };
  }
  size_t size() {
    std::lock_guard<std::mutex> lock(mu);
    return samples.size();
  }
};

void WaitFor(const std::function<bool()>& done, int seconds = 20) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  while (!done() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
}

// A subscription to one process at `hz`, the rest as the defaults.
StackSubscriptionSettings OneProcess(pid_t pid, int hz) {
  StackSubscriptionSettings s;
  s.pids = {static_cast<uint32_t>(pid)};
  s.frequency_hz = hz;
  return s;
}

long OnlineCpuCount() {
  return sysconf(_SC_NPROCESSORS_ONLN);
}

TEST(SharedStackSampler, RefusesWhatNoSamplerCouldDo) {
  StackSubscriptionSettings s;
  s.frequency_hz = 0;
  EXPECT_EQ(StackSubscription::Start(s, [](const RawStackSample&) {}).status().code(),
            ErrorCode::kInvalidArgument);
  s.frequency_hz = 99;
  s.stack_copy_bytes = 100;
  EXPECT_EQ(StackSubscription::Start(s, [](const RawStackSample&) {}).status().code(),
            ErrorCode::kInvalidArgument);
  s.stack_copy_bytes = 0;
  s.pids = {0};
  EXPECT_EQ(StackSubscription::Start(s, [](const RawStackSample&) {}).status().code(),
            ErrorCode::kInvalidArgument);
}

// Eight subscriptions on four processes: one perf event per CPU and one ring buffer in all (a
// sampler each had eight of each per CPU), each subscription gets its own process's samples
// only, and the last one out closes everything.
TEST(SharedStackSampler, EightSessionsShareOneEventPerCpuAndOneRing) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root (CAP_BPF + CAP_PERFMON) to load eBPF";
  const OpenKernelObjects before = CountOpenKernelObjects();
  std::vector<pid_t> children;
  for (int i = 0; i < 4; ++i) children.push_back(SpinningChild());
  std::vector<std::unique_ptr<Received>> got;
  std::vector<std::unique_ptr<StackSubscription>> subs;
  for (int i = 0; i < 8; ++i) {
    const StackSubscriptionSettings s = OneProcess(children[i % 4], 199);
    got.push_back(std::make_unique<Received>());
    auto sub = StackSubscription::Start(s, got.back()->Sink());
    ASSERT_TRUE(sub.ok()) << sub.status().ToString();
    subs.push_back(std::move(*sub));
  }
  const OpenKernelObjects open = CountOpenKernelObjects();
  EXPECT_EQ(open.perf_events - before.perf_events, OnlineCpuCount());
  EXPECT_EQ(open.ring_buffers - before.ring_buffers, 1);
  EXPECT_EQ(subs.front()->stats().subscriptions, 8);
  WaitFor([&] {
    return std::all_of(got.begin(), got.end(), [](const auto& g) { return g->size() >= 50; });
  });
  for (auto& sub : subs) sub->Flush();
  for (int i = 0; i < 8; ++i) {
    std::lock_guard<std::mutex> lock(got[i]->mu);
    EXPECT_GE(got[i]->samples.size(), 50u) << "subscription " << i;
    for (const RawStackSample& s : got[i]->samples)
      ASSERT_EQ(s.pid, static_cast<uint32_t>(children[i % 4])) << "subscription " << i;
    EXPECT_EQ(subs[i]->stats().delivered, got[i]->samples.size());
    EXPECT_EQ(subs[i]->stats().ringbuf_full, 0u);
  }
  subs.clear();
  const OpenKernelObjects after = CountOpenKernelObjects();
  EXPECT_EQ(after.perf_events, before.perf_events);
  EXPECT_EQ(after.ring_buffers, before.ring_buffers);
  for (pid_t c : children) EndChild(c);
}

// Two sessions on one process at 499 and 99 Hz: the events run at 499, the slower session gets
// one in five of the same samples (its sample times are a subset of the faster one's), and once
// the faster leaves the events slow down to 99 Hz.
TEST(SharedStackSampler, EachSessionGetsItsOwnRateOfTheSameSamples) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root (CAP_BPF + CAP_PERFMON) to load eBPF";
  const pid_t child = SpinningChild();
  Received fast, slow;
  StackSubscriptionSettings s = OneProcess(child, 499);
  auto a = StackSubscription::Start(s, fast.Sink());
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  s.frequency_hz = 99;
  auto b = StackSubscription::Start(s, slow.Sink());
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  EXPECT_EQ((*b)->stats().sampler_hz, 499);
  WaitFor([&] { return slow.size() >= 60; }, 30);
  (*a)->Flush();
  a->reset();
  EXPECT_EQ((*b)->stats().sampler_hz, 99);
  EXPECT_EQ((*b)->stats().subscriptions, 1);
  std::lock_guard<std::mutex> l1(fast.mu), l2(slow.mu);
  ASSERT_GE(slow.samples.size(), 60u);
  std::set<uint64_t> fast_times;
  for (const auto& x : fast.samples) fast_times.insert(x.time_ns);
  size_t shared = 0;
  uint64_t fast_end = fast.samples.back().time_ns;
  size_t slow_in_fast_span = 0;
  for (const auto& x : slow.samples) {
    if (x.time_ns > fast_end) continue;
    ++slow_in_fast_span;
    shared += fast_times.count(x.time_ns);
  }
  EXPECT_EQ(shared, slow_in_fast_span) << "the slower session got samples the faster did not";
  const double ratio = static_cast<double>(fast.samples.size()) / slow_in_fast_span;
  EXPECT_GT(ratio, 4.0) << fast.samples.size() << " against " << slow_in_fast_span;
  EXPECT_LT(ratio, 6.2) << fast.samples.size() << " against " << slow_in_fast_span;
  EndChild(child);
}

// Sessions on one process asking different stack copies and kernel stacks: the copy is made
// once, as large as the largest asks, and each gets what it asked for.
TEST(SharedStackSampler, EachSessionGetsTheStackCopyItAskedFor) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root (CAP_BPF + CAP_PERFMON) to load eBPF";
  const pid_t child = SpinningChild();
  Received big, small, none;
  StackSubscriptionSettings s = OneProcess(child, 199);
  s.stack_copy_bytes = 65536;
  auto a = StackSubscription::Start(s, big.Sink());
  s.stack_copy_bytes = 4096;
  s.kernel_stacks = false;
  auto b = StackSubscription::Start(s, small.Sink());
  s.stack_copy_bytes = 0;
  auto c = StackSubscription::Start(s, none.Sink());
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  WaitFor([&] { return none.size() >= 50; });
  (*a)->Flush();
  std::lock_guard<std::mutex> l1(big.mu), l2(small.mu), l3(none.mu);
  ASSERT_GE(none.samples.size(), 50u);
  for (const auto& x : small.samples) {
    EXPECT_LE((x.stack_start & 4095) + x.stack.size(), 4096u) << "more than its one page";
    EXPECT_TRUE(x.kernel.empty());
  }
  for (const auto& x : none.samples) EXPECT_TRUE(x.stack.empty() && x.regs.empty());
  size_t small_with_stack = std::count_if(small.samples.begin(), small.samples.end(),
                                          [](const auto& x) { return !x.stack.empty(); });
  EXPECT_GE(small_with_stack, small.samples.size() * 9 / 10);
  // The child's stack is its top frames' (main's, libc's start-up: a few KiB): the big copy
  // reaches its end, beyond the small one's page.
  size_t longer = std::count_if(big.samples.begin(), big.samples.end(), [](const auto& x) {
    return (x.stack_start & 4095) + x.stack.size() > 4096;
  });
  EXPECT_GT(longer, 0u);
  EndChild(child);
}

// A non-admin's session and an admin's on the same process: the process runs as uid 65534, so
// the session confined to 65534 gets its samples, one confined to another uid gets none (each
// counted), and the admin's gets them all.
TEST(SharedStackSampler, ConfinedSessionsGetOnlyTheirUsersSamples) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to run a child as another user";
  const pid_t child = SpinningChild(65534);
  Received own, other, admin;
  StackSubscriptionSettings s = OneProcess(child, 199);
  s.only_uid = 65534;
  auto a = StackSubscription::Start(s, own.Sink());
  s.only_uid = 1234;
  auto b = StackSubscription::Start(s, other.Sink());
  s.only_uid.reset();
  auto c = StackSubscription::Start(s, admin.Sink());
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  WaitFor([&] { return own.size() >= 50; });
  (*a)->Flush();
  EXPECT_GE(own.size(), 50u);
  EXPECT_EQ(other.size(), 0u);
  {
    // The admin subscribed last, so it lacks the confined session's first samples; between its
    // own first and last sample it has every one the confined session got (a record reaches the
    // subscriptions one after another, so either may be a record ahead at the ends).
    std::lock_guard<std::mutex> l1(own.mu), l2(admin.mu);
    ASSERT_FALSE(admin.samples.empty());
    std::set<uint64_t> admin_times;
    for (const auto& x : admin.samples) admin_times.insert(x.time_ns);
    size_t compared = 0;
    for (const auto& x : own.samples) {
      if (x.time_ns < *admin_times.begin() || x.time_ns > *admin_times.rbegin()) continue;
      ++compared;
      EXPECT_TRUE(admin_times.count(x.time_ns)) << "the admin missed a sample at " << x.time_ns;
    }
    EXPECT_GE(compared, 25u);
  }
  EXPECT_GE((*b)->stats().filtered_credentials, 50u);
  EXPECT_EQ((*a)->stats().filtered_credentials, 0u);
  // Alone, the wrong user's session is filtered in the kernel: still counted, still nothing.
  a->reset();
  c->reset();
  const uint64_t before = (*b)->stats().filtered_credentials;
  WaitFor([&] { return (*b)->stats().filtered_credentials >= before + 50; });
  EXPECT_GE((*b)->stats().filtered_credentials, before + 50);
  (*b)->Flush();
  EXPECT_EQ(other.size(), 0u);
  EndChild(child);
}

// A session following a process's children and one that does not, on the same process: the child
// forked after they subscribed reaches only the first (with its parent as root), and keeps
// reaching it after the parent exited and left the subscription.
TEST(SharedStackSampler, AFollowedChildOutlivesItsParentAndReachesOnlyItsFollower) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root (CAP_BPF + CAP_PERFMON) to load eBPF";
  int go[2], child_pid[2];
  ASSERT_EQ(pipe(go), 0);
  ASSERT_EQ(pipe(child_pid), 0);
  const pid_t parent = fork();
  ASSERT_GE(parent, 0);
  if (parent == 0) {
    char c;
    if (read(go[0], &c, 1) != 1) _exit(1);
    const pid_t child = SpinningChild();
    if (write(child_pid[1], &child, sizeof(child)) != sizeof(child)) _exit(1);
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(500);
    volatile uint64_t counter = 1;
    while (std::chrono::steady_clock::now() < until) counter = counter * 3 + 1;
    _exit(0);  // the child lives on, reparented
  }
  Received follower, other;
  StackSubscriptionSettings s = OneProcess(parent, 199);
  s.follow_children = true;
  auto a = StackSubscription::Start(s, follower.Sink());
  s.follow_children = false;
  auto b = StackSubscription::Start(s, other.Sink());
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_EQ(write(go[1], "x", 1), 1);
  pid_t child = 0;
  ASSERT_EQ(read(child_pid[0], &child, sizeof(child)), static_cast<ssize_t>(sizeof(child)));
  ASSERT_GT(child, 0);
  ASSERT_EQ(waitpid(parent, nullptr, 0), parent);
  ASSERT_TRUE((*a)->RemovePid(static_cast<uint32_t>(parent)).ok());
  ASSERT_TRUE((*b)->RemovePid(static_cast<uint32_t>(parent)).ok());
  auto from_child = [&](Received& r) {
    std::lock_guard<std::mutex> lock(r.mu);
    return std::count_if(r.samples.begin(), r.samples.end(),
                         [&](const auto& x) { return x.pid == static_cast<uint32_t>(child); });
  };
  const long before = from_child(follower);
  WaitFor([&] { return from_child(follower) >= before + 50; });
  (*a)->Flush();
  EXPECT_GE(from_child(follower), before + 50) << "the child stopped being sampled with its parent";
  EXPECT_EQ(from_child(other), 0);
  {
    std::lock_guard<std::mutex> lock(follower.mu);
    for (const auto& x : follower.samples) {
      if (x.pid == static_cast<uint32_t>(child)) {
        ASSERT_EQ(x.root, static_cast<uint32_t>(parent));
      }
    }
  }
  EndChild(child);  // not ours to reap (reparented), but ours to end: killed by pid
  for (int fd : {go[0], go[1], child_pid[0], child_pid[1]}) close(fd);
}

}  // namespace
}  // namespace pathprof::collectors
