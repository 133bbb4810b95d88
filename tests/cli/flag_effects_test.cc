// What every flag does. Every command of pathctl (and pathprofd; pathtop's --help and unknown
// flags): --help prints the usage on stdout with exit 0; an unknown flag is exit 2 with a message
// naming it; and every flag the help lists has a case here that shows its effect (--top 1 gives at
// most one row where the default gives more, --json parses, -o F writes F, --socket S tries S,
// --timeout ends a wait on a daemon that never answers...). The flag lists are read from each
// command's --help, so a flag added to a help text without a case here fails: "flag --x of command
// y has no case".
//
// Daemon commands run against a real pathprofd on a temporary socket with a session on
// example_hotloop; offline commands against an exact .pbs trace of example_loop_static.
#include <gtest/gtest.h>

#include <tuple>

#include "cli/flag_effects_util.h"

namespace {

using namespace flag_effects;

Table MakeTable(std::map<std::string, Gap>* gaps) {
  Table t;
  // ------------------------------------------------------------ daemon queries
  AddClientCases(t, "calls", [] { return "calls " + S(); });
  t["calls --top"] = [] {
    ExpectRows("calls --top 1", Ctl("calls " + S() + " --top 1 --json" + Sock()),
               Ctl("calls " + S() + " --json" + Sock()), "\"call_site\"", 1);
  };
  AddClientCases(t, "methods", [] { return "methods " + S(); });
  t["methods --top"] = [] {
    ExpectRows("methods --top 1", Ctl("methods " + S() + " --top 1 --json" + Sock()),
               Ctl("methods " + S() + " --json" + Sock()), "\"self\":{", 1);
  };
  AddClientCases(t, "paths", [] { return "paths " + S(); });
  t["paths --top"] = [] {
    ExpectRows("paths --top 2", Ctl("paths " + S() + " --top 2 --json" + Sock()),
               Ctl("paths " + S() + " --json" + Sock()), "\"outcomes\"", 2);
  };
  t["paths --metric"] = [] {
    const R count = Ctl("paths " + S() + " --json" + Sock());
    const R instr = Ctl("paths " + S() + " --json --metric instructions" + Sock());
    EXPECT_EQ(instr.rc, 0) << Show("paths --metric instructions", instr);
    // Instructions weigh each path by its length: the total is above the count's.
    EXPECT_GT(Num(instr.out, "total"), Num(count.out, "total")) << instr.out << "\n" << count.out;
  };
  t["paths --blocks"] = [] {
    const R with = Ctl("paths " + S() + " --top 2 --blocks" + Sock());
    const R without = Ctl("paths " + S() + " --top 2" + Sock());
    EXPECT_TRUE(Has(with.out, "path 1:\n    ")) << Show("paths --blocks", with);
    EXPECT_FALSE(Has(without.out, "path 1:")) << Show("paths", without);
  };
  // Hot paths per calling context: the hot loop's windows name their stack (main > hot).
  auto first_context = [] {
    const R r = PollCtl("paths " + S() + " --contexts-of 1 --json" + Sock(),
                        [](const R& x) { return Has(x.out, "\"context_id\":\""); });
    const size_t at = r.out.find("\"context_id\":\"");
    EXPECT_NE(at, std::string::npos) << Show("paths --contexts-of 1", r);
    if (at == std::string::npos) return std::string("0");
    const size_t from = at + std::string("\"context_id\":\"").size();
    return r.out.substr(from, r.out.find('"', from) - from);
  };
  t["paths --contexts-of"] = [=] {
    first_context();
    const R r = Ctl("paths " + S() + " --contexts-of 1" + Sock());
    EXPECT_EQ(r.rc, 0) << Show("paths --contexts-of", r);
    EXPECT_TRUE(Has(r.out, "contexts of path 1")) << Show("paths --contexts-of", r);
    EXPECT_TRUE(Has(r.out, "context_id")) << Show("paths --contexts-of", r);
  };
  t["paths --contexts"] = [=] {
    first_context();
    const R one = Ctl("paths " + S() + " --contexts-of 1 --contexts 1 --json" + Sock());
    EXPECT_EQ(one.rc, 0) << Show("paths --contexts 1", one);
    EXPECT_EQ(Count(one.out, "\"context_id\""), 1u) << Show("paths --contexts 1", one);
  };
  t["paths --context"] = [=] {
    const std::string id = first_context();
    const R r = Ctl("paths " + S() + " --context " + id + Sock());
    EXPECT_EQ(r.rc, 0) << Show("paths --context", r);
    EXPECT_TRUE(Has(r.out, "context " + id + ": ")) << Show("paths --context", r);
    const R bad = Ctl("paths " + S() + " --context 'a;;b'" + Sock());
    EXPECT_EQ(bad.rc, 2) << Show("paths --context 'a;;b'", bad);
  };
  t["paths --context-pid"] = [=] {
    const std::string id = first_context();
    const R mine = Ctl("paths " + S() + " --context " + id + " --context-pid " + Loop() + Sock());
    EXPECT_EQ(mine.rc, 0) << Show("paths --context-pid", mine);
    const R other = Ctl("paths " + S() + " --context " + id + " --context-pid 1" + Sock());
    EXPECT_EQ(other.rc, 3) << Show("paths --context-pid 1", other);
  };
  AddClientCases(t, "ps", [] { return std::string("ps"); });
  t["ps --name"] = [] {
    const R r = Ctl("ps --json --name example_hotl" + Sock());
    EXPECT_EQ(r.rc, 0) << Show("ps --name", r);
    const auto comms = Strs(r.out, "comm");
    ASSERT_FALSE(comms.empty()) << r.out;
    for (const auto& c : comms) EXPECT_TRUE(Has(c, "example_hotl")) << r.out;
    EXPECT_TRUE(Has(r.out, "\"pid\":" + Loop() + ",")) << r.out;
    const R all = Ctl("ps --json" + Sock());
    bool other = false;
    for (const auto& c : Strs(all.out, "comm")) other = other || !Has(c, "example_hotl");
    EXPECT_TRUE(other) << all.out.substr(0, 2000);
  };
  t["ps --limit"] = [] {
    const R r = Ctl("ps --json --limit 1" + Sock());
    EXPECT_EQ(r.rc, 0) << Show("ps --limit", r);
    EXPECT_EQ(Count(r.out, "\"comm\""), 1u) << r.out;
    EXPECT_FALSE(Has(r.out, "\"next_page_token\":\"\"")) << r.out;  // more follow
  };
  AddClientCases(t, "residual", [] {
    static bool saved = false;
    if (!saved) {
      const R r = Ctl("residual " + S() + " --baseline every-flag --save" + Sock());
      EXPECT_EQ(r.rc, 0) << Show("residual --save", r);
      saved = true;
    }
    return "residual " + S() + " --baseline every-flag";
  });
  t["residual --baseline"] = [] {
    const R before = Ctl("residual " + S() + " --baseline b-name" + Sock());
    EXPECT_NE(before.rc, 0) << Show("residual with a baseline never saved", before);
    EXPECT_TRUE(Has(before.err, "b-name")) << Show("residual", before);
  };
  t["residual --save"] = [] {
    const R save = Ctl("residual " + S() + " --baseline b-save --save" + Sock());
    EXPECT_EQ(save.rc, 0) << Show("residual --save", save);
    EXPECT_TRUE(Has(save.out, "baseline b-save saved")) << save.out;
    const R after = Ctl("residual " + S() + " --baseline b-save --json" + Sock());
    EXPECT_TRUE(after.rc == 0 || after.rc == 3) << Show("residual after --save", after);
    EXPECT_GT(Num(after.out, "known"), 0) << after.out;
    // --save stores every path: a --top would be ignored, so it is refused.
    const R top = Ctl("residual " + S() + " --baseline b-save --save --top 1" + Sock());
    EXPECT_EQ(top.rc, 2) << Show("residual --save --top", top);
    EXPECT_TRUE(Has(top.err, "--top does not apply")) << top.err;
  };
  t["residual --top"] = [] {
    // Baselines belong to their session: a baseline saved the moment a session starts (before
    // its first windows) knows no path, so the paths it sees later are all new. A loop of its
    // own, as the shared loop already has its tracer.
    // The loop is stopped (SIGSTOP) until the baseline is saved: emulated windows come within
    // milliseconds of the start, before a sanitizer-built pathctl could save it (it knew all 8
    // of the loop's paths then, and no path was ever new).
    HotLoop other;
    kill(other.pid(), SIGSTOP);
    const R st =
        Ctl("start -p " + std::to_string(other.pid()) + " --source ptrace -F 0 --json" + Sock());
    ASSERT_EQ(st.rc, 0) << Show("start", st);
    const std::string id = Str(st.out, "name");
    const R save = Ctl("residual " + id + " --baseline b-early --save --json" + Sock());
    EXPECT_EQ(save.rc, 0) << Show("residual --save", save);
    kill(other.pid(), SIGCONT);
    const R full = PollCtl("residual " + id + " --baseline b-early --json" + Sock(),
                           [](const R& x) { return Count(x.out, "\"outcomes\"") >= 3; });
    ExpectRows("residual --top 1",
               Ctl("residual " + id + " --baseline b-early --top 1 --json" + Sock()), full,
               "\"outcomes\"", 1);
    Ctl("stop " + id + Sock());
  };
  AddClientCases(t, "rm", [] { return "rm " + NewSession(); });
  // import: the daemon reads the exact trace itself and keeps it as an ended session.
  AddClientCases(t, "import", [] { return "import " + Pbs(); });
  AddClientCases(t, "session", [] { return "session " + S(); });
  AddClientCases(t, "sessions", [] { return std::string("sessions"); });
  AddClientCases(t, "stats", [] { return "stats " + S(); });
  AddClientCases(t, "stop", [] { return "stop " + NewSession(); });
  AddClientCases(t, "subpaths", [] { return "subpaths " + S(); });
  t["subpaths --top"] = [] {
    ExpectRows("subpaths --top 2", Ctl("subpaths " + S() + " --top 2 --json" + Sock()),
               Ctl("subpaths " + S() + " --json" + Sock()), "\"length\"", 2);
  };
  t["subpaths --threshold"] = [] {
    const R r = Ctl("subpaths " + S() + " --threshold 0.2 --json" + Sock());
    EXPECT_TRUE(r.rc == 0 || r.rc == 3) << Show("subpaths --threshold", r);
    const R all = Ctl("subpaths " + S() + " --json" + Sock());
    EXPECT_LT(Count(r.out, "\"length\""), Count(all.out, "\"length\"")) << r.out << all.out;
  };
  AddClientCases(t, "tree", [] { return "tree " + S(); });
  t["tree --depth"] = [] {
    const R r = Ctl("tree " + S() + " --depth 1 --json" + Sock());
    const R all = Ctl("tree " + S() + " --json" + Sock());
    EXPECT_TRUE(r.rc == 0 || r.rc == 3) << Show("tree --depth", r);
    EXPECT_LT(Count(r.out, "\"parent_id\""), Count(all.out, "\"parent_id\"")) << r.out;
  };
  t["tree --min-weight"] = [] {
    // Until a node under 30% has arrived (warm() is a fifth of the loop), a bound of 0.3 has
    // nothing to cut: wait for one.
    const auto has_light_node = [](const R& x) {
      const std::vector<double> w = Nums(x.out, "total_weight");  // the nodes', then the tree's
      if (w.size() < 2 || w.back() <= 0) return false;
      for (size_t i = 0; i + 1 < w.size(); ++i)
        if (w[i] < 0.3 * w.back()) return true;
      return false;
    };
    const R all = PollCtl("tree " + S() + " --json" + Sock(), has_light_node);
    ASSERT_TRUE(has_light_node(all)) << all.out;
    const R r = Ctl("tree " + S() + " --min-weight 0.3 --json" + Sock());
    EXPECT_TRUE(r.rc == 0 || r.rc == 3) << Show("tree --min-weight", r);
    // Every node left is at least 0.3 of the tree (the light node seen above stays light: the
    // tree only grows). Not "fewer nodes than the unbounded tree": the session samples on
    // between the two queries, and a node that arrived in between made the counts equal (6
    // against 6, a fresh clone on an AMD EPYC Firecracker guest, 2026-12-03).
    const std::vector<double> w = Nums(r.out, "total_weight");
    ASSERT_GE(w.size(), 2u) << r.out;
    for (size_t i = 0; i + 1 < w.size(); ++i) EXPECT_GE(w[i], 0.3 * w.back()) << r.out;
  };
  t["tree --root"] = [] {
    const R r = Ctl("tree " + S() + " --root hot --json" + Sock());
    EXPECT_EQ(r.rc, 0) << Show("tree --root hot", r);
    // The first node is the root asked for (the function of its first Location).
    EXPECT_EQ(Str(r.out, "function"), "hot") << r.out;
  };
  t["tree --max-nodes"] = [] {
    ExpectRows("tree --max-nodes 2", Ctl("tree " + S() + " --max-nodes 2 --json" + Sock()),
               Ctl("tree " + S() + " --json" + Sock()), "\"parent_id\"", 2);
  };
  AddClientCases(t, "watch", [] { return "watch " + S() + " --count 1 --interval 100"; });
  t["watch --count"] = [] {
    const R r = Ctl("watch " + S() + " --count 2 --interval 100 --json" + Sock());
    EXPECT_EQ(r.rc, 0) << Show("watch --count 2", r);
    EXPECT_EQ(Count(r.out, "\n"), 2u) << r.out;
  };
  t["watch --top"] = [] {
    const R r = Ctl("watch " + S() + " --count 1 --interval 100 --top 1 --json" + Sock());
    EXPECT_EQ(r.rc, 0) << Show("watch --top 1", r);
    EXPECT_LE(Count(r.out, "\"outcomes\""), 1u) << r.out;
    const R all = Ctl("watch " + S() + " --count 1 --interval 100 --json" + Sock());
    EXPECT_GT(Count(all.out, "\"outcomes\""), 1u) << all.out;
  };
  t["watch --interval"] = [] {
    // Updates 1.5 s apart (the default is 1 s): a lower bound, which the daemon's clock gives.
    const R r = Ctl("watch " + S() + " --count 2 --interval 1500ms --json" + Sock());
    EXPECT_EQ(r.rc, 0) << Show("watch --interval 1500ms", r);
    const auto at = Strs(r.out, "compute_time");
    ASSERT_EQ(at.size(), 2u) << r.out;
    EXPECT_GE(UnixMs(at[1]) - UnixMs(at[0]), 1400) << r.out;
    const R bad = Ctl("watch " + S() + " --interval 2parsecs" + Sock());
    EXPECT_EQ(bad.rc, 2) << Show("watch --interval 2parsecs", bad);
  };
  // ------------------------------------------------------------ start
  AddClientCases(t, "start", [] { return "start -p " + Loop() + kCheap; });
  const auto start_json = [](const std::string& flags) {
    const R r = Ctl("start " + flags + " --json" + Sock());
    EXPECT_EQ(r.rc, 0) << Show("start " + flags, r);
    return r;
  };
  // The memory its tables may take, which grows with the table sizes asked for.
  const auto bound = [start_json](const std::string& flags) {
    return Num(start_json("-p " + Loop() + kCheap + " " + flags).out, "memory_bound_bytes");
  };
  t["start --pid"] = [start_json] {
    const R r = start_json("-p " + Loop() + kCheap);
    EXPECT_TRUE(Has(r.out, "\"pids\":[" + Loop() + "]")) << r.out;
    const R long_form = start_json("--pid " + Loop() + kCheap);
    EXPECT_TRUE(Has(long_form.out, "\"pids\":[" + Loop() + "]")) << long_form.out;
  };
  t["start --name"] = [start_json] {
    const R r = start_json("--name example_hotloop" + kCheap);
    EXPECT_TRUE(Has(r.out, Loop())) << r.out;
  };
  t["start --cgroup"] = [] {
    const R r = Ctl("start --cgroup /every-flag-no-such-cgroup --source none" + Sock());
    EXPECT_NE(r.rc, 0) << Show("start --cgroup", r);
    EXPECT_TRUE(Has(r.err, "every-flag-no-such-cgroup")) << Show("start --cgroup", r);
  };
  t["start --unit"] = [] {
    const R r = Ctl("start --unit every-flag-no-such-unit --source none" + Sock());
    EXPECT_NE(r.rc, 0) << Show("start --unit", r);
    EXPECT_TRUE(Has(r.err, "every-flag-no-such-unit")) << Show("start --unit", r);
  };
  t["start --source"] = [start_json] {
    const R r = start_json("-p " + Loop() + kCheap);
    EXPECT_EQ(Str(r.out, "source"), "BRANCH_SOURCE_NONE") << r.out;
    // ptrace on a loop of its own: the shared loop is already traced by the shared session
    // (a process has one tracer at a time).
    HotLoop other;
    const R p = start_json("-p " + std::to_string(other.pid()) + " --source ptrace -F 0");
    EXPECT_EQ(Str(p.out, "source"), "BRANCH_SOURCE_PTRACE") << p.out;
    Ctl("stop " + Str(p.out, "name") + Sock());
  };
  t["start --hpt-entries"] = [bound] {
    EXPECT_GT(bound("--hpt-entries 65536"), bound("--hpt-entries 64"));
  };
  t["start --osp-entries"] = [bound] {
    EXPECT_GT(bound("--osp-entries 1000000"), bound("--osp-entries 64"));
  };
  t["start --max-descendants"] = [bound] {
    EXPECT_GT(bound("--inherit --max-descendants 8"), bound("--inherit --max-descendants 1"));
    const R r = Ctl("start -p " + Loop() + " --source none --max-descendants 8" + Sock());
    EXPECT_EQ(r.rc, 2) << Show("start --max-descendants without --inherit", r);
    EXPECT_TRUE(Has(r.err, "--max-descendants does not apply")) << r.err;
  };
  t["start --inherit"] = [bound] { EXPECT_GT(bound("--inherit"), bound("")); };
  t["start --no-inherit"] = [bound] {
    // Not following children is the default (pipeline::kSessionDefaults): the same bound.
    EXPECT_EQ(bound("--no-inherit"), bound(""));
    const R both = Ctl("start -p " + Loop() + kCheap + " --inherit --no-inherit" + Sock());
    EXPECT_EQ(both.rc, 2) << Show("start --inherit --no-inherit", both);
    EXPECT_TRUE(Has(both.err, "not both")) << both.err;
  };
  t["start --freq"] = [start_json] {
    // A stack-only session: -F 199 takes samples, while -F 0 turns stacks off, which leaves a
    // --source none session nothing to collect, so the daemon refuses it saying why.
    const std::string on =
        Str(start_json("-p " + Loop() + " --source none --freq 199").out, "name");
    const R r = PollCtl("stats " + on + " --json" + Sock(),
                        [](const R& x) { return Num(x.out, "stack_samples") > 0; });
    EXPECT_GT(Num(r.out, "stack_samples"), 0) << r.out;
    const R off = Ctl("start -p " + Loop() + " --source none -F 0" + Sock());
    EXPECT_NE(off.rc, 0) << Show("start --source none -F 0", off);
    EXPECT_TRUE(Has(off.err, "stack_hz = 0")) << Show("start --source none -F 0", off);
    // The older spelling is the same flag.
    const R old = Ctl("start -p " + Loop() + " --source none --stack-hz 0" + Sock());
    EXPECT_TRUE(Has(old.err, "stack_hz = 0")) << Show("start --stack-hz 0", old);
    EXPECT_EQ(Ctl("start -p " + Loop() + " --source none --stack-hz 199" + Sock()).rc, 0);
  };
  t["start --duration"] = [start_json] {
    const std::string name =
        Str(start_json("-p " + Loop() + kCheap + " --duration 1s").out, "name");
    const R r = PollCtl("sessions --json" + Sock(), [&](const R& x) {
      return Has(x.out, "\"name\":\"" + name + "\",\"pids\":[" + Loop() +
                            "],\"state\":\"SESSION_STATE_STOPPED\"");
    });
    EXPECT_TRUE(Has(r.out, "\"name\":\"" + name + "\",\"pids\":[" + Loop() +
                               "],\"state\":\"SESSION_STATE_STOPPED\""))
        << r.out;
    const R frac = Ctl("start -p " + Loop() + " --duration 1500ms" + Sock());
    EXPECT_EQ(frac.rc, 2) << Show("start --duration 1500ms", frac);
    EXPECT_TRUE(Has(frac.err, "whole seconds")) << frac.err;
  };
  t["start --max-length"] = [] {
    // Branches from ptrace bursts on a loop of its own (the shared loop has its tracer).
    HotLoop other;
    const R r = Ctl("start -p " + std::to_string(other.pid()) +
                    " --source ptrace -F 0 --max-length 2" + Sock());
    EXPECT_EQ(r.rc, 0) << Show("start --max-length 2", r);
    const std::string id = r.out.substr(0, r.out.find('\n'));
    const R paths = PollCtl("paths " + id + " --json" + Sock(),
                            [](const R& x) { return Count(x.out, "\"outcomes\"") >= 2; });
    const auto lengths = Nums(paths.out, "length");
    ASSERT_FALSE(lengths.empty()) << paths.out;
    for (double l : lengths) EXPECT_LE(l, 2) << paths.out;
    Ctl("stop " + id + Sock());
  };
  t["start --max-depth"] = [] {
    const R r = Ctl("start -p " + Loop() + " --source none --max-depth 1" + Sock());
    EXPECT_EQ(r.rc, 0) << Show("start --max-depth 1", r);
    const std::string id = r.out.substr(0, r.out.find('\n'));
    PollCtl("stats " + id + " --json" + Sock(),
            [](const R& x) { return Num(x.out, "stack_samples") > 20; });
    // Depth 1: roots and their children only, so no node's parent has a parent; the shared
    // session's tree (no bound) has deeper nodes.
    const auto deepest = [](const std::string& json) {
      std::map<double, double> parent_of;
      const auto ids = Nums(json, "id"), parents = Nums(json, "parent_id");
      EXPECT_EQ(ids.size(), parents.size()) << json;
      for (size_t i = 0; i < ids.size() && i < parents.size(); ++i) parent_of[ids[i]] = parents[i];
      int most = 0;
      for (const auto& [node, parent] : parent_of) {
        int depth = 0;
        for (double p = parent; p != 0 && depth < 1000; ++depth) {
          const auto up = parent_of.find(p);
          p = up == parent_of.end() ? 0 : up->second;
        }
        most = std::max(most, depth);
      }
      return std::make_pair(parent_of.size(), most);
    };
    const R tree = Ctl("tree " + id + " --json" + Sock());
    const auto [nodes, depth] = deepest(tree.out);
    EXPECT_GT(nodes, 0u) << tree.out;
    EXPECT_LE(depth, 1) << tree.out;
    EXPECT_GT(deepest(Ctl("tree " + S() + " --json" + Sock()).out).second, 1);
    Ctl("stop " + id + Sock());
  };
  (*gaps)["start --step-mode"] = {"start -p LOOP --source ptrace --step-mode step",
                                  "how a burst steps leaves no trace in any answer"};
  (*gaps)["start --call-graph"] = {"start -p LOOP --source none --call-graph fp",
                                   "fp and dwarf differ only in which frames a tree shows, "
                                   "which depends on how the target was built"};
  (*gaps)["start --path-kind"] = {"start -p LOOP --path-kind wpp",
                                  "the kind is not echoed; its paths differ in ways that "
                                  "depend on the target's loops"};
  (*gaps)["start --extension"] = {"start -p LOOP --path-kind extended-loops --extension 2",
                                  "as --path-kind"};
  (*gaps)["start --window"] = {"start -p LOOP --source ptrace --window 16",
                               "window length shows only in per-window statistics the API "
                               "does not give"};
  (*gaps)["start --burst-rate"] = {"start -p LOOP --source ptrace --burst-rate 5",
                                   "a rate shows only as a count over time (a timed assertion)"};
  (*gaps)["start --max-stopped"] = {"start -p LOOP --source ptrace --max-stopped 0.01",
                                    "a cap on stopped time shows only as a share of wall time"};
  // ------------------------------------------------------------ export
  AddClientCases(t, "export", [] { return "export " + S() + " -o " + Tmp("x.pb.gz"); });
  t["export --output"] = [] {
    const std::string f = Tmp("o.pb.gz");
    const R r = Ctl("export " + S() + " -o " + f + Sock());
    EXPECT_EQ(r.rc, 0) << Show("export -o", r);
    const std::string data = ReadFile(f);
    ASSERT_GE(data.size(), 2u);
    EXPECT_EQ(static_cast<unsigned char>(data[0]), 0x1f);  // gzip
    EXPECT_EQ(static_cast<unsigned char>(data[1]), 0x8b);
    const std::string g = Tmp("long.pb.gz");
    EXPECT_EQ(Ctl("export " + S() + " --output " + g + Sock()).rc, 0);
    EXPECT_FALSE(ReadFile(g).empty());
  };
  t["export --paths"] = [] {
    const std::string with = Tmp("p1.pb.gz"), without = Tmp("p0.pb.gz");
    EXPECT_EQ(Ctl("export " + S() + " --paths -o " + with + Sock()).rc, 0);
    EXPECT_EQ(Ctl("export " + S() + " -o " + without + Sock()).rc, 0);
    // The second sample type ("path_count") is named in the profile's string table.
    const R a = Shell("gzip -dc " + with + " | grep -ac path_count");
    const R b = Shell("gzip -dc " + without + " | grep -ac path_count");
    EXPECT_GT(std::atoi(a.out.c_str()), std::atoi(b.out.c_str())) << a.out << " " << b.out;
  };
  t["export --format"] = [] {
    const std::string lbr = Tmp("f.data"), bolt = Tmp("f.fdata");
    const R r = Ctl("export --format perf-lbr " + Pbs() + " -o " + lbr);
    EXPECT_EQ(r.rc, 0) << Show("export --format perf-lbr", r);
    EXPECT_EQ(ReadFile(lbr).substr(0, 8), "PERFILE2");
    const R b = Ctl("export --format bolt " + Pbs() + " -o " + bolt + " --json");
    EXPECT_EQ(b.rc, 0) << Show("export --format bolt", b);
    EXPECT_EQ(Str(b.out, "format"), "EXPORT_FORMAT_BOLT_FDATA") << b.out;
    EXPECT_GT(Num(b.out, "lines"), 0) << b.out;
    // A session's profile as OTLP: a protobuf, not gzip (its first byte is a field tag).
    const std::string otlp = Tmp("f.otlp");
    const R o = Ctl("export --format otlp " + S() + " -o " + otlp + " --json" + Sock());
    EXPECT_EQ(o.rc, 0) << Show("export --format otlp", o);
    EXPECT_EQ(Str(o.out, "format"), "EXPORT_FORMAT_OTLP") << o.out;
    const std::string data = ReadFile(otlp);
    ASSERT_FALSE(data.empty());
    EXPECT_NE(static_cast<unsigned char>(data[0]), 0x1f);
  };
  t["export --entries"] = [] {
    const R small =
        Ctl("export --format perf-lbr " + Pbs() + " -o " + Tmp("e4.data") + " --entries 4 --json");
    const R big = Ctl("export --format perf-lbr " + Pbs() + " -o " + Tmp("e32.data") + " --json");
    EXPECT_EQ(small.rc, 0) << Show("export --entries 4", small);
    EXPECT_EQ(big.rc, 0) << Show("export", big);
    // Samples of 4 taken branches: about 8 times as many as of 32. (The export's own "windows"
    // is 0 for an exact trace, which has none; the samples are counted by reading them back.)
    const R a4 = Ctl("analyze " + Tmp("e4.data") + " --json --decode-only");
    const R a32 = Ctl("analyze " + Tmp("e32.data") + " --json --decode-only");
    EXPECT_GT(Num(a32.out, "samples"), 0) << a32.out;
    EXPECT_GT(Num(a4.out, "samples"), 4 * Num(a32.out, "samples")) << a4.out << a32.out;
  };
  t["export --binary"] = [] {
    const R r = Ctl("export --format bolt " + Pbs() + " -o " + Tmp("b.fdata") +
                    " --binary /nonexistent/every-flag-binary");
    EXPECT_NE(r.rc, 0) << Show("export --binary", r);
    EXPECT_TRUE(Has(r.all(), "/nonexistent/every-flag-binary")) << Show("export --binary", r);
  };
  t["export --pid"] = [] {
    const R r =
        Ctl("export --format perf-lbr " + S() + " -o " + Tmp("pid.data") + " -p 1 --json" + Sock());
    EXPECT_NE(r.rc, 0) << Show("export -p 1 (not in the session)", r);
    const R ok = Ctl("export --format perf-lbr " + S() + " -o " + Tmp("pid2.data") + " --pid " +
                     Loop() + " --json" + Sock());
    EXPECT_EQ(ok.rc, 0) << Show("export --pid LOOP", ok);
    EXPECT_GT(Num(ok.out, "windows"), 0) << ok.out;
  };
  // ------------------------------------------------------------ caps
  AddClientCases(t, "caps", [] { return std::string("caps"); });
  const Check caps_local_json = t["caps --json"];
  t["caps --json"] = [caps_local_json] {
    caps_local_json();
    const R local = Ctl("caps --json");
    EXPECT_EQ(local.rc, 0) << Show("caps --json", local);
    EXPECT_TRUE(ValidJson(local.out)) << local.out;
    // The same document as the daemon's (v1::Capabilities), without a daemon version.
    EXPECT_TRUE(Has(local.out, "\"running_as_root\":true")) << local.out;
    EXPECT_TRUE(Has(local.out, "\"daemon_version\":\"\"")) << local.out;
    // Without a daemon, the connection flags would be ignored: refused instead.
    const R r = Ctl("caps --timeout 5s");
    EXPECT_EQ(r.rc, 2) << Show("caps --timeout without --socket", r);
    EXPECT_TRUE(Has(r.err, "--timeout does not apply")) << r.err;
  };
  // ------------------------------------------------------------ analyze
  const auto analyze = [](const std::string& flags) {
    const R r = Ctl("analyze " + Pbs() + " --json " + flags);
    EXPECT_TRUE(r.rc == 0 || r.rc == 3) << Show("analyze " + flags, r);
    EXPECT_TRUE(ValidJson(r.out)) << r.out.substr(0, 2000);
    return r;
  };
  t["analyze --json"] = [analyze] { analyze(""); };
  t["analyze --top"] = [analyze] {
    const R one = analyze("--top 1"), all = analyze("");
    EXPECT_EQ(Count(one.out, "\"outcomes\""), 1u) << one.out;
    EXPECT_GT(Count(all.out, "\"outcomes\""), 1u) << all.out;
  };
  t["analyze --pid"] = [analyze] {
    const R all = analyze("");
    const std::string pid = std::to_string(static_cast<long long>(Num(all.out, "pid")));
    // One process report each (every row names its process's comm too: count the reports).
    EXPECT_EQ(Count(analyze("-p " + pid).out, "\"hot_paths\""), 1u);
    EXPECT_EQ(Count(analyze("--pid 1").out, "\"hot_paths\""), 0u);
  };
  t["analyze --via-pt"] = [analyze] {
    EXPECT_EQ(Str(analyze("--via-pt").out, "format"), "pbs/synthesized-pt");
    EXPECT_EQ(Str(analyze("").out, "format"), "pbs");
  };
  t["analyze --decode-only"] = [analyze] {
    const R r = analyze("--decode-only");
    EXPECT_GT(Num(r.out, "events"), 0) << r.out;
    EXPECT_EQ(Count(r.out, "\"hot_paths\""), 0u) << r.out;
    EXPECT_GT(Count(analyze("").out, "\"hot_paths\""), 0u);
  };
  t["analyze --window"] = [analyze] {
    // On a windowed recording (LBR samples: the exact trace exported as perf-lbr), subpaths are
    // at most the window long. (An exact .pbs has no windows: --window does not apply to it.)
    const std::string lbr = Tmp("w.data");
    ASSERT_EQ(Ctl("export --format perf-lbr " + Pbs() + " -o " + lbr).rc, 0);
    const auto analyze_lbr = [&](const std::string& flags) {
      const R x = Ctl("analyze " + lbr + " --json " + flags);
      EXPECT_EQ(x.rc, 0) << Show("analyze " + lbr + " " + flags, x);
      return x;
    };
    const R r = analyze_lbr("--window 4");
    const size_t at = r.out.find("\"hot_subpaths\"");
    ASSERT_NE(at, std::string::npos) << r.out;
    const std::string sub = r.out.substr(at, r.out.find("\"hot_call_pairs\"") - at);
    const auto lengths = Nums(sub, "length");
    ASSERT_FALSE(lengths.empty()) << sub;
    for (double l : lengths) EXPECT_LE(l, 4) << sub;
    EXPECT_NE(analyze_lbr("").out, r.out);
  };
  t["analyze --binary-dir"] = [] {
    // A trace of a copy of the example that is then moved away under another name: its
    // functions are named only when --binary-dir finds it (by build-id). The exact tracer's
    // .pbs records no build-ids, so the trace goes through its perf-lbr export, whose MMAP2
    // records carry them (read from the binary while it is still in place).
    fs::create_directories(Tmp("bd/a"));
    fs::create_directories(Tmp("bd/b"));
    fs::copy_file(kBin + "/example_loop_static", Tmp("bd/a/loopcopy"),
                  fs::copy_options::overwrite_existing);
    const R tr = Ctl("trace --exact -o " + Tmp("bd.pbs") + " -- " + Tmp("bd/a/loopcopy") + " 300");
    ASSERT_EQ(tr.rc, 0) << Show("trace", tr);
    ASSERT_EQ(Ctl("export --format perf-lbr " + Tmp("bd.pbs") + " -o " + Tmp("bd.data")).rc, 0);
    fs::rename(Tmp("bd/a/loopcopy"), Tmp("bd/b/renamed"));
    const R without = Ctl("analyze --json " + Tmp("bd.data"));
    const R with = Ctl("analyze --json " + Tmp("bd.data") + " --binary-dir " + Tmp("bd/b"));
    EXPECT_FALSE(Has(without.out, "\"function\":\"spin\"")) << without.out.substr(0, 2000);
    EXPECT_TRUE(Has(with.out, "\"function\":\"spin\"")) << Show("analyze --binary-dir", with);
  };
  t["analyze --max-stream-mb"] = [] {
    // From a pipe, at most N MiB are read: 2 MiB of a stream over a 1 MiB bound is refused.
    // The stream starts with the .pbs magic (zeros alone are refused at once as no recording);
    // under a 3 MiB bound the same stream is read whole, and refused for its content instead.
    const std::string stream = "{ printf 'PBS\\032'; head -c 2097152 /dev/zero; } | " + kBin +
                               "/pathctl analyze - --max-stream-mb ";
    const R r = Shell(stream + "1");
    EXPECT_NE(r.rc, 0) << Show("analyze --max-stream-mb 1", r);
    EXPECT_TRUE(Has(r.err, "longer than the 1 MiB")) << Show("analyze", r);
    const R roomy = Shell(stream + "3");
    EXPECT_NE(roomy.rc, 0) << Show("analyze --max-stream-mb 3", roomy);
    EXPECT_FALSE(Has(roomy.err, "MiB")) << Show("analyze --max-stream-mb 3", roomy);
  };
  // ------------------------------------------------------------ trace
  t["trace --exact"] = [] {
    const R r = Ctl("trace -o " + Tmp("t0.pbs") + " -- " + kBin + "/example_loop_static 10");
    EXPECT_EQ(r.rc, 2) << Show("trace without --exact", r);
    EXPECT_TRUE(Has(r.err, "pass --exact")) << r.err;
    EXPECT_EQ(
        Ctl("trace --exact -o " + Tmp("t1.pbs") + " -- " + kBin + "/example_loop_static 10").rc, 0);
  };
  t["trace --output"] = [] {
    const R r =
        Ctl("trace --exact --output " + Tmp("t2.pbs") + " -- " + kBin + "/example_loop_static 10");
    EXPECT_EQ(r.rc, 0) << Show("trace --output", r);
    EXPECT_EQ(Ctl("analyze " + Tmp("t2.pbs") + " --json").rc, 0);
  };
  t["trace --json"] = [] {
    const R r =
        Ctl("trace --exact -o " + Tmp("t3.pbs") + " --json -- " + kBin + "/example_loop_static 10");
    EXPECT_EQ(r.rc, 0) << Show("trace --json", r);
    EXPECT_TRUE(ValidJson(r.out)) << r.out;
    EXPECT_GT(Num(r.out, "branches"), 0) << r.out;
  };
  t["trace --max-steps"] = [] {
    const R r = Ctl("trace --exact -o " + Tmp("t4.pbs") + " --max-steps 1000 --json -- " + kBin +
                    "/example_loop_static 3000");
    EXPECT_EQ(r.rc, 0) << Show("trace --max-steps", r);
    EXPECT_LE(Num(r.out, "instructions"), 1000) << r.out;
    EXPECT_TRUE(Has(r.out, "\"step_limit_hit\":true")) << r.out;
  };
  t["trace --step-mode"] = [] {
    // The same branches whichever way the program is moved on; single steps have no legs.
    const R step = Ctl("trace --exact -o " + Tmp("t7.pbs") + " --step-mode step -- " + kBin +
                       "/example_loop_static 300");
    EXPECT_EQ(step.rc, 0) << Show("trace --step-mode step", step);
    EXPECT_TRUE(Has(step.err, "(step: ") && Has(step.err, " 0 breakpoint legs")) << step.err;
    const R blocks = Ctl("trace --exact -o " + Tmp("t8.pbs") + " --step-mode auto -- " + kBin +
                         "/example_loop_static 300");
    EXPECT_EQ(blocks.rc, 0) << Show("trace --step-mode auto", blocks);
    EXPECT_EQ(Num(Ctl("analyze " + Tmp("t7.pbs") + " --json --decode-only").out, "events"),
              Num(Ctl("analyze " + Tmp("t8.pbs") + " --json --decode-only").out, "events"));
    const R bad = Ctl("trace --exact -o " + Tmp("t9.pbs") + " --step-mode sometimes -- " + kBin +
                      "/example_loop_static 3");
    EXPECT_EQ(bad.rc, 2) << Show("trace --step-mode sometimes", bad);
    EXPECT_TRUE(Has(bad.err, "--step-mode must be auto, breakpoints, int3 or step")) << bad.err;
  };
  t["trace --batch-events"] = [] {
    EXPECT_EQ(Ctl("trace --exact -o " + Tmp("t5.pbs") + " --batch-events 16 -- " + kBin +
                  "/example_loop_static 300")
                  .rc,
              0);
    EXPECT_EQ(
        Ctl("trace --exact -o " + Tmp("t6.pbs") + " -- " + kBin + "/example_loop_static 300").rc,
        0);
    // More, smaller batches of the same branches.
    const R small = Ctl("analyze " + Tmp("t5.pbs") + " --json --decode-only");
    const R big = Ctl("analyze " + Tmp("t6.pbs") + " --json --decode-only");
    EXPECT_EQ(Num(small.out, "events"), Num(big.out, "events"));
    EXPECT_GT(Num(small.out, "windows"), Num(big.out, "windows")) << small.out << big.out;
  };
  // ------------------------------------------------------------ bursts
  const auto bursts = [](const std::string& flags) {
    const R r = Ctl("bursts -p " + Loop() + " --duration 1s --json " + flags);
    EXPECT_TRUE(r.rc == 0 || r.rc == 3) << Show("bursts " + flags, r);
    EXPECT_TRUE(ValidJson(r.out)) << r.out;
    return r;
  };
  t["bursts --json"] = [bursts] { bursts(""); };
  t["bursts --pid"] = [bursts] {
    EXPECT_EQ(Num(bursts("").out, "pid"), std::atof(Loop().c_str()));
    const R none = Ctl("bursts --pid 2147483000 --duration 1s");
    EXPECT_NE(none.rc, 0) << Show("bursts on no process", none);
    EXPECT_TRUE(Has(none.err, "2147483000")) << none.err;
  };
  t["bursts --duration"] = [] {
    const R r = Ctl("bursts -p " + Loop() + " --duration 1500ms --json");
    EXPECT_GE(Num(r.out, "elapsed"), 1.45) << Show("bursts --duration 1500ms", r);  // "1.5s"
  };
  t["bursts --burst-rate"] = [bursts] {
    const R r = bursts("--burst-rate 200");
    EXPECT_GT(Num(r.out, "bursts"), 0) << r.out;
    const R old = Ctl("bursts -p " + Loop() + " --duration 200ms --rate 20");
    EXPECT_TRUE(old.rc == 0 || old.rc == 3) << Show("bursts --rate (older spelling)", old);
  };
  t["bursts --step-mode"] = [bursts] {
    EXPECT_EQ(Str(bursts("--step-mode step").out, "step_mode"), "STEP_MODE_SINGLE_STEP");
  };
  t["bursts --verify"] = [] {
    const R r = Ctl("bursts -p " + Loop() + " --duration 1s --step-mode emulate --verify");
    EXPECT_TRUE(r.rc == 0 || r.rc == 3) << Show("bursts --verify", r);
    // The hot loop makes no system call: every checked window is the real thread's.
    EXPECT_TRUE(Has(r.err, "verified by single steps:")) << r.err;
    EXPECT_TRUE(Has(r.err, " 0 diverged, 0 with other registers")) << r.err;
    const R step = Ctl("bursts -p " + Loop() + " --duration 1s --step-mode step --verify");
    EXPECT_EQ(step.rc, 2) << Show("bursts --verify with single steps", step);
    EXPECT_TRUE(Has(step.err, "--verify checks emulated windows")) << step.err;
  };
  t["bursts --top"] = [bursts] {
    const R r = bursts("--top 1 --burst-rate 100");
    EXPECT_LE(Count(r.out, "\"share\""), 1u) << r.out;
    EXPECT_EQ(Count(bursts("--top 0").out, "\"share\""), 0u);
  };
  t["bursts --output"] = [] {
    const std::string f = Tmp("bursts.pbs");
    const R r = Ctl("bursts -p " + Loop() + " --duration 1s --burst-rate 100 -o " + f);
    EXPECT_EQ(r.rc, 0) << Show("bursts -o", r);
    const R a = Ctl("analyze " + f + " --json --decode-only");
    EXPECT_GT(Num(a.out, "windows"), 0) << Show("analyze of bursts -o", a);
  };
  t["bursts --window"] = [] {
    const std::string f = Tmp("bursts-w.pbs");
    const R r = Ctl("bursts -p " + Loop() + " --duration 1s --burst-rate 100 --window 4 -o " + f);
    EXPECT_EQ(r.rc, 0) << Show("bursts --window 4", r);
    const R a = Ctl("analyze " + f + " --json --decode-only");
    // Each window holds at most 4 taken branches.
    EXPECT_GT(Num(a.out, "windows"), 0) << a.out;
    EXPECT_LE(Num(a.out, "taken"), 4 * Num(a.out, "windows")) << a.out;
  };
  (*gaps)["bursts --max-stopped"] = {"bursts -p LOOP --duration 200ms --max-stopped 0.01",
                                     "a cap on stopped time shows only as a share of wall time"};
  (*gaps)["bursts --seed"] = {"bursts -p LOOP --duration 200ms --seed 7",
                              "the seed jitters gaps between bursts on a live target: no two "
                              "runs see the same windows anyway"};
  // ------------------------------------------------------------ run
  const auto run = [](const std::string& flags) {
    const R r = Ctl("run --json " + flags);
    EXPECT_EQ(r.rc, 0) << Show("run " + flags, r);
    EXPECT_TRUE(ValidJson(r.out)) << r.out.substr(0, 2000);
    return r;
  };
  // About half a second of the loop (a round is a few microseconds), so that every rate has
  // samples to count.
  const std::string hot = kBin + "/example_hotloop 150000";
  t["run --json"] = [run, hot] { run("--source none -- " + hot); };
  t["run --source"] = [run, hot] {
    EXPECT_EQ(Str(run("--source none -- " + hot).out, "source"), "BRANCH_SOURCE_NONE");
  };
  t["run --freq"] = [run, hot] {
    // -F 0 turns stacks off: with --source none that is nothing to collect, refused.
    const R off = Ctl("run --json --source none -F 0 -- " + hot);
    EXPECT_NE(off.rc, 0) << Show("run --source none -F 0", off);
    EXPECT_TRUE(Has(off.err, "stack_hz = 0")) << Show("run --source none -F 0", off);
    const auto low = Num(run("--source none -F 20 -- " + hot).out, "stack_samples");
    const auto high = Num(run("--source none --freq 499 -- " + hot).out, "stack_samples");
    EXPECT_GT(high, low);
    // The older spelling is the same flag.
    const R old = Ctl("run --json --source none --stack-hz 0 -- " + hot);
    EXPECT_TRUE(Has(old.err, "stack_hz = 0")) << Show("run --stack-hz 0", old);
  };
  t["run --duration"] = [run] {
    // sleep 60 ends at the duration, by SIGTERM (exit status 128 + 15).
    const R r = run("--source none -F 1 --duration 500ms -- sleep 60");
    EXPECT_EQ(Num(r.out, "exit_status"), 143) << r.out;
    EXPECT_EQ(Str(r.out, "state"), "SESSION_STATE_STOPPED") << r.out;
  };
  t["run --output"] = [hot] {
    // The report goes to the file alone; the command keeps standard output (with --json too).
    const std::string file = Tmp("run-report.json");
    const R r = Ctl("run --json --source none -o " + file + " -- " + hot);
    EXPECT_EQ(r.rc, 0) << Show("run -o", r);
    EXPECT_FALSE(Has(r.out, "hot_paths")) << r.out;
    std::ifstream in(file);
    const std::string report((std::istreambuf_iterator<char>(in)), {});
    EXPECT_TRUE(ValidJson(report)) << report.substr(0, 2000);
    EXPECT_TRUE(Has(report, "\"hot_methods\"")) << report.substr(0, 2000);
    const R text = Ctl("run --source none --output " + file + " -- " + hot);
    EXPECT_EQ(text.rc, 0) << Show("run --output", text);
    std::ifstream again(file);
    const std::string report_text((std::istreambuf_iterator<char>(again)), {});
    EXPECT_TRUE(Has(report_text, "hot methods")) << report_text.substr(0, 2000);
    const R bad = Ctl("run --source none -o /nonexistent/dir/r.txt -- " + hot);
    EXPECT_NE(bad.rc, 0) << Show("run -o into a missing folder", bad);
    EXPECT_TRUE(Has(bad.err, "/nonexistent/dir/r.txt")) << Show("run -o", bad);
  };
  t["run --pid"] = [run] {
    const R r = run("--source none -F 99 --duration 1s -p " + Loop());
    EXPECT_TRUE(Has(r.out, "\"pids\":[" + Loop() + "]")) << r.out;
  };
  t["run --top"] = [run, hot] {
    const R r = run("--source none --freq 499 --top 1 -- " + hot);
    EXPECT_LE(Count(r.out, "\"self\":{"), 1u) << r.out;
    EXPECT_GT(Count(run("--source none --freq 499 -- " + hot).out, "\"self\":{"), 1u);
  };
  // A shell that runs the loop twice, as its children.
  const std::string forks =
      "-- sh -c '" + kBin + "/example_hotloop 100000; " + kBin + "/example_hotloop 100000'";
  t["run --inherit"] = [run, forks] {
    EXPECT_GT(Count(run("--source none --inherit " + forks).out, "\"stack_samples\""), 1u);
    // Following children is run's default (as perf record's), unlike start's.
    EXPECT_GT(Count(run("--source none " + forks).out, "\"stack_samples\""), 1u);
  };
  t["run --no-inherit"] = [run, forks] {
    EXPECT_EQ(Count(run("--source none --no-inherit " + forks).out, "\"stack_samples\""), 1u);
    const R both = Ctl("run --inherit --no-inherit " + forks);
    EXPECT_EQ(both.rc, 2) << Show("run --inherit --no-inherit", both);
  };
  t["run --max-descendants"] = [run, forks] {
    // The shell and at most one of its two children.
    EXPECT_LE(
        Count(run("--source none --inherit --max-descendants 1 " + forks).out, "\"stack_samples\""),
        2u);
  };
  // The session flags run shares with start (cli/pathctl/session_flags.h): one declaration, one
  // reading into the session's config, whose effect start's cases show.
  for (const char* shared : {"max-stopped 0.01", "path-kind wpp", "extension 3", "max-length 8",
                             "hpt-entries 1024", "osp-entries 1000", "max-depth 8"}) {
    const std::string flag = std::string(shared).substr(0, std::string(shared).find(' '));
    (*gaps)["run --" + flag] = {"run --source none -F 1 --" + std::string(shared) + " -- /bin/true",
                                "start's declaration and default; start --" + flag +
                                    " shows the effect (or is a gap there)"};
  }
  (*gaps)["run --step-mode"] = {"run --source ptrace --step-mode step -- /bin/true",
                                "how a burst steps leaves no trace in the report"};
  (*gaps)["run --burst-rate"] = {"run --source ptrace --burst-rate 5 -- /bin/true",
                                 "a rate shows only as a count over time (a timed assertion)"};
  (*gaps)["run --window"] = {"run --source ptrace --window 16 -- /bin/true",
                             "window length shows only in per-window statistics"};
  t["run --call-graph"] = [run] {
    // example_deep_stack spins under about 35 KiB of stack, built without frame pointers: the
    // DWARF walk reaches main only when the stack copy holds it; frame pointers never do.
    const std::string deep = kBin + "/example_deep_stack 1.5";
    const R small = run("--source none -F 199 --call-graph dwarf,8192 -- " + deep);
    const R large = run("--source none -F 199 --call-graph dwarf,65536 -- " + deep);
    const R fp = run("--source none -F 199 --call-graph fp -- " + deep);
    EXPECT_EQ(Num(large.out, "stack_copy_bytes"), 65536) << large.out.substr(0, 1500);
    using pathprof::testing::ShareUnder;
    EXPECT_LT(ShareUnder(small.out, "main"), 0.05) << Show("dwarf,8192", small);
    EXPECT_GT(ShareUnder(large.out, "main"), 0.9) << Show("dwarf,65536", large);
    EXPECT_LT(ShareUnder(fp.out, "main"), 0.5) << Show("fp", fp);
    // A size out of perf's range, or on the frame-pointer walk, is refused before anything runs.
    for (const char* bad : {"dwarf,100", "dwarf,70000", "fp,8192", "dwarf,8k"}) {
      const R r = Ctl(std::string("run --source none --call-graph ") + bad + " -- /bin/true");
      EXPECT_EQ(r.rc, 2) << Show(bad, r);
    }
  };
  // ------------------------------------------------------------ sim
  // Deterministic: a flag's effect is a different result from the same run without it, or a
  // field that echoes it.
  const std::string base = "sim --json --workload loops --branches 200000 ";
  const auto sim = [base](const std::string& flags) {
    const R r = Ctl(base + flags);
    EXPECT_EQ(r.rc, 0) << Show("sim " + flags, r);
    EXPECT_TRUE(ValidJson(r.out)) << r.out.substr(0, 2000);
    return r;
  };
  const auto differs = [sim](const std::string& flags, const std::string& base_flags = "") {
    return [=] { EXPECT_NE(sim(flags).out, sim(base_flags).out) << flags; };
  };
  t["sim --json"] = [sim] { sim(""); };
  t["sim --workload"] = [sim] {
    EXPECT_TRUE(Has(Str(sim("").out, "source"), "workload loops")) << sim("").out;
    EXPECT_TRUE(Has(Str(sim("--workload branchy").out, "source"), "workload branchy"));
  };
  t["sim --seed"] = [sim] { EXPECT_TRUE(Has(Str(sim("--seed 7").out, "source"), "seed 7")); };
  for (const char* knob : {"--functions 3", "--diamonds 1", "--correlation 0.9"})
    t[std::string("sim ") + std::string(knob).substr(0, std::string(knob).find(' '))] =
        differs(knob);
  // The loops workload makes no calls, so the call knobs show on the calls workload.
  for (const char* knob : {"--call-levels 1", "--skew 3", "--zipf 2"})
    t[std::string("sim ") + std::string(knob).substr(0, std::string(knob).find(' '))] = [knob] {
      const std::string calls = "sim --json --workload calls --branches 200000";
      const R with = Ctl(calls + " " + knob);
      EXPECT_EQ(with.rc, 0) << Show(calls + " " + knob, with);
      EXPECT_NE(with.out, Ctl(calls).out) << knob;
    };
  t["sim --pbs"] = [] {
    const R r = Ctl("sim --json --pbs " + Pbs());
    EXPECT_EQ(r.rc, 0) << Show("sim --pbs", r);
    EXPECT_EQ(Str(r.out, "source"), "pbs " + Pbs()) << r.out;
  };
  t["sim --branches"] = [sim] { EXPECT_EQ(Num(sim("").out, "branches"), 200000); };
  t["sim --paths"] = [sim] { EXPECT_EQ(Str(sim("--paths wpp").out, "paths"), "wpp"); };
  t["sim --hpt"] = [sim] {
    const R r = sim("--hpt 64x2");
    EXPECT_EQ(Num(r.out, "hpt_entries"), 64) << r.out;
    EXPECT_EQ(Num(r.out, "hpt_ways"), 2) << r.out;
  };
  t["sim --index"] = [sim] {
    EXPECT_EQ(Str(sim("--index start").out, "hpt_index"), "HPT_INDEX_START");
  };
  t["sim --replacement"] = [sim] {
    EXPECT_EQ(Str(sim("--replacement lru").out, "hpt_replacement"), "HPT_REPLACEMENT_LRU");
  };
  t["sim --metric"] = [sim] {
    EXPECT_EQ(Str(sim("--metric instructions").out, "metric"), "METRIC_INSTRUCTIONS");
  };
  t["sim --window"] = [sim] {
    EXPECT_EQ(Str(sim("--window 32 --period 10").out, "mode"), "SIM_MODE_WINDOW");
  };
  t["sim --period"] = [sim] {
    EXPECT_EQ(Num(sim("--window 32 --period 10").out, "sampling_period"), 10);
  };
  t["sim --sample-interval"] = [sim] {
    const R r = sim("--sample-interval 100");
    EXPECT_EQ(Str(r.out, "mode"), "SIM_MODE_BURSTY") << r.out;
    EXPECT_NE(Num(r.out, "sampling_period"),
              Num(sim("--sample-interval 1000").out, "sampling_period"));
  };
  t["sim --burst-length"] = [sim] {
    // Bursts of N branches every --sample-interval: the period is (interval + N) / N. (With no
    // interval every branch is sampled whatever the burst length: a period of 1.)
    EXPECT_NE(Num(sim("--sample-interval 1000 --burst-length 10").out, "sampling_period"),
              Num(sim("--sample-interval 1000 --burst-length 1000").out, "sampling_period"));
  };
  t["sim --top"] = [sim] {
    const R r = sim("--top 2");
    const size_t at = r.out.find("\"top\":[");
    ASSERT_NE(at, std::string::npos) << r.out;
    EXPECT_EQ(Count(r.out.substr(at), "\"exact_rank\""), 2u) << r.out;
  };
  t["sim --dynamic-window"] = [sim] {
    EXPECT_EQ(Num(sim("--dynamic-window 50000").out, "dynamic_window_branches"), 50000);
  };
  t["sim --sweep"] = [] {
    const R r = Ctl("sim --json --sweep --workload loops --branches 100000 --sizes 64 --ways 2,4");
    EXPECT_EQ(r.rc, 0) << Show("sim --sweep", r);
    EXPECT_EQ(Count(r.out, "\"hpt_ways\""), 2u) << r.out;
    const R hpt = Ctl("sim --sweep --hpt 64x2 --branches 1000");
    EXPECT_EQ(hpt.rc, 2) << Show("sim --sweep --hpt", hpt);
    EXPECT_TRUE(Has(hpt.err, "--hpt does not go with --sweep")) << hpt.err;
  };
  t["sim --sizes"] = [] {
    const R r =
        Ctl("sim --json --sweep --workload loops --branches 100000 --sizes 64,128 --ways 2");
    EXPECT_EQ(Nums(r.out, "hpt_entries"), (std::vector<double>{64, 128})) << r.out;
  };
  t["sim --ways"] = [] {
    const R r = Ctl("sim --json --sweep --workload loops --branches 100000 --sizes 64 --ways 4,8");
    EXPECT_EQ(Nums(r.out, "hpt_ways"), (std::vector<double>{4, 8})) << r.out;
  };
  t["sim --subpaths"] = [sim] {
    const R r = sim("--subpaths");
    EXPECT_TRUE(Has(r.out, "subpaths")) << r.out;
    EXPECT_NE(r.out, sim("").out);
  };
  t["sim --calls"] = [sim] {
    const R r = sim("--calls");
    EXPECT_TRUE(Has(r.out, "call")) << r.out;
    EXPECT_NE(r.out, sim("--subpaths").out);
  };
  t["sim --osp-entries"] = differs("--subpaths --osp-entries 16", "--subpaths");
  t["sim --osp-max-length"] = differs("--subpaths --osp-max-length 4", "--subpaths");
  t["sim --osp-gain"] = differs("--subpaths --osp-gain 2", "--subpaths");
  t["sim --osp-min-f"] = differs("--subpaths --osp-min-f 50", "--subpaths");
  t["sim --osp-seed"] = differs("--subpaths --osp-seed 99", "--subpaths");
  t["sim --confidence"] = differs("--subpaths --confidence 0.6", "--subpaths");
  return t;
}

const Table& Cases(std::map<std::string, Gap>** gaps_out) {
  static std::map<std::string, Gap> gaps;
  static const Table table = MakeTable(&gaps);
  *gaps_out = &gaps;
  return table;
}

// ---------------------------------------------------------------- the tests

class Command : public ::testing::TestWithParam<std::string> {};

// --help and -h print the usage on stdout, exit 0; --version prints the version; an unknown flag
// (long, short, or valueless at the end) is exit 2 naming it.
TEST_P(Command, HelpVersionAndUnknownFlags) {
  const std::string cmd = GetParam();
  for (const std::string h : {"--help", "-h"}) {
    const R r = Ctl(cmd + " " + h);
    EXPECT_EQ(r.rc, 0) << Show(cmd + " " + h, r);
    EXPECT_EQ(r.out.rfind("usage: pathctl " + cmd, 0), 0u) << Show(cmd + " " + h, r);
  }
  EXPECT_EQ(Ctl("help " + cmd).out, Ctl(cmd + " --help").out);
  const R v = Ctl(cmd + " --version");
  EXPECT_EQ(v.rc, 0) << Show(cmd + " --version", v);
  EXPECT_EQ(v.out.rfind("pathctl ", 0), 0u) << v.out;
  for (const std::string bad : {"--every-flag-bogus 1", "--every-flag-bogus", "-Z"}) {
    const R r = Ctl(cmd + " " + bad + " --socket /nonexistent/s.sock");
    EXPECT_EQ(r.rc, 2) << Show(cmd + " " + bad, r);
    const std::string name = bad.substr(0, bad.find(' '));
    EXPECT_TRUE(Has(r.err, "unknown option " + name)) << Show(cmd + " " + bad, r);
  }
}

// Every flag the help lists has a case that shows its effect (or is a listed gap). Each
// command's flags in two halves (every other flag), two tests: the whole of start's, sim's and
// run's took 63-73 s in a quiet -j2 run, past the suite's 60 s a test.
constexpr int kFlagHalves = 2;
class CommandFlags : public ::testing::TestWithParam<std::tuple<std::string, int>> {};

TEST_P(CommandFlags, EveryFlagInItsHelpHasAVisibleEffect) {
  const auto& [cmd, half] = GetParam();
  CurrentCommand() = cmd;
  const std::vector<std::string> flags = FlagsIn(Ctl(cmd + " --help").out);
  std::map<std::string, Gap>* gaps = nullptr;
  const Table& table = Cases(&gaps);
  for (size_t i = 0; i < flags.size(); ++i) {
    if (static_cast<int>(i % kFlagHalves) != half) continue;
    const std::string& flag = flags[i];
    const std::string key = cmd + " --" + flag;
    SCOPED_TRACE(key);
    if (auto it = table.find(key); it != table.end()) {
      const auto t0 = std::chrono::steady_clock::now();
      it->second();
      std::printf("[ case     ] %s: %.1f s\n", key.c_str(),
                  std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      continue;
    }
    if (auto g = gaps->find(key); g != gaps->end()) {
      // No visible effect: at least accepted with a valid value.
      std::string args = g->second.args;
      if (auto at = args.find("LOOP"); at != std::string::npos) args.replace(at, 4, Loop());
      const bool daemon = args.rfind("start", 0) == 0;
      const R r = Ctl(daemon ? args + Sock() : args);
      EXPECT_NE(r.rc, 2) << Show(args, r);
      std::printf("[ gap      ] %s: %s\n", key.c_str(), g->second.why.c_str());
      continue;
    }
    ADD_FAILURE() << "flag --" << flag << " of command " << cmd << " has no case";
  }
  // And no case is left for a flag the help no longer lists (checked once, by the first half).
  if (half != 0) return;
  for (const auto& [key, unused] : table) {
    if (key.rfind(cmd + " --", 0) == 0) {
      EXPECT_NE(std::find(flags.begin(), flags.end(), key.substr(cmd.size() + 3)), flags.end())
          << key << " has a case but " << cmd << " --help does not list it";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Pathctl, Command, ::testing::ValuesIn(Commands()),
                         [](const auto& info) { return info.param; });
INSTANTIATE_TEST_SUITE_P(Pathctl, CommandFlags,
                         ::testing::Combine(::testing::ValuesIn(Commands()),
                                            ::testing::Range(0, kFlagHalves)),
                         [](const auto& info) {
                           return std::get<0>(info.param) + "_" +
                                  std::to_string(std::get<1>(info.param));
                         });

}  // namespace
