#include "pathtop/terminal.h"

#include <algorithm>

#include <curses.h>

#include <cstdlib>

namespace pathtop {

namespace {
enum Pair : short { kTitlePair = 1, kHeaderPair, kSelectedPair, kAlertPair };
}

Terminal::Terminal() {
  initscr();
  cbreak();
  noecho();
  keypad(stdscr, TRUE);
  curs_set(0);
  // Esc clears the filter: do not wait a whole second to tell it from an arrow key's prefix.
  set_escdelay(25);
  const char* no_color = std::getenv("NO_COLOR");
  colour_ = has_colors() && (no_color == nullptr || no_color[0] == '\0');
  if (colour_) {
    start_color();
    use_default_colors();
    init_pair(kTitlePair, COLOR_CYAN, -1);
    init_pair(kHeaderPair, COLOR_BLACK, COLOR_GREEN);
    init_pair(kSelectedPair, COLOR_BLACK, COLOR_CYAN);
    init_pair(kAlertPair, COLOR_RED, -1);
  }
}

Terminal::~Terminal() {
  endwin();
}

int Terminal::width() const {
  return COLS;
}
int Terminal::height() const {
  return LINES;
}

int Terminal::ReadKey(int timeout_ms) {
  timeout(timeout_ms);
  int c = getch();
  switch (c) {
    case ERR:
      return -1;
    case KEY_UP:
      return key::kUp;
    case KEY_DOWN:
      return key::kDown;
    case KEY_LEFT:
      return key::kLeft;
    case KEY_RIGHT:
      return key::kRight;
    case KEY_PPAGE:
      return key::kPageUp;
    case KEY_NPAGE:
      return key::kPageDown;
    case KEY_HOME:
      return key::kHome;
    case KEY_END:
      return key::kEnd;
    case KEY_ENTER:
    case '\n':
    case '\r':
      return key::kEnter;
    case 27:
      return key::kEscape;
    case KEY_BACKSPACE:
    case 127:
    case 8:
      return key::kBackspace;
    case KEY_RESIZE:
      return key::kResize;
    case KEY_F(1):
      return key::kF1;
    case KEY_F(3):
      return key::kF3;
    case KEY_F(4):
      return key::kF4;
    case KEY_F(5):
      return key::kF5;
    case KEY_F(6):
      return key::kF6;
    case KEY_F(10):
      return key::kF10;
    default:
      return c >= 0 && c < 0x100 ? c : -1;
  }
}

// The curses attributes of a style: with colour the pair carries the look (reverse video on
// top of it would invert it again); without, bold and reverse video.
unsigned Terminal::AttributesOf(ScreenLine::Style style) const {
  attr_t attr = A_NORMAL;
  short pair = 0;
  switch (style) {
    case ScreenLine::kTitle:
      attr = A_BOLD;
      pair = kTitlePair;
      break;
    case ScreenLine::kColumnHeader:
      attr = A_REVERSE;
      pair = kHeaderPair;
      break;
    case ScreenLine::kSelected:
      attr = A_REVERSE;
      pair = kSelectedPair;
      break;
    case ScreenLine::kAlert:
      attr = A_BOLD;
      pair = kAlertPair;
      break;
    case ScreenLine::kFooter:
    case ScreenLine::kNormal:
      break;
  }
  if (colour_ && pair != 0) attr = (attr & A_BOLD) | COLOR_PAIR(pair);
  return attr;
}

void Terminal::Draw(const std::vector<ScreenLine>& lines) {
  erase();
  for (size_t y = 0; y < lines.size() && static_cast<int>(y) < LINES; ++y) {
    const ScreenLine& line = lines[y];
    const attr_t attr = static_cast<attr_t>(AttributesOf(line.style));
    attron(attr);
    mvaddnstr(static_cast<int>(y), 0, line.text.c_str(), COLS);
    // Header and selection bars span the whole width, as in top.
    if (line.style == ScreenLine::kColumnHeader || line.style == ScreenLine::kSelected) {
      for (int x = static_cast<int>(line.text.size()); x < COLS; ++x) addch(' ');
    }
    attroff(attr);
    for (const ScreenLine::Span& span : line.spans) {
      const int end = std::min({span.end, static_cast<int>(line.text.size()), COLS});
      if (span.begin < 0 || span.begin >= end) continue;
      const attr_t span_attr = static_cast<attr_t>(AttributesOf(span.style));
      attron(span_attr);
      mvaddnstr(static_cast<int>(y), span.begin, line.text.c_str() + span.begin, end - span.begin);
      attroff(span_attr);
    }
  }
  refresh();
}

}  // namespace pathtop
