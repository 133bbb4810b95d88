#include "pathprof/profiles/ppp.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "pathprof/profiles/ball_larus.h"
#include "pathprof/profiles/cfg.h"

namespace pathprof::profiles {
namespace {

// Figure 3.4 of the thesis, successor order as in table 4.2 (see ball_larus_test.cc).
constexpr const char* kFig34 = "s a, s b, a c, a b, b c, c d, c t, d t";

BallLarus BuildOrDie(std::string_view edges, std::string_view entry) {
  Result<Cfg> cfg = Cfg::Parse(edges, entry);
  EXPECT_TRUE(cfg.ok()) << cfg.status().ToString();
  Result<BallLarus> bl = BallLarus::Build(*cfg);
  EXPECT_TRUE(bl.ok()) << bl.status().ToString();
  return std::move(bl).value();
}

DagPath PathOf(const BallLarus& bl, std::string_view names) {
  Result<DagPath> path = bl.PathFromNames(names);
  EXPECT_TRUE(path.ok()) << path.status().ToString();
  return *path;
}

uint64_t BlId(const BallLarus& bl, std::string_view names) {
  return *bl.IdOf(PathOf(bl, names));
}

std::optional<int64_t> WeightOf(const BallLarus& bl, const PppNumbering& ppp, std::string_view from,
                                std::string_view to) {
  const Cfg& cfg = bl.dag().cfg();
  const int64_t e = cfg.FindEdge(cfg.FindNode(from), cfg.FindNode(to));
  EXPECT_GE(e, 0);
  return ppp.weight(bl.dag().dag_edge_of(static_cast<EdgeId>(e)));
}

TEST(PppTest, Section332WalkThrough) {
  BallLarus bl = BuildOrDie(kFig34, "s");
  // Interesting paths sacdt, sact, sbct; their Ball-Larus ids are 0, 1 and 5 (section 3.2.3).
  const std::vector<uint64_t> interesting = {BlId(bl, "sacdt"), BlId(bl, "sact"), BlId(bl, "sbct")};
  ASSERT_EQ(interesting, (std::vector<uint64_t>{0, 1, 5}));
  Result<PppNumbering> ppp = PppNumbering::Build(bl, interesting);
  ASSERT_TRUE(ppp.ok()) << ppp.status().ToString();

  // Steps 2_d .. 6_s of the walk-through.
  EXPECT_EQ(WeightOf(bl, *ppp, "d", "t"), 0);
  EXPECT_EQ(WeightOf(bl, *ppp, "c", "d"), 0);
  EXPECT_EQ(WeightOf(bl, *ppp, "c", "t"), 1);
  EXPECT_EQ(WeightOf(bl, *ppp, "b", "c"), -1);
  EXPECT_EQ(WeightOf(bl, *ppp, "a", "c"), 0);
  EXPECT_EQ(WeightOf(bl, *ppp, "s", "a"), 0);
  EXPECT_EQ(WeightOf(bl, *ppp, "s", "b"), 2);
  // No interesting path takes a -> b: it keeps the undefined weight (bottom).
  EXPECT_EQ(WeightOf(bl, *ppp, "a", "b"), std::nullopt);

  EXPECT_EQ(ppp->interesting_ppp_id(0), 0);
  EXPECT_EQ(ppp->interesting_ppp_id(1), 1);
  EXPECT_EQ(ppp->interesting_ppp_id(2), 2);
  EXPECT_EQ(ppp->IdOf(PathOf(bl, "sbct")), 2);
  EXPECT_EQ(ppp->min_id(), 0);
  EXPECT_EQ(ppp->max_id(), 2);
  EXPECT_DOUBLE_EQ(ppp->delta(), 1.0);
  EXPECT_EQ(*ppp->DensePathArray(16), (std::vector<uint64_t>{0, 1, 5}));
}

TEST(PppTest, Section323AliasCheckUsesBallLarusId) {
  BallLarus bl = BuildOrDie(kFig34, "s");
  PppNumbering ppp = *PppNumbering::Build(bl, std::vector<uint64_t>{0, 1, 5});
  // "the uninteresting paths sabct and sbcdt alias with the interesting paths sacdt and sact".
  // (The text later quotes sbcdt's PPP id as 2; with the walk-through's weights it is
  // 2 + -1 + 0 + 0 = 1, the id of sact, which is the alias the text names.)
  EXPECT_EQ(ppp.IdOf(PathOf(bl, "sabct")), 0);
  EXPECT_EQ(ppp.IdOf(PathOf(bl, "sbcdt")), 1);
  EXPECT_EQ(BlId(bl, "sbcdt"), 4u);
  // sabcdt underflows the array: 0 + 0 + -1 + 0 + 0.
  EXPECT_EQ(ppp.IdOf(PathOf(bl, "sabcdt")), -1);

  for (std::string_view names : {"sacdt", "sact", "sbct"}) {
    DagPath path = PathOf(bl, names);
    std::optional<size_t> hit = ppp.Lookup(ppp.IdOf(path), *bl.IdOf(path));
    ASSERT_TRUE(hit.has_value()) << names;
    EXPECT_EQ(ppp.interesting_bl_id(*hit), *bl.IdOf(path));
  }
  for (std::string_view names : {"sabct", "sbcdt", "sabcdt"}) {
    DagPath path = PathOf(bl, names);
    EXPECT_FALSE(ppp.Lookup(ppp.IdOf(path), *bl.IdOf(path)).has_value()) << names;
  }
}

TEST(PppTest, Lemma332ParityCounterexampleHasNoPerfectNumbering) {
  // Figure 3.6: s -> {a, b, c} -> d -> {e, f, g} -> t, interesting sadft, sadgt, sbdet, sbdgt,
  // scdet, scdft. Every id sum is 2(u+v+w+x+y+z), even, while 0+..+5 = 15 is odd.
  BallLarus bl = BuildOrDie("s a, s b, s c, a d, b d, c d, d e, d f, d g, e t, f t, g t", "s");
  const std::vector<std::string> names = {"sadft", "sadgt", "sbdet", "sbdgt", "scdet", "scdft"};
  std::vector<uint64_t> interesting;
  for (const std::string& n : names) interesting.push_back(BlId(bl, n));
  PppNumbering ppp = *PppNumbering::Build(bl, interesting);
  int64_t sum = 0;
  std::set<int64_t> ids;
  for (size_t i = 0; i < names.size(); ++i) {
    sum += ppp.interesting_ppp_id(i);
    ids.insert(ppp.interesting_ppp_id(i));
  }
  EXPECT_EQ(ids.size(), 6u);
  EXPECT_EQ(sum % 2, 0);
  EXPECT_GT(ppp.delta(), 1.0);
  // Figure 3.10 by hand: e,f,g -> t get 0. At d (prefixes sad, sbd, scd): (d,e) 0, cis(sbd) =
  // cis(scd) = 1; (d,f) max(0-0, 1-0) = 1, so sadft, scdft = 1, cis(sad) = cis(scd) = 2; (d,g)
  // max(2-0, 1-0) = 2, so sadgt, sbdgt = 2. Then (a,d) = 0-1 = -1, (b,d) = 0, (c,d) = 0, and at s
  // (s,a) = 0, (s,b) = 2, (s,c) = 5: ids 0, 1, 2, 4, 5, 6, a hole at 3, delta = 7/6.
  EXPECT_EQ(WeightOf(bl, ppp, "d", "f"), 1);
  EXPECT_EQ(WeightOf(bl, ppp, "d", "g"), 2);
  EXPECT_EQ(WeightOf(bl, ppp, "a", "d"), -1);
  EXPECT_EQ(WeightOf(bl, ppp, "s", "c"), 5);
  EXPECT_EQ(ids, (std::set<int64_t>{0, 1, 2, 4, 5, 6}));
  EXPECT_DOUBLE_EQ(ppp.delta(), 7.0 / 6.0);
  std::vector<uint64_t> array = *ppp.DensePathArray(7);
  EXPECT_EQ(array[3], PppNumbering::kHole);
  EXPECT_FALSE(ppp.DensePathArray(6).ok());
}

TEST(PppTest, Lemma331SeparationFailsButAliasesAreCaught) {
  // Figure 3.5: interesting sacet and sbcdt get a perfect numbering, yet the uninteresting
  // sacdt and sbcet land on the same ids (no separation); the Ball-Larus ids tell them apart.
  BallLarus bl = BuildOrDie("s a, s b, a c, b c, c d, c e, d t, e t", "s");
  PppNumbering ppp =
      *PppNumbering::Build(bl, std::vector<uint64_t>{BlId(bl, "sacet"), BlId(bl, "sbcdt")});
  EXPECT_DOUBLE_EQ(ppp.delta(), 1.0);
  EXPECT_EQ(ppp.IdOf(PathOf(bl, "sacet")), 0);
  EXPECT_EQ(ppp.IdOf(PathOf(bl, "sbcdt")), 1);
  for (std::string_view names : {"sacdt", "sbcet"}) {
    DagPath path = PathOf(bl, names);
    const int64_t id = ppp.IdOf(path);
    EXPECT_TRUE(id == 0 || id == 1) << names;
    EXPECT_FALSE(ppp.Lookup(id, *bl.IdOf(path)).has_value()) << names;
  }
}

TEST(PppTest, AllPathsInterestingReproducesBallLarus) {
  // With every path interesting, each prefix's interval at v is [0, N_v): PPP degenerates to
  // figure 3.1 (chapter 4: Ball-Larus is the uniform model).
  for (const char* edges : {kFig34, "e h, h a, h b, h x, a l, b l, l h"}) {
    BallLarus bl = BuildOrDie(edges, std::string_view(edges).substr(0, 1));
    std::vector<uint64_t> all(bl.num_paths());
    for (uint64_t i = 0; i < all.size(); ++i) all[i] = all.size() - 1 - i;  // order must not matter
    PppNumbering ppp = *PppNumbering::Build(bl, all);
    for (EdgeId e = 0; e < bl.dag().edges().size(); ++e) {
      EXPECT_EQ(ppp.weight(e), static_cast<int64_t>(bl.value(e))) << edges << " edge " << e;
    }
    EXPECT_DOUBLE_EQ(ppp.delta(), 1.0);
  }
}

// Random CFGs (with loops) and random interesting sets: ids are unique, every interesting path
// passes the alias check, every other path fails it, and the chord plan reproduces PPP ids.
TEST(PppTest, RandomGraphsUniqueIdsExactAliasCheckAndChords) {
  std::mt19937_64 rng(7);
  int tested = 0;
  uint64_t paths_checked = 0;
  for (int round = 0; round < 40; ++round) {
    const int n = 4 + static_cast<int>(rng() % 8);
    Cfg cfg;
    for (int v = 0; v < n; ++v) ASSERT_TRUE(cfg.AddNode("n" + std::to_string(v)).ok());
    ASSERT_TRUE(cfg.SetEntry(0).ok());
    for (int v = 0; v + 1 < n; ++v) {
      ASSERT_TRUE(cfg.AddEdge(v, v + 1).ok());  // keeps every node reachable
      const int extra = static_cast<int>(rng() % 3);
      for (int k = 0; k < extra; ++k) ASSERT_TRUE(cfg.AddEdge(v, rng() % n).ok());
    }
    Result<BallLarus> bl = BallLarus::Build(cfg);
    ASSERT_TRUE(bl.ok()) << bl.status().ToString();
    if (bl->num_paths() > 2000) continue;
    std::vector<uint64_t> interesting;
    std::vector<bool> is_interesting(bl->num_paths(), false);
    for (uint64_t id = 0; id < bl->num_paths(); ++id) {
      if (rng() % 3 == 0) {
        interesting.push_back(id);
        is_interesting[id] = true;
      }
    }
    if (interesting.empty()) continue;
    std::shuffle(interesting.begin(), interesting.end(), rng);
    Result<PppNumbering> ppp = PppNumbering::Build(*bl, interesting);
    ASSERT_TRUE(ppp.ok()) << ppp.status().ToString();
    EXPECT_EQ(ppp->min_id(), 0);
    EXPECT_GE(ppp->delta(), 1.0);
    std::set<int64_t> ids;
    for (size_t i = 0; i < interesting.size(); ++i) ids.insert(ppp->interesting_ppp_id(i));
    EXPECT_EQ(ids.size(), interesting.size());
    Result<ChordPlan> plan = ppp->PlanChords(bl->dag());
    ASSERT_TRUE(plan.ok());
    ++tested;
    paths_checked += bl->num_paths();
    for (uint64_t id = 0; id < bl->num_paths(); ++id) {
      DagPath path = *bl->PathOf(id);
      const int64_t ppp_id = ppp->IdOf(path);
      EXPECT_EQ(static_cast<int64_t>(plan->Evaluate(path)), ppp_id);
      std::optional<size_t> hit = ppp->Lookup(ppp_id, id);
      EXPECT_EQ(hit.has_value(), is_interesting[id]) << "round " << round << " path " << id;
      if (hit) {
        EXPECT_EQ(ppp->interesting_bl_id(*hit), id);
      }
    }
  }
  EXPECT_GE(tested, 30);
  std::printf("checked %d graphs, %llu paths\n", tested,
              static_cast<unsigned long long>(paths_checked));
}

TEST(PppTest, BadInterestingSetsAreErrors) {
  BallLarus bl = BuildOrDie(kFig34, "s");
  EXPECT_EQ(PppNumbering::Build(bl, std::vector<uint64_t>{}).status().code(),
            ErrorCode::kInvalidArgument);
  Result<PppNumbering> dup = PppNumbering::Build(bl, std::vector<uint64_t>{1, 3, 1});
  ASSERT_FALSE(dup.ok());
  EXPECT_NE(dup.status().message().find("twice"), std::string::npos);
  Result<PppNumbering> out_of_range = PppNumbering::Build(bl, std::vector<uint64_t>{6});
  ASSERT_FALSE(out_of_range.ok());
  EXPECT_NE(out_of_range.status().message().find("out of range"), std::string::npos);
}

}  // namespace
}  // namespace pathprof::profiles
