// Runs the eBPF stack sampler alone on one process, with a stack copy and optionally a snapshot,
// for a given time, and prints what it delivered as JSON: scripts/bench-bpf-sample-cost.sh
// reads the program's run time from this process's descriptors meanwhile (what a sample costs
// the target), without a session's pipeline beside it. Hint pages, when asked for, are the first
// pages of the process's writable private mappings (what the copy costs depends on its bytes,
// not on which pages they are).
//
// usage: sampler_run --pid P [--inherit 1] [--hz 999] [--seconds 3] [--stack BYTES]
//                    [--snapshot BELOW,ABOVE,HINTS[,MAX_BYTES]] [--stack-hz HZ]
// --stack-hz: with a snapshot, frames are walked only at this rate (as beside a stack
// subscription at HZ); the other samples carry their snapshot alone.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "pathprof/collectors/ebpf_stack_sampler.h"
#include "pathprof/core/procfs.h"
#include "pathprof/decoders/address_space.h"

namespace {

using pathprof::collectors::EbpfSamplerConfig;
using pathprof::collectors::EbpfStackSampler;
using pathprof::collectors::RawStackSample;

[[noreturn]] void Usage(const char* why) {
  std::fprintf(stderr,
               "sampler_run: %s\nusage: sampler_run --pid P [--hz 999] [--seconds 3] "
               "[--stack BYTES] [--snapshot BELOW,ABOVE,HINTS[,MAX_BYTES]] [--stack-hz HZ]\n",
               why);
  std::exit(2);
}

uint32_t Number(const char* text, const char* what) {
  char* end = nullptr;
  const unsigned long v = std::strtoul(text, &end, 10);
  if (end == text || *end != '\0' || v > 0xffffffffu) Usage(what);
  return static_cast<uint32_t>(v);
}

// The first `n` pages of pid's writable private mappings that are not its stack.
std::vector<uint64_t> DataPages(int pid, uint32_t n) {
  std::vector<uint64_t> pages;
  auto space = pathprof::decoders::ReadProcMaps(pid);
  if (!space.ok()) return pages;
  for (const auto& m : space->mappings()) {
    if (!m.readable || !m.writable || m.shared || m.path == "[stack]" || m.IsVdso()) continue;
    for (uint64_t p = m.start; p < m.end() && pages.size() < n; p += 4096) pages.push_back(p);
  }
  return pages;
}

// pid's children now (the sampler follows the forks that come after it starts).
std::vector<uint32_t> Children(int pid) {
  std::vector<uint32_t> out;
  const auto& proc = pathprof::procfs::Procfs::Host();
  for (pid_t p : proc.Pids()) {
    auto st = proc.ReadStat(p);
    if (st.ok() && st->ppid == pid) out.push_back(static_cast<uint32_t>(p));
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  EbpfSamplerConfig cfg;
  cfg.frequency_hz = 999;
  cfg.kernel_stacks = true;
  double seconds = 3;
  int pid = 0;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (i + 1 >= argc) Usage(("missing the value of " + a).c_str());
    const char* v = argv[++i];
    if (a == "--pid") {
      pid = static_cast<int>(Number(v, "--pid"));
    } else if (a == "--inherit") {
      cfg.follow_children = Number(v, "--inherit") != 0;
    } else if (a == "--stack-hz") {
      cfg.stack_hz = static_cast<int>(Number(v, "--stack-hz"));
    } else if (a == "--hz") {
      cfg.frequency_hz = static_cast<int>(Number(v, "--hz"));
    } else if (a == "--seconds") {
      seconds = std::atof(v);
    } else if (a == "--stack") {
      cfg.copy_user_stacks = true;
      cfg.stack_copy_bytes = Number(v, "--stack");
    } else if (a == "--snapshot") {
      uint32_t f[4] = {0, 0, 0, cfg.snapshot.max_bytes};
      int got = 0;
      for (const char* p = v; got < 4 && *p;) {
        char* end = nullptr;
        f[got++] = static_cast<uint32_t>(std::strtoul(p, &end, 10));
        if (end == p || (*end != ',' && *end != '\0')) Usage("--snapshot BELOW,ABOVE,HINTS[,MAX]");
        p = *end ? end + 1 : end;
      }
      if (got < 3) Usage("--snapshot BELOW,ABOVE,HINTS[,MAX]");
      cfg.snapshot.enabled = true;
      cfg.snapshot.register_below = f[0];
      cfg.snapshot.register_above = f[1];
      cfg.snapshot.hint_pages = f[2];
      cfg.snapshot.max_bytes = f[3];
    } else {
      Usage(("unknown option " + a).c_str());
    }
  }
  if (pid <= 0) Usage("--pid is required");
  if (cfg.snapshot.enabled && !cfg.copy_user_stacks) Usage("--snapshot needs --stack");
  cfg.pids = {static_cast<uint32_t>(pid)};
  if (cfg.follow_children)
    for (uint32_t child : Children(pid)) cfg.pids.push_back(child);
  auto sampler = EbpfStackSampler::Start(cfg);
  if (!sampler.ok()) {
    std::fprintf(stderr, "sampler_run: %s\n", sampler.status().ToString().c_str());
    return 1;
  }
  if (cfg.snapshot.hint_pages > 0)
    for (uint32_t p : cfg.pids) {  // the process and the children it has now
      auto s = (*sampler)->SetHintPages(p, DataPages(static_cast<int>(p), cfg.snapshot.hint_pages));
      if (!s.ok()) std::fprintf(stderr, "sampler_run: %s\n", s.ToString().c_str());
    }
  uint64_t samples = 0, snapshots = 0, stack_bytes = 0, snapshot_bytes = 0, pieces = 0;
  auto sink = [&](const RawStackSample& s) {
    ++samples;
    stack_bytes += s.stack.size();
    if (s.snapshot) {
      ++snapshots;
      snapshot_bytes += s.snapshot->bytes.size();
      pieces += s.snapshot->pieces.size();
    }
  };
  const auto end = std::chrono::steady_clock::now() +
                   std::chrono::microseconds(static_cast<int64_t>(seconds * 1e6));
  while (std::chrono::steady_clock::now() < end) (void)(*sampler)->Poll(50, sink);
  (void)(*sampler)->Drain(sink);
  const auto st = (*sampler)->stats();
  std::printf(
      "{\"samples\": %llu, \"snapshots\": %llu, \"stack_bytes\": %llu, \"snapshot_bytes\": %llu, "
      "\"pieces\": %llu, \"cut\": %llu, \"hints_unreadable\": %llu, \"ranges_unreadable\": "
      "%llu, \"ringbuf_full\": %llu}\n",
      static_cast<unsigned long long>(samples), static_cast<unsigned long long>(snapshots),
      static_cast<unsigned long long>(stack_bytes), static_cast<unsigned long long>(snapshot_bytes),
      static_cast<unsigned long long>(pieces), static_cast<unsigned long long>(st.snapshots_cut),
      static_cast<unsigned long long>(st.snapshot_hints_unreadable),
      static_cast<unsigned long long>(st.snapshot_ranges_unreadable),
      static_cast<unsigned long long>(st.ringbuf_full));
  return 0;
}
