#!/usr/bin/env bash
# The optimizer loop, measured (docs/optimizing.md): Debian's lua5.4, built from its
# source package at bench time (-O2, -Wl,--emit-relocs), profiled by pathprof on this host with
# no PMU, optimized by BOLT (and AutoFDO where gcc accepts the profile), and timed on a fixed
# workload (bench/workloads/lua_mixed.lua). Variants, timed interleaved in one run:
#   a  plain      the -O2 build
#   b  bolt-exact BOLT with a profile from `pathctl trace --exact` (every branch, a short run:
#                 the upper bound of what branch profiles can buy here)
#   c  bolt-burst BOLT with a profile from live `pathctl bursts` windows of a full-length run
#                 (the software LBR; the rate, duration and their cost to the workload are printed)
#   c' bolt-burst-direct  the same windows through `pathctl export --format bolt` (no perf2bolt)
#   d  autofdo    clang -fprofile-sample-use with create_llvm_prof's profile from bursts on a
#                 clang build (autofdo 0.19's gcov output crashes Debian 12's gcc, its binary
#                 LLVM profile is unreadable to clang 14: the text profile is what works), timed
#                 beside that clang build (clang-plain)
# Reports the medians of wall and CPU (user+sys) time per variant and their ratios to plain,
# and c's share of b's speedup. Steps already done in WORK (a build, a trace) are kept.
# GCC's own hot/cold splitting (-freorder-blocks-and-partition, on at -O2) is turned off, as
# BOLT's documentation asks: llvm-bolt-15 skips the split functions and its output crashed in
# lua's garbage collector (even without a profile).
# usage: scripts/bench-bolt-loop.sh [BUILD_DIR] [ROUNDS] [SCALE] [EXACT_SIZE] [BURST_SECONDS]
#        (as root: it may add a deb-src source and it ptrace-attaches; needs network for apt)
set -euo pipefail
build="$(realpath "${1:-build}")"
rounds="${2:-7}"           # 0: build and profile, time nothing
scale="${3:-400}"          # the timed workload (lua_mixed.lua SCALE), seconds long
exact_size="${4:-0.2}"     # the single-stepped run: one round at this input size (0: none)
burst_seconds="${5:-60}"   # how long the bursts watch the full-length workload
burst_rate="${BURST_RATE:-50}"
burst_window="${BURST_WINDOW:-32}"
repo="$(cd "$(dirname "$0")/.." && pwd)"
# shellcheck source=scripts/debian-source.sh
source "$repo/scripts/debian-source.sh"
workload="$repo/bench/workloads/lua_mixed.lua"
work="${WORK:-/tmp/pathprof-bolt-loop}"
pathctl="$build/bin/pathctl"
log() { echo "bench-bolt-loop: $*" >&2; }
[[ -x "$pathctl" ]] || { log "$pathctl not built (make build first)"; exit 1; }
for tool in llvm-bolt-15 create_llvm_prof gcc clang apt-get; do
  command -v "$tool" >/dev/null || { log "$tool missing (scripts/install-deps.sh installs it)"; exit 1; }
done
mkdir -p "$work"
cd "$work"

# 1. The program, from Debian's source package (never vendored).
[[ -d src ]] || debian_lua_source
version="$(ls -d lua5.4-*/ | head -1)"
# Bursts of BURST_SECONDS on a long run of BINARY; writes OUT.pbs and OUT.data (perf-lbr).
profile_bursts() {  # BINARY OUT
  ./"$1" "$workload" $((scale * 200)) >/dev/null & local pid=$!
  sleep 0.5
  "$pathctl" bursts --pid "$pid" --duration "$burst_seconds" --burst-rate "$burst_rate" \
      --window "$burst_window" --top 0 -o "$2.pbs" > "$2.log" 2>&1
  kill "$pid"; wait "$pid" 2>/dev/null || true
  "$pathctl" export --format perf-lbr "$2.pbs" -o "$2.data" >> "$2.log" 2>&1
}
build_lua() {  # COMPILER OUT EXTRA_CFLAGS...
  local cc="$1" out="$2"; shift 2
  [[ "$cc" == gcc ]] && set -- -fno-reorder-blocks-and-partition "$@"
  "$cc" -O2 -g -std=gnu99 -DLUA_COMPAT_5_3 -DLUA_USE_LINUX "$@" -Wl,--emit-relocs \
      -o "$out" $(ls src/*.c | grep -v 'luac\.c') -lm -ldl
}
[[ -x lua.plain ]] || { log "building ${version%/} (gcc -O2 --emit-relocs)"; build_lua gcc lua.plain; }
expected="$(./lua.plain "$workload" 3)"

bolt() {  # PROFILE.data OUT
  llvm-bolt-15 lua.plain -aggregate-only -p "$1" -o "$2.fdata" > "$2.aggregate.log" 2>&1
  llvm-bolt-15 lua.plain -o "$2" -data "$2.fdata" -reorder-blocks=ext-tsp \
      -reorder-functions=hfsort -split-functions -split-all-cold -split-eh -dyno-stats \
      > "$2.bolt.log" 2>&1
  [[ "$(./"$2" "$workload" 3)" == "$expected" ]] || { log "$2 computes a different result"; exit 1; }
}

# 2c. Live bursts on a full-length run: through perf.data and perf2bolt, and straight to fdata.
if [[ ! -x lua.bolt-burst ]]; then
  log "bursts: $burst_rate/s, windows of $burst_window, ${burst_seconds}s of a running workload"
  profile_bursts lua.plain bursts
  bolt bursts.data lua.bolt-burst
fi
if [[ ! -x lua.bolt-burst-direct ]]; then
  "$pathctl" export --format bolt bursts.pbs --binary "$work/lua.plain" -o direct.fdata \
      >> bursts.log 2>&1
  llvm-bolt-15 lua.plain -o lua.bolt-burst-direct -data direct.fdata -reorder-blocks=ext-tsp \
      -reorder-functions=hfsort -split-functions -split-all-cold -split-eh -dyno-stats \
      > direct.bolt.log 2>&1
  [[ "$(./lua.bolt-burst-direct "$workload" 3)" == "$expected" ]] ||
      { log "lua.bolt-burst-direct computes a different result"; exit 1; }
fi

# 2d. AutoFDO (clang): bursts on a clang build, create_llvm_prof's text profile, rebuilt.
#     DWARF 4: autofdo 0.19 reads no DWARF 5 (.debug_rnglists) and then writes an empty profile.
#     Its text profile names many inlined call sites with garbage bytes, which clang rejects:
#     those records (and what is nested in them) are dropped, and counted in autofdo.log.
if [[ ! -x lua.autofdo ]]; then
  build_lua clang lua.clang -gdwarf-4
  profile_bursts lua.clang clang-bursts
  if create_llvm_prof --binary=lua.clang --profile=clang-bursts.data --format=text \
        --out=lua.prof.raw > autofdo.log 2>&1 &&
     python3 - lua.prof.raw lua.prof.txt >> autofdo.log <<'PY' &&
import sys
kept, dropped, skip = [], 0, None
for raw in open(sys.argv[1], "rb"):
    line = raw.rstrip(b"\n")
    indent = len(line) - len(line.lstrip(b" "))
    if skip is not None and indent > skip:
        dropped += 1
        continue
    skip = None
    if any(b < 0x20 or b > 0x7e for b in line):
        skip, dropped = indent, dropped + 1
        continue
    kept.append(line)
open(sys.argv[2], "wb").write(b"\n".join(kept) + b"\n")
print(f"text profile: kept {len(kept)} lines, dropped {dropped} (unreadable call-site names)")
PY
     build_lua clang lua.autofdo -gdwarf-4 -fprofile-sample-use=lua.prof.txt >> autofdo.log 2>&1
  then
    log "AutoFDO build done ($(grep -c '^[^ ]' lua.prof.txt) functions in the profile)"
  else
    log "AutoFDO failed (autofdo.log)"
  fi
fi

# 2b. Exact trace of a short run: every taken branch once.
if [[ "$exact_size" != 0 && ! -x lua.bolt-exact ]]; then
  if [[ ! -s exact.pbs ]]; then
    log "exact trace of lua_mixed.lua 1 $exact_size (single-stepping: minutes)"
    SECONDS=0
    "$pathctl" trace --exact -o exact.pbs -- ./lua.plain "$workload" 1 "$exact_size" \
        > exact.log 2>&1
    log "exact trace took ${SECONDS}s"
  fi
  "$pathctl" export --format perf-lbr exact.pbs -o exact.data >> exact.log 2>&1
  bolt exact.data lua.bolt-exact
fi

# 3. Interleaved timing; "plain+bursts" is the plain build with bursts attached for its whole
#    run, at the rate above: what collecting the profile costs the workload.
[[ "$rounds" == 0 ]] && exit 0
variants=(lua.plain lua.bolt-burst lua.bolt-burst-direct lua.clang)
[[ -x lua.bolt-exact ]] && variants+=(lua.bolt-exact)
[[ -x lua.autofdo ]] && variants+=(lua.autofdo)
python3 - "$pathctl" "$workload" "$scale" "$rounds" "$burst_rate" "$burst_window" "${variants[@]}" <<'PY'
import json, os, random, statistics, subprocess, sys, time
pathctl, workload, scale, rounds, rate, window = sys.argv[1:7]
variants = sys.argv[7:]

def timed(binary, with_bursts=False):
    start = time.monotonic()
    # Pinned to the last CPU (the tracer, when there is one, runs on the others).
    p = subprocess.Popen(["taskset", "-c", str(os.cpu_count() - 1), "./" + binary, workload,
                          scale], stdout=subprocess.DEVNULL)
    tracer = None
    if with_bursts:
        tracer = subprocess.Popen([pathctl, "bursts", "--pid", str(p.pid), "--burst-rate", rate,
                                   "--window", window, "--top", "0"],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.monotonic() - start
    if tracer:
        tracer.wait(timeout=30)  # it detaches when the target exits
    if status != 0:
        sys.exit(f"bench-bolt-loop: {binary} failed with status {status}")
    return wall, ru.ru_utime + ru.ru_stime

rows = {v: [] for v in variants + ["plain+bursts"]}
order = random.Random(1)  # each round runs the variants in a new order: no position effects
for _ in range(int(rounds)):
    for v in order.sample(list(rows), len(rows)):
        rows[v].append(timed("lua.plain", with_bursts=True) if v == "plain+bursts" else timed(v))
json.dump(rows, open("times.json", "w"))  # raw (wall, cpu) per variant and round
# Paired: each round's time over the same round's plain run, so that slow phases of the host
# (this PVM guest has them: whole rounds run 40% slow) cancel out.
print(f"lua_mixed.lua {scale}, {rounds} interleaved rounds (raw times in times.json)")
print(f"{'variant':22} {'wall s':>7} {'cpu s':>7}  {'cpu/plain, paired: median':>25} "
      f"{'quartiles':>13}  {'wall/plain':>10}")
gain = {}
for v, xs in rows.items():
    w = statistics.median(x[0] for x in xs)
    c = statistics.median(x[1] for x in xs)
    cpu = [x[1] / p[1] for x, p in zip(xs, rows["lua.plain"])]
    wall = [x[0] / p[0] for x, p in zip(xs, rows["lua.plain"])]
    q = statistics.quantiles(cpu, n=4) if len(cpu) > 1 else [cpu[0]] * 3
    gain[v] = (1 - statistics.median(wall), 1 - statistics.median(cpu))
    print(f"{v:22} {w:7.3f} {c:7.3f}  {statistics.median(cpu):25.3f} "
          f"{q[0]:6.3f}-{q[2]:.3f}  {statistics.median(wall):10.3f}")
if "lua.autofdo" in rows:
    cpu = [a[1] / c[1] for a, c in zip(rows["lua.autofdo"], rows["lua.clang"])]
    wall = [a[0] / c[0] for a, c in zip(rows["lua.autofdo"], rows["lua.clang"])]
    print(f"autofdo against clang-plain, paired medians: wall {statistics.median(wall):.3f}, "
          f"cpu {statistics.median(cpu):.3f}")
exact, burst = gain.get("lua.bolt-exact"), gain.get("lua.bolt-burst")
if exact and burst and exact[0] > 0 and exact[1] > 0:
    print(f"bolt-burst gets {100 * burst[0] / exact[0]:.0f}% (wall), "
          f"{100 * burst[1] / exact[1]:.0f}% (cpu) of bolt-exact's speedup")
PY
