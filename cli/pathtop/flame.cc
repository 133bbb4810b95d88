#include "pathtop/flame.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <unordered_map>

#include "pathtop/format.h"

namespace pathtop {

namespace {

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

int Column(double x) {
  return static_cast<int>(std::lround(x));
}

// The frame with this key or, when the refresh dropped it, its nearest ancestor that is left
// (keys are "/f@site/g@site...": each ancestor's key is a prefix ending before a '/').
int FindOrAncestor(std::string key, const std::unordered_map<std::string, int>& by_key) {
  while (!key.empty()) {
    auto it = by_key.find(key);
    if (it != by_key.end()) return it->second;
    const size_t slash = key.rfind('/');
    key.erase(slash == std::string::npos ? 0 : slash);
  }
  return 0;
}

}  // namespace

void FlameGraph::Clear() {
  frames_.assign(1, Frame());
  frames_[0].name = "all";
  lower_text_.assign(1, "all");
  has_data_ = false;
  selected_ = zoom_ = 0;
  drawn_.clear();
}

FlameGraph::FlameGraph() {
  Clear();
}

void FlameGraph::Replace(const v1::CallingContextTree& msg) {
  const std::string selected_key = frames_[selected_].key, zoom_key = frames_[zoom_].key;
  Clear();
  has_data_ = true;
  std::unordered_map<int64_t, int> index_of;  // answer's node id -> frame
  std::unordered_map<std::string, int> by_key;
  double roots_total = 0;
  for (const v1::CctNode& n : msg.nodes()) {
    auto parent_it = index_of.find(n.parent_id());
    // Parents come before children (CallingContextTree.nodes); a node whose parent is missing
    // hangs under "all" rather than being dropped.
    const int parent = n.parent_id() != 0 && parent_it != index_of.end() ? parent_it->second : 0;
    Frame f;
    f.key = ContextKey(frames_[parent].key, n);
    f.name = FunctionName(n.function());
    f.search_text = f.name + " " + FormatLocation(n.call_site());
    f.total = n.total_weight();
    f.self = n.self_weight();
    f.calls = n.edge_weight();
    f.parent = parent;
    f.depth = frames_[parent].depth + 1;
    f.context_id = n.context_id();
    f.pid = n.pid();
    if (parent == 0) roots_total += f.total;
    const int index = static_cast<int>(frames_.size());
    index_of[n.id()] = index;
    by_key[f.key] = index;
    lower_text_.push_back(Lower(f.search_text));
    frames_[parent].children.push_back(index);
    frames_.push_back(std::move(f));
  }
  // The tree may leave out light subtrees (min_weight): "all" is the answer's total when it is
  // the larger, so the shares here are the tree view's.
  frames_[0].total = std::max(msg.total_weight(), roots_total);
  for (Frame& f : frames_) {
    std::sort(f.children.begin(), f.children.end(), [&](int a, int b) {
      return frames_[a].name != frames_[b].name ? frames_[a].name < frames_[b].name
                                                : frames_[a].key < frames_[b].key;
    });
  }
  selected_ = FindOrAncestor(selected_key, by_key);
  zoom_ = FindOrAncestor(zoom_key, by_key);
  if (!InSubtree(selected_, zoom_) && !InSubtree(zoom_, selected_)) selected_ = zoom_;
}

bool FlameGraph::InSubtree(int frame, int top) const {
  for (int f = frame; f >= 0; f = frames_[f].parent) {
    if (f == top) return true;
  }
  return false;
}

void FlameGraph::SelectParent() {
  if (frames_[selected_].parent >= 0) selected_ = frames_[selected_].parent;
}

void FlameGraph::SelectChild() {
  const size_t below = static_cast<size_t>(frames_[selected_].depth) + 1;
  if (below >= drawn_.size()) return;
  int best = -1, best_width = 0;
  for (const Cell& c : drawn_[below]) {
    if (frames_[c.frame].parent == selected_ && c.end - c.begin > best_width) {
      best = c.frame;
      best_width = c.end - c.begin;
    }
  }
  if (best >= 0) selected_ = best;
}

void FlameGraph::SelectSibling(int step) {
  const size_t depth = static_cast<size_t>(frames_[selected_].depth);
  if (depth >= drawn_.size()) return;
  const std::vector<Cell>& line = drawn_[depth];
  for (size_t i = 0; i < line.size(); ++i) {
    if (line[i].frame != selected_) continue;
    const long to = static_cast<long>(i) + step;
    if (to >= 0 && to < static_cast<long>(line.size())) selected_ = line[to].frame;
    return;
  }
}

void FlameGraph::SelectRoot() {
  selected_ = zoom_ = 0;
}

void FlameGraph::ZoomIn() {
  zoom_ = selected_;
}

bool FlameGraph::ZoomOut() {
  if (zoom_ == 0) return false;
  zoom_ = frames_[zoom_].parent;
  return true;
}

void FlameGraph::SetSearch(const std::string& text) {
  search_ = text;
}

bool FlameGraph::Matches(int frame) const {
  return !search_.empty() && frame > 0 &&
         lower_text_[frame].find(Lower(search_)) != std::string::npos;
}

double FlameGraph::MatchedShare() const {
  if (total() <= 0) return 0;
  double sum = 0;
  for (size_t i = 1; i < frames_.size(); ++i) {
    if (!Matches(static_cast<int>(i))) continue;
    bool under_match = false;
    for (int a = frames_[i].parent; a > 0 && !under_match; a = frames_[a].parent) {
      under_match = Matches(a);
    }
    if (!under_match) sum += frames_[i].total;
  }
  return sum / total();
}

int FlameGraph::matched_frames() const {
  int n = 0;
  for (size_t i = 1; i < frames_.size(); ++i) n += Matches(static_cast<int>(i)) ? 1 : 0;
  return n;
}

// Lays `frame` over columns [x0, x1) and its children over its width in proportion to their
// totals, left to right; a frame that rounds to no column is not drawn, nor anything below it.
void FlameGraph::Lay(int frame, double x0, double x1) {
  if (Column(x1) - Column(x0) < 1) return;
  const Frame& f = frames_[frame];
  if (drawn_.size() <= static_cast<size_t>(f.depth)) drawn_.resize(f.depth + 1);
  drawn_[f.depth].push_back({Column(x0), Column(x1), frame});
  if (f.total <= 0) return;
  double x = x0;
  for (int child : f.children) {
    const double w = (x1 - x0) * std::min(1.0, frames_[child].total / f.total);
    Lay(child, x, std::min(x1, x + w));
    x += w;
  }
}

std::vector<FlameGraph::Line> FlameGraph::Render(int width, int height) {
  width = std::max(width, 1);
  drawn_.clear();
  // The zoomed frame's callers, each across the whole width above it.
  for (int a = frames_[zoom_].parent; a >= 0; a = frames_[a].parent) {
    if (drawn_.size() <= static_cast<size_t>(frames_[a].depth)) drawn_.resize(frames_[a].depth + 1);
    drawn_[frames_[a].depth].push_back({0, width, a});
  }
  Lay(zoom_, 0, width);
  // A selection the new layout does not draw (too narrow now) moves to its nearest drawn caller.
  auto is_drawn = [&](int frame) {
    const size_t d = static_cast<size_t>(frames_[frame].depth);
    if (d >= drawn_.size()) return false;
    return std::any_of(drawn_[d].begin(), drawn_[d].end(),
                       [&](const Cell& c) { return c.frame == frame; });
  };
  while (selected_ > 0 && !is_drawn(selected_)) selected_ = frames_[selected_].parent;

  const int depths = static_cast<int>(drawn_.size());
  const int rows = std::max(height, 1);
  const int first = depths <= rows ? 0 : std::max(0, frames_[selected_].depth - rows + 1);
  const double all = total();
  std::vector<Line> out;
  for (int d = first; d < depths && d < first + rows; ++d) {
    Line line;
    line.text.assign(width, ' ');
    for (const Cell& c : drawn_[d]) {
      const Frame& f = frames_[c.frame];
      const bool sel = c.frame == selected_;
      const int w = c.end - c.begin;
      std::string cell;
      if (w == 1) {
        cell = sel ? ">" : "|";
      } else {
        // The share where it fits; a narrow frame keeps the room for its name.
        std::string label = (Matches(c.frame) ? "*" : "") + f.name;
        const std::string share = " " + FormatPercent(all > 0 ? f.total / all : 0) + "%";
        if (static_cast<int>(label.size() + share.size()) <= w - 2) label += share;
        cell = std::string(sel ? ">" : "[") + Fit(label, w - 2, false) + (sel ? "<" : "]");
      }
      line.text.replace(c.begin, cell.size(), cell);
      line.cells.push_back(c);
    }
    out.push_back(std::move(line));
  }
  return out;
}

}  // namespace pathtop
