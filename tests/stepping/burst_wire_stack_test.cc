// The window message of wire v3 carries the thread's stack: it survives the trip whole, a
// truncated or inconsistent one is marked malformed (EBADMSG) with the events kept, and a stack
// the tracer cannot read comes back as an error, not as bytes.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>

#include "burst_wire.h"
#include "thread_stack_reader.h"

namespace pathprof::stepping {
namespace {

BranchBatch Window() {
  BranchBatch b;
  b.pid = 10;
  b.tid = 11;
  b.time_ns = 12;
  b.window = true;
  b.events = {{0x1000, 0x2000, 0, 3, BranchKind::kDirectCall, true}};
  b.stack.regs.assign(17, 0);
  b.stack.regs[16] = 0x1000;
  b.stack.regs[7] = 0x7ff0;
  b.stack.stack_start = 0x7ff0;
  b.stack.stack = {1, 2, 3, 4, 5, 6, 7, 8};
  return b;
}

std::vector<uint8_t> Payload(const BranchBatch& b) {
  std::vector<uint8_t> framed;
  wire::AppendWindow(b, &framed);
  return std::vector<uint8_t>(framed.begin() + sizeof(wire::Header), framed.end());
}

TEST(BurstWireStack, AWindowKeepsItsStack) {
  const BranchBatch b = Window();
  EXPECT_EQ(wire::DecodeWindow(Payload(b)), b);
  BranchBatch failed = Window();
  failed.stack = {};
  failed.stack.error = EFAULT;
  EXPECT_EQ(wire::DecodeWindow(Payload(failed)).stack, failed.stack);
}

TEST(BurstWireStack, AMalformedStackIsMarkedAndTheEventsKept) {
  std::vector<uint8_t> cut = Payload(Window());
  cut.pop_back();  // one stack byte short
  BranchBatch d = wire::DecodeWindow(cut);
  EXPECT_EQ(d.stack.error, EBADMSG);
  EXPECT_TRUE(d.stack.regs.empty());
  EXPECT_EQ(d.events.size(), 1u);
  std::vector<uint8_t> header_only = Payload(Window());
  header_only.resize(sizeof(wire::WindowHeader) + 4);
  EXPECT_EQ(wire::DecodeWindow(header_only).stack.error, EBADMSG);
}

TEST(BurstWireStack, AThreadThatIsNotStoppedHasNoStackToRead) {
  const pid_t child = fork();
  if (child == 0) {
    pause();
    _exit(0);
  }
  const ThreadStack s = ReadThreadStack(child, child);  // not traced by us: ptrace refuses
  EXPECT_NE(s.error, 0);
  EXPECT_TRUE(s.regs.empty());
  EXPECT_TRUE(s.stack.empty());
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
}

}  // namespace
}  // namespace pathprof::stepping
