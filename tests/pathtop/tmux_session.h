// Driving a program in a detached tmux session: start it at a given size, send keys, read the
// screen back as text. Shared by pathtop's terminal tests.
#pragma once

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <string>
#include <thread>

namespace pathtop_test {

inline std::string Sh(const std::string& cmd, int* rc = nullptr) {
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  int status = pclose(p);
  if (rc != nullptr) *rc = status;
  return out;
}

class Tmux {
 public:
  explicit Tmux(const std::string& command) : server_("pathtop_test_" + std::to_string(getpid())) {
    Sh(Base() + " new-session -d -s t -x 80 -y 24 '" + command + "'", &rc_);
  }
  ~Tmux() { Sh(Base() + " kill-server 2>/dev/null"); }
  bool started() const { return rc_ == 0; }
  void Keys(const std::string& keys) { Sh(Base() + " send-keys -t t " + keys); }
  std::string Capture() { return Sh(Base() + " capture-pane -p -t t 2>/dev/null"); }
  // With the attributes as escape sequences: the selected row is in reverse video (ESC[7m).
  std::string CaptureWithAttributes() {
    return Sh(Base() + " capture-pane -p -e -t t 2>/dev/null");
  }
  // The pid of the pane's process: the program itself when the command starts with `exec`.
  pid_t PanePid() {
    return static_cast<pid_t>(std::atoi(Sh(Base() + " list-panes -t t -F '#{pane_pid}'").c_str()));
  }
  // Waits (up to `seconds`) for the program to end; true when it did.
  bool WaitForExit(int seconds = 5) {
    for (int i = 0; i < seconds * 20 && Alive(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return !Alive();
  }
  bool Alive() {
    int rc = 0;
    Sh(Base() + " has-session -t t 2>/dev/null", &rc);
    return rc == 0;
  }
  // Waits (10 s at most: against hanging, not a timing assertion) until the screen satisfies
  // `ok` and has settled; returns the last screen. Settled: the same on a second look 30 ms
  // later. ncurses writes a frame in pieces and tmux shows each piece as it arrives, so a screen
  // satisfying `ok` may be half redrawn (a CI run read the zoomed flame graph's header over the
  // unzoomed graph's rows); on a loaded host the rest can arrive much later than the first piece.
  std::string WaitFor(const std::function<bool(const std::string&)>& ok, int seconds = 10) {
    std::string screen;
    std::string last_ok;
    for (int i = 0; i < seconds * 20; ++i) {
      screen = Capture();
      if (ok(screen)) {
        std::this_thread::sleep_for(std::chrono::milliseconds(30));
        const std::string again = Capture();
        if (again == screen) return screen;
        last_ok = screen;
        continue;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    // A screen that kept changing while it satisfied `ok` (a view that redraws faster than
    // 30 ms): the last one that did, so the caller's assertions read what it waited for.
    return last_ok.empty() ? screen : last_ok;
  }
  std::string WaitForText(const std::string& text, int seconds = 10) {
    return WaitFor([&](const std::string& s) { return s.find(text) != std::string::npos; },
                   seconds);
  }
  void Resize(int width, int height) {
    Sh(Base() + " resize-window -t t -x " + std::to_string(width) + " -y " +
       std::to_string(height));
  }

 private:
  std::string Base() const { return "tmux -f /dev/null -L " + server_; }
  std::string server_;
  int rc_ = -1;
};

inline bool Has(const std::string& screen, const std::string& text) {
  return screen.find(text) != std::string::npos;
}

inline std::string Line(const std::string& screen, int n) {
  size_t pos = 0;
  for (int i = 0; i < n && pos != std::string::npos; ++i) {
    pos = screen.find('\n', pos);
    if (pos != std::string::npos) ++pos;
  }
  if (pos == std::string::npos) return "";
  return screen.substr(pos, screen.find('\n', pos) - pos);
}

// The n-th table row on a pathtop screen (0: the first under the column header). Found from
// the tabs line ("... sort SHARE%-"), since the status lines above it wrap to what they say.
inline std::string Row(const std::string& screen, int n) {
  for (int i = 0; i < 24; ++i) {
    if (Has(Line(screen, i), "  sort ")) return Line(screen, i + 2 + n);
  }
  return "";
}

// The tabs line ("1 Paths ... sort SHARE%-"): its place depends on how the status lines wrap.
inline std::string Tabs(const std::string& screen) {
  for (int i = 0; i < 24; ++i) {
    if (Has(Line(screen, i), "  sort ")) return Line(screen, i);
  }
  return "";
}

// The last `n` lines of the screen, joined by spaces: where the (possibly wrapped) footer is.
inline std::string Bottom(const std::string& screen, int n, int height = 24) {
  std::string out;
  for (int i = height - n; i < height; ++i) out += Line(screen, i) + " ";
  return out;
}

inline void Keep(const std::string& name, const std::string& screen) {
  const char* dir = std::getenv("PATHTOP_CAPTURE_DIR");
  if (dir == nullptr) return;
  std::ofstream(std::string(dir) + "/" + name + ".txt") << screen;
}

}  // namespace pathtop_test
