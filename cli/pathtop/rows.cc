#include "pathtop/rows.h"

#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <unordered_map>

#include "pathprof/core/hex.h"
#include "pathprof/hwmodel/path_descriptor.h"
#include "pathtop/format.h"

namespace pathtop {

using pathprof::HexAddress;

namespace {

// Sort values are rounded to what the cell shows (see Row::numbers).
double ShownShare(double share) {
  return std::round(share * 1000.0);
}
double ShownCount(double v) {
  if (v <= 0) return 0;
  double scale = std::pow(10.0, std::floor(std::log10(v)) - 2);  // three significant digits
  return std::round(v / scale) * scale;
}

std::string SourceOf(const v1::Location& loc) {
  if (loc.file().empty()) return "";
  std::string file = loc.file();
  auto slash = file.rfind('/');
  if (slash != std::string::npos) file = file.substr(slash + 1);
  return loc.line() ? file + ":" + std::to_string(loc.line()) : file;
}

// The three estimate columns every ranked view starts with: share, estimate, error bound.
void AddEstimate(const v1::Estimate& e, Row* row) {
  row->cells.push_back(FormatPercent(e.share()));
  row->numbers.push_back(ShownShare(e.share()));
  row->cells.push_back(FormatCount(e.value()));
  row->numbers.push_back(ShownCount(e.value()));
  row->cells.push_back(e.error_bound() > 0 ? FormatCount(e.error_bound()) : "0");
  row->numbers.push_back(ShownCount(e.error_bound()));
}

void AddText(const std::string& text, Row* row) {
  row->cells.push_back(text);
  row->numbers.push_back(0);
}

void AddNumber(const std::string& text, double value, Row* row) {
  row->cells.push_back(text);
  row->numbers.push_back(value);
}

std::vector<Column> EstimateColumns() {
  return {{"SHARE%", 6, true, true}, {"EST", 7, true, true}, {"+-ERR", 6, true, true}};
}

}  // namespace

std::vector<Column> HotPathColumns() {
  auto c = EstimateColumns();
  c.push_back({"LEN", 3, true, true});
  c.push_back({"START", 20, false, false});
  c.push_back({"PATH", 0, false, false});
  return c;
}

std::vector<Column> SubpathColumns() {
  auto c = EstimateColumns();
  c.push_back({"LEN", 4, true, true});
  c.push_back({"BLOCKS", 0, false, false});
  return c;
}

std::vector<Column> CctColumns() {
  return {{"TOTAL%", 6, true, true},
          {"SELF%", 6, true, true},
          {"CALLS", 7, true, true},
          {"FUNCTION", 0, false, false}};
}

std::vector<Column> CallPairColumns() {
  auto c = EstimateColumns();
  c.push_back({"CALL SITE", 28, false, false});
  c.push_back({"TARGET", 0, false, false});
  return c;
}

std::vector<Column> MethodColumns() {
  return {{"SELF%", 6, true, true},
          {"SELF", 7, true, true},
          {"ENTRY%", 6, true, true},
          {"ENTRIES", 7, true, true},
          {"FUNCTION", 0, false, false}};
}

std::vector<Column> TargetColumns() {
  return {{"PID", 7, true, true},
          {"UID", 6, true, true},
          {"COMM", 16, false, false},
          {"SESS", 4, true, true},
          {"EXECUTABLE", 0, false, false}};
}

std::vector<Row> HotPathRows(const v1::HotPaths& msg) {
  std::vector<Row> rows;
  for (const v1::HotPath& p : msg.paths()) {
    Row row;
    row.key = HexAddress(p.start().address()) + ":" + std::to_string(p.length()) + ":" +
              HexAddress(p.outcomes());
    AddEstimate(p.estimate(), &row);
    AddNumber(std::to_string(p.length()), p.length(), &row);
    std::string start = FormatLocation(p.start());
    AddText(start, &row);
    // Without symbolized blocks the path is still exact as its branch outcomes, first branch
    // first: T (taken or unconditional) or N (not taken).
    std::string path = p.blocks_size() > 0
                           ? FormatBlocks(p.blocks())
                           : pathprof::hwmodel::FormatOutcomes(p.outcomes(), p.length(),
                                                               pathprof::hwmodel::kTakenNotTaken);
    AddText(path, &row);
    row.search_text = start + " " + path + " " + SourceOf(p.start());
    rows.push_back(std::move(row));
  }
  return rows;
}

std::vector<Row> SubpathRows(const v1::HotSubpaths& msg) {
  std::vector<Row> rows;
  for (const v1::Subpath& s : msg.subpaths()) {
    Row row;
    for (const v1::Location& b : s.blocks()) row.key += HexAddress(b.address()) + ",";
    AddEstimate(s.estimate(), &row);
    AddNumber(std::to_string(s.length()), s.length(), &row);
    std::string blocks = FormatBlocks(s.blocks());
    AddText(blocks, &row);
    row.search_text = blocks;
    rows.push_back(std::move(row));
  }
  return rows;
}

std::vector<Row> CctRows(const v1::CallingContextTree& msg) {
  std::vector<Row> rows;
  std::unordered_map<uint64_t, std::string> key_of;
  double total = msg.total_weight();
  for (const v1::CctNode& n : msg.nodes()) {
    Row row;
    auto parent = key_of.find(n.parent_id());
    if (n.parent_id() != 0 && parent != key_of.end()) row.parent_key = parent->second;
    row.key = ContextKey(row.parent_key, n);
    key_of[n.id()] = row.key;
    double total_share = total > 0 ? n.total_weight() / total : 0;
    double self_share = total > 0 ? n.self_weight() / total : 0;
    AddNumber(FormatPercent(total_share), ShownShare(total_share), &row);
    AddNumber(FormatPercent(self_share), ShownShare(self_share), &row);
    AddNumber(FormatCount(n.edge_weight()), ShownCount(n.edge_weight()), &row);
    std::string name = FunctionName(n.function());
    AddText(name, &row);
    row.search_text = name + " " + FormatLocation(n.call_site()) + " " + SourceOf(n.function());
    row.expanded_by_default = total_share >= kCctOpenShare;
    row.context_id = n.context_id();
    row.pid = n.pid();
    rows.push_back(std::move(row));
  }
  return rows;
}

std::vector<Row> CallPairRows(const v1::HotCallPairs& msg) {
  std::vector<Row> rows;
  for (const v1::CallPair& p : msg.pairs()) {
    Row row;
    row.key = HexAddress(p.call_site().address()) + ">" + HexAddress(p.target().address());
    AddEstimate(p.estimate(), &row);
    std::string site = FormatLocation(p.call_site()), target = FunctionName(p.target());
    AddText(site, &row);
    AddText(target, &row);
    row.search_text = site + " " + target;
    rows.push_back(std::move(row));
  }
  return rows;
}

std::vector<Row> MethodRows(const v1::HotMethods& msg) {
  std::vector<Row> rows;
  for (const v1::HotMethod& m : msg.methods()) {
    Row row;
    row.key = FunctionName(m.function()) + "@" + HexAddress(m.function().address());
    AddNumber(FormatPercent(m.self().share()), ShownShare(m.self().share()), &row);
    AddNumber(FormatCount(m.self().value()), ShownCount(m.self().value()), &row);
    AddNumber(FormatPercent(m.entries().share()), ShownShare(m.entries().share()), &row);
    AddNumber(FormatCount(m.entries().value()), ShownCount(m.entries().value()), &row);
    std::string name = FunctionName(m.function());
    std::string source = SourceOf(m.function());
    AddText(source.empty() ? name : name + "  " + source, &row);
    row.search_text = row.cells.back();
    rows.push_back(std::move(row));
  }
  return rows;
}

std::vector<Row> TargetRows(const v1::ListTargetsResponse& msg) {
  std::vector<Row> rows;
  for (const v1::Target& t : msg.targets()) {
    Row row;
    row.key = std::to_string(t.pid());
    AddNumber(std::to_string(t.pid()), t.pid(), &row);
    AddNumber(std::to_string(t.uid()), t.uid(), &row);
    AddText(t.comm(), &row);
    AddNumber(std::to_string(t.sessions_size()), t.sessions_size(), &row);
    AddText(t.executable(), &row);
    row.search_text = std::to_string(t.pid()) + " " + t.comm() + " " + t.executable();
    rows.push_back(std::move(row));
  }
  return rows;
}

}  // namespace pathtop
