#!/usr/bin/env bash
# Stacks of programs built without frame pointers: Debian's own xz, gzip and python3
# (stripped, -O2), each run under `pathctl run --pid` (DWARF CFI unwinding, then frame pointers
# only) and under `perf record --call-graph dwarf`, at HZ, interleaved REPS times with bare runs.
# Reports per program and configuration, medians over REPS:
#   - complete: the share of stack samples under __libc_start_call_main (main's caller), i.e.
#     whose walk reached main;
#   - target CPU: the target's user+system time (wait4 rusage) over the bare run's;
#   - profiler CPU and peak RSS (the profiler's own process);
#   - perf's bytes per sample (perf.data size / samples) beside ours (the fixed ring buffer
#     record, from bpf/stack_sample.h);
# and, for python3 (whose functions perf and pathprof both name from .dynsym), the top 10
# functions by self time in both, with their difference in percentage points.
# usage: scripts/bench-unwind.sh [BUILD_DIR] [HZ] [REPS]   (as root)
set -euo pipefail
build="${1:-build}"
hz="${2:-99}"
reps="${3:-3}"
pathctl="$build/bin/pathctl"
[[ -x "$pathctl" ]] || { echo "bench-unwind: $pathctl not built" >&2; exit 1; }
for p in perf /usr/bin/xz /usr/bin/gzip /usr/bin/python3; do
  command -v "$p" >/dev/null || { echo "bench-unwind: $p missing" >&2; exit 1; }
done

exec python3 - "$pathctl" "$hz" "$reps" <<'PY'
import json, os, re, signal, statistics, subprocess, sys, tempfile, time

pathctl, hz, reps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
tmp = tempfile.mkdtemp(prefix="pathprof-unwind-")
data = os.path.join(tmp, "input.txt")
with open(data, "w") as f:  # ~10 MB of text with some entropy
    x = 88172645463325252
    for line in range(200000):
        words = []
        for _ in range(8):
            x ^= (x << 13) & 0xFFFFFFFFFFFFFFFF; x ^= x >> 7; x ^= (x << 17) & 0xFFFFFFFFFFFFFFFF
            words.append("word%d" % (x % 5000))
        f.write(" ".join(words) + "\n")
loop = os.path.join(tmp, "loop.py")
with open(loop, "w") as f:
    f.write("def fib(n):\n  return n if n < 2 else fib(n-1) + fib(n-2)\n"
            "d = {}\nfor i in range(1000000):\n  d[str(i)] = i * i\n"
            "print(sum(fib(32) for _ in range(16)), len(d))\n")
programs = {
    "xz": ["/usr/bin/xz", "-6", "-T1", "-k", "-f", "-c", data],
    "gzip": ["/usr/bin/gzip", "-9", "-k", "-f", "-c", data],
    "python3": ["/usr/bin/python3", loop],
}

def start_stopped(argv):
    p = subprocess.Popen(["/bin/sh", "-c", 'kill -STOP $$; exec "$@"', "sh"] + argv,
                         stdout=subprocess.DEVNULL)
    while True:
        with open(f"/proc/{p.pid}/stat") as f:
            if f.read().rsplit(")", 1)[1].split()[0] == "T":
                return p
        time.sleep(0.005)

def rusage_cpu(ru):
    return ru.ru_utime + ru.ru_stime

def wait_text(path, needle, proc, timeout=60):
    end = time.time() + timeout
    while time.time() < end:
        if os.path.exists(path) and needle in open(path, "rb").read():
            return
        if proc.poll() is not None:
            raise SystemExit("profiler exited early: " + open(path, errors="replace").read())
        time.sleep(0.02)
    raise SystemExit("profiler did not attach: " + open(path, errors="replace").read())

def share_under(nodes, total, name):
    return sum(n["total_weight"] for n in nodes if n["function"].get("function") == name) / max(total, 1e-9)

def run(prog, how):
    p = start_stopped(programs[prog])
    out = {"cpu": 0.0, "prof_cpu": 0.0, "rss_kb": 0, "complete": None, "top": {}, "bytes": None}
    err = os.path.join(tmp, "err.txt")
    if how == "bare":
        os.kill(p.pid, signal.SIGCONT)
    elif how.startswith("pathctl"):
        cg = how.split("-")[1]
        prof = subprocess.Popen(["/usr/bin/time", "-f", "RSS %M", pathctl, "run", "--json", "--source", "none",
                                 "--freq", str(hz), "--call-graph", cg, "--top", "10", "--pid", str(p.pid)],
                                stdout=subprocess.PIPE, stderr=open(err, "wb"))
        wait_text(err, b"profiling pid", prof)
        os.kill(p.pid, signal.SIGCONT)
    else:
        perfdata = os.path.join(tmp, "perf.data")
        prof = subprocess.Popen(["/usr/bin/time", "-f", "RSS %M", "perf", "record", "-q", "-F", str(hz), "-g",
                                 "--call-graph", "dwarf", "-o", perfdata, "-p", str(p.pid)],
                                stdout=subprocess.DEVNULL, stderr=open(err, "wb"))
        time.sleep(1.0)  # perf prints nothing when attached; give it the time it takes here
        os.kill(p.pid, signal.SIGCONT)
    _, _, ru = os.wait4(p.pid, 0)
    out["cpu"] = rusage_cpu(ru)
    if how == "bare":
        return out
    if how.startswith("pathctl"):
        stdout, _ = prof.communicate()
        _, _, ru = os.wait4(prof.pid, 0) if prof.returncode is None else (0, 0, None)
        report = json.loads(stdout)
        cct = report["cct"]
        out["complete"] = share_under(cct["nodes"], cct["total_weight"], "__libc_start_call_main")
        for m in report["hot_methods"]["methods"]:
            out["top"][m["function"].get("function") or "?"] = 100.0 * m["self"]["share"]
    else:
        prof.wait()
        script = subprocess.run(["perf", "script", "-i", perfdata, "-F", "ip,sym"],
                                capture_output=True, text=True).stdout
        samples = [s for s in script.split("\n\n") if s.strip()]
        out["complete"] = sum("__libc_start_call_main" in s for s in samples) / max(len(samples), 1)
        out["bytes"] = os.path.getsize(perfdata) / max(len(samples), 1)
        rep = subprocess.run(["perf", "report", "-i", perfdata, "--no-children", "--sort", "sym", "--stdio", "-q"],
                             capture_output=True, text=True).stdout
        for line in rep.splitlines():
            m = re.match(r"\s*([\d.]+)%\s+\[.\]\s+(\S+)", line)
            if m and m.group(2) not in out["top"]:
                out["top"][m.group(2)] = float(m.group(1))
    m = re.search(rb"RSS (\d+)", open(err, "rb").read())
    out["rss_kb"] = int(m.group(1)) if m else 0
    return out

configs = ["bare", "pathctl-dwarf", "perf-dwarf", "pathctl-fp"]
print(f"# {hz} Hz, median of {reps} interleaved runs; kernel {os.uname().release}")
for prog in programs:
    results = {c: [] for c in configs}
    for _ in range(reps):
        for c in configs:
            results[c].append(run(prog, c))
    bare = statistics.median(r["cpu"] for r in results["bare"])
    print(f"\n{prog}: bare CPU {bare:.2f} s")
    for c in configs[1:]:
        rs = results[c]
        comp = statistics.median(r["complete"] for r in rs)
        ratio = statistics.median(r["cpu"] for r in rs) / bare
        rss = statistics.median(r["rss_kb"] for r in rs) / 1024
        extra = ""
        if c == "perf-dwarf":
            extra = f", {statistics.median(r['bytes'] for r in rs):.0f} bytes/sample in perf.data"
        print(f"  {c:14s} complete {100*comp:5.1f}%  target CPU {ratio:.3f}x  profiler peak RSS {rss:.0f} MiB{extra}")

# Top 10 functions by self time, pathprof and perf attached to the same run at 499 Hz (more
# samples than 99 Hz, so that sampling noise stays well under the 2 pp compared).
def same_run(prog, hz2=499):
    p = start_stopped(programs[prog])
    err = os.path.join(tmp, "err2.txt")
    prof = subprocess.Popen([pathctl, "run", "--json", "--source", "none", "--freq", str(hz2),
                             "--top", "10", "--pid", str(p.pid)], stdout=subprocess.PIPE,
                            stderr=open(err, "wb"))
    wait_text(err, b"profiling pid", prof)
    perfdata = os.path.join(tmp, "perf2.data")
    perf = subprocess.Popen(["perf", "record", "-q", "-F", str(hz2), "-g", "--call-graph", "dwarf",
                             "-o", perfdata, "-p", str(p.pid)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    time.sleep(1.0)
    os.kill(p.pid, signal.SIGCONT)
    os.wait4(p.pid, 0)
    report = json.loads(prof.communicate()[0])
    perf.wait()
    ours = {}
    for m in report["hot_methods"]["methods"]:
        ours[m["function"].get("function") or "?"] = 100.0 * m["self"]["share"]
    theirs = {}
    rep = subprocess.run(["perf", "report", "-i", perfdata, "--no-children", "--sort", "sym",
                          "--stdio", "-q"], capture_output=True, text=True).stdout
    for line in rep.splitlines():
        m = re.match(r"\s*([\d.]+)%\s+\[.\]\s+(\S+)", line)
        if m and m.group(2) not in theirs:
            theirs[m.group(2)] = float(m.group(1))
    print(f"\n{prog}, one run, {hz2} Hz: top 10 by self time, pathprof vs perf --call-graph dwarf")
    worst = 0.0
    for name, share in sorted(ours.items(), key=lambda kv: -kv[1])[:10]:
        t = theirs.get(name)
        if t is not None:
            worst = max(worst, abs(share - t))
        diff = f"{share - t:+.1f} pp" if t is not None else "perf has no name for it"
        print(f"    {name[:44]:44s} {share:5.1f}%  {t if t is not None else float('nan'):5.1f}%  {diff}")
    print(f"  largest difference among named functions: {worst:.1f} pp")

for prog in programs:
    same_run(prog)
PY
