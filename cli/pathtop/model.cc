#include "pathtop/model.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>

#include <google/protobuf/util/time_util.h>

#include "pathprof/api/resource_names.h"
#include "pathprof/api/v1_enums.h"
#include "pathtop/format.h"
#include "pathtop/rows.h"

namespace pathtop {

namespace {

std::string Rate(double per_s) {
  return FormatCount(per_s) + "/s";
}

// The session's state as the title shows it: pathctl's words (api/v1_enums.h), but
// TARGET_EXITED reads "exited", to keep the title short.
std::string StateWord(v1::SessionState state) {
  if (state == v1::SESSION_STATE_TARGET_EXITED) return "exited";
  return std::string(pathprof::api::SessionStateWord(state));
}

// A key typed into a text field (filter, search): Backspace deletes, printable ASCII appends.
// False for any other key, which the field ignores.
bool EditText(int k, std::string* text) {
  if (k == key::kBackspace) {
    if (!text->empty()) text->pop_back();
    return true;
  }
  if (k < 0x20 || k >= 0x7f) return false;
  *text += static_cast<char>(k);
  return true;
}

std::string Percent1(double p) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f%%", p);
  return buf;
}

}  // namespace

const char* ViewTitle(View view) {
  switch (view) {
    case View::kHotPaths:
      return "Paths";
    case View::kSubpaths:
      return "Subpaths";
    case View::kCct:
      return "CCT";
    case View::kCallPairs:
      return "Calls";
    case View::kMethods:
      return "Methods";
    case View::kFlame:
      return "Flame";
    case View::kContextPaths:
      return "Context";
    case View::kTargets:
      return "Targets";
  }
  return "?";
}

namespace {
// Counts by name summed over the targets, as "name n, name n" (names in order, zeros left out).
std::string JoinCounts(const std::map<std::string, int64_t>& counts) {
  std::string out;
  for (const auto& [name, n] : counts)
    if (n > 0) out += (out.empty() ? "" : ", ") + name + " " + std::to_string(n);
  return out;
}
}  // namespace

StatsView StatsTracker::Update(const v1::Stats& stats, double now_s) {
  StatsView v;
  std::map<std::string, int64_t> held_back, by_source;
  for (const v1::TargetStats& t : stats.targets()) {
    int64_t biggest = 0;
    for (const v1::DropCount& d : t.drops()) {
      v.drops += d.count();
      if (d.count() > biggest) {
        biggest = d.count();
        v.top_drop = d.reason() + " " + std::to_string(d.count());
      }
    }
    for (const v1::DropCount& d : t.decode_errors()) v.decode_errors += d.count();
    v.export_windows_kept += t.export_windows_kept();
    v.export_windows_let_go += t.export_windows_let_go();
    for (const v1::DropCount& h : t.windows_held_back()) held_back[h.reason()] += h.count();
    for (const v1::DropCount& w : t.windows_by_source()) by_source[w.reason()] += w.count();
  }
  v.windows_held_back = JoinCounts(held_back);
  v.windows_by_source = JoinCounts(by_source);
  v.daemon_rss_bytes = stats.daemon_rss_bytes();
  // The base of the rates: the latest answer at least kRateSpanS old, else the oldest kept.
  // Answers older than that base are let go.
  while (history_.size() >= 2 && now_s - history_[1].first >= kRateSpanS) history_.pop_front();
  while (history_.size() >= kMaxKept) history_.pop_front();
  const v1::Stats* base = history_.empty() ? nullptr : &history_.front().second;
  const double dt = history_.empty() ? 0 : now_s - history_.front().first;
  if (base && dt > 0) {
    auto sum = [](const v1::Stats& s, auto field) {
      double total = 0;
      for (const v1::TargetStats& t : s.targets()) total += static_cast<double>(field(t));
      return total;
    };
    auto rate = [&](auto field) {
      return std::max(0.0, (sum(stats, field) - sum(*base, field)) / dt);
    };
    v.stack_samples_per_s = rate([](const v1::TargetStats& t) { return t.stack_samples(); });
    v.windows_per_s = rate([](const v1::TargetStats& t) { return t.windows(); });
    v.branches_per_s = rate([](const v1::TargetStats& t) { return t.branches(); });
    v.pipeline_cpu_percent =
        100.0 * rate([](const v1::TargetStats& t) { return t.pipeline_cpu_seconds(); });
    v.daemon_cpu_percent =
        std::max(0.0, 100.0 * (stats.daemon_cpu_seconds() - base->daemon_cpu_seconds()) / dt);
    v.valid = true;
  }
  history_.emplace_back(now_s, stats);
  last_ = v;
  return v;
}

Model::Model() {
  tables_[static_cast<int>(View::kHotPaths)] = Table(HotPathColumns(), 0, false);
  tables_[static_cast<int>(View::kSubpaths)] = Table(SubpathColumns(), 0, false);
  tables_[static_cast<int>(View::kCct)] = Table(CctColumns(), 0, true);
  tables_[static_cast<int>(View::kCallPairs)] = Table(CallPairColumns(), 0, false);
  tables_[static_cast<int>(View::kMethods)] = Table(MethodColumns(), 0, false);
  tables_[static_cast<int>(View::kContextPaths)] = Table(HotPathColumns(), 0, false);
  // kFlame keeps an empty table: the flame graph is drawn by flame_, not as rows.
  tables_[static_cast<int>(View::kTargets)] = Table(TargetColumns(), 0, false);
}

void Model::SetHotPaths(const v1::HotPaths& msg) {
  if (paused_) {
    pending_paths_ = msg;
    return;
  }
  table(View::kHotPaths).Replace(HotPathRows(msg));
  view_errors_[static_cast<int>(View::kHotPaths)].clear();
  data_note_ = std::to_string(msg.paths_size()) + " of " + std::to_string(msg.paths_distinct()) +
               " distinct paths";
}

void Model::SetSubpaths(const v1::HotSubpaths& msg) {
  if (paused_) {
    pending_subpaths_ = msg;
    return;
  }
  table(View::kSubpaths).Replace(SubpathRows(msg));
  view_errors_[static_cast<int>(View::kSubpaths)].clear();
}

void Model::SetCct(const v1::CallingContextTree& msg) {
  if (paused_) {
    pending_cct_ = msg;
    return;
  }
  table(View::kCct).Replace(CctRows(msg));
  flame_.Replace(msg);
  view_errors_[static_cast<int>(View::kCct)].clear();
  view_errors_[static_cast<int>(View::kFlame)].clear();
}

void Model::SetContextPaths(const v1::HotPaths& msg) {
  if (paused_) {
    pending_context_paths_ = msg;
    return;
  }
  table(View::kContextPaths).Replace(HotPathRows(msg));
  view_errors_[static_cast<int>(View::kContextPaths)].clear();
  contexts_matched_ = msg.contexts_matched();
  context_windows_ = msg.context_windows();
}

void Model::SetCallPairs(const v1::HotCallPairs& msg) {
  if (paused_) {
    pending_pairs_ = msg;
    return;
  }
  table(View::kCallPairs).Replace(CallPairRows(msg));
  view_errors_[static_cast<int>(View::kCallPairs)].clear();
}

void Model::SetMethods(const v1::HotMethods& msg) {
  if (paused_) {
    pending_methods_ = msg;
    return;
  }
  table(View::kMethods).Replace(MethodRows(msg));
  hot_data_streams_note_ = msg.hot_data_streams_unsupported();
  view_errors_[static_cast<int>(View::kMethods)].clear();
}

void Model::SetTargets(const v1::ListTargetsResponse& msg) {
  table(View::kTargets).Replace(TargetRows(msg));
}

void Model::SetSession(const v1::Session& session) {
  session_ = session;
}

void Model::SetViewError(View view, const std::string& message) {
  view_errors_[static_cast<int>(view)] = message;
}

void Model::ResetData() {
  for (int i = 0; i < kViewCount; ++i) {
    if (static_cast<View>(i) != View::kTargets) tables_[i].Clear();
    view_errors_[i].clear();
  }
  session_.reset();
  stats_ = StatsView();
  data_note_.clear();
  flame_.Clear();
  context_ = ContextPick();
  contexts_matched_ = -1;
}

void Model::ApplyPending() {
  if (pending_paths_) SetHotPaths(*pending_paths_);
  if (pending_subpaths_) SetSubpaths(*pending_subpaths_);
  if (pending_cct_) SetCct(*pending_cct_);
  if (pending_pairs_) SetCallPairs(*pending_pairs_);
  if (pending_methods_) SetMethods(*pending_methods_);
  if (pending_context_paths_) SetContextPaths(*pending_context_paths_);
  pending_context_paths_.reset();
  pending_paths_.reset();
  pending_subpaths_.reset();
  pending_cct_.reset();
  pending_pairs_.reset();
  pending_methods_.reset();
}

void Model::SetView(View view) {
  view_ = view;
}

Action Model::HandleKey(int k) {
  // F10 and F1 work in every mode, as in htop: a key meant as a command never lands in the
  // filter or search text.
  if (k == key::kF10) return Action::kQuit;
  if (help_ || details_) {
    help_ = details_ = false;
    return k == 'q' ? Action::kQuit : Action::kRedraw;
  }
  if (k == key::kF1) {
    edit_ = Edit::kNone;  // what was typed stays in effect
    help_ = true;
    return Action::kRedraw;
  }
  if (edit_ != Edit::kNone) return view_ == View::kFlame ? HandleFlameEditKey(k) : HandleEditKey(k);
  if (view_ == View::kFlame) {
    if (auto a = HandleFlameKey(k)) return *a;
  }
  if (auto a = HandleCommandKey(k)) return *a;
  if (auto a = HandleViewKey(k)) return *a;
  if (auto a = HandleMoveKey(k)) return *a;
  return Action::kNone;
}

// Typing into the filter (`/`, F4) or the search (F3). The filter applies as you type and hides
// rows; the search only moves the selection to the next row that matches.
Action Model::HandleEditKey(int k) {
  Table& t = table(view_);
  const bool filter = edit_ == Edit::kFilter;
  std::string& text = filter ? filter_draft_ : search_;
  if (k == key::kEnter || (!filter && k == key::kEscape)) {
    edit_ = Edit::kNone;
    return Action::kRedraw;
  }
  if (k == key::kEscape) {
    edit_ = Edit::kNone;
    filter_draft_.clear();
    t.SetFilter("");
    return Action::kRedraw;
  }
  if (!filter && k == key::kF3) {  // F3 in the search bar: the next match, as in htop
    search_missed_ = !t.SelectMatch(search_, true);
    return Action::kRedraw;
  }
  if (!EditText(k, &text)) return Action::kNone;
  if (filter) {
    t.SetFilter(filter_draft_);
  } else {
    search_missed_ = !t.SelectMatch(search_, false);
  }
  return Action::kRedraw;
}

// In the flame graph `/`, F3 and F4 all search: matching frames are marked, none is hidden
// (hiding frames would change the widths the graph is about).
Action Model::HandleFlameEditKey(int k) {
  std::string text = flame_.search();
  if (k == key::kEnter) {
    edit_ = Edit::kNone;
    return Action::kRedraw;
  }
  if (k == key::kEscape) {
    edit_ = Edit::kNone;
    text.clear();
  } else if (!EditText(k, &text)) {
    return Action::kNone;
  }
  flame_.SetSearch(text);
  return Action::kRedraw;
}

// The flame graph's keys, as terminal flame-graph viewers bind them: arrows move between
// frames (Up: the caller, Down: the widest callee, Left/Right: the next frame on the line),
// Enter zooms into the selected frame, Backspace or Esc zooms out, Home (g) shows it all. The
// table keys (sort, open/close) mean nothing here and are swallowed.
std::optional<Action> Model::HandleFlameKey(int k) {
  switch (k) {
    case key::kLeft:
      flame_.SelectSibling(-1);
      break;
    case key::kRight:
      flame_.SelectSibling(+1);
      break;
    case key::kUp:
    case 'k':
      flame_.SelectParent();
      break;
    case key::kDown:
    case 'j':
      flame_.SelectChild();
      break;
    case key::kEnter:
    case '+':
      flame_.ZoomIn();
      break;
    case key::kBackspace:
    case '-':
      flame_.ZoomOut();
      break;
    case key::kEscape:
      if (!flame_.ZoomOut()) flame_.SetSearch("");
      break;
    case key::kHome:
    case 'g':
      flame_.SelectRoot();
      break;
    case '/':
    case key::kF3:
    case key::kF4:
      edit_ = Edit::kSearch;
      break;
    case '<':
    case '>':
    case ',':
    case '.':
    case 's':
    case 'r':
    case 'R':
    case 'e':
    case 'c':
    case 'G':
    case key::kF6:
    case key::kEnd:
    case key::kPageUp:
    case key::kPageDown:
      return Action::kNone;
    default:
      return std::nullopt;
  }
  return Action::kRedraw;
}

std::optional<Action> Model::HandleCommandKey(int k) {
  Table& t = table(view_);
  switch (k) {
    case 'q':
    case 'Q':
      return Action::kQuit;
    case '?':
    case 'h':
      help_ = true;
      return Action::kRedraw;
    case 'i':
      details_ = true;
      return Action::kRedraw;
    case 'p':
    case ' ':
      paused_ = !paused_;
      if (!paused_) ApplyPending();
      return Action::kRedraw;
    case '<':
    case ',':
      t.NextSortColumn(-1);
      return Action::kRedraw;
    case '>':
    case '.':
    case 's':
    case key::kF6:
      t.NextSortColumn(+1);
      return Action::kRedraw;
    case 'r':
    case 'R':
      t.ToggleReverse();
      return Action::kRedraw;
    case '/':
    case key::kF4:
      edit_ = Edit::kFilter;
      filter_draft_ = t.filter();
      return Action::kRedraw;
    case key::kF3:
      edit_ = Edit::kSearch;
      search_missed_ = !search_.empty() && !t.SelectMatch(search_, true);
      return Action::kRedraw;
    case key::kEscape:
      // Esc leaves a context's paths for the tree it was opened from, once no filter is set.
      if (view_ == View::kContextPaths && t.filter().empty()) return SwitchView(View::kCct);
      t.SetFilter("");
      return Action::kRedraw;
    default:
      return std::nullopt;
  }
}

Action Model::SwitchView(View v) {
  if (v == view_) return Action::kNone;
  view_ = v;
  return Action::kViewChanged;
}

std::optional<Action> Model::HandleViewKey(int k) {
  switch (k) {
    case '1':
    case '2':
    case '3':
    case '4':
    case '5':
    case '6':
      return SwitchView(static_cast<View>(k - '1'));
    case '\t':
      return SwitchView(static_cast<View>((static_cast<int>(view_) + 1) % kTabCount));
    case key::kLeft:
    case key::kBackspace:
      if (view_ != View::kContextPaths) return std::nullopt;
      return SwitchView(View::kCct);
    case 't':
      return SwitchView(View::kTargets);
    case key::kF5:  // htop's tree view; pressed in the tree, back to where it came from
      if (view_ == View::kCct) return SwitchView(before_tree_);
      before_tree_ = view_;
      return SwitchView(View::kCct);
    default:
      return std::nullopt;
  }
}

std::optional<Action> Model::HandleMoveKey(int k) {
  Table& t = table(view_);
  const int page = std::max(1, last_height_ - 5);
  switch (k) {
    case key::kUp:
    case 'k':
      t.MoveSelection(-1);
      break;
    case key::kDown:
    case 'j':
      t.MoveSelection(+1);
      break;
    case key::kPageUp:
      t.MoveSelection(-page);
      break;
    case key::kPageDown:
      t.MoveSelection(page);
      break;
    case key::kHome:
    case 'g':
      t.SelectFirst();
      break;
    case key::kEnd:
    case 'G':
      t.SelectLast();
      break;
    case key::kRight:
    case '+':
      t.Expand();
      break;
    case key::kLeft:
    case '-':
      t.Collapse();
      break;
    case 'e':
      t.ExpandAll();
      break;
    case 'c':
      t.CollapseAll();
      break;
    case key::kEnter:
      if (view_ == View::kTargets && t.selected_row() != nullptr) {
        picked_pid_ = static_cast<uint32_t>(std::stoul(t.selected_row()->key));
        return Action::kPickTarget;
      }
      if (view_ == View::kCct) return OpenContext();
      break;
    case key::kResize:
      break;
    default:
      return std::nullopt;
  }
  return Action::kRedraw;
}

// Enter on a tree node: the hot paths of the branch windows attributed to that calling context
// and the contexts below it (GetHotPathsRequest.context), in a view of their own.
Action Model::OpenContext() {
  const Table& tree = table(View::kCct);
  const Row* row = tree.selected_row();
  if (row == nullptr) return Action::kNone;
  context_ = ContextPick();
  context_.node = row->context_id;
  context_.pid = row->pid;
  // The chain from the root: in the flattened tree each ancestor is the nearest row above
  // with a smaller depth.
  const std::vector<VisibleRow>& rows = tree.visible();
  int depth = rows[tree.selected()].depth + 1;
  for (int i = tree.selected(); i >= 0 && depth > 0; --i) {
    if (rows[i].depth >= depth) continue;
    depth = rows[i].depth;
    const std::string& name = rows[i].row->cells.back();
    context_.chain = context_.chain.empty() ? name : name + " > " + context_.chain;
  }
  table(View::kContextPaths).Clear();
  contexts_matched_ = -1;
  context_windows_ = 0;
  view_errors_[static_cast<int>(View::kContextPaths)] =
      row->context_id == 0
          ? "this tree node has no context id: hot paths per context need a newer pathprofd"
          : "";
  view_ = View::kContextPaths;
  return Action::kViewChanged;
}

bool Model::SessionEnded() const {
  return session_ && session_->state() != v1::SESSION_STATE_RUNNING &&
         session_->state() != v1::SESSION_STATE_UNSPECIFIED;
}

int64_t Model::NowUnixMs() const {
  if (now_unix_ms_ != 0) return now_unix_ms_;
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string Model::StacksRate() const {
  return stats_.valid ? FormatCount(stats_.stack_samples_per_s) + " stacks/s"
                      : "stack rate at the next refresh";
}

// "exited 12s ago": how an ended session's time is told, in the header and the details.
std::string Model::EndedText() const {
  std::string s = session_->state() == v1::SESSION_STATE_TARGET_EXITED ? "exited"
                  : session_->state() == v1::SESSION_STATE_FAILED      ? "failed"
                                                                       : "stopped";
  if (session_->has_end_time()) {
    const int64_t ended_ms =
        google::protobuf::util::TimeUtil::TimestampToMilliseconds(session_->end_time());
    s += " " + std::to_string(std::max<int64_t>(0, NowUnixMs() - ended_ms) / 1000) + "s ago";
  }
  return s;
}

// One line, as top's first: the target, the session and its state, the branch source, then
// rates and drops as far as they fit. A field that does not fit is left out whole rather than
// cut, so what is shown reads right; `i` shows everything, with the daemon's reasons.
std::string Model::HeaderText(int width) const {
  std::vector<std::string> fields;
  fields.push_back(target_label_.empty() ? "pathtop" : target_label_);
  if (session_) {
    const std::string id = pathprof::api::SessionIdForDisplay(session_->name());
    if (SessionEnded()) {
      fields.push_back(id + " " + EndedText() + ": the profile as it ended");
    } else {
      fields.push_back(id + " " + StateWord(session_->state()));
    }
    // The branch source by its word; a session without one says what it has instead.
    fields.push_back(session_->source() == v1::BRANCH_SOURCE_NONE
                         ? "stacks only"
                         : std::string(pathprof::api::BranchSourceWord(session_->source())));
    if (!session_->error().empty()) fields.push_back("error (i)");
  }
  std::string drops = "drops " + std::to_string(stats_.drops);
  if (stats_.decode_errors) drops += " decode-err " + std::to_string(stats_.decode_errors);
  const bool losing = stats_.drops > 0 || stats_.decode_errors > 0;
  if (SessionEnded()) {
    fields.push_back(drops);
  } else if (stats_.valid) {
    if (!session_ || session_->source() != v1::BRANCH_SOURCE_NONE) {
      fields.push_back("win " + Rate(stats_.windows_per_s));
    }
    if (losing) fields.push_back(drops);  // losses before the rates that are fine
    fields.push_back("stacks " + Rate(stats_.stack_samples_per_s));
    if (!losing) fields.push_back(drops);
    fields.push_back("pathprofd " + Percent1(stats_.daemon_cpu_percent) + " " +
                     FormatBytes(stats_.daemon_rss_bytes));
  }
  // Retention, apart from the drops and last: the export buffer letting old windows go is how
  // it keeps its bound, not the profile losing data (`i` says it in full).
  if (stats_.export_windows_kept > 0)
    fields.push_back("export buffer " + std::to_string(stats_.export_windows_kept) + " win");
  std::string s = fields[0];
  for (size_t i = 1; i < fields.size(); ++i) {
    if (static_cast<int>(s.size() + 2 + fields[i].size()) <= width) s += "  " + fields[i];
  }
  return Truncate(s, width);
}

std::string Model::TabsText() const {
  std::string s;
  for (int i = 0; i < kTabCount; ++i) {
    std::string tab = std::to_string(i + 1) + " " + ViewTitle(static_cast<View>(i));
    // A context's paths take the tree's tab, named by the context's innermost function (the
    // footer has the whole chain): they were opened from the tree and go back to it.
    if (view_ == View::kContextPaths && static_cast<View>(i) == View::kCct) {
      const size_t cut = context_.chain.rfind(" > ");
      tab = "3 paths: " +
            (cut == std::string::npos ? context_.chain : context_.chain.substr(cut + 3));
      s += "[" + tab + "]";
      continue;
    }
    s += static_cast<int>(view_) == i ? "[" + tab + "]" : " " + tab + " ";
  }
  if (view_ == View::kTargets) s += "[Targets]";
  if (view_ == View::kFlame) {
    if (flame_.zoomed()) s += "  zoom " + flame_.zoom().name;
    if (!flame_.search().empty()) s += "  *" + flame_.search();
  }
  const Table& t = table(view_);
  if (!t.columns().empty()) {
    const Column& c = t.columns()[t.sort_column()];
    bool descending = c.numeric != t.reversed();
    s += "  sort " + c.title + (descending ? "-" : "+");
  }
  if (!t.filter().empty()) s += "  /" + t.filter();
  if (paused_) s += "  PAUSED";
  return s;
}

std::string Model::FooterText(int width) const {
  if (edit_ != Edit::kNone && view_ == View::kFlame) {
    char share[64];
    std::snprintf(share, sizeof share, "  %d frames, %s%% of the total", flame_.matched_frames(),
                  FormatPercent(flame_.MatchedShare()).c_str());
    return "search: " + flame_.search() + "_   (Enter keep, Esc clear)" +
           (flame_.search().empty() ? "" : share);
  }
  if (edit_ == Edit::kFilter) return "filter: " + filter_draft_ + "_   (Enter keep, Esc clear)";
  if (edit_ == Edit::kSearch) {
    return "search: " + search_ + "_   (F3 next, Enter/Esc done)" +
           (search_missed_ ? "  no row matches" : "");
  }
  if (!connection_.connected) {
    std::string s = "DISCONNECTED " + connection_.target;
    if (connection_.attempt > 0) {
      char buf[64];
      std::snprintf(buf, sizeof buf, " retry %d in %.1fs", connection_.attempt,
                    connection_.retry_in_s);
      s += buf;
    }
    if (!connection_.message.empty()) s += ": " + connection_.message;
    return s;
  }
  std::string s = connection_.reconnected ? "reconnected " : "";
  char every[32];
  std::snprintf(every, sizeof every, "every %gs", interval_s_);
  s += connection_.target + "  " + every;
  if (view_ == View::kHotPaths && !data_note_.empty()) s += "  " + data_note_;
  if (view_ == View::kContextPaths && contexts_matched_ > 0) {
    s += "  " + context_.chain + ": " + std::to_string(context_windows_) + " windows";
  }
  if (!connection_.message.empty()) s += "  " + connection_.message;
  const std::string hint = "  ?:help q:quit";
  if (static_cast<int>(s.size() + hint.size()) <= width) s += hint;
  return s;
}

// What an empty view says: why there are no rows, with what is arriving meanwhile, so that a
// stacks-only session does not read as "nothing profiled" while stacks stream in.
std::string Model::EmptyNote(const Table& t) const {
  if (!t.has_data())
    return connection_.connected ? "waiting for the first answer..." : "no data yet";
  if (!t.filter().empty()) return "no row matches /" + t.filter() + "  (Esc clears the filter)";
  const bool from_branches = view_ == View::kHotPaths || view_ == View::kSubpaths ||
                             view_ == View::kCallPairs || view_ == View::kContextPaths;
  const char* what = view_ == View::kHotPaths || view_ == View::kContextPaths ? "no hot paths"
                     : view_ == View::kSubpaths                               ? "no hot subpaths"
                     : view_ == View::kCallPairs                              ? "no call pairs"
                     : view_ == View::kTargets                                ? "no process listed"
                                                                              : "no samples";
  if (view_ == View::kTargets) return what;
  if (view_ == View::kContextPaths && contexts_matched_ == 0) {
    // Windows are attributed to the stack the thread had when its window started.
    return "no branch window attributed to " + context_.chain +
           " yet: a window counts for the calling context it starts in";
  }
  if (session_ && from_branches && session_->source() == v1::BRANCH_SOURCE_NONE) {
    return std::string(what) + ": stacks-only session (" + StacksRate() + "); see views 3 and 5";
  }
  if (SessionEnded()) return std::string(what) + ": the session ended before any arrived";
  if (from_branches) {
    return std::string(what) + " yet: no branch windows decoded" +
           (stats_.valid ? " (win " + Rate(stats_.windows_per_s) + ", " + StacksRate() + ")" : "");
  }
  return std::string(what) + " yet (" + StacksRate() + ")";
}

std::string Model::HeaderRow(const Table& t, int width) const {
  std::string s;
  for (const Column& c : t.columns()) {
    if (!s.empty()) s += ' ';
    int w = c.width > 0 ? c.width : std::max(0, width - static_cast<int>(s.size()));
    s += Fit(c.title, w, c.right_align);
  }
  return Fit(s, width, false);
}

std::string Model::FormatRow(const Table& t, const VisibleRow& v, int width) const {
  std::string s;
  const auto& cols = t.columns();
  for (size_t i = 0; i < cols.size(); ++i) {
    if (i > 0) s += ' ';
    std::string cell = i < v.row->cells.size() ? v.row->cells[i] : "";
    if (t.tree() && cols[i].width == 0) {
      // Tree decoration on the last column: one space per level, then +/- for closed/open.
      std::string mark = v.has_children ? (v.expanded ? "- " : "+ ") : "  ";
      cell = std::string(std::min(v.depth, 40), ' ') + mark + cell;
    }
    int w = cols[i].width > 0 ? cols[i].width : std::max(0, width - static_cast<int>(s.size()));
    s += Fit(cell, w, cols[i].right_align);
  }
  return Fit(s, width, false);
}

std::vector<ScreenLine> Model::HelpLayout(int width, int height) const {
  static const char* kLines[] = {
      "pathtop: hot paths of a live process, from pathprofd",
      "",
      " 1..6, Tab   paths, subpaths, context tree, call pairs, methods, flame graph",
      " F5          the calling-context tree (F5 again: back)   t   the process list",
      " Enter       in the tree: the hot paths of that calling context (Left/Esc: back)",
      " flame graph arrows move, Enter zooms in, Esc out, g all, / marks matches",
      " i           the header in full: the branch source and why, rates, drops",
      " < > s, F6   sort column left / right                    r   reverse the order",
      " /, F4       filter as you type (Enter keeps, Esc clears)",
      " F3          search: select a matching row (F3 again: the next one)",
      " p, space    pause / resume (answers arriving meanwhile are kept)",
      " Up Down PgUp PgDn Home End (or k j g G)    move the selection",
      " Right + / Left -   open / close a tree node; e / c all",
      " Enter       in the process list: profile the selected process",
      " ?, h, F1    this help                                   q, F10   quit",
      "",
      "Views 1, 2 and 4 come from branch windows, 3, 5 and 6 from stack samples.",
      "Rows whose shown values tie keep their order; the selection follows its row.",
  };
  std::vector<ScreenLine> out;
  for (const char* l : kLines) {
    out.push_back({Truncate(l, width), out.empty() ? ScreenLine::kTitle : ScreenLine::kNormal});
  }
  if (!hot_data_streams_note_.empty()) {
    out.push_back({"", ScreenLine::kNormal});
    for (std::string& l : Wrap("Hot data streams: " + hot_data_streams_note_, width)) {
      out.push_back({std::move(l), ScreenLine::kNormal});
    }
  }
  out.push_back({"", ScreenLine::kNormal});
  out.push_back({Truncate("Press any key to return.", width), ScreenLine::kNormal});
  if (static_cast<int>(out.size()) > height) out.resize(height);
  return out;
}

// `i`: what the one-line header shortens, each item on its own wrapped line.
std::vector<ScreenLine> Model::DetailsLayout(int width, int height) const {
  std::vector<std::pair<std::string, std::string>> items;
  items.emplace_back("target", target_label_.empty() ? "none chosen" : target_label_);
  if (session_) {
    items.emplace_back("session",
                       pathprof::api::SessionIdForDisplay(session_->name()) + " " +
                           (SessionEnded() ? EndedText() : StateWord(session_->state())));
    std::string source(pathprof::api::BranchSourceWord(session_->source()));
    if (!session_->source_reason().empty()) source += ": " + session_->source_reason();
    items.emplace_back("branches", source);
    if (!session_->error().empty()) items.emplace_back("error", session_->error());
  } else {
    items.emplace_back("session", "none yet");
  }
  if (stats_.valid) {
    items.emplace_back("rates", "stacks " + Rate(stats_.stack_samples_per_s) + "  windows " +
                                    Rate(stats_.windows_per_s) + "  branches " +
                                    Rate(stats_.branches_per_s));
    items.emplace_back("pathprofd", "CPU " + Percent1(stats_.daemon_cpu_percent) + "  RSS " +
                                        FormatBytes(stats_.daemon_rss_bytes) + "  pipeline CPU " +
                                        Percent1(stats_.pipeline_cpu_percent));
  } else {
    items.emplace_back("rates", "at the second GetStats answer");
  }
  std::string drops = std::to_string(stats_.drops);
  if (!stats_.top_drop.empty()) drops += " (largest: " + stats_.top_drop + ")";
  drops += "  decode errors " + std::to_string(stats_.decode_errors);
  items.emplace_back("drops", drops);
  if (stats_.export_windows_kept > 0 || stats_.export_windows_let_go > 0)
    items.emplace_back("export", "buffer for pathctl export --format bolt|perf-lbr: kept " +
                                     std::to_string(stats_.export_windows_kept) +
                                     " newest windows, " +
                                     std::to_string(stats_.export_windows_let_go) +
                                     " older let go (retention, not drops)");
  if (!stats_.windows_held_back.empty())
    items.emplace_back("held back",
                       "windows the source did not take (the rate's bounds, not "
                       "drops): " +
                           stats_.windows_held_back);
  if (!stats_.windows_by_source.empty())
    items.emplace_back("sources", "windows by source: " + stats_.windows_by_source);
  char every[32];
  std::snprintf(every, sizeof every, " every %gs", interval_s_);
  items.emplace_back("daemon",
                     connection_.target + every + (connection_.connected ? "" : "  DISCONNECTED"));
  std::vector<ScreenLine> out;
  out.push_back({Truncate("pathtop: the header in full", width), ScreenLine::kTitle});
  out.push_back({"", ScreenLine::kNormal});
  for (const auto& [name, text] : items) {
    // The value starts in column 12; its wrapped lines keep to that column.
    std::string line = name + std::string(name.size() < 11 ? 11 - name.size() : 1, ' ') + text;
    for (std::string& l : Wrap(line, width, 11)) out.push_back({std::move(l), ScreenLine::kNormal});
  }
  out.push_back({"", ScreenLine::kNormal});
  out.push_back({Truncate("Press any key to return.", width), ScreenLine::kNormal});
  if (static_cast<int>(out.size()) > height) out.resize(height);
  return out;
}

// The flame graph's selected frame: its shares of the whole, and where the zoom is.
std::string Model::FrameText() const {
  const FlameGraph::Frame& f = flame_.selected();
  const double all = flame_.total();
  auto share = [&](double v) { return FormatPercent(all > 0 ? v / all : 0) + "%"; };
  std::string s = f.name + "  total " + share(f.total);
  if (f.parent >= 0) s += "  self " + share(f.self) + "  calls " + FormatCount(f.calls);
  if (f.pid != 0) s += "  pid " + std::to_string(f.pid);
  return s;
}

// The flame graph under a line naming the selected frame; Render() keeps the selection on screen.
void Model::AddFlameBody(int width, int rows, std::vector<ScreenLine>* out) {
  if (rows <= 0) return;
  const std::string& error = view_errors_[static_cast<int>(View::kFlame)];
  const std::string& tree_error = view_errors_[static_cast<int>(View::kCct)];
  const std::string& shown_error = error.empty() ? tree_error : error;
  if (!shown_error.empty() || flame_.empty()) {
    const std::string note = !shown_error.empty() ? shown_error
                             : !flame_.has_data() ? EmptyNote(table(View::kFlame))
                                                  : "no samples yet (" + StacksRate() + ")";
    for (std::string& l : Wrap(note, width)) {
      const auto style = shown_error.empty() ? ScreenLine::kNormal : ScreenLine::kAlert;
      if (rows-- > 0) out->push_back({std::move(l), style, {}});
    }
    return;
  }
  out->back() = {Truncate(FrameText(), width), ScreenLine::kColumnHeader, {}};
  for (FlameGraph::Line& line : flame_.Render(width, rows)) {
    ScreenLine sl{std::move(line.text), ScreenLine::kNormal, {}};
    for (const FlameGraph::Cell& c : line.cells) {
      if (c.frame == flame_.selected_index()) {
        sl.spans.push_back({c.begin, c.end, ScreenLine::kSelected});
      } else if (flame_.Matches(c.frame)) {
        sl.spans.push_back({c.begin, c.end, ScreenLine::kAlert});
      }
    }
    out->push_back(std::move(sl));
  }
}

// The rows of the current view (or why there are none), then the view's notes, in `rows` lines.
void Model::AddBody(int width, int rows, std::vector<ScreenLine>* out) {
  const size_t limit = out->size() + static_cast<size_t>(std::max(rows, 0));
  auto add = [&](const std::string& text, ScreenLine::Style style) {
    for (std::string& l : Wrap(text, width)) {
      if (out->size() < limit) out->push_back({std::move(l), style});
    }
  };
  // The Methods view's one-line pointer to the help screen, which holds the daemon's reason
  // whole: the reason is three lines at 80 columns and the same on every refresh.
  const bool streams_note = view_ == View::kMethods && !hot_data_streams_note_.empty();
  const size_t row_limit = limit - (streams_note && rows > 1 ? 1 : 0);
  Table& t = table(view_);
  const std::string& error = view_errors_[static_cast<int>(view_)];
  if (!error.empty()) add(error, ScreenLine::kAlert);
  if (t.visible().empty()) {
    if (error.empty()) add(EmptyNote(t), ScreenLine::kNormal);
  } else if (out->size() < row_limit) {
    const int body = static_cast<int>(row_limit - out->size());
    const int top = t.ScrollTop(body);
    const int n = static_cast<int>(t.visible().size());
    for (int i = top; i < n && i < top + body; ++i) {
      out->push_back({FormatRow(t, t.visible()[i], width),
                      i == t.selected() ? ScreenLine::kSelected : ScreenLine::kNormal});
    }
  }
  if (streams_note)
    add("hot data streams: not built from branch traces (? says why)", ScreenLine::kNormal);
}

std::vector<ScreenLine> Model::Layout(int width, int height) {
  last_height_ = height;
  if (width <= 0 || height <= 0) return {};
  if (help_) return HelpLayout(width, height);
  if (details_) return DetailsLayout(width, height);
  auto wrapped = [&](std::vector<ScreenLine>* v, const std::string& text, ScreenLine::Style st) {
    for (std::string& l : Wrap(text, width)) v->push_back({std::move(l), st});
  };
  // Status lines wrap rather than being cut: the daemon's reasons are the point of them.
  std::vector<ScreenLine> foot;
  wrapped(&foot, FooterText(width),
          edit_ != Edit::kNone    ? ScreenLine::kNormal
          : connection_.connected ? ScreenLine::kFooter
                                  : ScreenLine::kAlert);
  foot.resize(std::min<size_t>(foot.size(), std::max(1, height / 4)));
  const int room = height - static_cast<int>(foot.size());

  std::vector<ScreenLine> out;
  out.push_back({HeaderText(width), SessionEnded() ? ScreenLine::kAlert : ScreenLine::kTitle, {}});
  wrapped(&out, TabsText(), ScreenLine::kNormal);
  // The column header; the flame graph puts its selected frame there.
  out.push_back({HeaderRow(table(view_), width), ScreenLine::kColumnHeader, {}});
  if (static_cast<int>(out.size()) > room) out.resize(std::max(room, 0));
  if (view_ == View::kFlame) {
    AddFlameBody(width, room - static_cast<int>(out.size()), &out);
  } else {
    AddBody(width, room - static_cast<int>(out.size()), &out);
  }
  while (static_cast<int>(out.size()) < room) out.push_back({"", ScreenLine::kNormal});
  for (ScreenLine& l : foot) {
    if (static_cast<int>(out.size()) < height) out.push_back(std::move(l));
  }
  return out;
}

}  // namespace pathtop
