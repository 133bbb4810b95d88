/* A program that signals itself: SIGUSR1 is raised three times and its handler runs a short
 * counted loop each time, so an exact trace must show three asynchronous transfers into
 * on_usr1 (and the handler's loop back-edge taken 3 x 49 times). */
#include <signal.h>
#include <string.h>

volatile unsigned sink;
volatile int handled;

__attribute__((noinline)) void on_usr1(int sig) {
  for (unsigned i = 0; i < 50; ++i) sink += i * (unsigned)sig;
  ++handled;
}

int main(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_usr1;
  sigaction(SIGUSR1, &sa, NULL);
  for (int i = 0; i < 3; ++i) raise(SIGUSR1);
  return handled == 3 ? 0 : 1;
}
