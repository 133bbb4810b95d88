#include "pathtop/table.h"

#include <algorithm>
#include <cctype>
#include <limits>

namespace pathtop {

namespace {

std::string Lower(const std::string& s) {
  std::string out = s;
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace

Table::Table(std::vector<Column> columns, int sort_column, bool tree)
    : columns_(std::move(columns)), tree_(tree), sort_column_(sort_column) {}

void Table::Replace(std::vector<Row> rows) {
  rows_ = std::move(rows);
  has_data_ = true;
  Rebuild();
}

void Table::Clear() {
  rows_.clear();
  has_data_ = false;
  Rebuild();
}

void Table::SetSortColumn(int column) {
  if (column < 0 || column >= static_cast<int>(columns_.size())) return;
  sort_column_ = column;
  Rebuild();
}

void Table::NextSortColumn(int step) {
  int n = static_cast<int>(columns_.size());
  if (n == 0) return;
  SetSortColumn(((sort_column_ + step) % n + n) % n);
}

void Table::ToggleReverse() {
  reversed_ = !reversed_;
  Rebuild();
}

void Table::SetFilter(const std::string& filter) {
  filter_ = filter;
  Rebuild();
}

bool Table::Less(const Row& a, const Row& b) const {
  size_t col = static_cast<size_t>(sort_column_);
  if (col < columns_.size() && columns_[col].numeric) {
    double va = col < a.numbers.size() ? a.numbers[col] : 0;
    double vb = col < b.numbers.size() ? b.numbers[col] : 0;
    if (va != vb) return reversed_ ? va < vb : va > vb;
  } else if (col < a.cells.size() && col < b.cells.size()) {
    int c = a.cells[col].compare(b.cells[col]);
    if (c != 0) return reversed_ ? c > 0 : c < 0;
  }
  // Ties keep the order they had on screen; rows new in this refresh go after the old ones.
  constexpr size_t kNew = std::numeric_limits<size_t>::max();
  auto ia = previous_rank_.find(a.key), ib = previous_rank_.find(b.key);
  size_t ra = ia == previous_rank_.end() ? kNew : ia->second;
  size_t rb = ib == previous_rank_.end() ? kNew : ib->second;
  if (ra != rb) return ra < rb;
  return a.key < b.key;
}

bool Table::IsExpanded(const Row& row) const {
  auto it = expanded_override_.find(row.key);
  return it == expanded_override_.end() ? row.expanded_by_default : it->second;
}

bool Table::MarkMatches(const Row* row,
                        const std::unordered_map<std::string, std::vector<const Row*>>& children,
                        std::unordered_map<std::string, bool>* keep) const {
  bool any = Lower(row->search_text).find(Lower(filter_)) != std::string::npos;
  auto it = children.find(row->key);
  if (it != children.end()) {
    for (const Row* child : it->second) any = MarkMatches(child, children, keep) || any;
  }
  (*keep)[row->key] = any;
  return any;
}

void Table::AppendSubtree(const Row* row, int depth,
                          const std::unordered_map<std::string, std::vector<const Row*>>& children,
                          const std::unordered_map<std::string, bool>& keep) {
  if (!filter_.empty()) {
    auto k = keep.find(row->key);
    if (k == keep.end() || !k->second) return;
  }
  auto it = children.find(row->key);
  bool has_children = it != children.end() && !it->second.empty();
  // With a filter, the way down to every match is open.
  bool expanded = has_children && (!filter_.empty() || IsExpanded(*row));
  visible_.push_back(VisibleRow{row, depth, has_children, expanded});
  if (!expanded) return;
  for (const Row* child : it->second) AppendSubtree(child, depth + 1, children, keep);
}

void Table::Rebuild() {
  std::vector<const Row*> sorted;
  sorted.reserve(rows_.size());
  for (const Row& r : rows_) sorted.push_back(&r);
  std::sort(sorted.begin(), sorted.end(),
            [this](const Row* a, const Row* b) { return Less(*a, *b); });

  visible_.clear();
  if (!tree_) {
    std::string needle = Lower(filter_);
    for (const Row* r : sorted) {
      if (needle.empty() || Lower(r->search_text).find(needle) != std::string::npos) {
        visible_.push_back(VisibleRow{r, 0, false, false});
      }
    }
  } else {
    std::unordered_map<std::string, const Row*> by_key;
    for (const Row* r : sorted) by_key.emplace(r->key, r);
    std::unordered_map<std::string, std::vector<const Row*>> children;
    std::vector<const Row*> roots;
    for (const Row* r : sorted) {
      if (r->parent_key.empty() || by_key.count(r->parent_key) == 0) {
        roots.push_back(r);
      } else {
        children[r->parent_key].push_back(r);
      }
    }
    std::unordered_map<std::string, bool> keep;
    if (!filter_.empty()) {
      for (const Row* r : roots) MarkMatches(r, children, &keep);
    }
    for (const Row* r : roots) AppendSubtree(r, 0, children, keep);
  }

  previous_rank_.clear();
  for (size_t i = 0; i < sorted.size(); ++i) previous_rank_[sorted[i]->key] = i;

  int found = -1;
  for (size_t i = 0; i < visible_.size(); ++i) {
    if (visible_[i].row->key == selected_key_) {
      found = static_cast<int>(i);
      break;
    }
  }
  if (found >= 0) {
    selected_ = found;
  } else if (visible_.empty()) {
    selected_ = -1;
  } else {
    selected_ = std::clamp(selected_, 0, static_cast<int>(visible_.size()) - 1);
    selected_key_ = visible_[selected_].row->key;
  }
}

void Table::MoveSelection(int delta) {
  if (visible_.empty()) return;
  selected_ = std::clamp(selected_ + delta, 0, static_cast<int>(visible_.size()) - 1);
  selected_key_ = visible_[selected_].row->key;
}

bool Table::SelectMatch(const std::string& text, bool next) {
  const int n = static_cast<int>(visible_.size());
  if (n == 0 || text.empty()) return false;
  const std::string needle = Lower(text);
  const int from = std::max(selected_, 0) + (next ? 1 : 0);
  for (int i = 0; i < n; ++i) {
    const int at = (from + i) % n;
    if (Lower(visible_[at].row->search_text).find(needle) != std::string::npos) {
      selected_ = at;
      selected_key_ = visible_[at].row->key;
      return true;
    }
  }
  return false;
}

void Table::SelectFirst() {
  MoveSelection(-static_cast<int>(visible_.size()));
}
void Table::SelectLast() {
  MoveSelection(static_cast<int>(visible_.size()));
}

const Row* Table::selected_row() const {
  if (selected_ < 0 || selected_ >= static_cast<int>(visible_.size())) return nullptr;
  return visible_[selected_].row;
}

void Table::Expand() {
  if (!tree_ || selected_row() == nullptr || !visible_[selected_].has_children) return;
  expanded_override_[selected_row()->key] = true;
  Rebuild();
}

void Table::Collapse() {
  if (!tree_ || selected_row() == nullptr) return;
  const VisibleRow& v = visible_[selected_];
  if (v.has_children && v.expanded) {
    expanded_override_[v.row->key] = false;
  } else if (!v.row->parent_key.empty()) {
    // On a leaf or a closed node, Left goes up to the parent, as in file browsers.
    for (size_t i = 0; i < visible_.size(); ++i) {
      if (visible_[i].row->key == v.row->parent_key) {
        selected_ = static_cast<int>(i);
        selected_key_ = v.row->parent_key;
        break;
      }
    }
  }
  Rebuild();
}

void Table::ToggleExpanded() {
  if (!tree_ || selected_row() == nullptr || !visible_[selected_].has_children) return;
  expanded_override_[selected_row()->key] = !visible_[selected_].expanded;
  Rebuild();
}

void Table::ExpandAll() {
  for (const Row& r : rows_) expanded_override_[r.key] = true;
  Rebuild();
}

void Table::CollapseAll() {
  for (const Row& r : rows_) expanded_override_[r.key] = false;
  Rebuild();
}

int Table::ScrollTop(int height) {
  if (height <= 0) return 0;
  int n = static_cast<int>(visible_.size());
  if (selected_ >= 0) {
    if (selected_ < scroll_top_) scroll_top_ = selected_;
    if (selected_ >= scroll_top_ + height) scroll_top_ = selected_ - height + 1;
  }
  scroll_top_ = std::clamp(scroll_top_, 0, std::max(0, n - height));
  return scroll_top_;
}

}  // namespace pathtop
