// The calling-context tree as a flame graph drawn root on top (an icicle graph, as terminal
// flame-graph viewers draw it): one line per depth, each frame as wide as its share of its
// parent, children in name order (as flamegraph.pl sorts them) so that frames keep their place
// between refreshes instead of following sampling noise. A frame can be selected, zoomed (it
// fills the width, its callers above it at full width) and searched (matching frames marked,
// with the share of the total they cover). Selection and zoom are kept by context key
// (format.h ContextKey) across refreshes. No terminal here: the model paints Render()'s lines.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "pathprof/v1/profiler.pb.h"

namespace pathtop {

namespace v1 = ::pathprof::v1;

class FlameGraph {
 public:
  struct Frame {
    std::string key;          // ContextKey chain; "" for the synthetic root "all"
    std::string name;         // the function
    std::string search_text;  // name, call site and source line, as the tree view's filter
    double total = 0;         // weight of this context and everything below it
    double self = 0;
    double calls = 0;  // the edge weight from the caller
    int parent = -1;
    int depth = 0;
    std::vector<int> children;  // name order
    int64_t context_id = 0;
    int32_t pid = 0;
  };
  // One frame as drawn: columns [begin, end) of its line.
  struct Cell {
    int begin = 0, end = 0;
    int frame = 0;
  };
  struct Line {
    std::string text;
    std::vector<Cell> cells;
  };

  FlameGraph();

  // New data. Frame 0 is "all", the sum of the tree's roots (a tree of several threads or a
  // "[truncated]" root has several). The selection and zoom stay on their context keys.
  void Replace(const v1::CallingContextTree& msg);
  void Clear();
  bool has_data() const { return has_data_; }
  bool empty() const { return frames_.size() <= 1; }

  const Frame& selected() const { return frames_[selected_]; }
  int selected_index() const { return selected_; }
  const Frame& zoom() const { return frames_[zoom_]; }
  bool zoomed() const { return zoom_ != 0; }
  double total() const { return frames_[0].total; }

  // Moves by what the last Render() drew: a frame narrower than a column is not reachable.
  void SelectParent();
  void SelectChild();            // the widest child drawn
  void SelectSibling(int step);  // the frame drawn before/after on the same line
  void SelectRoot();             // and zoom out entirely
  void ZoomIn();                 // the selected frame fills the width
  bool ZoomOut();                // one level; false when not zoomed

  // Case-insensitive substring over Frame::search_text; "" clears.
  void SetSearch(const std::string& text);
  const std::string& search() const { return search_; }
  bool Matches(int frame) const;
  // The share of the total in matching frames, each counted once (a match under a match is
  // already inside its ancestor's width), and how many frames match.
  double MatchedShare() const;
  int matched_frames() const;

  // The graph in `width` columns, at most `height` lines; the selected frame's line is always
  // among them (deep graphs scroll).
  std::vector<Line> Render(int width, int height);

 private:
  bool InSubtree(int frame, int top) const;
  void Lay(int frame, double x0, double x1);

  std::vector<Frame> frames_;
  bool has_data_ = false;
  int selected_ = 0;
  int zoom_ = 0;
  std::string search_;
  std::vector<std::string> lower_text_;  // per frame, Frame::search_text lowercased
  // What the last Render() laid out: each depth's drawn cells, left to right.
  std::vector<std::vector<Cell>> drawn_;
};

}  // namespace pathtop
