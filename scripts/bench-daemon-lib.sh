# Sourced by the daemon benchmarks (bench-daemon-sessions.sh, bench-continuous-host.sh,
# bench-daemon-load.sh, bench-scheduler-queries.sh): a scratch folder, a pathprofd on a socket in
# it, busy example_hotloop processes, and on exit the end of every process they started (the busy
# ones and $daemon) and of the folder.
# usage: . scripts/bench-daemon-lib.sh; bench_scratch NAME; start_daemon [FLAGS];
#        start_busy COUNT  (needs $bin); describe_host

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

# pathprofd (no config file) on $sock = $dir/pathprofd.sock with FLAGS, its log in $dir/log, its
# pid in $daemon; returns once the socket is there (at most 10 s).
start_daemon() {
  sock="$dir/pathprofd.sock"
  "$bin/pathprofd" --config /dev/null --socket "$sock" --log-level warning "$@" 2>"$dir/log" &
  daemon=$!
  for _ in $(seq 100); do [ -S "$sock" ] && break; sleep 0.1; done
}

# COUNT busy example_hotloop processes; their pids in ${loops[@]}.
start_busy() {
  for _ in $(seq "$1"); do
    "$bin/example_hotloop" 0 >/dev/null &
    loops+=($!)
  done
}

# The host line every daemon benchmark prints first: CPU count and model.
describe_host() {
  echo "host: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
}
