// Lost single-step traps decoded across (step_classifier.h), on code of this test's own: the
// instruction reader reads this process like any other, and each case names where the "late"
// step landed. Hypervisors that drop the trap after an emulated instruction make a step from
// CPUID stop one or more instructions late; the instructions in between must come back exactly.
#include <gtest/gtest.h>
#include <unistd.h>

#include <vector>

#include "step_classifier.h"

__asm__(R"(
  .text
  .globl lost_trap_code
  .hidden lost_trap_code
lost_trap_code:
  cpuid                 # +0 (2 bytes)
  nop                   # +2
  cmp %rax, %rbx        # +3 (3 bytes)
  jne 1f                # +6 (2 bytes)
  nop                   # +8
1:
  nop                   # +9
  cpuid                 # +10
  jmp *%rax             # +12 (2 bytes)
  mov %rax, %rbx        # +14 (3 bytes)
  jmp *%rax             # +17
  ret                   # +19
)");
extern "C" const char lost_trap_code[];

namespace pathprof::stepping {
namespace {

class LostTraps : public ::testing::Test {
 protected:
  uint64_t At(int offset) const { return reinterpret_cast<uint64_t>(lost_trap_code) + offset; }
  const decoders::X86Instruction& Insn(int offset) {
    const decoders::X86Instruction* i = reader_.At(At(offset));
    EXPECT_NE(i, nullptr);
    return *i;
  }
  InstructionReader reader_{getpid()};
  std::vector<ClassifiedStep> steps_;
};

TEST_F(LostTraps, OneInstructionLateGivesTheSkippedInstruction) {
  const auto& cpuid = Insn(0);
  EXPECT_TRUE(cpuid.may_be_emulated);
  // The step should stop at +2 (the nop) but stops at +3: the nop ran unseen.
  ASSERT_TRUE(ResolveLostTraps(reader_, cpuid, At(3), 3, &steps_));
  ASSERT_EQ(steps_.size(), 1u);
  EXPECT_EQ(steps_[0].result, StepResult::kRetired);
}

TEST_F(LostTraps, ABranchInTheGapIsRecoveredWithItsDirection) {
  const auto& cpuid = Insn(0);
  // nop, cmp, jne taken -> +9.
  ASSERT_TRUE(ResolveLostTraps(reader_, cpuid, At(9), 3, &steps_));
  ASSERT_EQ(steps_.size(), 3u);
  EXPECT_EQ(steps_[2].result, StepResult::kBranch);
  EXPECT_EQ(steps_[2].event.from, At(6));
  EXPECT_EQ(steps_[2].event.to, At(9));
  EXPECT_TRUE(steps_[2].event.taken);
  EXPECT_EQ(steps_[2].event.kind, BranchKind::kConditional);
  // nop, cmp, jne not taken -> +8.
  ASSERT_TRUE(ResolveLostTraps(reader_, cpuid, At(8), 3, &steps_));
  ASSERT_EQ(steps_.size(), 3u);
  EXPECT_FALSE(steps_[2].event.taken);
  EXPECT_EQ(steps_[2].event.to, At(8));
  // Too far for the bound: not explained.
  EXPECT_FALSE(ResolveLostTraps(reader_, cpuid, At(9), 2, &steps_));
}

TEST_F(LostTraps, AnIndirectJumpMayEndTheGapOnlyAfterAnEmulatedInstruction) {
  // cpuid at +10, then jmp *%rax to anywhere: the landing address is the jump's target.
  const uint64_t anywhere = reinterpret_cast<uint64_t>(&getpid);
  ASSERT_TRUE(ResolveLostTraps(reader_, Insn(10), anywhere, 3, &steps_));
  ASSERT_EQ(steps_.size(), 1u);
  EXPECT_EQ(steps_[0].event.kind, BranchKind::kIndirectJump);
  EXPECT_EQ(steps_[0].event.to, anywhere);
  // After a plain mov the same landing is an unexplained transfer (a signal handler, say).
  EXPECT_FALSE(Insn(14).may_be_emulated);
  EXPECT_FALSE(ResolveLostTraps(reader_, Insn(14), anywhere, 3, &steps_));
}

TEST_F(LostTraps, AStepThatLandedWhereItShouldIsNotALostTrap) {
  EXPECT_FALSE(ResolveLostTraps(reader_, Insn(0), At(2), 3, &steps_));
}

}  // namespace
}  // namespace pathprof::stepping
