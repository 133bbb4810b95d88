#!/usr/bin/env bash
# eBPF stack sampling overhead: whole-process CPU time (user + system, from wait4's
# rusage of the exact process) of a CPU-bound example run bare, under `pathctl run --pid` with
# eBPF stacks only at HZ (DWARF stack copies, the default, and frame pointers only), under
# `perf record --call-graph dwarf`, and under bpftrace's `profile:hz:HZ { @[ustack] = count(); }`,
# all in one invocation. Configurations are interleaved REPS times and medians reported, because other
# work on the host shifts all of them alike. Both profilers attach while the example is stopped
# (SIGSTOP right after exec) and it continues once they report being attached, so every
# instruction it runs is profiled. Also reports each profiler's own CPU time.
# usage: scripts/bench-ebpf-overhead.sh [BUILD_DIR] [HZ] [ROUNDS] [REPS]   (as root)
set -euo pipefail
build="${1:-build}"
hz="${2:-99}"
rounds="${3:-4000000}"
reps="${4:-5}"
pathctl="$build/bin/pathctl"
example="$build/bin/example_hotloop"
for f in "$pathctl" "$example"; do
  [[ -x "$f" ]] || { echo "bench-ebpf-overhead: $f not built" >&2; exit 1; }
done
command -v bpftrace >/dev/null || { echo "bench-ebpf-overhead: bpftrace missing (scripts/install-deps.sh)" >&2; exit 1; }

exec python3 - "$pathctl" "$example" "$hz" "$rounds" "$reps" <<'PY'
import os, signal, statistics, subprocess, sys, time

pathctl, example, hz, rounds, reps = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], int(sys.argv[5])

def start_stopped():
    # The child stops itself before exec; exec happens on SIGCONT, so attach to the final image
    # only after it exists: stop again right after exec via a tiny shell trampoline.
    p = subprocess.Popen(["/bin/sh", "-c", 'kill -STOP $$; exec "$0" "$1"', example, rounds])
    while True:  # wait for the self-stop
        with open(f"/proc/{p.pid}/stat") as f:
            if f.read().rsplit(")", 1)[1].split()[0] == "T":
                return p
        time.sleep(0.005)

def cpu_of(pid):
    _, status, ru = os.wait4(pid, 0)
    return ru.ru_utime + ru.ru_stime

def wait_line(proc, needle, timeout=60):
    end = time.time() + timeout
    buf = b""
    while time.time() < end:
        chunk = os.read(proc.stderr.fileno(), 4096) if proc.stderr else b""
        if not chunk:
            if proc.poll() is not None:
                raise SystemExit(f"profiler exited early: {buf.decode(errors='replace')}")
            continue
        buf += chunk
        if needle in buf:
            return
    raise SystemExit(f"profiler did not attach: {buf.decode(errors='replace')}")

def bare():
    p = start_stopped()
    os.kill(p.pid, signal.SIGCONT)
    return cpu_of(p.pid), 0.0

def pathprof(extra=()):
    p = start_stopped()
    prof = subprocess.Popen([pathctl, "run", "--source", "none", "--freq", str(hz), "--top", "3",
                             *extra, "--pid", str(p.pid)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    wait_line(prof, b"profiling pid")
    os.kill(p.pid, signal.SIGCONT)
    cpu = cpu_of(p.pid)
    _, _, ru = os.wait4(prof.pid, 0)
    return cpu, ru.ru_utime + ru.ru_stime

def bpftrace():
    p = start_stopped()
    prof = subprocess.Popen(["bpftrace", "-B", "line", "-e", "profile:hz:%d { @[ustack] = count(); }" % hz],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    prof.stderr = prof.stdout
    wait_line(prof, b"Attaching")
    time.sleep(0.2)
    os.kill(p.pid, signal.SIGCONT)
    cpu = cpu_of(p.pid)
    prof.send_signal(signal.SIGINT)
    prof.stdout.read()
    _, _, ru = os.wait4(prof.pid, 0)
    return cpu, ru.ru_utime + ru.ru_stime

def pathprof_fp():
    return pathprof(["--call-graph", "fp"])

def perf_dwarf():
    # perf's own DWARF mode: 8 KiB of user stack and the registers per sample.
    p = start_stopped()
    prof = subprocess.Popen(["perf", "record", "-q", "-F", str(hz), "-g", "--call-graph", "dwarf",
                             "-o", "/tmp/pathprof-bench-overhead.perf.data", "-p", str(p.pid)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(1.0)  # perf says nothing once attached
    os.kill(p.pid, signal.SIGCONT)
    cpu = cpu_of(p.pid)
    prof.wait()
    _, _, ru = os.wait4(prof.pid, 0) if prof.returncode is None else (0, 0, None)
    return cpu, 0.0

configs = (("bare", bare), ("pathprof", pathprof), ("pathprof-fp", pathprof_fp),
           ("perf-dwarf", perf_dwarf), ("bpftrace", bpftrace))
runs = {name: [] for name, _ in configs}
own = {name: [] for name, _ in configs}
for i in range(reps):
    for name, fn in configs:
        cpu, prof_cpu = fn()
        runs[name].append(cpu)
        own[name].append(prof_cpu)
        print(f"rep {i + 1} {name:9s} example CPU {cpu:7.3f} s  profiler CPU {prof_cpu:6.3f} s", flush=True)

base = statistics.median(runs["bare"])
print(f"\nexample_hotloop {rounds} rounds, {hz} Hz, median of {reps} interleaved runs:")
for name in runs:
    m = statistics.median(runs[name])
    print(f"  {name:9s} example CPU {m:7.3f} s  ratio to bare {m / base:6.4f}  "
          f"profiler's own CPU {statistics.median(own[name]):6.3f} s")
PY
