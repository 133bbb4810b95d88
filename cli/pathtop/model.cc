#include "pathtop/model.h"

#include <algorithm>
#include <cctype>
#include <cstdio>

#include "pathtop/format.h"
#include "pathtop/rows.h"

namespace pathtop {

namespace {

// "BRANCH_SOURCE_PTRACE" -> "ptrace"
std::string EnumWord(const std::string& name, const std::string& prefix) {
  std::string s = name.rfind(prefix, 0) == 0 ? name.substr(prefix.size()) : name;
  for (char& c : s) c = static_cast<char>(c == '_' ? '-' : std::tolower(c));
  return s;
}

std::string Rate(double per_s) {
  return FormatCount(per_s) + "/s";
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
    uint64_t biggest = 0;
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
  Table& t = table(view_);
  if (help_) {
    help_ = false;
    return k == 'q' ? Action::kQuit : Action::kRedraw;
  }
  if (editing_filter_) {
    if (k == key::kEnter) {
      editing_filter_ = false;
    } else if (k == key::kEscape) {
      editing_filter_ = false;
      filter_draft_.clear();
      t.SetFilter("");
    } else if (k == key::kBackspace) {
      if (!filter_draft_.empty()) filter_draft_.pop_back();
      t.SetFilter(filter_draft_);
    } else if (k >= 0x20 && k < 0x7f) {
      filter_draft_ += static_cast<char>(k);
      t.SetFilter(filter_draft_);  // filters as you type, as htop does
    } else {
      return Action::kNone;
    }
    return Action::kRedraw;
  }
  int page = std::max(1, last_height_ - 5);
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
    case '1':
    case '2':
    case '3':
    case '4':
    case '5':
    case '6': {
      View v = static_cast<View>(k - '1');
      if (v == view_) return Action::kNone;
      view_ = v;
      return Action::kViewChanged;
    }
    case '\t':
      view_ = static_cast<View>((static_cast<int>(view_) + 1) % (kViewCount - 1));
      return Action::kViewChanged;
    case 't':
      view_ = View::kTargets;
      return Action::kViewChanged;
    case '<':
    case ',':
      t.NextSortColumn(-1);
      return Action::kRedraw;
    case '>':
    case '.':
    case 's':
      t.NextSortColumn(+1);
      return Action::kRedraw;
    case 'r':
    case 'R':
      t.ToggleReverse();
      return Action::kRedraw;
    case '/':
      editing_filter_ = true;
      filter_draft_ = t.filter();
      return Action::kRedraw;
    case key::kEscape:
      t.SetFilter("");
      return Action::kRedraw;
    case key::kUp:
    case 'k':
      t.MoveSelection(-1);
      return Action::kRedraw;
    case key::kDown:
    case 'j':
      t.MoveSelection(+1);
      return Action::kRedraw;
    case key::kPageUp:
      t.MoveSelection(-page);
      return Action::kRedraw;
    case key::kPageDown:
      t.MoveSelection(page);
      return Action::kRedraw;
    case key::kHome:
    case 'g':
      t.SelectFirst();
      return Action::kRedraw;
    case key::kEnd:
    case 'G':
      t.SelectLast();
      return Action::kRedraw;
    case key::kRight:
    case '+':
      t.Expand();
      return Action::kRedraw;
    case key::kLeft:
    case '-':
      t.Collapse();
      return Action::kRedraw;
    case 'e':
      t.ExpandAll();
      return Action::kRedraw;
    case 'c':
      t.CollapseAll();
      return Action::kRedraw;
    case key::kEnter:
      if (view_ == View::kTargets && t.selected_row() != nullptr) {
        picked_pid_ = static_cast<uint32_t>(std::stoul(t.selected_row()->key));
        return Action::kPickTarget;
      }
      t.ToggleExpanded();
      return Action::kRedraw;
    case key::kResize:
      return Action::kRedraw;
    default:
      return Action::kNone;
  }
}

std::string Model::TitleLine() const {
  std::string s = "pathtop";
  if (!target_label_.empty()) s += "  " + target_label_;
  if (session_) {
    s += "  session " + session_->id() + " " +
         EnumWord(v1::SessionState_Name(session_->state()), "SESSION_STATE_");
    s += "  source " + EnumWord(v1::BranchSource_Name(session_->source()), "BRANCH_SOURCE_");
    if (!session_->source_reason().empty()) s += " (" + session_->source_reason() + ")";
    if (!session_->error().empty()) s += "  error: " + session_->error();
  }
  return s;
}

std::string Model::StatsLine() const {
  if (!stats_.valid) return "stats: waiting for two GetStats answers";
  // The drop reasons go last: on a narrow screen they are what gets cut.
  std::string s = "stacks " + Rate(stats_.stack_samples_per_s) + " win " +
                  Rate(stats_.windows_per_s) + " br " + Rate(stats_.branches_per_s) +
                  " | pathprofd " + Percent1(stats_.daemon_cpu_percent) + " " +
                  FormatBytes(stats_.daemon_rss_bytes) + " | drops " + std::to_string(stats_.drops);
  if (stats_.decode_errors) s += " decode-err " + std::to_string(stats_.decode_errors);
  if (!stats_.top_drop.empty()) s += " (" + stats_.top_drop + ")";
  return s;
}

std::string Model::TabsLine() const {
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

std::string Model::FooterLine(int width) const {
  if (editing_filter_) return "filter: " + filter_draft_ + "_   (Enter keep, Esc clear)";
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
      " t           the process list (Enter profiles the selected process)",
      " < > s       sort column left / right       r   reverse the order",
      " /           filter (as you type; Enter keeps, Esc clears)",
      " p, space    pause / resume (answers arriving meanwhile are kept)",
      " Up Down PgUp PgDn Home End (or k j g G)    move the selection",
      " Right + / Left -   open / close a tree node; Enter toggles; e / c all",
      " ?, h        this help                       q   quit",
      "",
      "Rows whose shown values tie keep their order; the selection follows its row.",
      "Hot paths come from the WatchHotPaths stream; other views are polled.",
      "",
      "Press any key to return.",
  };
  std::vector<ScreenLine> out;
  for (const char* l : kLines) {
    if (static_cast<int>(out.size()) >= height) break;
    out.push_back({Truncate(l, width), out.empty() ? ScreenLine::kTitle : ScreenLine::kNormal});
  }
  return out;
}

std::vector<ScreenLine> Model::Layout(int width, int height) {
  last_height_ = height;
  if (width <= 0 || height <= 0) return {};
  if (help_) return HelpLayout(width, height);
  std::vector<ScreenLine> out;
  auto add = [&](const std::string& text, ScreenLine::Style style) {
    if (static_cast<int>(out.size()) < height) out.push_back({Truncate(text, width), style});
  };
  add(TitleLine(), ScreenLine::kTitle);
  add(StatsLine(), ScreenLine::kNormal);
  add(TabsLine(), ScreenLine::kNormal);
  Table& t = table(view_);
  add(HeaderRow(t, width), ScreenLine::kColumnHeader);

  int body = height - static_cast<int>(out.size()) - 1;  // the footer keeps the last line
  if (body > 0) {
    const std::string& error = view_errors_[static_cast<int>(view_)];
    if (t.visible().empty()) {
      std::string note;
      if (!error.empty()) {
        note = error;
      } else if (!t.has_data()) {
        note = connection_.connected ? "waiting for the first answer..." : "no data yet";
      } else if (!t.filter().empty()) {
        note = "no row matches /" + t.filter() + "  (Esc clears the filter)";
      } else {
        note = "nothing profiled yet";
      }
      add(note, error.empty() ? ScreenLine::kNormal : ScreenLine::kAlert);
      --body;
    } else {
      if (!error.empty()) {
        add(error, ScreenLine::kAlert);
        --body;
      }
      int top = t.ScrollTop(body);
      int n = static_cast<int>(t.visible().size());
      for (int i = top; i < n && i < top + body; ++i) {
        add(FormatRow(t, t.visible()[i], width),
            i == t.selected() ? ScreenLine::kSelected : ScreenLine::kNormal);
      }
    }
    if (view_ == View::kMethods && !hot_data_streams_note_.empty() &&
        static_cast<int>(out.size()) < height - 1) {
      add("hot data streams: " + hot_data_streams_note_, ScreenLine::kNormal);
    }
  }
  while (static_cast<int>(out.size()) < height - 1) out.push_back({"", ScreenLine::kNormal});
  add(FooterLine(width), connection_.connected && !editing_filter_ ? ScreenLine::kFooter
                         : editing_filter_                         ? ScreenLine::kNormal
                                                                   : ScreenLine::kAlert);
  return out;
}

}  // namespace pathtop
