#!/usr/bin/env bash
# What stacks-only profiling costs, whole process, against perf: each workload run bare, under
# `pathctl run --source none --stack-hz HZ -- CMD` (eBPF stacks, DWARF unwinding, the report) and
# under `perf record --call-graph dwarf -F HZ -- CMD` (perf unwinds later, in `perf report`, which
# is not run here), interleaved REPS times. The figure is the total CPU of the whole run (user +
# system of the profiler and the workload it started and waited for: wait4's rusage of the top
# process) over the bare run's of the same round, so load that moves a round moves its three
# runs alike. Also prints the profiler's share (total minus the round's bare run).
# With BREAKDOWN=1 it then runs pathctl once more under `perf record -e cpu-clock` (a software
# event: no PMU needed) and prints where pathctl's own CPU went, by library and by function, and
# the eBPF program's run time per run from kernel.bpf_stats_enabled (restored after).
# With OWN=1 it measures instead each profiler's own CPU alone (the profiler process: wait4's
# rusage), attached for SECONDS (2) to the same running workload one after the other in each
# round (`pathctl run --pid P --duration S`, `perf record -p P -- sleep S`): on a host whose bare
# runs of one workload spread by 2x in CPU time (steal counted as CPU), the whole-run ratio is
# noise, and this is the part the profiler adds. The workload's in-kernel cost per sample (the
# eBPF program, perf's own copy) is not in it.
# BASELINE=OTHER_BUILD_DIR adds that build's pathctl to the same rounds (before and after a change).
# Workloads: Debian's zstd -19 -T1 on 4 MiB of text, Debian's python3 on a dict-and-str loop.
# usage: [BASELINE=DIR] scripts/bench-stacks-cost.sh [BUILD_DIR] [HZ] [REPS]   (as root)
set -euo pipefail
build="${1:-build}"
hz="${2:-99}"
reps="${3:-5}"
pathctl="$build/bin/pathctl"
[[ -x "$pathctl" ]] || { echo "bench-stacks-cost: $pathctl not built" >&2; exit 1; }
for p in perf bpftool /usr/bin/zstd /usr/bin/python3; do
  command -v "$p" >/dev/null || { echo "bench-stacks-cost: $p missing" >&2; exit 1; }
done
[[ "$(id -u)" -eq 0 ]] || { echo "bench-stacks-cost: run as root (eBPF)" >&2; exit 1; }

baseline="${BASELINE:+$BASELINE/bin/pathctl}"
[[ -z "$baseline" || -x "$baseline" ]] || { echo "bench-stacks-cost: $baseline not built" >&2; exit 1; }
exec /usr/bin/python3 - "$pathctl" "$hz" "$reps" "${BREAKDOWN:-0}" "$baseline" <<'PY'
import os, statistics, subprocess, sys, tempfile, threading, time, json

pathctl, hz, reps, breakdown = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4] == "1"
baseline = sys.argv[5]
tmp = tempfile.mkdtemp(prefix="pathprof-stacks-cost-")
text = os.path.join(tmp, "input.txt")
with open(text, "w") as f:  # 4 MiB of words with some entropy: zstd -19 works on it for about 4 s
    x = 88172645463325252
    size = 0
    while size < 4 << 20:
        words = []
        for _ in range(8):
            x ^= (x << 13) & 0xFFFFFFFFFFFFFFFF; x ^= x >> 7; x ^= (x << 17) & 0xFFFFFFFFFFFFFFFF
            words.append("word%d" % (x % 5000))
        line = " ".join(words) + "\n"
        f.write(line)
        size += len(line)
loop = os.path.join(tmp, "loop.py")
with open(loop, "w") as f:
    f.write("d = {}\n"
            "for i in range(12_000_000):\n"
            "    k = 'key%d' % (i % 50000)\n"
            "    d[k] = d.get(k, 0) + len(k)\n")
workloads = {
    "zstd -19": ["/usr/bin/zstd", "-q", "-19", "-T1", "-f", "-o", os.path.join(tmp, "out.zst"), text],
    "python3": ["/usr/bin/python3", loop],
}

def cpu(argv):
    p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, ru = os.wait4(p.pid, 0)
    if status != 0:
        raise SystemExit(f"bench-stacks-cost: {' '.join(argv)} exited with {status}")
    return ru.ru_utime + ru.ru_stime

configs = {
    "bare": lambda cmd: cmd,
    "pathctl": lambda cmd: [pathctl, "run", "--source", "none", "--stack-hz", str(hz), "--"] + cmd,
    **({"pathctl (baseline)": lambda cmd: [baseline, "run", "--source", "none", "--stack-hz", str(hz),
                                           "--"] + cmd} if baseline else {}),
    "perf": lambda cmd: ["perf", "record", "-q", "--call-graph", "dwarf", "-F", str(hz),
                         "-o", os.path.join(tmp, "perf.data"), "--"] + cmd,
}
print(f"# {os.uname().nodename}: {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f}; {hz} Hz, {reps} rounds")
if os.environ.get("OWN") == "1":
    seconds = int(os.environ.get("SECONDS_ATTACHED", "2"))
    attach = {
        "pathctl": lambda pid: [pathctl, "run", "--source", "none", "--stack-hz", str(hz),
                                "--pid", str(pid), "--duration", str(seconds)],
        **({"pathctl (baseline)": lambda pid: [baseline, "run", "--source", "none", "--stack-hz",
                                               str(hz), "--pid", str(pid), "--duration",
                                               str(seconds)]} if baseline else {}),
        "perf": lambda pid: ["perf", "record", "-q", "--call-graph", "dwarf", "-F", str(hz), "-p",
                             str(pid), "-o", os.path.join(tmp, "perf.data"), "--", "sleep",
                             str(seconds)],
    }
    long_zstd = ["/usr/bin/zstd", "-q", "-19", "-T1", "-f", "-o", os.path.join(tmp, "out.zst"),
                 "--", text, text, text]  # three files in a row: longer than a round
    endless_python = ["/usr/bin/python3", "-c", "d = {}\ni = 0\nwhile True:\n"
                      "    k = 'key%d' % (i % 50000)\n    d[k] = d.get(k, 0) + len(k)\n    i += 1\n"]
    for name, cmd in {"zstd -19": long_zstd, "python3": endless_python}.items():
        rows = {c: [] for c in attach}
        for r in range(reps):
            w = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(0.3)
            for c, argv in attach.items():
                rows[c].append(cpu(argv(w.pid)))
            w.kill(); w.wait()
        print(f"\n{name}: each profiler's own CPU over {seconds} s attached, median (range) of {reps}; "
              f"load now {os.getloadavg()[0]:.2f}")
        print("| profiler | own CPU, s | over perf's, same round: median (range) |")
        print("|---|---|---|")
        for c, v in rows.items():
            rel = [a / b for a, b in zip(v, rows["perf"])]
            print(f"| {c} | {statistics.median(v):.3f} ({min(v):.3f}-{max(v):.3f}) | "
                  f"{statistics.median(rel):.2f} ({min(rel):.2f}-{max(rel):.2f}) |")
    sys.exit(0)
for name, cmd in workloads.items():
    rows = {c: [] for c in configs}
    for r in range(reps):
        for c, wrap in configs.items():
            rows[c].append(cpu(wrap(cmd)))
    bare = rows["bare"]
    print(f"\n{name}: bare CPU median {statistics.median(bare):.2f} s "
          f"({min(bare):.2f}-{max(bare):.2f}), load now {os.getloadavg()[0]:.2f}")
    print("| profiler | total CPU / bare, median (range) | profiler's own CPU, median s (range) |")
    print("|---|---|---|")
    for c in [c for c in configs if c != "bare"]:
        ratios = [t / b for t, b in zip(rows[c], bare)]
        own = [t - b for t, b in zip(rows[c], bare)]
        print(f"| {c} | {statistics.median(ratios):.3f} ({min(ratios):.3f}-{max(ratios):.3f}) | "
              f"{statistics.median(own):.3f} ({min(own):.3f}-{max(own):.3f}) |")

if not breakdown:
    sys.exit(0)

# Where pathctl's own CPU goes: one run of each workload under perf's software clock.
def bpf_prog_stats(stop, out):
    while not stop.is_set():
        try:
            progs = json.loads(subprocess.run(["bpftool", "-j", "prog", "show"], capture_output=True,
                                              text=True).stdout or "[]")
            for p in progs:
                if p.get("name") == "sample_stack" and p.get("run_cnt"):
                    out[p["id"]] = (p["run_time_ns"], p["run_cnt"])
        except (ValueError, OSError):
            pass
        stop.wait(0.2)

def bpf_stats(value=None):  # the sysctl, read or set through sysctl(8)
    if value is None:
        return subprocess.run(["sysctl", "-n", "kernel.bpf_stats_enabled"], capture_output=True,
                              text=True, check=True).stdout.strip()
    subprocess.run(["sysctl", "-q", f"kernel.bpf_stats_enabled={value}"], check=True)

old = bpf_stats()
try:
    bpf_stats("1")
    for name, cmd in workloads.items():
        data = os.path.join(tmp, "pathctl.perf")
        stop, progs = threading.Event(), {}
        watcher = threading.Thread(target=bpf_prog_stats, args=(stop, progs))
        watcher.start()
        subprocess.run(["perf", "record", "-q", "-e", "cpu-clock", "-F", "1999", "-g", "-o", data,
                        "--", pathctl, "run", "--source", "none", "--stack-hz", str(hz), "--"] + cmd,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        stop.set(); watcher.join()
        print(f"\n## {name}: CPU by thread and library, then by function (self), perf cpu-clock 1999 Hz")
        # By thread name: the workload's own rows are its CPU; every other is pathctl's threads.
        for sort in ("comm,dso", "comm,dso,sym"):
            rep = subprocess.run(["perf", "report", "-i", data, "--no-children",
                                  "--sort", sort, "--stdio", "-g", "none", "--percent-limit", "0.3"],
                                 capture_output=True, text=True).stdout
            print("\n".join(l for l in rep.splitlines() if l and not l.startswith("#")))
        for pid, (ns, cnt) in progs.items():
            print(f"eBPF sample_stack (prog {pid}): {cnt} runs, {ns / cnt / 1000:.2f} us per run "
                  f"(filtered events included)")
finally:
    bpf_stats(old)
PY
