#include "signal_masks.h"

#include <signal.h>

#include <charconv>
#include <string_view>

#include "pathprof/core/procfs.h"

namespace pathprof::stepping {
namespace {

std::optional<uint64_t> HexField(std::string_view status, std::string_view key) {
  const auto v = procfs::StatusField(status, key);
  if (!v) return std::nullopt;
  uint64_t out = 0;
  const auto [end, ec] = std::from_chars(v->data(), v->data() + v->size(), out, 16);
  if (ec != std::errc() || end != v->data() + v->size()) return std::nullopt;
  return out;
}

}  // namespace

std::optional<SignalMasks> ReadSignalMasks(pid_t pid, pid_t tid) {
  auto text = procfs::Procfs::Host().ReadTask(pid, tid, "status", 64 << 10);
  if (!text.ok()) return std::nullopt;
  const auto thread = HexField(*text, "SigPnd");
  const auto process = HexField(*text, "ShdPnd");
  const auto blocked = HexField(*text, "SigBlk");
  const auto ignored = HexField(*text, "SigIgn");
  if (!thread || !process || !blocked || !ignored) return std::nullopt;
  return SignalMasks{*thread | *process, *blocked, *ignored};
}

bool SigtrapForcingChangesHandler(pid_t pid, pid_t tid) {
  const std::optional<SignalMasks> m = ReadSignalMasks(pid, tid);
  return !m || m->Has(m->blocked, SIGTRAP) || m->Has(m->ignored, SIGTRAP);
}

}  // namespace pathprof::stepping
