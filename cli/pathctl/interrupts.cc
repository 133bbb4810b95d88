#include "pathctl/interrupts.h"

#include <signal.h>

#include <cstdio>

namespace pathctl {
namespace {

std::atomic<int> g_signal{0};
std::atomic<bool> g_interrupted{false};

void OnSignal(int sig) {
  int none = 0;
  g_signal.compare_exchange_strong(none, sig);  // the first one counts
  g_interrupted = true;
}

}  // namespace

void CatchInterrupts() {
  struct sigaction sa {};
  sa.sa_handler = OnSignal;
  sa.sa_flags = SA_RESTART;  // writes in progress go on; every wait here is bounded
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaction(sig, &sa, nullptr);
}

int InterruptSignal() {
  return g_signal.load();
}

const std::atomic<bool>* InterruptFlag() {
  return &g_interrupted;
}

void ExitAsInterrupted() {
  const int sig = g_signal.load();
  if (sig == 0) return;
  std::fflush(nullptr);
  signal(sig, SIG_DFL);
  raise(sig);
}

}  // namespace pathctl
