// pathtop's model without a terminal: sorting, order kept between refreshes, the filter, the
// calling-context tree's expand/collapse, keys, and the screen fitted to 80x24.
#include <google/protobuf/util/time_util.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "fake_daemon.h"
#include "pathtop/format.h"
#include "pathtop/model.h"
#include "pathtop/rows.h"
#include "pathtop/table.h"

namespace pathtop {
namespace {

using pathtop_test::KnownHotPaths;
using pathtop_test::Loc;

// A flat table of (name, share) rows, share column numeric and first.
Table ShareTable() {
  return Table({{"SHARE%", 6, true, true}, {"NAME", 0, false, false}}, 0, false);
}

Row R(const std::string& name, double share) {
  Row r;
  r.key = name;
  r.cells = {FormatPercent(share), name};
  r.numbers = {std::round(share * 1000), 0};
  r.search_text = name;
  return r;
}

std::vector<std::string> Order(const Table& t) {
  std::vector<std::string> out;
  for (const VisibleRow& v : t.visible()) out.push_back(v.row->key);
  return out;
}

using Names = std::vector<std::string>;

TEST(Table, SortsLargestFirstAndByTextAToZ) {
  Table t = ShareTable();
  t.Replace({R("b", 0.2), R("a", 0.5), R("c", 0.3)});
  EXPECT_EQ(Order(t), (Names{"a", "c", "b"}));
  t.NextSortColumn(+1);  // NAME
  EXPECT_EQ(Order(t), (Names{"a", "b", "c"}));
  t.ToggleReverse();
  EXPECT_EQ(Order(t), (Names{"c", "b", "a"}));
  t.NextSortColumn(+1);  // wraps to SHARE%, still reversed: smallest first
  EXPECT_EQ(Order(t), (Names{"b", "c", "a"}));
}

TEST(Table, TiesKeepTheirPreviousOrderAcrossRefreshes) {
  Table t = ShareTable();
  t.Replace({R("x", 0.25), R("y", 0.25), R("z", 0.10)});
  EXPECT_EQ(Order(t), (Names{"x", "y", "z"}));  // tie broken by key the first time
  // The server now lists y first, and the values differ only below the shown 0.1%: the rows
  // must not swap on the screen.
  t.Replace({R("y", 0.2501), R("x", 0.2499), R("z", 0.10)});
  EXPECT_EQ(Order(t), (Names{"x", "y", "z"}));
  // Sorting by name Z to A shows y before x; back on share, their tie keeps that order, in
  // both directions.
  t.NextSortColumn(+1);
  t.ToggleReverse();
  EXPECT_EQ(Order(t), (Names{"z", "y", "x"}));
  t.NextSortColumn(-1);
  EXPECT_EQ(Order(t), (Names{"z", "y", "x"}));
  t.ToggleReverse();
  EXPECT_EQ(Order(t), (Names{"y", "x", "z"}));
  // A real change in the shown value reorders.
  t.Replace({R("y", 0.20), R("x", 0.25), R("z", 0.10)});
  EXPECT_EQ(Order(t), (Names{"x", "y", "z"}));
  t.Replace({R("y", 0.40), R("x", 0.25), R("z", 0.10)});
  EXPECT_EQ(Order(t), (Names{"y", "x", "z"}));
  // A new row tied with an old one goes after it.
  t.Replace({R("y", 0.40), R("x", 0.25), R("w", 0.25), R("z", 0.10)});
  EXPECT_EQ(Order(t), (Names{"y", "x", "w", "z"}));
}

TEST(Table, SelectionFollowsItsRowAndStaysPutWhenItLeaves) {
  Table t = ShareTable();
  t.Replace({R("a", 0.5), R("b", 0.3), R("c", 0.2)});
  t.MoveSelection(+1);
  ASSERT_EQ(t.selected_row()->key, "b");
  t.Replace({R("b", 0.6), R("a", 0.3), R("c", 0.1)});
  EXPECT_EQ(t.selected(), 0);
  EXPECT_EQ(t.selected_row()->key, "b");
  t.MoveSelection(+2);
  ASSERT_EQ(t.selected_row()->key, "c");
  t.Replace({R("b", 0.6), R("a", 0.3)});  // c is gone: the selection stays at the bottom
  EXPECT_EQ(t.selected_row()->key, "a");
  t.MoveSelection(+10);
  EXPECT_EQ(t.selected(), 1);
}

TEST(Table, FilterIsCaseInsensitiveSubstring) {
  Table t = ShareTable();
  t.Replace({R("hot_loop", 0.5), R("Mix", 0.3), R("checksum", 0.2)});
  t.SetFilter("LOOP");
  EXPECT_EQ(Order(t), (Names{"hot_loop"}));
  t.SetFilter("m");
  EXPECT_EQ(Order(t), (Names{"Mix", "checksum"}));
  t.SetFilter("nothing");
  EXPECT_TRUE(t.visible().empty());
  EXPECT_EQ(t.selected_row(), nullptr);
  t.SetFilter("");
  EXPECT_EQ(t.visible().size(), 3u);
}

v1::CallingContextTree KnownTree(uint64_t id_base) {
  pathtop_test::FakeProfiler fake(42);
  v1::CallingContextTree tree;
  // The fake's tree, with node ids shifted to show that identity is by context, not id.
  {
    v1::GetCallingContextTreeRequest req;
    req.set_session("sessions/s1");
    v1::StartSessionRequest start;
    start.set_pid(42);
    v1::Session s;
    (void)fake.StartSession(nullptr, &start, &s);
    (void)fake.GetCallingContextTree(nullptr, &req, &tree);
  }
  for (auto& n : *tree.mutable_nodes()) {
    n.set_id(n.id() + id_base);
    if (n.parent_id() != 0) n.set_parent_id(n.parent_id() + id_base);
  }
  return tree;
}

std::vector<std::string> TreeLines(const Table& t) {
  std::vector<std::string> out;
  for (const VisibleRow& v : t.visible()) {
    out.push_back(std::string(v.depth, ' ') + (v.has_children ? (v.expanded ? "-" : "+") : " ") +
                  v.row->cells.back());
  }
  return out;
}

TEST(Table, CctOpensHotNodesAndExpandsCollapsesByContext) {
  Table t(CctColumns(), 0, true);
  t.Replace(CctRows(KnownTree(0)));
  // total shares: _start 100, main 100, hot_loop 62, mix 30 (open, >= 5%), checksum 9,
  // rarely_called 3.
  EXPECT_EQ(TreeLines(t), (Names{"-_start", " -main", "   hot_loop", "  -mix", "    checksum",
                                 "   rarely_called"}));
  t.MoveSelection(3);  // mix
  ASSERT_EQ(t.selected_row()->cells.back(), "mix");
  t.Collapse();
  EXPECT_EQ(TreeLines(t),
            (Names{"-_start", " -main", "   hot_loop", "  +mix", "   rarely_called"}));
  // A refresh with different node ids keeps mix closed and selected.
  t.Replace(CctRows(KnownTree(100)));
  EXPECT_EQ(TreeLines(t),
            (Names{"-_start", " -main", "   hot_loop", "  +mix", "   rarely_called"}));
  EXPECT_EQ(t.selected_row()->cells.back(), "mix");
  t.Expand();
  EXPECT_EQ(t.visible().size(), 6u);
  // Left on a leaf goes to its parent.
  t.MoveSelection(1);  // checksum
  ASSERT_EQ(t.selected_row()->cells.back(), "checksum");
  t.Collapse();
  EXPECT_EQ(t.selected_row()->cells.back(), "mix");
  t.SelectFirst();
  t.ToggleExpanded();
  EXPECT_EQ(TreeLines(t), (Names{"+_start"}));
  t.ExpandAll();
  EXPECT_EQ(t.visible().size(), 6u);
  // Sorting by self share orders siblings only: hot_loop (62) before mix (21) before rarely (3).
  t.SetSortColumn(1);
  EXPECT_EQ(TreeLines(t)[2], "   hot_loop");
  // A filter keeps the way down to each match, open.
  t.CollapseAll();
  t.SetFilter("checksum");
  EXPECT_EQ(TreeLines(t), (Names{"-_start", " -main", "  -mix", "    checksum"}));
}

TEST(Rows, HotPathShowsShareEstimateErrorLengthStartAndBlocks) {
  auto rows = HotPathRows(KnownHotPaths("s1"));
  ASSERT_EQ(rows.size(), 4u);
  EXPECT_EQ(rows[0].cells,
            (Names{"62.0", "620", "31", "3", "hot_loop+0x10", "hot_loop+0x10 > +0x24 > +0x38"}));
  v1::HotPath bare;
  bare.mutable_start()->set_address(0x401000);
  bare.set_length(4);
  bare.set_outcomes(0b1011);
  v1::HotPaths msg;
  *msg.add_paths() = bare;
  EXPECT_EQ(HotPathRows(msg)[0].cells[4], "0x401000");
  EXPECT_EQ(HotPathRows(msg)[0].cells[5], "TTNT");
}

TEST(Format, CountsBlocksAndTruncation) {
  EXPECT_EQ(FormatCount(999), "999");
  EXPECT_EQ(FormatCount(12345), "12.3k");
  EXPECT_EQ(FormatCount(4560000), "4.56M");
  EXPECT_EQ(Truncate("abcdef", 4), "abc~");
  EXPECT_EQ(Truncate("abc", 4), "abc");
  EXPECT_EQ(Truncate("a\tb\x1b[2J", 10), "a?b?[2J");
  EXPECT_EQ(Fit("ab", 4, true), "  ab");
  EXPECT_EQ(Fit("ab", 4, false), "ab  ");
  google::protobuf::RepeatedPtrField<v1::Location> blocks;
  *blocks.Add() = Loc("f", 0x1000, 0x10);
  *blocks.Add() = Loc("f", 0x1000, 0x20);
  *blocks.Add() = Loc("g", 0x2000, 0x0);
  EXPECT_EQ(FormatBlocks(blocks), "f+0x10 > +0x20 > g+0x0");
}

TEST(Model, ScreenFits80x24AndShowsTheHotPath) {
  Model m;
  m.SetTargetLabel("pid 42 (loop)");
  ConnectionState c;
  c.connected = true;
  c.target = "unix:/tmp/p.sock";
  m.SetConnection(c);
  v1::HotPaths paths = KnownHotPaths("s1");
  // A path longer than any screen.
  v1::HotPath* longp = paths.add_paths();
  *longp->mutable_start() = Loc("very_long_function_name_for_a_deep_path", 0x500000, 0);
  for (int i = 0; i < 30; ++i) *longp->add_blocks() = Loc("other", 0x600000, i * 16);
  longp->set_length(30);
  longp->mutable_estimate()->set_share(0.001);
  m.SetHotPaths(paths);
  auto lines = m.Layout(80, 24);
  ASSERT_EQ(lines.size(), 24u);
  for (const auto& l : lines) EXPECT_LE(l.text.size(), 80u) << l.text;
  // One header line, the tabs, the column header, then the rows.
  EXPECT_EQ(lines[2].style, ScreenLine::kColumnHeader);
  EXPECT_EQ(lines[2].text.substr(0, 47), "SHARE%     EST  +-ERR LEN START                ");
  EXPECT_EQ(lines[3].style, ScreenLine::kSelected);
  EXPECT_EQ(lines[3].text.size(), 80u);  // the selection bar spans the line
  EXPECT_EQ(lines[3].text.substr(0, 76),
            "  62.0     620     31   3 hot_loop+0x10        hot_loop+0x10 > +0x24 > +0x38");
  EXPECT_EQ(lines[7].text.size(), 80u);
  EXPECT_EQ(lines[7].text.substr(26, 21), "very_long_function_~ ");
  EXPECT_EQ(lines[7].text.back(), '~');
  EXPECT_NE(lines[1].text.find("[1 Paths]"), std::string::npos);
  EXPECT_NE(lines[23].text.find("5 of 7 distinct paths"), std::string::npos);
  // A narrow terminal still gets lines no wider than it.
  for (const auto& l : m.Layout(30, 10)) EXPECT_LE(l.text.size(), 30u);
}

TEST(Model, KeysFilterPauseSortAndViews) {
  Model m;
  m.SetHotPaths(KnownHotPaths("s1"));
  EXPECT_EQ(m.HandleKey('/'), Action::kRedraw);
  for (char ch : std::string("MIX")) m.HandleKey(ch);
  EXPECT_EQ(m.table(View::kHotPaths).visible().size(), 1u);
  EXPECT_NE(m.Layout(80, 24)[23].text.find("filter: MIX_"), std::string::npos);
  m.HandleKey(key::kEnter);
  EXPECT_FALSE(m.editing_filter());
  EXPECT_NE(m.Layout(80, 24)[1].text.find("/MIX"), std::string::npos);
  m.HandleKey(key::kEscape);
  EXPECT_EQ(m.table(View::kHotPaths).visible().size(), 4u);

  // Paused: a new answer is held, shown on resume.
  m.HandleKey('p');
  v1::HotPaths fewer = KnownHotPaths("s1");
  fewer.mutable_paths()->RemoveLast();
  m.SetHotPaths(fewer);
  EXPECT_EQ(m.table(View::kHotPaths).visible().size(), 4u);
  EXPECT_NE(m.Layout(80, 24)[1].text.find("PAUSED"), std::string::npos);
  m.HandleKey(' ');
  EXPECT_EQ(m.table(View::kHotPaths).visible().size(), 3u);

  m.HandleKey('>');
  EXPECT_EQ(m.table(View::kHotPaths).sort_column(), 1);
  m.HandleKey('<');
  m.HandleKey('<');
  EXPECT_EQ(m.table(View::kHotPaths).sort_column(), 5);
  EXPECT_EQ(m.HandleKey('3'), Action::kViewChanged);
  EXPECT_EQ(m.view(), View::kCct);
  EXPECT_EQ(m.HandleKey('3'), Action::kNone);
  EXPECT_EQ(m.HandleKey('?'), Action::kRedraw);
  EXPECT_TRUE(m.help_visible());
  EXPECT_NE(m.Layout(80, 24)[0].text.find("pathtop"), std::string::npos);
  EXPECT_EQ(m.HandleKey('x'), Action::kRedraw);  // any key leaves help
  EXPECT_FALSE(m.help_visible());
  EXPECT_EQ(m.HandleKey(key::kResize), Action::kRedraw);
  EXPECT_EQ(m.HandleKey('q'), Action::kQuit);
}

TEST(Model, TargetListPicksAPid) {
  Model m;
  m.SetView(View::kTargets);
  pathtop_test::FakeProfiler fake(4242);
  v1::ListTargetsResponse targets;
  (void)fake.ListTargets(nullptr, nullptr, &targets);
  m.SetTargets(targets);
  // Sorted by pid, largest first.
  EXPECT_EQ(m.HandleKey(key::kEnter), Action::kPickTarget);
  EXPECT_EQ(m.picked_pid(), 4242u);
}

TEST(Model, DisconnectedFooterSaysWhyAndWhen) {
  Model m;
  ConnectionState c;
  c.target = "unix:/tmp/p.sock";
  c.message = "connection refused";
  c.attempt = 3;
  c.retry_in_s = 2;
  m.SetConnection(c);
  auto lines = m.Layout(80, 24);
  EXPECT_EQ(lines[23].style, ScreenLine::kAlert);
  EXPECT_EQ(lines[23].text, "DISCONNECTED unix:/tmp/p.sock retry 3 in 2.0s: connection refused");
  c.connected = true;
  c.reconnected = true;
  c.message.clear();
  m.SetConnection(c);
  EXPECT_EQ(m.Layout(80, 24)[23].text.rfind("reconnected unix:/tmp/p.sock", 0), 0u);
}

// Every line of a screen: within the width, and never cut ("~") unless it is a table row.
void ExpectNoCutLines(const std::vector<ScreenLine>& lines, int width) {
  for (const ScreenLine& l : lines) {
    EXPECT_LE(static_cast<int>(l.text.size()), width) << l.text;
    if (l.style == ScreenLine::kSelected || l.text.empty()) continue;
    EXPECT_NE(l.text.back(), '~') << "cut: " << l.text;
  }
}

// The details screen (`i`, already pressed) checked at 80 columns, returned at 200: wide enough
// for every item on one line.
std::string DetailsText(Model& m) {
  ExpectNoCutLines(m.Layout(80, 24), 80);
  std::string text;
  for (const auto& l : m.Layout(200, 24)) text += l.text + "\n";
  return text;
}

v1::Session RunningSession(v1::BranchSource source, const std::string& reason) {
  v1::Session s;
  s.set_name("sessions/s1-a9bd");
  s.add_pids(42);
  s.set_state(v1::SESSION_STATE_RUNNING);
  s.set_source(source);
  s.set_source_reason(reason);
  return s;
}

// Stats with `stacks` samples per second over two answers a second apart.
StatsView StacksPerSecond(double stacks) {
  StatsTracker tracker;
  v1::Stats a;
  a.add_targets()->set_stack_samples(1000);
  (void)tracker.Update(a, 10.0);
  a.mutable_targets(0)->set_stack_samples(1000 + static_cast<uint64_t>(stacks));
  return tracker.Update(a, 11.0);
}

TEST(Format, WrapKeepsFieldsWholeAndIndentsContinuations) {
  EXPECT_EQ(Wrap("abc", 10), std::vector<std::string>{"abc"});
  EXPECT_EQ(Wrap("", 10), std::vector<std::string>{""});
  // Fields (split at double spaces) move whole to the next line when they fit there.
  EXPECT_EQ(Wrap("pathtop  pid 42  session s1 running", 20),
            (std::vector<std::string>{"pathtop  pid 42", "  session s1 running"}));
  // A field wider than a line breaks between its words.
  EXPECT_EQ(Wrap("drops 3 (broken-window 3)", 12),
            (std::vector<std::string>{"drops 3", "  (broken-w~", "  3)"}));
  for (const std::string& l : Wrap(std::string(200, 'x') + " y", 80)) EXPECT_LE(l.size(), 80u);
  // Leading spaces and the spacing between fields that share a line are kept.
  EXPECT_EQ(Wrap(" 1 Paths [2 Subpaths] 3 CCT   sort SHARE%-", 80),
            std::vector<std::string>{" 1 Paths [2 Subpaths] 3 CCT   sort SHARE%-"});
  EXPECT_EQ(Wrap(" 1 Paths [2 Subpaths] 3 CCT   sort SHARE%-", 30),
            (std::vector<std::string>{" 1 Paths [2 Subpaths] 3 CCT", "  sort SHARE%-"}));
}

TEST(Model, AStacksOnlySessionSaysWhatArrivesInsteadOfNothing) {
  Model m;
  m.SetTargetLabel("pid 42 (loop)");
  m.SetSession(RunningSession(v1::BRANCH_SOURCE_NONE, "asked for"));
  v1::HotPaths none;
  none.set_session("sessions/s1-a9bd");
  m.SetHotPaths(none);
  m.SetStats(StacksPerSecond(97));
  auto lines = m.Layout(80, 24);
  EXPECT_EQ(lines[3].text, "no hot paths: stacks-only session (97 stacks/s); see views 3 and 5");
  for (const auto& l : lines) EXPECT_EQ(l.text.find("nothing profiled"), std::string::npos);
  // Call pairs come from branches too; the CCT and methods from stacks say what is missing.
  m.HandleKey('4');
  m.SetCallPairs(v1::HotCallPairs());
  EXPECT_EQ(m.Layout(80, 24)[3].text.rfind("no call pairs: stacks-only session (", 0), 0u);
  m.HandleKey('3');
  m.SetCct(v1::CallingContextTree());
  EXPECT_EQ(m.Layout(80, 24)[3].text, "no samples yet (97 stacks/s)");
  // A branch source with no windows yet says so, with the rates.
  m.SetSession(RunningSession(v1::BRANCH_SOURCE_PTRACE, "no PMU"));
  m.HandleKey('1');
  EXPECT_EQ(
      m.Layout(80, 24)[3].text.rfind("no hot paths yet: no branch windows decoded (win 0/s", 0),
      0u);
}

TEST(Model, AnExitedTargetIsMarkedInTheHeader) {
  Model m;
  m.SetTargetLabel("pid 42 (loop)");
  v1::Session s = RunningSession(v1::BRANCH_SOURCE_PTRACE, "no PMU");
  m.SetSession(s);
  m.SetStats(StacksPerSecond(97));
  EXPECT_NE(m.Layout(80, 24)[0].text.find("s1-a9bd running"), std::string::npos);
  EXPECT_EQ(m.Layout(80, 24)[0].style, ScreenLine::kTitle);
  s.set_state(v1::SESSION_STATE_TARGET_EXITED);
  *s.mutable_end_time() =
      google::protobuf::util::TimeUtil::MillisecondsToTimestamp(1'700'000'000'000);
  m.SetSession(s);
  m.SetNowUnixMs(1'700'000'012'400);
  auto lines = m.Layout(80, 24);
  EXPECT_NE(lines[0].text.find("s1-a9bd exited 12s ago: the profile as it ended"),
            std::string::npos)
      << lines[0].text;
  EXPECT_EQ(lines[0].text.find("running"), std::string::npos) << lines[0].text;
  EXPECT_EQ(lines[0].style, ScreenLine::kAlert);
  // No stale rates: an ended session's header has none.
  EXPECT_EQ(lines[0].text.find("stacks"), std::string::npos) << lines[0].text;
  EXPECT_EQ(lines[0].text.find("win "), std::string::npos) << lines[0].text;
}

TEST(Model, NoLineIsCutAt80Columns) {
  Model m;
  m.SetTargetLabel("pid 5243 (example_hotloop)");
  m.SetSession(
      RunningSession(v1::BRANCH_SOURCE_PTRACE, "ptrace bursts: no LBR or Intel PT on this host"));
  m.SetStats(StacksPerSecond(97));
  ConnectionState c;
  c.connected = true;
  c.reconnected = true;
  c.target = "unix:/tmp/pathtop_e2e_123456.sock";
  c.message = "re-created the session as s2-77aa, source none as s1-a9bd had";
  m.SetConnection(c);
  m.HandleKey('5');
  v1::HotMethods methods;
  methods.set_hot_data_streams_unsupported(
      "hot data streams need the data addresses of loads and stores; LBR and Intel PT record "
      "control flow only, so pathprof cannot build this profile (use a memory-access sampler "
      "such as PEBS load latency instead)");
  *methods.add_methods()->mutable_function() = Loc("hot", 0x401000, 0);
  m.SetMethods(methods);
  auto lines = m.Layout(80, 24);
  ASSERT_EQ(lines.size(), 24u);
  ExpectNoCutLines(lines, 80);
  // One header line; the source's reason is on the details screen (`i`), not cut here.
  EXPECT_EQ(lines[0].text.rfind("pid 5243 (example_hotloop)  s1-a9bd running  ptrace  ", 0), 0u)
      << lines[0].text;
  EXPECT_EQ(lines[0].text.find("no LBR"), std::string::npos) << lines[0].text;
  EXPECT_NE(lines[1].text.find("[5 Methods]"), std::string::npos) << lines[1].text;
  std::string all;
  for (const auto& l : lines) all += l.text + "\n";
  EXPECT_NE(all.find("hot data streams: not built from branch traces (? says why)"),
            std::string::npos)
      << all;
  EXPECT_NE(all.find("source none as s1-a9bd had"), std::string::npos) << all;
  // The daemon's whole reason is on the help screen.
  m.HandleKey(key::kF1);
  auto help = m.Layout(80, 24);
  ExpectNoCutLines(help, 80);
  std::string text;
  for (const auto& l : help) text += l.text + " ";
  EXPECT_NE(text.find("PEBS load latency instead)"), std::string::npos) << text;
  EXPECT_NE(text.find("Press any key to return."), std::string::npos) << text;
}

TEST(Model, FunctionKeysAsInHtop) {
  Model m;
  m.SetHotPaths(KnownHotPaths("s1"));
  // F3 searches: the selection moves to the match, nothing is hidden; F3 again goes on.
  EXPECT_EQ(m.HandleKey(key::kF3), Action::kRedraw);
  EXPECT_TRUE(m.searching());
  for (char ch : std::string("CHECK")) m.HandleKey(ch);
  const Table& t = m.table(View::kHotPaths);
  EXPECT_EQ(t.visible().size(), 4u);
  ASSERT_NE(t.selected_row(), nullptr);
  EXPECT_EQ(t.selected_row()->search_text.find("checksum"), 0u) << t.selected_row()->search_text;
  EXPECT_NE(m.Layout(80, 24)[23].text.find("search: CHECK_"), std::string::npos);
  m.HandleKey(key::kBackspace);
  for (char ch : std::string("xyz")) m.HandleKey(ch);
  EXPECT_NE(m.Layout(80, 24)[23].text.find("no row matches"), std::string::npos);
  EXPECT_EQ(t.selected_row()->search_text.find("checksum"), 0u);  // stays on a miss
  m.HandleKey(key::kEscape);
  EXPECT_FALSE(m.searching());
  // F4 filters, as `/`.
  m.HandleKey(key::kF4);
  EXPECT_TRUE(m.editing_filter());
  for (char ch : std::string("mix")) m.HandleKey(ch);
  EXPECT_EQ(t.visible().size(), 1u);
  // F10 quits even while typing (it must not type a 'q').
  EXPECT_EQ(m.HandleKey(key::kF10), Action::kQuit);
  m.HandleKey(key::kEscape);
  // F6: the next sort column; F5: the tree and back.
  EXPECT_EQ(m.HandleKey(key::kF6), Action::kRedraw);
  EXPECT_EQ(t.sort_column(), 1);
  m.HandleKey('4');
  EXPECT_EQ(m.HandleKey(key::kF5), Action::kViewChanged);
  EXPECT_EQ(m.view(), View::kCct);
  EXPECT_EQ(m.HandleKey(key::kF5), Action::kViewChanged);
  EXPECT_EQ(m.view(), View::kCallPairs);
  // F1 help from anywhere; it names the F-keys.
  m.HandleKey(key::kF4);
  EXPECT_EQ(m.HandleKey(key::kF1), Action::kRedraw);
  EXPECT_TRUE(m.help_visible());
  EXPECT_FALSE(m.editing_filter());
  std::string help;
  for (const auto& l : m.Layout(80, 24)) help += l.text + "\n";
  for (const char* k : {"F1", "F3", "F4", "F5", "F6", "F10"})
    EXPECT_NE(help.find(k), std::string::npos) << k;
}

TEST(StatsTracker, RatesFromTwoAnswers) {
  StatsTracker tracker;
  v1::Stats a;
  auto* t = a.add_targets();
  t->set_stack_samples(100);
  t->set_windows(10);
  t->set_branches(1000);
  auto* d = t->add_drops();
  d->set_reason("lost");
  d->set_count(7);
  a.set_daemon_cpu_seconds(1.0);
  EXPECT_FALSE(tracker.Update(a, 10.0).valid);
  v1::Stats b = a;
  b.mutable_targets(0)->set_stack_samples(300);
  b.mutable_targets(0)->set_windows(50);
  b.mutable_targets(0)->set_branches(9000);
  b.set_daemon_cpu_seconds(1.1);
  StatsView v = tracker.Update(b, 12.0);
  ASSERT_TRUE(v.valid);
  EXPECT_DOUBLE_EQ(v.stack_samples_per_s, 100);
  EXPECT_DOUBLE_EQ(v.windows_per_s, 20);
  EXPECT_DOUBLE_EQ(v.branches_per_s, 4000);
  EXPECT_NEAR(v.daemon_cpu_percent, 5.0, 1e-9);
  EXPECT_EQ(v.drops, 7u);
  EXPECT_EQ(v.top_drop, "lost 7");
}

// A refresh right after another (a key press, a view switch) does not read a burst's gap as a
// rate of 0: rates span up to two seconds of answers, not the last tenth.
TEST(StatsTracker, ARefreshRightAfterAnotherKeepsTheRate) {
  StatsTracker tracker;
  v1::Stats a;
  a.add_targets()->set_windows(0);
  (void)tracker.Update(a, 10.0);
  a.mutable_targets(0)->set_windows(100);
  EXPECT_DOUBLE_EQ(tracker.Update(a, 11.0).windows_per_s, 100);
  // A tenth of a second later, no window came: the rate is over the 1.1 s since the first.
  StatsView soon = tracker.Update(a, 11.1);
  ASSERT_TRUE(soon.valid);
  EXPECT_NEAR(soon.windows_per_s, 100 / 1.1, 1e-9);
  // Later answers are rated against the latest one two seconds older: 11.0's.
  a.mutable_targets(0)->set_windows(300);
  EXPECT_DOUBLE_EQ(tracker.Update(a, 13.0).windows_per_s, 100);
  // Answers many times a second keep a bounded history and the same two-second span.
  for (int i = 1; i <= 1000; ++i) {
    a.mutable_targets(0)->set_windows(300 + static_cast<uint64_t>(i));
    (void)tracker.Update(a, 13.0 + i * 0.01);
  }
  a.mutable_targets(0)->set_windows(1400);
  // Against 21.01's answer (1,101 windows): 299 windows in 2 s.
  EXPECT_NEAR(tracker.Update(a, 23.01).windows_per_s, (1400.0 - 1101) / 2.0, 0.5)
      << "a rate over the last two seconds of answers";
}

// Stats a second apart: 304 stacks/s, 11 windows/s, 3 drops, the daemon at 2.8% and 193 MiB.
StatsView BusyStats() {
  StatsTracker tracker;
  v1::Stats a;
  v1::TargetStats* t = a.add_targets();
  t->set_stack_samples(1000);
  t->set_windows(100);
  a.set_daemon_rss_bytes(193ull << 20);
  (void)tracker.Update(a, 10.0);
  t->set_stack_samples(1304);
  t->set_windows(111);
  v1::DropCount* d = t->add_drops();
  d->set_reason("broken-window");
  d->set_count(3);
  a.set_daemon_cpu_seconds(0.028);
  return tracker.Update(a, 11.0);
}

TEST(Model, TheHeaderIsOneLineAndIShowsItWhole) {
  Model m;
  m.SetTargetLabel("pid 5243 (example_hotloop)");
  m.SetSession(RunningSession(v1::BRANCH_SOURCE_PTRACE,
                              "ptrace bursts: no LBR or Intel PT on this host (emulated windows, "
                              "one stop each)"));
  m.SetStats(BusyStats());
  m.SetHotPaths(KnownHotPaths("s1"));
  // What fits, whole fields only, most important first: drops before stacks when there are
  // any, the daemon's own use last.
  const std::vector<ScreenLine> wide = m.Layout(120, 24);
  EXPECT_EQ(wide[0].text,
            "pid 5243 (example_hotloop)  s1-a9bd running  ptrace  win 11/s  drops 3  "
            "stacks 304/s  pathprofd 2.8% 193.0M");
  const std::vector<ScreenLine> hundred = m.Layout(100, 24);
  EXPECT_EQ(hundred[0].text,
            "pid 5243 (example_hotloop)  s1-a9bd running  ptrace  win 11/s  drops 3  stacks 304/s");
  const std::vector<ScreenLine> eighty = m.Layout(80, 24);
  EXPECT_EQ(eighty[0].text,
            "pid 5243 (example_hotloop)  s1-a9bd running  ptrace  win 11/s  drops 3");
  for (const auto* lines : {&wide, &hundred, &eighty}) {
    EXPECT_EQ((*lines)[0].style, ScreenLine::kTitle);
    EXPECT_NE((*lines)[1].text.find("[1 Paths]"), std::string::npos) << (*lines)[1].text;
    EXPECT_EQ((*lines)[2].style, ScreenLine::kColumnHeader);
  }
  // `i`: everything the header leaves out, the daemon's reason whole, wrapped, never cut.
  EXPECT_EQ(m.HandleKey('i'), Action::kRedraw);
  EXPECT_TRUE(m.details_visible());
  const std::vector<ScreenLine> details = m.Layout(80, 24);
  ExpectNoCutLines(details, 80);
  std::string text;
  for (const auto& l : details) text += l.text + "\n";
  EXPECT_NE(text.find("branches   ptrace: ptrace bursts: no LBR or Intel PT on this host"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("one stop each)"), std::string::npos) << text;
  EXPECT_NE(text.find("drops      3 (largest: broken-window 3)  decode errors 0"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("rates      stacks 304/s  windows 11/s"), std::string::npos) << text;
  EXPECT_EQ(m.HandleKey('x'), Action::kRedraw);  // any key returns
  EXPECT_FALSE(m.details_visible());
}

// The export buffer letting old raw windows go is how it keeps its bound, not the profile
// losing data: the header's drops stay 0 while it grows, and it has a field of its own; `i`
// says what it is. (It was counted among the drops, which grew at every refresh.)
TEST(Model, TheExportBufferIsRetentionNotDrops) {
  StatsTracker tracker;
  v1::Stats a;
  v1::TargetStats* t = a.add_targets();
  t->set_stack_samples(1000);
  t->set_windows(4000);
  t->set_export_windows_kept(2048);
  t->set_export_windows_let_go(4364);
  (void)tracker.Update(a, 10.0);
  t->set_windows(6000);
  t->set_export_windows_let_go(6559);
  const StatsView v = tracker.Update(a, 11.0);
  EXPECT_EQ(v.drops, 0u);
  EXPECT_EQ(v.export_windows_kept, 2048u);
  EXPECT_EQ(v.export_windows_let_go, 6559u);

  Model m;
  m.SetTargetLabel("pid 5243 (xz)");
  m.SetSession(RunningSession(v1::BRANCH_SOURCE_PTRACE, "auto (best available)"));
  m.SetStats(v);
  const std::string header = m.Layout(160, 24)[0].text;
  EXPECT_NE(header.find("drops 0"), std::string::npos) << header;
  EXPECT_NE(header.find("export buffer 2048 win"), std::string::npos) << header;
  EXPECT_EQ(header.find("6559"), std::string::npos) << header;
  m.HandleKey('i');
  const std::string text = DetailsText(m);
  EXPECT_NE(text.find("drops      0  decode errors 0"), std::string::npos) << text;
  EXPECT_NE(text.find("kept 2048 newest windows, 6559 older let go"), std::string::npos) << text;
}

// Windows the branch source held back (its stopped-time cap) are the rate's bound: `i` says so
// beside the drops, which stay 0.
TEST(Model, WindowsHeldBackAreSaidApartFromTheDrops) {
  StatsTracker tracker;
  v1::Stats a;
  v1::TargetStats* t = a.add_targets();
  t->set_windows(300);
  v1::DropCount* h = t->add_windows_held_back();
  h->set_reason("stopped_time_cap");
  h->set_count(120);
  const StatsView v = tracker.Update(a, 10.0);
  EXPECT_EQ(v.drops, 0u);
  EXPECT_EQ(v.windows_held_back, "stopped_time_cap 120");
  Model m;
  m.SetTargetLabel("pid 5243 (example_hotloop)");
  m.SetSession(RunningSession(v1::BRANCH_SOURCE_PTRACE, "auto (best available)"));
  m.SetStats(v);
  m.HandleKey('i');
  const std::string text = DetailsText(m);
  EXPECT_NE(text.find("not drops): stopped_time_cap 120"), std::string::npos) << text;
}

// A hybrid session's windows by source, summed over its processes: `i` shows the mix (a
// process on snapshot windows and one stopped), and a session of one source shows no line.
TEST(Model, HybridWindowsBySourceAreSummedOverTargets) {
  StatsTracker tracker;
  v1::Stats a;
  auto add = [&](int64_t snapshot, int64_t stopped) {
    v1::TargetStats* t = a.add_targets();
    t->set_windows(snapshot + stopped);
    for (auto [name, n] :
         {std::pair<const char*, int64_t>{"snapshot", snapshot}, {"stopped", stopped}}) {
      v1::DropCount* w = t->add_windows_by_source();
      w->set_reason(name);
      w->set_count(n);
    }
  };
  add(900, 0);
  add(64, 40);
  const StatsView v = tracker.Update(a, 10.0);
  EXPECT_EQ(v.windows_by_source, "snapshot 964, stopped 40");
  EXPECT_EQ(v.drops, 0u);
  Model m;
  m.SetTargetLabel("every process");
  m.SetSession(RunningSession(v1::BRANCH_SOURCE_HYBRID, "hybrid"));
  m.SetStats(v);
  m.HandleKey('i');
  const std::string text = DetailsText(m);
  EXPECT_NE(text.find("sources    windows by source: snapshot 964, stopped 40"), std::string::npos)
      << text;

  v1::Stats one_source;
  one_source.add_targets()->set_windows(300);
  m.SetStats(StatsTracker().Update(one_source, 10.0));
  const std::string one = DetailsText(m);
  EXPECT_EQ(one.find("windows by source"), std::string::npos) << one;
}

// main (100) calls hot (62: self 60.6, inner 1.4), warm (37.5) and tiny (0.5); context ids are
// the node ids x 100, but tiny's is 0 (a daemon that gave none).
v1::CallingContextTree FlameTree() {
  v1::CallingContextTree t;
  auto node = [&](int64_t id, int64_t parent, const char* fn, double self, double total) {
    v1::CctNode* n = t.add_nodes();
    n->set_id(id);
    n->set_parent_id(parent);
    *n->mutable_function() = Loc(fn, 0x401000 + id * 0x100, 0);
    if (parent != 0) *n->mutable_call_site() = Loc("caller", 0x400000, id * 4);
    n->set_self_weight(self);
    n->set_total_weight(total);
    n->set_edge_weight(total / 2);
    n->set_context_id(std::string(fn) == "tiny" ? 0 : id * 100);
    n->set_pid(42);
  };
  node(1, 0, "main", 0, 100);
  node(2, 1, "hot", 60.6, 62);
  node(3, 2, "inner", 1.4, 1.4);
  node(4, 1, "warm", 37.5, 37.5);
  node(5, 1, "tiny", 0.5, 0.5);
  t.set_total_weight(100);
  return t;
}

// Connected to a daemon, as the fetcher reports it.
void Connect(Model* m) {
  ConnectionState c;
  c.connected = true;
  c.target = "unix:/tmp/p.sock";
  m->SetConnection(c);
}

TEST(FlameGraph, FramesAsWideAsTheirShareInNameOrder) {
  FlameGraph g;
  g.Replace(FlameTree());
  std::vector<FlameGraph::Line> lines = g.Render(80, 20);
  ASSERT_EQ(lines.size(), 4u);
  // all and main span the width; all is selected at first.
  EXPECT_EQ(lines[0].text.substr(0, 12), ">all 100.0% ");
  EXPECT_EQ(lines[0].text.back(), '<');
  EXPECT_EQ(lines[1].text.substr(0, 13), "[main 100.0% ");
  // hot: 62% of 80 = 49.6 columns, rounded to 0..50; tiny (0.4 of a column) is not drawn; warm
  // takes 50..80.
  EXPECT_EQ(lines[2].text.substr(0, 11), "[hot 62.0% ");
  EXPECT_EQ(lines[2].text[49], ']');
  EXPECT_EQ(lines[2].text.substr(50, 12), "[warm 37.5% ");
  EXPECT_EQ(lines[2].text[79], ']');
  ASSERT_EQ(lines[2].cells.size(), 2u);
  EXPECT_EQ(lines[2].cells[0].end, 50);
  EXPECT_EQ(lines[2].cells[1].begin, 50);
  // inner: 1.4% of hot's 49.6 columns is one column, a bar.
  EXPECT_EQ(lines[3].text[0], '|');
  EXPECT_EQ(lines[3].text.find_first_not_of(' ', 1), std::string::npos);

  // Arrows walk what is drawn: down to the widest callee, across the line, up to the caller.
  g.SelectChild();
  EXPECT_EQ(g.selected().name, "main");
  g.SelectChild();
  EXPECT_EQ(g.selected().name, "hot");
  g.SelectSibling(+1);
  EXPECT_EQ(g.selected().name, "warm");  // tiny, not drawn, is skipped
  g.SelectSibling(+1);
  EXPECT_EQ(g.selected().name, "warm");
  g.SelectSibling(-1);
  g.SelectParent();
  EXPECT_EQ(g.selected().name, "main");
}

TEST(FlameGraph, ZoomSelectionAndSearchSurviveRefreshes) {
  FlameGraph g;
  g.Replace(FlameTree());
  (void)g.Render(80, 20);
  g.SelectChild();
  g.SelectChild();
  g.ZoomIn();
  std::vector<FlameGraph::Line> lines = g.Render(80, 20);
  ASSERT_EQ(lines.size(), 4u);
  // hot fills the width under its callers; inner is now 1.8 columns: a box too small to name.
  EXPECT_EQ(lines[1].text.substr(0, 13), "[main 100.0% ");
  EXPECT_EQ(lines[2].text.substr(0, 11), ">hot 62.0% ");
  EXPECT_EQ(lines[2].text[79], '<');
  EXPECT_EQ(lines[3].text.substr(0, 3), "[] ");
  // A refresh keeps zoom and selection on their contexts.
  g.Replace(FlameTree());
  EXPECT_TRUE(g.zoomed());
  EXPECT_EQ(g.zoom().name, "hot");
  EXPECT_EQ(g.selected().name, "hot");
  // One without hot moves both to its caller.
  v1::CallingContextTree without_hot = FlameTree();
  without_hot.mutable_nodes()->DeleteSubrange(1, 2);
  g.Replace(without_hot);
  EXPECT_EQ(g.zoom().name, "main");
  EXPECT_EQ(g.selected().name, "main");
  EXPECT_TRUE(g.ZoomOut());
  EXPECT_FALSE(g.ZoomOut());

  g.Replace(FlameTree());
  g.SetSearch("WARM");
  EXPECT_EQ(g.matched_frames(), 1);
  EXPECT_DOUBLE_EQ(g.MatchedShare(), 0.375);
  EXPECT_NE(g.Render(80, 20)[2].text.find("[*warm 37.5% "), std::string::npos);
  // "in" matches main, inner and tiny: inner and tiny lie inside main, counted once.
  g.SetSearch("in");
  EXPECT_EQ(g.matched_frames(), 3);
  EXPECT_DOUBLE_EQ(g.MatchedShare(), 1.0);
  g.SetSearch("");
  EXPECT_EQ(g.matched_frames(), 0);
  // A deep graph in few lines keeps the selected frame's line on screen.
  g.SelectRoot();
  (void)g.Render(80, 20);
  g.SelectChild();
  g.SelectChild();
  g.SelectChild();
  EXPECT_EQ(g.selected().name, "inner");
  lines = g.Render(80, 2);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[1].text[0], '>');
}

TEST(Model, TheFlameViewZoomsAndSearches) {
  Model m;
  Connect(&m);
  m.SetCct(FlameTree());
  EXPECT_EQ(m.HandleKey('6'), Action::kViewChanged);
  EXPECT_EQ(m.view(), View::kFlame);
  std::vector<ScreenLine> lines = m.Layout(80, 24);
  EXPECT_NE(lines[1].text.find("[6 Flame]"), std::string::npos) << lines[1].text;
  EXPECT_EQ(lines[2].style, ScreenLine::kColumnHeader);
  EXPECT_EQ(lines[2].text.rfind("all  total 100.0%", 0), 0u) << lines[2].text;
  EXPECT_EQ(lines[3].text.rfind(">all 100.0% ", 0), 0u) << lines[3].text;
  ASSERT_EQ(lines[3].spans.size(), 1u);
  EXPECT_EQ(lines[3].spans[0].style, ScreenLine::kSelected);
  EXPECT_EQ(lines[3].spans[0].end, 80);
  EXPECT_EQ(lines[5].text.rfind("[hot 62.0% ", 0), 0u) << lines[5].text;

  m.HandleKey(key::kDown);
  m.HandleKey(key::kDown);
  lines = m.Layout(80, 24);
  EXPECT_EQ(lines[2].text.rfind("hot  total 62.0%  self 60.6%  calls 31  pid 42", 0), 0u)
      << lines[2].text;
  EXPECT_EQ(m.HandleKey('>'), Action::kNone);  // no sort column in a graph
  EXPECT_EQ(m.HandleKey(key::kEnter), Action::kRedraw);
  EXPECT_NE(m.Layout(80, 24)[1].text.find("zoom hot"), std::string::npos);

  // `/` marks matches as you type and says how much of the total they cover.
  m.HandleKey('/');
  for (char ch : std::string("warm")) m.HandleKey(ch);
  lines = m.Layout(80, 24);
  EXPECT_NE(lines[23].text.find("search: warm_"), std::string::npos) << lines[23].text;
  EXPECT_NE(lines[23].text.find("1 frames, 37.5% of the total"), std::string::npos)
      << lines[23].text;
  m.HandleKey(key::kEnter);
  EXPECT_FALSE(m.searching());
  EXPECT_NE(m.Layout(80, 24)[1].text.find("*warm"), std::string::npos);
  // Esc zooms out a level at a time (hot, main, all), then clears the search.
  m.HandleKey(key::kEscape);
  EXPECT_EQ(m.flame().zoom().name, "main");
  m.HandleKey(key::kEscape);
  EXPECT_FALSE(m.flame().zoomed());
  EXPECT_EQ(m.flame().search(), "warm");
  m.HandleKey(key::kEscape);
  EXPECT_EQ(m.flame().search(), "");
  // Matches are painted as such in colour: warm's frame is a span of its own.
  m.HandleKey('/');
  m.HandleKey('w');
  m.HandleKey(key::kEnter);
  bool painted = false;
  for (const ScreenLine& l : m.Layout(80, 24))
    for (const ScreenLine::Span& sp : l.spans) painted |= sp.style == ScreenLine::kAlert;
  EXPECT_TRUE(painted);
  EXPECT_EQ(m.HandleKey('\t'), Action::kViewChanged);  // Tab wraps to the first view
  EXPECT_EQ(m.view(), View::kHotPaths);
}

TEST(Model, EnterOnATreeNodeShowsTheHotPathsOfThatContext) {
  Model m;
  Connect(&m);
  m.SetCct(FlameTree());
  m.HandleKey('3');
  m.HandleKey(key::kDown);  // main, then hot (the heaviest child)
  ASSERT_EQ(m.table(View::kCct).selected_row()->cells.back(), "hot");
  EXPECT_EQ(m.HandleKey(key::kEnter), Action::kViewChanged);
  EXPECT_EQ(m.view(), View::kContextPaths);
  EXPECT_EQ(m.context().node, 200);
  EXPECT_EQ(m.context().pid, 42);
  EXPECT_EQ(m.context().chain, "main > hot");
  std::vector<ScreenLine> lines = m.Layout(80, 24);
  EXPECT_NE(lines[1].text.find(" 2 Subpaths [3 paths: hot] 4 Calls "), std::string::npos)
      << lines[1].text;
  EXPECT_EQ(lines[3].text, "waiting for the first answer...");

  // No window attributed to the context yet: said so, with what a window counts for.
  v1::HotPaths none;
  none.set_contexts_matched(0);
  m.SetContextPaths(none);
  EXPECT_EQ(m.Layout(80, 24)[3].text.rfind("no branch window attributed to main > hot yet", 0), 0u)
      << m.Layout(80, 24)[3].text;
  v1::HotPaths paths = KnownHotPaths("s1");
  paths.set_contexts_matched(1);
  paths.set_context_windows(40);
  m.SetContextPaths(paths);
  lines = m.Layout(80, 24);
  EXPECT_EQ(lines[3].text.substr(0, 40), "  62.0     620     31   3 hot_loop+0x10 ");
  EXPECT_NE(lines[23].text.find("main > hot: 40 windows"), std::string::npos) << lines[23].text;
  // Esc (no filter) goes back to the tree, the selection where it was.
  EXPECT_EQ(m.HandleKey(key::kEscape), Action::kViewChanged);
  EXPECT_EQ(m.view(), View::kCct);
  EXPECT_EQ(m.table(View::kCct).selected_row()->cells.back(), "hot");

  // A node without a context id says why instead of asking.
  m.HandleKey(key::kEnd);
  ASSERT_EQ(m.table(View::kCct).selected_row()->cells.back(), "tiny");
  m.HandleKey(key::kEnter);
  EXPECT_EQ(m.context().node, 0);
  std::string screen;
  for (const ScreenLine& l : m.Layout(80, 24)) screen += l.text + "\n";
  EXPECT_NE(screen.find("\nthis tree node has no context id"), std::string::npos) << screen;
  EXPECT_EQ(m.HandleKey(key::kLeft), Action::kViewChanged);
  EXPECT_EQ(m.view(), View::kCct);
}

}  // namespace
}  // namespace pathtop
