#include "pathprof/collectors/capabilities.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>

#include "pathprof/core/sysfs.h"

namespace pathprof::collectors {
namespace {

TEST(Capabilities, SourceNamesRoundTrip) {
  for (BranchSource s : {BranchSource::kNone, BranchSource::kPtraceBursts, BranchSource::kLbr,
                         BranchSource::kIntelPt}) {
    BranchSource back;
    ASSERT_TRUE(ParseBranchSource(BranchSourceName(s), &back));
    EXPECT_EQ(back, s);
  }
  BranchSource x;
  EXPECT_FALSE(ParseBranchSource("bts", &x));
}

TEST(Capabilities, PreferenceOrderIsPtThenLbrThenPtrace) {
  HostCapabilities h;
  EXPECT_EQ(h.BestBranchSource(), BranchSource::kNone);
  h.ptrace.available = true;
  EXPECT_EQ(h.BestBranchSource(), BranchSource::kPtraceBursts);
  h.lbr.available = true;
  EXPECT_EQ(h.BestBranchSource(), BranchSource::kLbr);
  h.intel_pt.available = true;
  EXPECT_EQ(h.BestBranchSource(), BranchSource::kIntelPt);
}

// The probe must agree with what this host visibly has, and explain every missing source.
TEST(Capabilities, ProbeMatchesThisHost) {
  HostCapabilities h = ProbeHostCapabilities();
  EXPECT_FALSE(h.kernel_release.empty());
  EXPECT_EQ(h.is_root, geteuid() == 0);
  for (const SourceCapability* s : {&h.ebpf, &h.lbr, &h.intel_pt, &h.ptrace})
    EXPECT_FALSE(s->detail.empty()) << "every source needs a reason or a description";
  const sysfs::Sysfs& sys = sysfs::Sysfs::Host();
  if (!sys.Exists("bus/event_source/devices/intel_pt")) {
    EXPECT_FALSE(h.intel_pt.available);
    EXPECT_NE(h.intel_pt.detail.find("intel_pt"), std::string::npos) << h.intel_pt.detail;
  }
  if (!sys.Exists("bus/event_source/devices/cpu") &&
      !sys.Exists("bus/event_source/devices/cpu_core")) {
    EXPECT_FALSE(h.lbr.available);
    EXPECT_NE(h.lbr.detail.find("PMU"), std::string::npos) << h.lbr.detail;
  }
  if (h.is_root) {
    EXPECT_TRUE(h.ptrace.available) << h.ptrace.detail;
    EXPECT_EQ(h.ebpf.available, sys.Exists("kernel/btf/vmlinux")) << h.ebpf.detail;
    EXPECT_NE(h.BestBranchSource(), BranchSource::kNone);
  }
}

}  // namespace
}  // namespace pathprof::collectors
