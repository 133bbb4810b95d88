// The ncurses side of pathtop: raw keys in (translated to model keys), the model's screen
// lines out. Colour only when the terminal has it and NO_COLOR is not set (no-color.org).
#pragma once

#include <vector>

#include "pathtop/model.h"

namespace pathtop {

class Terminal {
 public:
  Terminal();   // enters curses mode
  ~Terminal();  // leaves it, restoring the terminal
  Terminal(const Terminal&) = delete;
  Terminal& operator=(const Terminal&) = delete;

  // A key translated to pathtop's codes, or -1 when none came within `timeout_ms`.
  int ReadKey(int timeout_ms);
  void Draw(const std::vector<ScreenLine>& lines);
  int width() const;
  int height() const;

 private:
  unsigned AttributesOf(ScreenLine::Style style) const;  // an ncurses attr_t

  bool colour_ = false;
};

}  // namespace pathtop
