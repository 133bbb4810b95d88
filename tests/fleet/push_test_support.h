// What the push tests of every backend share: a bound for waits that must not time out, bytes
// written out by hand, fast retries, one window pushed through a sink to the end, and the fake
// gRPC backends' bookkeeping and server.
#pragma once

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <chrono>
#include <initializer_list>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

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

// A fake gRPC backend's side of each call: the request and its authorization metadata kept
// ("<absent>" without one), and the status it answers with, from a script of codes (then OK).
template <typename Request>
class ScriptedBackend {
 public:
  explicit ScriptedBackend(std::vector<grpc::StatusCode> script) : script_(std::move(script)) {}

  // Keeps the call; the code to answer it with.
  grpc::StatusCode Record(const grpc::ServerContext& context, const Request& request) {
    std::lock_guard<std::mutex> lock(mu_);
    requests_.push_back(request);
    auto auth = context.client_metadata().find("authorization");
    authorization_.push_back(auth == context.client_metadata().end()
                                 ? "<absent>"
                                 : std::string(auth->second.data(), auth->second.size()));
    return next_ < script_.size() ? script_[next_++] : grpc::StatusCode::OK;
  }
  std::vector<Request> requests() {
    std::lock_guard<std::mutex> lock(mu_);
    return requests_;
  }
  std::vector<std::string> authorization() {
    std::lock_guard<std::mutex> lock(mu_);
    return authorization_;
  }

 private:
  std::mutex mu_;
  std::vector<grpc::StatusCode> script_;
  size_t next_ = 0;
  std::vector<Request> requests_;
  std::vector<std::string> authorization_;
};

// A fake backend `Service` (made from the script and `extra`) served on a loopback port the
// kernel picks, until the end of the scope.
template <typename Service>
struct RunningFake {
  template <typename... Extra>
  explicit RunningFake(std::vector<grpc::StatusCode> script, Extra... extra)
      : service(std::move(script), extra...) {
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    builder.RegisterService(&service);
    server = builder.BuildAndStart();
  }
  ~RunningFake() { server->Shutdown(); }
  std::string Target() const { return "127.0.0.1:" + std::to_string(port); }
  Service service;
  int port = 0;
  std::unique_ptr<grpc::Server> server;
};

}  // namespace pathprof::fleet::testing
