# Sourced by the daemon benchmarks (bench-daemon-sessions.sh, bench-continuous-host.sh): a
# scratch folder, busy example_hotloop processes, and on exit the end of every process they
# started (the busy ones and $daemon) and of the folder.
# usage: . scripts/bench-daemon-lib.sh; bench_scratch NAME; start_busy COUNT  (needs $bin)

loops=()
bench_cleanup() {
  for p in "${loops[@]}"; do kill "$p" 2>/dev/null || true; done
  [ -n "${daemon:-}" ] && kill "$daemon" 2>/dev/null && wait "$daemon" 2>/dev/null || true
  [ -n "${dir:-}" ] && rm -rf "$dir"
}

# Sets $dir to a new folder /tmp/NAME-XXXXXX, removed on exit with the processes above.
bench_scratch() {
  dir="$(mktemp -d "/tmp/$1-XXXXXX")"
  trap bench_cleanup EXIT
}

# COUNT busy example_hotloop processes; their pids in ${loops[@]}.
start_busy() {
  for _ in $(seq "$1"); do
    "$bin/example_hotloop" 0 >/dev/null &
    loops+=($!)
  done
}
