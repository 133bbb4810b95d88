#!/usr/bin/env bash
# Snapshot windows (pathctl run --source snapshot) in whole runs: what they cost the target and
# how many a second they give, on a fixed piece of work per program, against the same work run
# bare, in interleaved pairs. The target is started stopped (a shell trampoline stops itself
# before it execs the program), continued, and pathctl attaches with --pid right after (the
# first milliseconds may be missed, the same in every run); the target's own CPU time comes from
# wait4's rusage of the exact process (the sampler's BPF program runs in the target's
# interrupts, so its time is in there). With LOAD=2, two busy
# loops run beside every run (bare ones too): the windows-per-second figure under load.
# Programs: example_hotloop, and Debian's zstd -19, xz -9, python3, sqlite3, lua5.4 where
# installed. HZ: the snapshot source's rate (windows a second per thread at most).
# usage: [LOAD=2] scripts/bench-snapshot-windows.sh [BUILD_DIR] [PAIRS] [HZ]   (as root)
set -euo pipefail
build="${1:-build}"
pairs="${2:-3}"
hz="${3:-999}"
pathctl="$build/bin/pathctl"
[[ -x "$pathctl" ]] || { echo "bench-snapshot-windows: $pathctl not built" >&2; exit 1; }
[[ "$(id -u)" -eq 0 ]] || { echo "bench-snapshot-windows: run as root (eBPF)" >&2; exit 1; }
root="$(cd "$(dirname "$0")/.." && pwd)"
exec python3 - "$pathctl" "$build/bin" "$pairs" "$hz" "${LOAD:-0}" "$root" <<'PY'
import json, os, statistics, subprocess, sys, tempfile, time

pathctl, bindir, pairs, hz, load, root = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], int(sys.argv[5]), sys.argv[6]
tmp = tempfile.mkdtemp(prefix="pathprof-snapshot-windows-")
text = os.path.join(tmp, "input.txt")
with open(text, "w") as f:
    for i in range(60000):
        f.write(f"line {i} of a text that compresses, {i * 7919 % 104729} words\n")
loop = os.path.join(tmp, "loop.py")
with open(loop, "w") as f:
    f.write("d = {}\nfor i in range(20000000):\n    d[i % 1000] = d.get(i % 7, 0) + len(str(i))\n")
programs = {
    "hotloop": [os.path.join(bindir, "example_hotloop"), "3000000"],
    "zstd": ["/usr/bin/zstd", "-19", "--single-thread", "-q", "-c", "-f", text],
    "xz": ["/usr/bin/xz", "-9", "-T1", "-c", "-k", text],
    "python3": ["/usr/bin/python3", loop],
    "sqlite3": ["/usr/bin/sqlite3", ":memory:",
                "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 12000000)"
                " SELECT sum(length(printf('%08x', x * 2654435761 % 4294967296))) FROM c;"],
    "lua5.4": ["/usr/bin/lua5.4", os.path.join(root, "bench/workloads/lua_mixed.lua"), "1000"],
}

def start_stopped(argv):
    p = subprocess.Popen(["/bin/sh", "-c", 'kill -STOP $$; exec "$@"', "sh"] + argv,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    os.waitpid(p.pid, os.WUNTRACED)  # returns once the shell has stopped itself
    return p

def run(argv, traced):
    p = start_stopped(argv)
    os.kill(p.pid, 18)  # SIGCONT: the shell execs the program, which stops nowhere else
    prof = None
    if traced:
        prof = subprocess.Popen([pathctl, "run", "--json", "--source", "snapshot",
                                 "--burst-rate", hz, "--pid", str(p.pid)],
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    t0 = time.time()
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.time() - t0
    windows = 0
    if prof:
        out, _ = prof.communicate(timeout=60)
        try:
            for t in json.loads(out).get("stats", []):
                windows += int(t.get("windows", 0))
        except Exception:
            pass
    return ru.ru_utime + ru.ru_stime, wall, windows

busy = [subprocess.Popen(["sh", "-c", "while :; do :; done"]) for _ in range(load)]
try:
    print(f"snapshot windows at {hz} Hz, {pairs} interleaved pairs per program"
          f"{', two busy loops beside' if load else ''}")
    print("program   bare CPU s   traced/bare CPU (per pair)          windows/s (traced)")
    for name, argv in programs.items():
        if not os.access(argv[0], os.X_OK):
            print(f"{name:9s} not installed"); continue
        ratios, bare_cpu, rates = [], [], []
        for _ in range(pairs):
            b, _, _ = run(argv, False)
            t, wall, w = run(argv, True)
            bare_cpu.append(b); ratios.append(t / b if b else 0)
            rates.append(w / wall if wall else 0)
        print(f"{name:9s} {statistics.median(bare_cpu):8.2f}     "
              f"{statistics.median(ratios):.3f} ({' '.join(f'{r:.3f}' for r in ratios)})   "
              f"{statistics.median(rates):7.0f} ({' '.join(f'{r:.0f}' for r in rates)})")
finally:
    for b in busy:
        b.kill()
PY
