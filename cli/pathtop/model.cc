#include "pathtop/model.h"

#include <algorithm>
#include <chrono>
#include <cstdio>

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
    case View::kTargets:
      return "Targets";
  }
  return "?";
}

StatsView StatsTracker::Update(const v1::Stats& stats, double now_s) {
  StatsView v;
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
  }
  v.daemon_rss_bytes = stats.daemon_rss_bytes();
  double dt = now_s - previous_s_;
  if (previous_ && dt > 0) {
    auto sum = [](const v1::Stats& s, auto field) {
      double total = 0;
      for (const v1::TargetStats& t : s.targets()) total += static_cast<double>(field(t));
      return total;
    };
    auto rate = [&](auto field) {
      return std::max(0.0, (sum(stats, field) - sum(*previous_, field)) / dt);
    };
    v.stack_samples_per_s = rate([](const v1::TargetStats& t) { return t.stack_samples(); });
    v.windows_per_s = rate([](const v1::TargetStats& t) { return t.windows(); });
    v.branches_per_s = rate([](const v1::TargetStats& t) { return t.branches(); });
    v.pipeline_cpu_percent =
        100.0 * rate([](const v1::TargetStats& t) { return t.pipeline_cpu_seconds(); });
    v.daemon_cpu_percent =
        std::max(0.0, 100.0 * (stats.daemon_cpu_seconds() - previous_->daemon_cpu_seconds()) / dt);
    v.valid = true;
  }
  previous_ = stats;
  previous_s_ = now_s;
  last_ = v;
  return v;
}

Model::Model() {
  tables_[static_cast<int>(View::kHotPaths)] = Table(HotPathColumns(), 0, false);
  tables_[static_cast<int>(View::kSubpaths)] = Table(SubpathColumns(), 0, false);
  tables_[static_cast<int>(View::kCct)] = Table(CctColumns(), 0, true);
  tables_[static_cast<int>(View::kCallPairs)] = Table(CallPairColumns(), 0, false);
  tables_[static_cast<int>(View::kMethods)] = Table(MethodColumns(), 0, false);
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
  view_errors_[static_cast<int>(View::kCct)].clear();
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
}

void Model::ApplyPending() {
  if (pending_paths_) SetHotPaths(*pending_paths_);
  if (pending_subpaths_) SetSubpaths(*pending_subpaths_);
  if (pending_cct_) SetCct(*pending_cct_);
  if (pending_pairs_) SetCallPairs(*pending_pairs_);
  if (pending_methods_) SetMethods(*pending_methods_);
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
  if (help_) {
    help_ = false;
    return k == 'q' ? Action::kQuit : Action::kRedraw;
  }
  if (k == key::kF1) {
    edit_ = Edit::kNone;  // what was typed stays in effect
    help_ = true;
    return Action::kRedraw;
  }
  if (edit_ != Edit::kNone) return HandleEditKey(k);
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
  if (k == key::kBackspace) {
    if (!text.empty()) text.pop_back();
  } else if (k >= 0x20 && k < 0x7f) {
    text += static_cast<char>(k);
  } else {
    return Action::kNone;
  }
  if (filter) {
    t.SetFilter(filter_draft_);
  } else {
    search_missed_ = !t.SelectMatch(search_, false);
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
      return SwitchView(static_cast<View>((static_cast<int>(view_) + 1) % (kViewCount - 1)));
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
      t.ToggleExpanded();
      break;
    case key::kResize:
      break;
    default:
      return std::nullopt;
  }
  return Action::kRedraw;
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

std::string Model::TitleText() const {
  std::string s = "pathtop";
  if (!target_label_.empty()) s += "  " + target_label_;
  if (session_) {
    s += "  session " + pathprof::api::SessionIdForDisplay(session_->name()) + " " +
         StateWord(session_->state());
    s += "  source " + std::string(pathprof::api::BranchSourceWord(session_->source()));
    if (!session_->source_reason().empty()) s += " (" + session_->source_reason() + ")";
    if (!session_->error().empty()) s += "  error: " + session_->error();
  }
  return s;
}

std::string Model::StatsText() const {
  if (SessionEnded()) {
    // Rates of an ended session are zeros that read like a stall; say what happened instead.
    std::string s = session_->state() == v1::SESSION_STATE_TARGET_EXITED ? "target exited"
                    : session_->state() == v1::SESSION_STATE_FAILED      ? "session failed"
                                                                         : "session stopped";
    if (session_->has_end_time()) {
      const int64_t ended_ms =
          google::protobuf::util::TimeUtil::TimestampToMilliseconds(session_->end_time());
      int64_t ago = std::max<int64_t>(0, NowUnixMs() - ended_ms) / 1000;
      s += " " + std::to_string(ago) + "s ago";
    }
    s += ": the profile as it ended | drops " + std::to_string(stats_.drops);
    return s;
  }
  if (!stats_.valid) return "stats: waiting for two GetStats answers";
  std::string s = "stacks " + Rate(stats_.stack_samples_per_s) + " win " +
                  Rate(stats_.windows_per_s) + " br " + Rate(stats_.branches_per_s) +
                  " | pathprofd " + Percent1(stats_.daemon_cpu_percent) + " " +
                  FormatBytes(stats_.daemon_rss_bytes) + " | drops " + std::to_string(stats_.drops);
  if (stats_.decode_errors) s += " decode-err " + std::to_string(stats_.decode_errors);
  // Two spaces: the reason is a field of its own, which wraps whole (Wrap).
  if (!stats_.top_drop.empty()) s += "  (" + stats_.top_drop + ")";
  return s;
}

std::string Model::TabsText() const {
  std::string s;
  for (int i = 0; i < kViewCount - 1; ++i) {
    std::string tab = std::to_string(i + 1) + " " + ViewTitle(static_cast<View>(i));
    s += static_cast<int>(view_) == i ? "[" + tab + "]" : " " + tab + " ";
  }
  if (view_ == View::kTargets) s += "[Targets]";
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
  const bool from_branches =
      view_ == View::kHotPaths || view_ == View::kSubpaths || view_ == View::kCallPairs;
  const char* what = view_ == View::kHotPaths    ? "no hot paths"
                     : view_ == View::kSubpaths  ? "no hot subpaths"
                     : view_ == View::kCallPairs ? "no call pairs"
                     : view_ == View::kTargets   ? "no process listed"
                                                 : "no samples";
  if (view_ == View::kTargets) return what;
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
      " 1..5, Tab   views: paths, subpaths, calling-context tree, call pairs, methods",
      " F5          the calling-context tree (F5 again: back)   t   the process list",
      " < > s, F6   sort column left / right                    r   reverse the order",
      " /, F4       filter as you type (Enter keeps, Esc clears)",
      " F3          search: select a matching row (F3 again: the next one)",
      " p, space    pause / resume (answers arriving meanwhile are kept)",
      " Up Down PgUp PgDn Home End (or k j g G)    move the selection",
      " Right + / Left -   open / close a tree node; Enter toggles; e / c all",
      " Enter       in the process list: profile the selected process",
      " ?, h, F1    this help                                   q, F10   quit",
      "",
      "Views 1, 2 and 4 come from branch windows, 3 and 5 from stack samples.",
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
  wrapped(&out, TitleText(), SessionEnded() ? ScreenLine::kAlert : ScreenLine::kTitle);
  wrapped(&out, StatsText(), ScreenLine::kNormal);
  wrapped(&out, TabsText(), ScreenLine::kNormal);
  out.push_back({HeaderRow(table(view_), width), ScreenLine::kColumnHeader});
  if (static_cast<int>(out.size()) > room) out.resize(std::max(room, 0));
  AddBody(width, room - static_cast<int>(out.size()), &out);
  while (static_cast<int>(out.size()) < room) out.push_back({"", ScreenLine::kNormal});
  for (ScreenLine& l : foot) {
    if (static_cast<int>(out.size()) < height) out.push_back(std::move(l));
  }
  return out;
}

}  // namespace pathtop
