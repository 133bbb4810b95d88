// The perf LBR and PT sources cannot run without a PMU; here we check the attributes they would
// use, and that on a host without one they refuse with the reason rather than fail obscurely.
#include "pathprof/collectors/perf_event_source.h"

#include <gtest/gtest.h>
#include <linux/perf_event.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "pathprof/collectors/capabilities.h"

namespace pathprof::collectors {
namespace {

perf_event_attr AsAttr(const std::vector<uint8_t>& b) {
  perf_event_attr a{};
  EXPECT_EQ(b.size(), sizeof a);
  std::memcpy(&a, b.data(), std::min(b.size(), sizeof a));
  return a;
}

TEST(PerfEventSource, LbrAttrAsksForUserBranchStacks) {
  PerfLbrConfig c;
  c.pid = 1234;
  c.sample_period = 5003;
  perf_event_attr a = AsAttr(LbrAttr(c).bytes);
  EXPECT_EQ(a.type, PERF_TYPE_HARDWARE);
  EXPECT_EQ(a.sample_period, 5003u);
  EXPECT_TRUE(a.sample_type & PERF_SAMPLE_BRANCH_STACK);
  EXPECT_EQ(a.branch_sample_type, PERF_SAMPLE_BRANCH_ANY | PERF_SAMPLE_BRANCH_USER);
  EXPECT_TRUE(a.exclude_kernel);
  EXPECT_TRUE(a.inherit) << "a per-task event must follow new threads";
  EXPECT_TRUE(a.mmap2) << "the decoder needs MMAP2 sideband to find images";
  c.call_stack_mode = true;
  EXPECT_TRUE(AsAttr(LbrAttr(c).bytes).branch_sample_type & PERF_SAMPLE_BRANCH_CALL_STACK);
}

TEST(PerfEventSource, PtAttrReadsThePmuTypeAndFormatBitsFromSysfs) {
  auto root =
      std::filesystem::path(::testing::TempDir()) / ("fake_sysfs_" + std::to_string(getpid()));
  auto dev = root / "bus/event_source/devices/intel_pt";
  std::filesystem::create_directories(dev / "format");
  std::ofstream(dev / "type") << "9\n";
  std::ofstream(dev / "format/tsc") << "config:10\n";
  std::ofstream(dev / "format/mtc") << "config:9\n";
  PerfPtConfig c;
  c.pid = 99;
  auto attr = PtAttr(c, root.string());
  ASSERT_TRUE(attr.ok()) << attr.status().ToString();
  perf_event_attr a = AsAttr(attr->bytes);
  EXPECT_EQ(a.type, 9u);
  EXPECT_EQ(a.config, (1ull << 10) | (1ull << 9));
  EXPECT_TRUE(a.context_switch) << "context switches are gaps for the PT decoder";
  std::filesystem::remove_all(root);
  auto missing = PtAttr(c, "/nonexistent");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("intel_pt"), std::string::npos);
}

TEST(PerfEventSource, RefusesWithTheReasonWhereThereIsNoPmu) {
  HostCapabilities caps = ProbeHostCapabilities();
  PerfLbrConfig c;
  c.pid = getpid();
  auto lbr = PerfEventSource::OpenLbr(c);
  EXPECT_EQ(lbr.ok(), caps.lbr.available) << (lbr.ok() ? "" : lbr.status().ToString());
  if (!lbr.ok()) {
    EXPECT_FALSE(lbr.status().message().empty());
  }
  PerfPtConfig p;
  p.pid = getpid();
  auto pt = PerfEventSource::OpenPt(p);
  if (!caps.intel_pt.available) {
    ASSERT_FALSE(pt.ok());
    EXPECT_EQ(pt.status().code(), ErrorCode::kUnavailable) << pt.status().ToString();
  }
  PerfLbrConfig bad;
  bad.pid = getpid();
  bad.data_pages = 3;
  EXPECT_EQ(PerfEventSource::OpenLbr(bad).status().code(), ErrorCode::kInvalidArgument);
}

}  // namespace
}  // namespace pathprof::collectors
