// What the push tests of every backend share: a bound for waits that must not time out, bytes
// written out by hand, fast retries, and one window pushed through a sink to the end.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <initializer_list>
#include <memory>
#include <string>

#include "pathprof/fleet/push_queue.h"

namespace pathprof::fleet::testing {

inline constexpr std::chrono::milliseconds kForever{60'000};

inline std::string Bytes(std::initializer_list<int> bytes) {
  std::string s;
  for (int b : bytes) s.push_back(static_cast<char>(b));
  return s;
}

// Retries a few milliseconds apart, with a fixed jitter seed.
inline PushOptions FastRetries(uint32_t attempts) {
  PushOptions o;
  o.max_attempts = attempts;
  o.backoff = {.initial = std::chrono::milliseconds(1),
               .max = std::chrono::milliseconds(4),
               .multiplier = 2,
               .jitter = 0.5};
  o.jitter_seed = 3;
  return o;
}

// Pushes `window` through `sink` with up to `attempts` tries and waits until it is sent or
// dropped; the pusher's counters then.
inline PushStats PushOne(std::unique_ptr<Sink> sink, ProfileWindow window, uint32_t attempts) {
  auto pusher = Pusher::Start(std::move(sink), FastRetries(attempts));
  EXPECT_TRUE(pusher.ok()) << pusher.status().ToString();
  if (!pusher.ok()) return {};
  EXPECT_TRUE((*pusher)->Enqueue(std::move(window)).ok());
  EXPECT_TRUE((*pusher)->WaitIdle(kForever));
  return (*pusher)->stats();
}

}  // namespace pathprof::fleet::testing
