// One pathtop view's rows: sorting by a chosen column with an order that stays put between
// refreshes, the `/` filter, a selection that follows its row, and (for the calling-context
// tree) expand/collapse. Knows nothing of terminals or gRPC.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

namespace pathtop {

struct Column {
  std::string title;
  int width = 0;  // 0: the last column, which takes what is left of the line
  bool right_align = false;
  bool numeric = false;  // numbers sort largest first, text A to Z
};

struct Row {
  std::string key;                 // identity across refreshes
  std::vector<std::string> cells;  // one per column, as shown
  // One per column: the value a numeric column sorts by. Builders round it to the precision
  // shown, so rows that show the same number count as tied and keep their previous order
  // instead of swapping on sampling noise at every refresh.
  std::vector<double> numbers;
  std::string search_text;  // what `/` matches: the full text, before any truncation
  // Trees (the calling-context tree) only:
  std::string parent_key;  // empty for roots
  bool expanded_by_default = true;
  // Calling-context tree rows: the context GetHotPathsRequest.context selects (Enter on the
  // row shows its hot paths); 0 where the daemon gave none.
  int64_t context_id = 0;
  int32_t pid = 0;
};

// A row as displayed: the table's row plus its tree decoration.
struct VisibleRow {
  const Row* row = nullptr;
  int depth = 0;
  bool has_children = false;
  bool expanded = false;
};

class Table {
 public:
  Table() = default;
  Table(std::vector<Column> columns, int sort_column, bool tree);

  const std::vector<Column>& columns() const { return columns_; }
  bool tree() const { return tree_; }
  bool has_data() const { return has_data_; }

  // New data from a refresh. The previous displayed order breaks ties in the new one.
  void Replace(std::vector<Row> rows);
  void Clear();

  int sort_column() const { return sort_column_; }
  bool reversed() const { return reversed_; }
  void SetSortColumn(int column);
  void NextSortColumn(int step);  // +1 for `>`, -1 for `<`, wrapping
  void ToggleReverse();

  // Case-insensitive substring over Row::search_text; empty shows everything. In a tree a row
  // is shown when it or a descendant matches, with the way down to a match opened.
  void SetFilter(const std::string& filter);
  const std::string& filter() const { return filter_; }

  // Tree rows: open or close the selected node (no-op on leaves and flat tables).
  void Expand();
  void Collapse();
  void ToggleExpanded();
  void ExpandAll();
  void CollapseAll();

  const std::vector<VisibleRow>& visible() const { return visible_; }
  size_t total_rows() const { return rows_.size(); }

  // Selection, by row identity: it follows its row across refreshes and re-sorts; when the row
  // disappears the selection stays at the same position.
  int selected() const { return selected_; }  // index in visible(), -1 when empty
  void MoveSelection(int delta);
  void SelectFirst();
  void SelectLast();
  // Search (F3): selects the first visible row from the selection on (after it when `next`)
  // whose search text holds `text`, case-insensitive, wrapping around. False when none does;
  // the selection then stays. Unlike the filter it hides nothing.
  bool SelectMatch(const std::string& text, bool next);
  const Row* selected_row() const;

  // First visible row to draw so that the selection is on screen in `height` rows.
  int ScrollTop(int height);

 private:
  bool Less(const Row& a, const Row& b) const;
  void Rebuild();  // sort + filter + flatten; keeps the selection on its key
  bool IsExpanded(const Row& row) const;
  void AppendSubtree(const Row* row, int depth,
                     const std::unordered_map<std::string, std::vector<const Row*>>& children,
                     const std::unordered_map<std::string, bool>& keep);
  bool MarkMatches(const Row* row,
                   const std::unordered_map<std::string, std::vector<const Row*>>& children,
                   std::unordered_map<std::string, bool>* keep) const;

  std::vector<Column> columns_;
  bool tree_ = false;
  bool has_data_ = false;
  std::vector<Row> rows_;
  int sort_column_ = 0;
  bool reversed_ = false;
  std::string filter_;
  std::map<std::string, bool> expanded_override_;  // the user's expand/collapse by key
  std::unordered_map<std::string, size_t> previous_rank_;
  std::vector<VisibleRow> visible_;
  int selected_ = -1;
  std::string selected_key_;
  int scroll_top_ = 0;
};

}  // namespace pathtop
