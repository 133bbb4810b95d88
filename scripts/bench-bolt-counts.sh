#!/usr/bin/env bash
# BOLT's outputs compared by exact counts (docs/optimizing.md "Measured: exact branch
# counts after BOLT"): on a host where CPU time cannot resolve a few percent, each BOLT output is
# run once under `pathctl trace --exact` on a fixed evaluation input, and the script reports the
# instructions and taken branches of the whole run (taken per 1,000 instructions: what BOLT's
# block layout cuts). Programs, built from Debian's source packages at bench time with
# gcc -O2 -g -fno-reorder-blocks-and-partition -Wl,--emit-relocs:
#   lua5.4      (built as scripts/bench-bolt-loop.sh does, but for its string hash seed: fixed
#               here (luai_makeseed 0): lua seeds from the time and addresses, and two exact
#               counts of one binary differed by 0.5 taken per 1,000 instructions, ~5 points of
#               a variant's share of (d)'s cut; with the seed fixed, two counts of plain gave
#               117.330 and 117.327, what addresses still move)
#   zstd 1.5.4  programs/zstd, single-threaded (-T1 --single-thread --no-asyncio), levels 3
#               and 19: two rows
# Variants per row, each with the BOLT options of scripts/bench-bolt-loop.sh:
#   plain  the -O2 build
#   b      no-LBR: `perf record -e cpu-clock -F 999` of the training run, perf2bolt -nl, and
#          llvm-bolt -lite=0 (BOLT 15 ignores a no-LBR profile in its default lite mode)
#   c      bursts: `pathctl bursts --pid PID` (step mode auto) of the same training run,
#          export --format perf-lbr, perf2bolt
#   c2     the same windows through `pathctl export --format bolt` (fdata, no perf2bolt)
#   d      exact: `pathctl trace --exact` of a short training run, export --format perf-lbr,
#          perf2bolt
#   e      continuous: pathprofd's continuous mode at its defaults but for the window's length
#          (source snapshot: no stop, no ptrace; the series is the training binary, one window of
#          TRAIN_SECONDS), the window's archived branch windows (its .pbs) through
#          `pathctl export --format bolt`: what a fleet's archive gives the optimizer
#   f      the same with source hybrid: snapshot windows, and stop-and-emulate windows for a
#          process whose snapshot windows end too early (docs/pipeline.md "Live sources")
#   g      (f) over what (d) traces: the short training run started again and again for
#          TRAIN_SECONDS, each run a new process the executable's series joins (a fleet whose
#          program runs briefly and often), where (e) and (f) see one long run
# Training inputs are not the evaluation inputs (train_long, train_short, eval_cmd below). Each
# variant's evaluation output is checked against plain's (lua: same stdout; zstd: the variant's
# .zst decompresses to the input and equals plain's bytes). Every heavy step runs under
# nice -n 19. Steps already done in WORK (builds, profiles, BOLT outputs, counts) are kept.
# (b) and (c) are random samples (and the bursts' window count depends on the host's load): to
# see their spread, rerun with a copy of WORK whose ROW.b*, ROW.w.pbs and ROW.c* files are gone.
# With ROUNDS > 0, CPU time is also measured: ROUNDS interleaved rounds of each variant's
# evaluation-sized-up run, pinned with taskset to the last CPU, paired ratios to plain.
# usage: scripts/bench-bolt-counts.sh [BUILD_DIR] [ROUNDS]
#        env: WORK (default /tmp/pathprof-bolt-counts),
#        TRAIN_SECONDS (the (b), (c), (e), (f) and (g) training runs, default 30), ROWS (default
#        "lua zstd3 zstd19"), ARCHIVE_EVENTS ((e)'s continuous.archive_branch_events; unset:
#        the daemon's default), HYBRID_STOP_HZ ((f)'s continuous.hybrid_stop_hz; unset: the
#        daemon's default)
#        (as root: it may add a deb-src source and it ptrace-attaches; needs network for apt)
set -euo pipefail
build="$(realpath "${1:-build}")"
rounds="${2:-0}"
repo="$(cd "$(dirname "$0")/.." && pwd)"
# shellcheck source=scripts/debian-source.sh
source "$repo/scripts/debian-source.sh"
work="${WORK:-/tmp/pathprof-bolt-counts}"
train_seconds="${TRAIN_SECONDS:-30}"                 # length of the (b)/(c) training runs
pathctl="$build/bin/pathctl"
perf2bolt=/usr/lib/llvm-15/bin/perf2bolt
nice=(nice -n 19)
bolt_opts=(-reorder-blocks=ext-tsp -reorder-functions=hfsort -split-functions -split-all-cold
           -split-eh -dyno-stats)
log() { echo "bench-bolt-counts: $*" >&2; }
[[ -x "$pathctl" ]] || { log "$pathctl not built (make build first)"; exit 1; }
for tool in llvm-bolt-15 "$perf2bolt" perf gcc apt-get python3; do
  command -v "$tool" >/dev/null || { log "$tool missing"; exit 1; }
done
mkdir -p "$work"
cd "$work"

# 1. Sources (Debian's source packages, never vendored) and the plain builds.
mkdir -p lua zstd
if [[ ! -x lua/plain ]]; then
  (cd lua
   [[ -d src ]] || debian_lua_source
   log "building lua5.4 (gcc -O2 -fno-reorder-blocks-and-partition --emit-relocs, fixed seed)"
   sources=(); for f in src/*.c; do [[ $f == src/luac.c ]] || sources+=("$f"); done
   "${nice[@]}" gcc -O2 -g -std=gnu99 -DLUA_COMPAT_5_3 -DLUA_USE_LINUX \
       -D'luai_makeseed(L)=0u' -fno-reorder-blocks-and-partition -Wl,--emit-relocs \
       -o plain "${sources[@]}" -lm -ldl)
fi
if [[ ! -x zstd/plain ]]; then
  (cd zstd
   [[ -d src ]] || { debian_source zstd; mv libzstd-*/ src; }
   log "building zstd $(sed -n 's/^[^ ]* (\([^)]*\)).*/\1/p;q' src/debian/changelog)" \
       "programs/zstd (gcc -O2 -g -fno-reorder-blocks-and-partition --emit-relocs)"
   "${nice[@]}" make -s -C src/programs -j2 zstd HAVE_ZLIB=0 HAVE_LZMA=0 HAVE_LZ4=0 \
       CFLAGS="-O2 -g -fno-reorder-blocks-and-partition" LDFLAGS="-Wl,--emit-relocs" \
       > build.log 2>&1
   cp src/programs/zstd plain)
fi

# 2. Inputs. Training is never the evaluation input.
#    lua: training runs lua_mixed.lua (bench/workloads, the workload of bench-bolt-loop.sh): a long
#    run for (b)/(c), `lua_mixed.lua 1 0.2` for the exact trace (d), as bench-bolt-loop.sh does;
#    the evaluation is another program, eval.lua below (queues, string parsing, sorting with a
#    comparator, inheritance through metatables, coroutines, varargs, integer and float maths).
#    zstd: training compresses lua5.4's sources and manual (train.txt, ~1 MB: each of a long
#    run's frames is that file); (d) one training slice of the evaluation's size; the evaluation
#    compresses the start of zstd's own lib/compress/*.c (512 KiB at level 3, 8 KiB at level 19:
#    10-20 million instructions, a minute or two single-stepped).
[[ -s lua/eval.lua ]] || cat > lua/eval.lua <<'EOF'
-- Evaluation input of scripts/bench-bolt-counts.sh: not the training workload (lua_mixed.lua).
local N = tonumber(arg and arg[1]) or 1
local out = {}
local function note(k, v) out[#out + 1] = string.format("%s=%s", k, tostring(v)) end

-- a ring-buffer queue (table writes, integer arithmetic)
local Queue = {}
Queue.__index = Queue
function Queue.new(cap) return setmetatable({buf = {}, head = 1, n = 0, cap = cap}, Queue) end
function Queue:push(v)
  local tail = (self.head + self.n - 1) % self.cap + 1
  self.buf[tail] = v
  if self.n < self.cap then self.n = self.n + 1 else self.head = self.head % self.cap + 1 end
end
function Queue:pop()
  if self.n == 0 then return nil end
  local v = self.buf[self.head]
  self.head, self.n = self.head % self.cap + 1, self.n - 1
  return v
end
local q, qs = Queue.new(64), 0
for i = 1, 1200 * N do q:push(i * 3); if i % 3 == 0 then qs = qs + (q:pop() or 0) end end
note("queue", qs)

-- parse "key=value;" records, count and sum by key (string library, pattern matching)
local rec = {}
for i = 1, 200 * N do rec[#rec + 1] = ("k%d=%d;"):format(i % 37, (i * 131) % 1009) end
local text, sums = table.concat(rec), {}
for k, v in text:gmatch("(%w+)=(%d+);") do sums[k] = (sums[k] or 0) + tonumber(v) end
local keys = {}
for k in pairs(sums) do keys[#keys + 1] = k end
table.sort(keys, function(a, b) return sums[a] > sums[b] or (sums[a] == sums[b] and a < b) end)
note("top", keys[1] .. ":" .. sums[keys[1]])
note("csv", #(text:gsub(";", ",\n"):lower():reverse()))

-- shapes: inheritance through __index chains, __lt and __tostring
local Shape = {}
Shape.__index = Shape
function Shape.new(kind, a, b) return setmetatable({kind = kind, a = a, b = b}, Shape) end
function Shape:area() return self.a * self.b end
Shape.__lt = function(x, y) return x:area() < y:area() end
Shape.__tostring = function(s) return s.kind .. "(" .. s.a .. "," .. s.b .. ")" end
local Circle = setmetatable({}, {__index = Shape})
Circle.__index, Circle.__lt, Circle.__tostring = Circle, Shape.__lt, Shape.__tostring
function Circle.new(r) return setmetatable(Shape.new("circle", r, r), Circle) end
function Circle:area() return math.pi * self.a * self.a end
local shapes = {}
for i = 1, 150 * N do
  shapes[#shapes + 1] = (i % 2 == 0) and Circle.new(i % 17 + 1) or Shape.new("rect", i % 13 + 1, i % 7 + 1)
end
table.sort(shapes)
note("smallest", tostring(shapes[1]))
note("largest", tostring(shapes[#shapes]))

-- coroutines as generators, varargs
local function gen(n)
  return coroutine.wrap(function() for i = 1, n do coroutine.yield(i, i * i) end end)
end
local function sum(...)
  local s = 0
  for i = 1, select("#", ...) do s = s + select(i, ...) end
  return s
end
local cs = 0
for a, b in gen(500 * N) do cs = cs + sum(a, b, a % 5) end
note("coro", cs)

-- sieve and a float recurrence
local sieve, primes = {}, 0
for i = 2, 4000 * N do
  if not sieve[i] then primes = primes + 1; for j = i * i, 4000 * N, i do sieve[j] = true end end
end
note("primes", primes)
local x = 0.5
for _ = 1, 4000 * N do x = 3.7 * x * (1 - x) end
note("logistic", string.format("%.9f", x))
print(table.concat(out, " "))
EOF
if [[ ! -s zstd/train.txt ]]; then
  cat lua/src/*.[ch] lua/lua5.4-*/doc/*.html > zstd/train.txt
  cat zstd/src/lib/compress/*.c > zstd/evalsrc.txt
  head -c 524288 zstd/evalsrc.txt > zstd/eval3.txt
  head -c 8192 zstd/evalsrc.txt > zstd/eval19.txt
  head -c 524288 zstd/train.txt > zstd/train-d3.txt
  head -c 8192 zstd/train.txt > zstd/train-d19.txt
fi
lua_train=("$repo/bench/workloads/lua_mixed.lua")
# Rows: NAME DIR LEVEL. Commands are run in the row's directory with the binary as $bin.
read -ra rows <<< "${ROWS:-lua zstd3 zstd19}"
row_dir() { case $1 in lua) echo lua ;; *) echo zstd ;; esac; }
row_level() { echo "${1#zstd}"; }
zstd_flags() { echo "-$(row_level "$1") -T1 --single-thread --no-asyncio -q"; }
train_long() {  # ROW BINARY: the (b)/(c) training run, TRAIN_SECONDS long (ends by timeout)
  case $1 in
    lua) echo "timeout $train_seconds $2 ${lua_train[0]} 100000" ;;
    *) echo "timeout $train_seconds $2 $(zstd_flags "$1") -c $(printf 'train.txt %.0s' {1..4000})" ;;
  esac
}
train_short() {  # ROW BINARY: the exact trace's (d) training run
  case $1 in
    lua) echo "$2 ${lua_train[0]} 1 0.2" ;;
    *) echo "$2 $(zstd_flags "$1") -f train-d$(row_level "$1").txt -o /dev/null" ;;
  esac
}
eval_cmd() {  # ROW BINARY OUT: the evaluation run; its output goes to OUT
  case $1 in
    lua) echo "$2 eval.lua 1" ;;   # stdout is redirected to OUT by the caller
    *) echo "$2 $(zstd_flags "$1") -f eval$(row_level "$1").txt -o $3" ;;
  esac
}

# 3. Profiles and BOLT outputs per row: ROW.b, ROW.c, ROW.c2, ROW.d in the row's directory.
bolt() {  # ROW FDATA OUT [EXTRA...]
  local row=$1 fdata=$2 out=$3; shift 3
  "${nice[@]}" llvm-bolt-15 plain -o "$out" -data "$fdata" "${bolt_opts[@]}" "$@" \
      > "$out.bolt.log" 2>&1 || { log "$row: llvm-bolt failed for $out ($out.bolt.log)"; return 1; }
}
aggregate() {  # PERF.DATA FDATA [-nl]
  "${nice[@]}" "$perf2bolt" "${@:3}" -p "$1" -o "$2" plain > "$2.log" 2>&1 ||
      { log "perf2bolt failed on $1 ($2.log)"; return 1; }
}
continuous_window() {  # ROW VARIANT SOURCE: $row.$variant.pbs, a continuous daemon's first window
  # (g) trains on the short run repeated, the others on the long run
  local row=$1 v=$2 source=$3 dir="$PWD/$1.$2.daemon" daemon _ first
  log "$row ($v): pathprofd continuous mode (source $source) over ${train_seconds}s of training"
  rm -rf "$dir"; mkdir -p "$dir"
  printf '%s\n' "[continuous]" "enabled = true" "window_s = $train_seconds" \
      "source = \"$source\"" "executables = [\"$PWD/plain\"]" \
      "archive_dir = \"$dir/windows\"" \
      ${ARCHIVE_EVENTS:+"archive_branch_events = $ARCHIVE_EVENTS"} \
      ${HYBRID_STOP_HZ:+"hybrid_stop_hz = $HYBRID_STOP_HZ"} > "$dir/pathprofd.toml"
  "$build/bin/pathprofd" --config "$dir/pathprofd.toml" --socket "$dir/pathprofd.sock" \
      --log-level debug > "$dir/log" 2>&1 & daemon=$!
  for _ in $(seq 100); do grep -q "serving on" "$dir/log" && break; sleep 0.1; done
  local -a cmd
  if [[ $v == g ]]; then
    read -ra cmd <<< "$(train_short "$row" ./plain)"
    # shellcheck disable=SC2016
    cmd=(timeout "$train_seconds" bash -c 'while :; do "$@" > /dev/null; done' _ "${cmd[@]}")
  else
    read -ra cmd <<< "$(train_long "$row" ./plain)"
  fi
  "${nice[@]}" "${cmd[@]}" > /dev/null || true
  for _ in $(seq 300); do compgen -G "$dir/windows/*.pbs" > /dev/null && break; sleep 0.1; done
  kill -TERM "$daemon"; wait "$daemon" || true
  first="$(compgen -G "$dir/windows/*.pbs" | sort | head -1)"
  [[ -n $first ]] || { log "$row ($v): no window with branches ($dir/log)"; return 1; }
  cp "$first" "$row.$v.pbs"
  grep -o "[0-9]* of [0-9]* branch windows archived.*" "$dir/log" | head -1 >&2 || true
}
profile_row() {
  local row=$1 t0
  cd "$work/$(row_dir "$row")"
  if [[ ! -x $row.b ]]; then
    t0=$SECONDS
    log "$row (b): perf record -e cpu-clock -F 999 of ${train_seconds}s of training"
    # shellcheck disable=SC2046
    "${nice[@]}" perf record -q -e cpu-clock -F 999 -o "$row.b.perf" -- \
        $(train_long "$row" ./plain) > /dev/null 2> "$row.b.record.log" || true
    aggregate "$row.b.perf" "$row.b.fdata" -nl
    bolt "$row" "$row.b.fdata" "$row.b" -lite=0
    log "$row (b): $((SECONDS - t0))s"
  fi
  if [[ ! -x $row.c || ! -x $row.c2 ]]; then
    t0=$SECONDS
    if [[ ! -s $row.w.pbs ]]; then
      log "$row (c): pathctl bursts (default step mode) of ${train_seconds}s of training"
      local -a cmd; read -ra cmd <<< "$(train_long "$row" ./plain)"
      "${nice[@]}" "${cmd[@]}" > /dev/null & local pid=$!
      # timeout(1) forks the program: watch that child (by name: not a subshell of this script)
      local child="" _
      for _ in $(seq 200); do child="$(pgrep -P "$pid" -x plain)" && break; sleep 0.05; done
      [[ -n $child ]] || { log "$row (c): the training run did not start"; return 1; }
      sleep 0.2
      "${nice[@]}" "$pathctl" bursts --pid "$child" --top 0 -o "$row.w.pbs" > "$row.w.log" 2>&1 ||
          { log "$row (c): bursts exited $? ($row.w.log)"; rm -f "$row.w.pbs"; }
      wait "$pid" 2>/dev/null || true
      [[ -s $row.w.pbs ]] || return 1
    fi
    "${nice[@]}" "$pathctl" export --format perf-lbr "$row.w.pbs" -o "$row.c.data" \
        > "$row.c.export.log" 2>&1
    aggregate "$row.c.data" "$row.c.fdata"
    bolt "$row" "$row.c.fdata" "$row.c"
    "${nice[@]}" "$pathctl" export --format bolt "$row.w.pbs" --binary "$PWD/plain" \
        -o "$row.c2.fdata" > "$row.c2.export.log" 2>&1
    bolt "$row" "$row.c2.fdata" "$row.c2"
    log "$row (c, c2): $((SECONDS - t0))s"
  fi
  local v source
  for v in e f g; do
    [[ -x $row.$v ]] && continue
    t0=$SECONDS
    source=snapshot; [[ $v == f || $v == g ]] && source=hybrid
    # A window with no branches (said by continuous_window) leaves this variant without a
    # binary; the row's other variants go on.
    [[ -s $row.$v.pbs ]] || continuous_window "$row" "$v" "$source" || continue
    "${nice[@]}" "$pathctl" export --format bolt "$row.$v.pbs" --binary "$PWD/plain" \
        -o "$row.$v.fdata" > "$row.$v.export.log" 2>&1
    bolt "$row" "$row.$v.fdata" "$row.$v"
    log "$row ($v): $((SECONDS - t0))s"
  done
  if [[ ! -x $row.d ]]; then
    t0=$SECONDS
    if [[ ! -s $row.d.pbs ]]; then
      log "$row (d): exact trace of the short training run"
      # shellcheck disable=SC2046
      "${nice[@]}" "$pathctl" trace --exact --json -o "$row.d.pbs" -- $(train_short "$row" ./plain) \
          > "$row.d.trace.json" 2> "$row.d.trace.log"
    fi
    "${nice[@]}" "$pathctl" export --format perf-lbr "$row.d.pbs" -o "$row.d.data" \
        > "$row.d.export.log" 2>&1
    aggregate "$row.d.data" "$row.d.fdata"
    bolt "$row" "$row.d.fdata" "$row.d"
    log "$row (d): $((SECONDS - t0))s"
  fi
}

# 4. Per variant: a native evaluation run, checked against plain's output, then the exact counts.
check_row() {  # ROW VARIANT: 0 if the variant's evaluation output equals plain's
  local row=$1 v=$2 bin=$2
  [[ $v == plain ]] || bin=$row.$v
  # shellcheck disable=SC2046
  case $row in
    lua) "${nice[@]}" $(eval_cmd "$row" "./$bin") > "$row.$v.out" ;;
    *) "${nice[@]}" $(eval_cmd "$row" "./$bin" "$row.$v.out")
       "${nice[@]}" "./$bin" -d -q -c "$row.$v.out" | cmp -s - "eval$(row_level "$row").txt" ||
           { log "$row.$v: output does not decompress to the input"; return 1; } ;;
  esac
  cmp -s "$row.$v.out" "$row.plain.out" || { log "$row.$v: output differs from plain's"; return 1; }
}
count_row() {
  local row=$1 v bin t0
  cd "$work/$(row_dir "$row")"
  for v in plain b c c2 d e f g; do
    bin=$v; [[ $v == plain ]] || bin=$row.$v
    [[ -x $bin ]] || { log "$row.$v: no binary"; continue; }
    [[ -s $row.$v.count.json ]] && continue
    check_row "$row" "$v" || continue
    t0=$SECONDS
    # shellcheck disable=SC2046
    "${nice[@]}" "$pathctl" trace --exact --json -o "$row.$v.eval.pbs" -- \
        $(eval_cmd "$row" "./$bin" /dev/null) > "$row.$v.count.out" 2> "$row.$v.count.log"
    # the JSON follows the program's own stdout (lua prints its result)
    grep -o '{"output".*}' "$row.$v.count.out" > "$row.$v.count.json" ||
        { log "$row.$v: no counts ($row.$v.count.log)"; rm -f "$row.$v.count.json"; continue; }
    rm -f "$row.$v.eval.pbs"
    log "$row.$v: counted in $((SECONDS - t0))s: $(cat "$row.$v.count.json")"
  done
}

for row in "${rows[@]}"; do
  profile_row "$row" || log "$row: a profile step failed (see the logs in $work)"
  count_row "$row" || log "$row: a count step failed"
done

# 5. The table.
cd "$work"
python3 - "${rows[@]}" <<'PY'
import json, os, sys
names = {"plain": "plain (-O2)", "b": "(b) perf cpu-clock, no-LBR", "c": "(c) bursts, perf-lbr",
         "c2": "(c2) bursts, --format bolt", "d": "(d) exact trace",
         "e": "(e) continuous archive, --format bolt",
         "f": "(f) continuous archive, source hybrid",
         "g": "(g) continuous archive, hybrid, short runs repeated"}
for row in sys.argv[1:]:
    d = "lua" if row == "lua" else "zstd"
    title = "lua5.4, eval.lua" if row == "lua" else f"zstd -{row[4:]}, eval{row[4:]}.txt"
    counts = {}
    for v in names:
        p = f"{d}/{row}.{v}.count.json"
        if os.path.exists(p):
            j = json.load(open(p))
            counts[v] = (int(j["instructions"]), int(j["taken"]))
    print(f"\n{title}")
    print(f"| variant | instructions | taken branches | taken / 1k instr | cut vs plain "
          f"| % of (d)'s cut | x (b)'s cut |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    rate = {v: 1000 * t / i for v, (i, t) in counts.items()}
    cut = {v: rate["plain"] - r for v, r in rate.items()} if "plain" in rate else {}
    for v, (i, t) in counts.items():
        c = cut.get(v)
        pd = f"{100 * c / cut['d']:.0f}%" if c is not None and cut.get("d") and v != "plain" else ""
        xb = f"{c / cut['b']:.3f}" if c is not None and cut.get("b") and v != "plain" else ""
        cs = f"{c:.2f}" if c is not None and v != "plain" else ""
        print(f"| {names[v]} | {i:,} | {t:,} | {rate[v]:.2f} | {cs} | {pd} | {xb} |")
PY

# 6. CPU time (ROUNDS > 0): each variant's evaluation, sized up (lua: eval.lua 400; zstd: 300
#    frames of the evaluation file; each run ~0.5 s), pinned with taskset to the last CPU, under nice -n 19 as
#    everything here; the variants run in a new shuffled order each round, and each round's
#    CPU time (user+sys) is divided by the same round's plain run. Median of those ratios and a
#    95% bootstrap interval of the median.
[[ "$rounds" == 0 ]] && exit 0
WORK_DIR="$work" python3 - "$rounds" "${rows[@]}" <<'PY'
import os, random, statistics, subprocess, sys
rounds, rows = int(sys.argv[1]), sys.argv[2:]
cpu = str(os.cpu_count() - 1)
def argv(row, binary):
    if row == "lua":
        return ["./" + binary, "eval.lua", "400"]
    level = row[4:]
    return ["./" + binary, "-" + level, "-T1", "--single-thread", "--no-asyncio", "-q", "-c"] + \
        [f"eval{level}.txt"] * 300
def timed(row, binary):
    p = subprocess.Popen(["nice", "-n", "19", "taskset", "-c", cpu] + argv(row, binary),
                         stdout=subprocess.DEVNULL)
    _, status, ru = os.wait4(p.pid, 0)
    if status:
        sys.exit(f"{row} {binary}: status {status}")
    return ru.ru_utime + ru.ru_stime
rng = random.Random(1)
print(f"\nCPU time, {rounds} interleaved rounds, pinned to CPU {cpu} (paired ratio to plain, "
      "median [95% bootstrap interval])")
for row in rows:
    d = "lua" if row == "lua" else "zstd"
    os.chdir(os.path.join(os.environ["WORK_DIR"], d))
    variants = [v for v in ["plain", "b", "c", "c2", "d", "e", "f", "g"]
                if os.access(v if v == "plain" else f"{row}.{v}", os.X_OK)]
    t = {v: [] for v in variants}
    for _ in range(rounds):
        for v in rng.sample(variants, len(variants)):
            t[v].append(timed(row, v if v == "plain" else f"{row}.{v}"))
    line = [f"{row}: plain {statistics.median(t['plain']):.3f}s"]
    for v in variants[1:]:
        r = [a / b for a, b in zip(t[v], t["plain"])]
        boot = sorted(statistics.median(rng.choices(r, k=len(r))) for _ in range(2000))
        line.append(f"{v} {statistics.median(r):.3f} [{boot[50]:.3f}, {boot[1949]:.3f}]")
    print("; ".join(line))
PY
