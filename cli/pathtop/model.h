// pathtop's whole state without a terminal: the views' tables, what is known about the session,
// connection and daemon, the keys' effects, and the screen as lines of text. The ncurses
// renderer only paints Layout(); tests drive HandleKey() and read Layout().
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "pathprof/v1/profiler.pb.h"
#include "pathtop/flame.h"
#include "pathtop/table.h"

namespace pathtop {

namespace v1 = ::pathprof::v1;

// The first kTabCount views are the tabs (keys 1..6, Tab); the hot paths of one calling
// context are opened from the tree (Enter), the process list with `t`.
enum class View {
  kHotPaths = 0,
  kSubpaths,
  kCct,
  kCallPairs,
  kMethods,
  kFlame,
  kContextPaths,
  kTargets
};
inline constexpr int kViewCount = 8;
inline constexpr int kTabCount = 6;
const char* ViewTitle(View view);

// Keys beyond plain characters, translated from the terminal's codes by the renderer.
namespace key {
inline constexpr int kUp = 0x1001, kDown = 0x1002, kLeft = 0x1003, kRight = 0x1004,
                     kPageUp = 0x1005, kPageDown = 0x1006, kHome = 0x1007, kEnd = 0x1008,
                     kEnter = 0x1009, kEscape = 0x100a, kBackspace = 0x100b, kResize = 0x100c;
// Function keys as htop uses them, where pathtop has the feature: F1 help, F3 search, F4 filter,
// F5 tree (the calling-context tree), F6 sort column, F10 quit. F2 (setup), F7/F8 (nice) and
// F9 (kill) have no pathtop meaning and stay unbound.
inline constexpr int kF1 = 0x1101, kF3 = 0x1103, kF4 = 0x1104, kF5 = 0x1105, kF6 = 0x1106,
                     kF10 = 0x110a;
}  // namespace key

enum class Action {
  kNone,
  kRedraw,
  kQuit,
  kViewChanged,  // the fetcher should fetch the new view now
  kPickTarget,   // in the target list: the user chose picked_pid()
};

struct ConnectionState {
  bool connected = false;
  std::string target;   // "unix:/run/pathprof/pathprofd.sock"
  std::string message;  // why not connected, or the last error
  int attempt = 0;      // reconnect attempts so far
  double retry_in_s = 0;
  bool reconnected = false;  // connected again after losing the daemon
};

// Rates from two GetStats answers.
struct StatsView {
  bool valid = false;
  double stack_samples_per_s = 0;
  double windows_per_s = 0;
  double branches_per_s = 0;
  uint64_t drops = 0;
  uint64_t decode_errors = 0;
  std::string top_drop;  // the largest drop reason, "lost-samples 12"
  // The raw windows kept for branch-profile exports, and the older ones let go: retention, not
  // drops (every window reached the profile first).
  uint64_t export_windows_kept = 0;
  uint64_t export_windows_let_go = 0;
  // Windows the branch source chose not to take, by reason, summed over targets ("stopped_time_cap
  // 120"): what bounds the window rate, not a loss.
  std::string windows_held_back;
  // Windows by the source that took them, summed over targets ("snapshot 900, stopped 40"): a
  // hybrid session's mix of snapshot and stopped windows.
  std::string windows_by_source;
  double daemon_cpu_percent = 0;
  uint64_t daemon_rss_bytes = 0;
  double pipeline_cpu_percent = 0;
};

// Turns successive Stats into rates. `now_s` is a steady clock in seconds. A rate spans at
// least kRateSpanS where the answers allow (against the latest answer that old, else the
// oldest kept): windows arrive in bursts, and a refresh a tenth of a second after the last
// (a key press, a view switch) read "win 0/s" over that tenth.
class StatsTracker {
 public:
  static constexpr double kRateSpanS = 2.0;
  static constexpr size_t kMaxKept = 256;  // answers kept, whatever the refresh rate

  StatsView Update(const v1::Stats& stats, double now_s);

 private:
  std::deque<std::pair<double, v1::Stats>> history_;  // oldest first
  StatsView last_;
};

struct ScreenLine {
  enum Style { kNormal, kTitle, kColumnHeader, kSelected, kFooter, kAlert };
  // Columns [begin, end) drawn in another style than the line's (the flame graph's selected
  // and matching frames).
  struct Span {
    int begin = 0, end = 0;
    Style style = kNormal;
  };
  ScreenLine(std::string text = "", Style style = kNormal, std::vector<Span> spans = {})
      : text(std::move(text)), style(style), spans(std::move(spans)) {}

  std::string text;
  Style style = kNormal;
  std::vector<Span> spans;
};

// The calling context whose hot paths View::kContextPaths shows: a tree node picked with Enter.
struct ContextPick {
  int64_t node = 0;  // CctNode.context_id
  int32_t pid = 0;
  std::string chain;  // its functions, root side first: "main > caller_a > loop"
};

class Model {
 public:
  Model();

  // The target pathtop profiles, shown in the title ("pid 1234 (loop)").
  void SetTargetLabel(const std::string& label) { target_label_ = label; }
  void SetIntervalSeconds(double s) { interval_s_ = s; }

  // Data from the fetcher. While paused they are kept and shown on resume.
  void SetHotPaths(const v1::HotPaths& msg);
  void SetSubpaths(const v1::HotSubpaths& msg);
  void SetCct(const v1::CallingContextTree& msg);
  void SetCallPairs(const v1::HotCallPairs& msg);
  void SetMethods(const v1::HotMethods& msg);
  void SetContextPaths(const v1::HotPaths& msg);
  void SetTargets(const v1::ListTargetsResponse& msg);
  void SetSession(const v1::Session& session);
  void SetStats(const StatsView& stats) { stats_ = stats; }
  void SetConnection(const ConnectionState& state) { connection_ = state; }
  // A problem with one view's query (unsupported by this daemon, permission): shown on its view.
  void SetViewError(View view, const std::string& message);
  // Forgets the profile views' data and session (another process was chosen).
  void ResetData();

  Action HandleKey(int key);

  View view() const { return view_; }
  void SetView(View view);
  bool paused() const { return paused_; }
  bool help_visible() const { return help_; }
  bool details_visible() const { return details_; }
  const ContextPick& context() const { return context_; }
  const FlameGraph& flame() const { return flame_; }
  bool editing_filter() const { return edit_ == Edit::kFilter; }
  bool searching() const { return edit_ == Edit::kSearch; }
  // The wall clock for "exited 12s ago"; 0 (the default) reads the system clock. For tests.
  void SetNowUnixMs(int64_t ms) { now_unix_ms_ = ms; }
  uint32_t picked_pid() const { return picked_pid_; }
  Table& table(View view) { return tables_[static_cast<int>(view)]; }
  const Table& table(View view) const { return tables_[static_cast<int>(view)]; }

  // The screen, `height` lines each at most `width` columns.
  std::vector<ScreenLine> Layout(int width, int height);

 private:
  enum class Edit { kNone, kFilter, kSearch };

  void ApplyPending();
  Action HandleEditKey(int k);
  Action HandleFlameEditKey(int k);
  std::optional<Action> HandleFlameKey(int k);
  Action OpenContext();
  std::optional<Action> HandleCommandKey(int k);
  std::optional<Action> HandleViewKey(int k);
  std::optional<Action> HandleMoveKey(int k);
  Action SwitchView(View v);
  bool SessionEnded() const;
  int64_t NowUnixMs() const;
  std::string StacksRate() const;
  std::string HeaderText(int width) const;
  std::string EndedText() const;
  std::string TabsText() const;
  std::string FooterText(int width) const;
  std::string EmptyNote(const Table& t) const;
  std::string HeaderRow(const Table& t, int width) const;
  std::string FormatRow(const Table& t, const VisibleRow& v, int width) const;
  std::vector<ScreenLine> HelpLayout(int width, int height) const;
  std::vector<ScreenLine> DetailsLayout(int width, int height) const;
  void AddBody(int width, int rows, std::vector<ScreenLine>* out);
  void AddFlameBody(int width, int rows, std::vector<ScreenLine>* out);
  std::string FrameText() const;

  View view_ = View::kHotPaths;
  std::array<Table, kViewCount> tables_;
  std::array<std::string, kViewCount> view_errors_;
  std::string target_label_;
  double interval_s_ = 2;
  std::optional<v1::Session> session_;
  std::string data_note_;  // e.g. "12 paths of 130 distinct"
  std::string hot_data_streams_note_;
  StatsView stats_;
  ConnectionState connection_;
  bool paused_ = false;
  bool help_ = false;
  bool details_ = false;  // `i`: the header in full
  Edit edit_ = Edit::kNone;
  std::string filter_draft_;
  std::string search_;  // the F3 search text, kept for the next F3
  bool search_missed_ = false;
  View before_tree_ = View::kHotPaths;  // where F5 goes back to from the tree
  int64_t now_unix_ms_ = 0;
  uint32_t picked_pid_ = 0;
  int last_height_ = 24;
  FlameGraph flame_;
  ContextPick context_;
  int64_t contexts_matched_ = -1;  // of the last context answer; -1: none yet
  int64_t context_windows_ = 0;
  // Answers that arrived while paused: the newest of each.
  std::optional<v1::HotPaths> pending_paths_;
  std::optional<v1::HotSubpaths> pending_subpaths_;
  std::optional<v1::CallingContextTree> pending_cct_;
  std::optional<v1::HotCallPairs> pending_pairs_;
  std::optional<v1::HotMethods> pending_methods_;
  std::optional<v1::HotPaths> pending_context_paths_;
};

}  // namespace pathtop
