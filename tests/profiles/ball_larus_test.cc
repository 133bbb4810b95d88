#include "pathprof/profiles/ball_larus.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "pathprof/profiles/cfg.h"

namespace pathprof::profiles {
namespace {

// Figure 3.4(a) of [Vaswani 2007] (see docs/references.md): s->a, s->b, a->b, a->c, b->c, c->d,
// c->t, d->t, 6 paths. The figure's numbers are not in the text; the text fixes BL(sacdt)=0,
// BL(sact)=1, BL(sbcdt)=4, BL(sbct)=5, and table 4.2 (the same graph's model, edges e1..e8) fixes
// the successor order: out(s) = [a, b] (2/3, 1/3), out(a) = [c, b] (1/2, 1/2), out(b) = [c],
// out(c) = [d, t] (1/2, 1/2), out(d) = [t]. Figure 3.1 over that order, reverse topological:
//   N_t = 1
//   d: W(d,t) = 0;                 N_d = 1
//   c: W(c,d) = 0, W(c,t) = N_d = 1;   N_c = 2
//   b: W(b,c) = 0;                 N_b = 2
//   a: W(a,c) = 0, W(a,b) = N_c = 2;   N_a = 4
//   s: W(s,a) = 0, W(s,b) = N_a = 4;   N_s = 6
// so sacdt=0, sact=1, sabcdt=2, sabct=3, sbcdt=4, sbct=5, agreeing with every id in the text.
constexpr const char* kFig34 = "s a, s b, a c, a b, b c, c d, c t, d t";

BallLarus BuildOrDie(std::string_view edges, std::string_view entry) {
  Result<Cfg> cfg = Cfg::Parse(edges, entry);
  EXPECT_TRUE(cfg.ok()) << cfg.status().ToString();
  Result<BallLarus> bl = BallLarus::Build(*cfg);
  EXPECT_TRUE(bl.ok()) << bl.status().ToString();
  return std::move(bl).value();
}

uint64_t ValueOf(const BallLarus& bl, std::string_view from, std::string_view to) {
  const Cfg& cfg = bl.dag().cfg();
  const int64_t e = cfg.FindEdge(cfg.FindNode(from), cfg.FindNode(to));
  EXPECT_GE(e, 0) << from << "->" << to;
  return bl.value(bl.dag().dag_edge_of(static_cast<EdgeId>(e)));
}

uint64_t IdOfNames(const BallLarus& bl, std::string_view names) {
  Result<DagPath> path = bl.PathFromNames(names);
  EXPECT_TRUE(path.ok()) << path.status().ToString();
  Result<uint64_t> id = bl.IdOf(*path);
  EXPECT_TRUE(id.ok()) << id.status().ToString();
  return *id;
}

void ExpectRoundTrip(const BallLarus& bl) {
  for (uint64_t id = 0; id < bl.num_paths(); ++id) {
    Result<DagPath> path = bl.PathOf(id);
    ASSERT_TRUE(path.ok()) << path.status().ToString();
    Result<uint64_t> back = bl.IdOf(*path);
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    EXPECT_EQ(*back, id);
  }
  EXPECT_FALSE(bl.PathOf(bl.num_paths()).ok());
}

TEST(BallLarusTest, Figure34aEdgeValuesAndPathIds) {
  BallLarus bl = BuildOrDie(kFig34, "s");
  EXPECT_EQ(bl.num_paths(), 6u);
  EXPECT_TRUE(bl.dag().back_edges().empty());
  EXPECT_EQ(ValueOf(bl, "s", "a"), 0u);
  EXPECT_EQ(ValueOf(bl, "s", "b"), 4u);
  EXPECT_EQ(ValueOf(bl, "a", "c"), 0u);
  EXPECT_EQ(ValueOf(bl, "a", "b"), 2u);
  EXPECT_EQ(ValueOf(bl, "b", "c"), 0u);
  EXPECT_EQ(ValueOf(bl, "c", "d"), 0u);
  EXPECT_EQ(ValueOf(bl, "c", "t"), 1u);
  EXPECT_EQ(ValueOf(bl, "d", "t"), 0u);
  const Cfg& cfg = bl.dag().cfg();
  EXPECT_EQ(bl.num_paths_from(cfg.FindNode("a")), 4u);
  EXPECT_EQ(bl.num_paths_from(cfg.FindNode("c")), 2u);

  const std::vector<std::string> by_id = {"sacdt", "sact", "sabcdt", "sabct", "sbcdt", "sbct"};
  for (uint64_t id = 0; id < by_id.size(); ++id) {
    EXPECT_EQ(IdOfNames(bl, by_id[id]), id) << by_id[id];
    Result<DagPath> path = bl.PathOf(id);
    ASSERT_TRUE(path.ok());
    EXPECT_EQ(bl.Describe(*path, ""), by_id[id]);
  }
}

TEST(BallLarusTest, Table42ModelIsPathCountRatio) {
  // Chapter 4 reads the numbering as a model: D(e) = N_dest(e) / N_src(e). Table 4.2 lists
  // e1..e8 = 2/3, 1/3, 1/2, 1/2, 1, 1/2, 1/2, 1 for this graph.
  BallLarus bl = BuildOrDie(kFig34, "s");
  const double expected[] = {2.0 / 3, 1.0 / 3, 1.0 / 2, 1.0 / 2, 1, 1.0 / 2, 1.0 / 2, 1};
  // DAG edges are numbered block by block in CFG order: s(a,b) a(c,b) b(c) c(d,t) d(t).
  ASSERT_EQ(bl.dag().edges().size(), 8u);
  for (EdgeId e = 0; e < 8; ++e) {
    const DagEdge& edge = bl.dag().edge(e);
    EXPECT_DOUBLE_EQ(static_cast<double>(bl.num_paths_from(edge.to)) /
                         static_cast<double>(bl.num_paths_from(edge.from)),
                     expected[e])
        << "e" << e + 1;
  }
}

// A loop: e -> h, h -> {a, b, x}, a -> l, b -> l, l -> h (back edge), x returns.
// Back-edge removal adds e -> h (loop entry, a path that starts at the header) and l -> x (loop
// exit, a path that ends with the back edge):
//   N_x = 1, N_l = 1 (l->x dummy), N_a = N_b = 1, h: W(h,a)=0, W(h,b)=1, W(h,x)=2, N_h = 3,
//   e: W(e,h)=0, W(e,h dummy)=3, N_e = 6.
constexpr const char* kLoop = "e h, h a, h b, h x, a l, b l, l h";

TEST(BallLarusTest, LoopBackEdgeRemovalGivesExpectedDagPaths) {
  BallLarus bl = BuildOrDie(kLoop, "e");
  const PathDag& dag = bl.dag();
  const Cfg& cfg = dag.cfg();
  ASSERT_EQ(dag.back_edges().size(), 1u);
  const CfgEdge& back = cfg.edge(dag.back_edges()[0]);
  EXPECT_EQ(cfg.node(back.from).name, "l");
  EXPECT_EQ(cfg.node(back.to).name, "h");
  EXPECT_EQ(dag.start(), cfg.FindNode("e"));
  EXPECT_EQ(dag.exit(), cfg.FindNode("x"));
  const DagEdge& entry = dag.edge(dag.loop_entry_edge(dag.back_edges()[0]));
  EXPECT_EQ(entry.kind, DagEdgeKind::kLoopEntry);
  EXPECT_EQ(entry.from, cfg.FindNode("e"));
  EXPECT_EQ(entry.to, cfg.FindNode("h"));
  const DagEdge& exit = dag.edge(dag.loop_exit_edge(dag.back_edges()[0]));
  EXPECT_EQ(exit.kind, DagEdgeKind::kLoopExit);
  EXPECT_EQ(exit.from, cfg.FindNode("l"));
  EXPECT_EQ(exit.to, cfg.FindNode("x"));

  ASSERT_EQ(bl.num_paths(), 6u);
  EXPECT_EQ(bl.value(entry.id), 3u);
  EXPECT_EQ(bl.value(exit.id), 0u);
  const std::vector<std::string> by_id = {"e h a l", "e h b l", "e h x", "h a l", "h b l", "h x"};
  for (uint64_t id = 0; id < by_id.size(); ++id) {
    Result<DagPath> path = bl.PathOf(id);
    ASSERT_TRUE(path.ok());
    EXPECT_EQ(bl.Describe(*path), by_id[id]);
  }
  const bool starts_in_loop[] = {false, false, false, true, true, true};
  const bool ends_by_back_edge[] = {true, true, false, true, true, false};
  for (uint64_t id = 0; id < 6; ++id) {
    DagPath path = *bl.PathOf(id);
    EXPECT_EQ(dag.edge(path.front()).kind == DagEdgeKind::kLoopEntry, starts_in_loop[id]);
    EXPECT_EQ(dag.edge(path.back()).kind == DagEdgeKind::kLoopExit, ends_by_back_edge[id]);
  }
  ExpectRoundTrip(bl);

  // e h a l | h b l | h b l | h x: three iterations cut at each back edge.
  std::vector<NodeId> walk;
  for (char c : std::string("ehalhblhblhx")) walk.push_back(cfg.FindNode(std::string(1, c)));
  Result<std::vector<uint64_t>> ids = bl.IdsOfWalk(walk);
  ASSERT_TRUE(ids.ok()) << ids.status().ToString();
  EXPECT_EQ(*ids, (std::vector<uint64_t>{0, 4, 4, 5}));
}

TEST(BallLarusTest, EntryThatIsALoopHeaderGetsAVirtualStart) {
  // h is both the entry and the target of the back edge a -> h.
  BallLarus bl = BuildOrDie("h a, a h, h x", "h");
  const PathDag& dag = bl.dag();
  EXPECT_NE(dag.start(), dag.cfg().FindNode("h"));
  EXPECT_EQ(dag.node_name(dag.start()), "<entry>");
  ASSERT_EQ(bl.num_paths(), 4u);
  ExpectRoundTrip(bl);
  std::vector<NodeId> walk;
  for (char c : std::string("hahahx")) walk.push_back(dag.cfg().FindNode(std::string(1, c)));
  // <entry>: [h (0), loop entry (2)]; h: [a (0), x (1)]; a: [a->x dummy (0)].
  EXPECT_EQ(*bl.IdsOfWalk(walk), (std::vector<uint64_t>{0, 2, 3}));
}

TEST(BallLarusTest, SelfLoopAndSeveralReturns) {
  BallLarus bl = BuildOrDie("e l, l l, l r1, e r2", "e");
  const PathDag& dag = bl.dag();
  ASSERT_EQ(dag.back_edges().size(), 1u);
  EXPECT_EQ(dag.node_name(dag.exit()), "<exit>");
  // Paths: e l [back], e l r1, e r2, l [back], l r1.
  EXPECT_EQ(bl.num_paths(), 5u);
  ExpectRoundTrip(bl);
  EXPECT_EQ(bl.Describe(*bl.PathFromNames("e r2")), "e r2");
}

TEST(BallLarusTest, SingleBlockFunctionHasOneEmptyPath) {
  Cfg cfg;
  ASSERT_TRUE(cfg.SetEntry(*cfg.AddNode("only")).ok());
  Result<BallLarus> bl = BallLarus::Build(cfg);
  ASSERT_TRUE(bl.ok()) << bl.status().ToString();
  EXPECT_EQ(bl->num_paths(), 1u);
  EXPECT_TRUE(bl->PathOf(0)->empty());
  EXPECT_EQ(*bl->IdOf(DagPath{}), 0u);
  EXPECT_EQ(bl->Describe(DagPath{}), "only");
}

TEST(BallLarusTest, ParallelCfgEdgesAreOneEdge) {
  Result<Cfg> cfg = Cfg::Parse("a b, a b, a c, b c", "a");
  ASSERT_TRUE(cfg.ok());
  EXPECT_EQ(cfg->num_edges(), 3u);
  EXPECT_EQ(BallLarus::Build(*cfg)->num_paths(), 2u);
}

// n diamonds in a row have 2^n paths.
Cfg Diamonds(int n) {
  Cfg cfg;
  NodeId prev = *cfg.AddNode("j0");
  EXPECT_TRUE(cfg.SetEntry(prev).ok());
  for (int i = 1; i <= n; ++i) {
    NodeId l = *cfg.AddNode("l" + std::to_string(i));
    NodeId r = *cfg.AddNode("r" + std::to_string(i));
    NodeId j = *cfg.AddNode("j" + std::to_string(i));
    EXPECT_TRUE(cfg.AddEdge(prev, l).ok());
    EXPECT_TRUE(cfg.AddEdge(prev, r).ok());
    EXPECT_TRUE(cfg.AddEdge(l, j).ok());
    EXPECT_TRUE(cfg.AddEdge(r, j).ok());
    prev = j;
  }
  return cfg;
}

TEST(BallLarusTest, SixtyThreeDiamondsFitSixtyFourDoNot) {
  Result<BallLarus> fits = BallLarus::Build(Diamonds(63));
  ASSERT_TRUE(fits.ok()) << fits.status().ToString();
  EXPECT_EQ(fits->num_paths(), uint64_t{1} << 63);
  const uint64_t last = (uint64_t{1} << 63) - 1;
  Result<DagPath> path = fits->PathOf(last);
  ASSERT_TRUE(path.ok());
  EXPECT_EQ(*fits->IdOf(*path), last);

  Result<BallLarus> too_many = BallLarus::Build(Diamonds(64));
  ASSERT_FALSE(too_many.ok());
  EXPECT_EQ(too_many.status().code(), ErrorCode::kResourceExhausted);
  EXPECT_NE(too_many.status().message().find("64 bits"), std::string::npos);
}

TEST(BallLarusTest, BadCfgsAreErrors) {
  Cfg no_entry;
  ASSERT_TRUE(no_entry.AddNode("a").ok());
  Result<BallLarus> bl = BallLarus::Build(no_entry);
  ASSERT_FALSE(bl.ok());
  EXPECT_EQ(bl.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(bl.status().message().find("no entry"), std::string::npos);

  Result<Cfg> unreachable = Cfg::Parse("s a, b a, a t", "s");
  ASSERT_TRUE(unreachable.ok());
  bl = BallLarus::Build(*unreachable);
  ASSERT_FALSE(bl.ok());
  EXPECT_NE(bl.status().message().find("unreachable"), std::string::npos);
  EXPECT_NE(bl.status().message().find("(b)"), std::string::npos);

  EXPECT_FALSE(Cfg::Parse("s a b", "s").ok());
  EXPECT_FALSE(Cfg::Parse("s a", "zz").ok());
  Cfg cfg;
  ASSERT_TRUE(cfg.AddNode("a").ok());
  EXPECT_FALSE(cfg.AddNode("a").ok());
  EXPECT_FALSE(cfg.AddEdge(0, 7).ok());

  BallLarus fig = BuildOrDie(kFig34, "s");
  EXPECT_FALSE(fig.PathFromNames("sbt").ok());  // no edge b -> t
  EXPECT_FALSE(fig.PathFromNames("sac").ok());  // stops before the exit
  EXPECT_FALSE(fig.IdOf(DagPath{0, 7}).ok());   // edges not chained
}

// Exhaustive check of a chord plan: every path's increments sum to its Ball-Larus id.
void ExpectChordPlanExact(const BallLarus& bl, const ChordPlan& plan) {
  const PathDag& dag = bl.dag();
  // One tree edge per node but one (the exit->start edge closes the tree), the rest are chords.
  EXPECT_EQ(plan.tree_edges.size(), dag.num_nodes() - 2);
  EXPECT_EQ(plan.chords.size() + plan.tree_edges.size(), dag.edges().size());
  for (EdgeId e : plan.tree_edges) EXPECT_EQ(plan.increment_by_edge[e], 0);
  for (uint64_t id = 0; id < bl.num_paths(); ++id) {
    DagPath path = *bl.PathOf(id);
    EXPECT_EQ(plan.Evaluate(path), id);
  }
}

TEST(BallLarusTest, ChordPlanReproducesEveryPathIdOnFigure34a) {
  BallLarus bl = BuildOrDie(kFig34, "s");
  Result<ChordPlan> plan = bl.PlanChords();
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->chords.size(), 8u - 6u + 2u);  // E - V + 2 with the exit->start edge
  ExpectChordPlanExact(bl, *plan);

  // Hot edges a->c, c->d, d->t, s->b stay in the tree: no increment on them. (All of sacdt
  // cannot: with the implicit exit->start edge a whole path is a cycle, so one edge of it is
  // always a chord.)
  std::vector<uint64_t> frequency(bl.dag().edges().size(), 1);
  for (std::string_view hot : {"a c", "c d", "d t", "s b"}) {
    const Cfg& cfg = bl.dag().cfg();
    const NodeId from = cfg.FindNode(hot.substr(0, 1));
    const NodeId to = cfg.FindNode(hot.substr(2, 1));
    frequency[bl.dag().dag_edge_of(static_cast<EdgeId>(cfg.FindEdge(from, to)))] = 100;
  }
  plan = bl.PlanChords(frequency);
  ASSERT_TRUE(plan.ok());
  for (const ChordIncrement& chord : plan->chords) EXPECT_EQ(frequency[chord.dag_edge], 1u);
  ExpectChordPlanExact(bl, *plan);
  // The hot path sacdt crosses a single chord, s->a. Potentials: phi(s)=phi(t)=phi(d)=phi(c)=
  // phi(a)=0 and phi(b)=W(s,b)=4, so Inc(s,a)=0, Inc(a,b)=2+0-4=-2, Inc(b,c)=0+4-0=4,
  // Inc(c,t)=1+0-0=1.
  DagPath hot_path = *bl.PathFromNames("sacdt");
  int chords_on_hot_path = 0;
  for (EdgeId e : hot_path) chords_on_hot_path += frequency[e] == 1;
  EXPECT_EQ(chords_on_hot_path, 1);
  std::vector<int64_t> increments;
  for (const ChordIncrement& chord : plan->chords) increments.push_back(chord.increment);
  EXPECT_EQ(increments, (std::vector<int64_t>{0, -2, 4, 1}));  // s->a, a->b, b->c, c->t

  EXPECT_FALSE(bl.PlanChords(std::vector<uint64_t>(3, 1)).ok());
}

TEST(BallLarusTest, ChordPlanExactOnLoopsAndRandomFrequencies) {
  std::mt19937_64 rng(42);
  for (const char* edges : {kLoop, "h a, a h, h x", "e l, l l, l r1, e r2",
                            "s a, s b, a c, b c, c d, c e, d f, e f, f s, f a, d t, f t"}) {
    Result<Cfg> cfg = Cfg::Parse(edges, std::string_view(edges).substr(0, 1));
    ASSERT_TRUE(cfg.ok());
    BallLarus bl = *BallLarus::Build(*cfg);
    ExpectRoundTrip(bl);
    for (int round = 0; round < 20; ++round) {
      std::vector<uint64_t> frequency(bl.dag().edges().size());
      for (uint64_t& f : frequency) f = rng() % 10;
      Result<ChordPlan> plan = bl.PlanChords(frequency);
      ASSERT_TRUE(plan.ok());
      ExpectChordPlanExact(bl, *plan);
    }
  }
}

}  // namespace
}  // namespace pathprof::profiles
