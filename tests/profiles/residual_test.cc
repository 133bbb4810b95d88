#include "pathprof/profiles/residual.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "pathprof/profiles/ball_larus.h"
#include "pathprof/profiles/cfg.h"

namespace pathprof::profiles {
namespace {

// Figure 3.4 of the thesis (BL ids: sacdt 0, sact 1, sabcdt 2, sabct 3, sbcdt 4, sbct 5).
constexpr const char* kFig34 = "s a, s b, a c, a b, b c, c d, c t, d t";

BallLarus Fig34() {
  return *BallLarus::Build(*Cfg::Parse(kFig34, "s"));
}

uint64_t BlId(const BallLarus& bl, std::string_view names) {
  return *bl.IdOf(*bl.PathFromNames(names));
}

TEST(ResidualTest, BaselineP1P2NewRunP1P3ReportsP3) {
  BallLarus bl = Fig34();
  const uint64_t p1 = BlId(bl, "sacdt"), p2 = BlId(bl, "sact"), p3 = BlId(bl, "sbcdt");
  const std::vector<PathCount> baseline = {{p1, 10}, {p2, 4}};
  const std::vector<PathCount> current = {{p1, 3}, {p3, 2}};
  Result<ResidualReport> report = FindResidualPaths(bl, baseline, current);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  ASSERT_EQ(report->known.size(), 1u);
  EXPECT_EQ(report->known[0].bl_id, p1);
  EXPECT_EQ(report->known[0].count, 3u);
  ASSERT_EQ(report->residual.size(), 1u);
  EXPECT_EQ(report->residual[0].bl_id, p3);
  EXPECT_EQ(report->residual[0].count, 2u);
  EXPECT_EQ(report->residual[0].blocks, "s b c d t");
  EXPECT_EQ(report->known_executions, 3u);
  EXPECT_EQ(report->residual_executions, 2u);
  // PPP over {sacdt, sact} weights only c->t (1) among the edges sbcdt takes, so sbcdt's PPP id
  // is 0: it aliases sacdt's slot and only the Ball-Larus id (4, not 0) exposes it.
  EXPECT_EQ(report->residual[0].ppp_id, 0);
}

TEST(ResidualTest, DetectorClassifiesLikeInstrumentedCode) {
  BallLarus bl = Fig34();
  Result<ResidualDetector> detector =
      ResidualDetector::Create(bl, std::vector<uint64_t>{0, 1, 5});  // the section 3.3.2 set
  ASSERT_TRUE(detector.ok()) << detector.status().ToString();
  const PppNumbering& ppp = *detector->ppp();
  for (uint64_t id = 0; id < bl.num_paths(); ++id) {
    DagPath path = *bl.PathOf(id);
    EXPECT_EQ(detector->IsKnown(ppp.IdOf(path), id), id == 0 || id == 1 || id == 5) << id;
    ASSERT_TRUE(detector->Record(path, id + 1).ok());
  }
  ResidualReport report = detector->Report();
  ASSERT_EQ(report.known.size(), 3u);
  EXPECT_EQ(report.known[2].bl_id, 5u);
  EXPECT_EQ(report.known[2].count, 6u);
  // Residual: sabcdt (2, 3 runs), sabct (3, 4 runs), sbcdt (4, 5 runs), hottest first.
  ASSERT_EQ(report.residual.size(), 3u);
  EXPECT_EQ(report.residual[0].bl_id, 4u);
  EXPECT_EQ(report.residual[0].count, 5u);
  EXPECT_EQ(report.residual[0].ppp_id, 1);  // alias of sact
  EXPECT_EQ(report.residual[1].bl_id, 3u);
  EXPECT_EQ(report.residual[1].ppp_id, 0);  // alias of sacdt
  EXPECT_EQ(report.residual[2].bl_id, 2u);
  EXPECT_EQ(report.residual[2].ppp_id, -1);  // underflows the path array
  EXPECT_EQ(report.known_executions, 1u + 2u + 6u);
  EXPECT_EQ(report.residual_executions, 3u + 4u + 5u);
}

TEST(ResidualTest, LoopWalksAgainstABaseline) {
  // Baseline: the loop ran with its a-branch only; now the b-branch shows up.
  BallLarus bl = *BallLarus::Build(*Cfg::Parse("e h, h a, h b, h x, a l, b l, l h", "e"));
  const Cfg& cfg = bl.dag().cfg();
  auto walk_ids = [&](std::string_view blocks) {
    std::vector<NodeId> walk;
    for (char c : blocks) walk.push_back(cfg.FindNode(std::string(1, c)));
    return *bl.IdsOfWalk(walk);
  };
  std::vector<uint64_t> baseline = walk_ids("ehalhalhx");  // e h a l | h a l | h x
  std::sort(baseline.begin(), baseline.end());
  baseline.erase(std::unique(baseline.begin(), baseline.end()), baseline.end());
  ResidualDetector detector = *ResidualDetector::Create(bl, baseline);
  for (uint64_t id : walk_ids("ehalhblhblhx")) ASSERT_TRUE(detector.RecordId(id).ok());
  ResidualReport report = detector.Report();
  ASSERT_EQ(report.residual.size(), 1u);
  EXPECT_EQ(report.residual[0].blocks, "h b l");
  EXPECT_EQ(report.residual[0].count, 2u);
  EXPECT_EQ(report.known_executions, 2u);  // e h a l, h x
}

TEST(ResidualTest, EmptyBaselineMakesEverythingResidual) {
  BallLarus bl = Fig34();
  const std::vector<PathCount> baseline = {{3, 0}};  // count 0: never ran
  Result<ResidualReport> report =
      FindResidualPaths(bl, baseline, std::vector<PathCount>{{3, 1}, {0, 7}});
  ASSERT_TRUE(report.ok());
  EXPECT_TRUE(report->known.empty());
  ASSERT_EQ(report->residual.size(), 2u);
  EXPECT_EQ(report->residual[0].bl_id, 0u);
  EXPECT_EQ(report->residual[0].blocks, "s a c d t");
}

TEST(ResidualTest, BadInputIsAnError) {
  BallLarus bl = Fig34();
  ResidualDetector detector = *ResidualDetector::Create(bl, std::vector<uint64_t>{0});
  EXPECT_EQ(detector.RecordId(6).code(), ErrorCode::kInvalidArgument);
  EXPECT_FALSE(detector.Record(DagPath{0}).ok());  // stops at a, not a whole path
  EXPECT_FALSE(ResidualDetector::Create(bl, std::vector<uint64_t>{9}).ok());
  ASSERT_TRUE(detector.RecordId(0, UINT64_MAX).ok());
  EXPECT_EQ(detector.RecordId(0, 1).code(), ErrorCode::kResourceExhausted);
}

}  // namespace
}  // namespace pathprof::profiles
