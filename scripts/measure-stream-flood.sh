#!/bin/sh
# The half-open stream attack measured once (docs/operations.md, "Attacks tested"): the daemon of
# BUILD runs as root on a temporary socket, a non-admin user opens STREAMS half-open HTTP/2
# streams on one connection (scripts/http2-stream-flood.py), holds it HOLD seconds and lets go;
# the daemon's RSS is printed before, while the streams are held, and each second for 15 s
# after the connection closed, with the time root's `pathctl ps` took meanwhile.
#   scripts/measure-stream-flood.sh BUILD [STREAMS=100000] [HOLD=10] [--no-ack]
# Run as root (it starts the daemon and becomes the test user with setpriv); the user and group
# are the tests' (pathproftest, pathprof-test-clients), created if absent.
set -eu
build=${1:?usage: $0 BUILD [STREAMS] [HOLD] [--no-ack]}
streams=${2:-100000}
hold=${3:-10}
ack=${4:-}
here=$(cd "$(dirname "$0")" && pwd)
user=pathproftest
group=pathprof-test-clients
getent group $group >/dev/null || groupadd $group
id $user >/dev/null 2>&1 || useradd -M -N -g $group -s /usr/sbin/nologin $user

dir=$(mktemp -d /tmp/pathprof-streamflood-XXXXXX)
chmod 0755 "$dir"
sock=$dir/pathprofd.sock
"$build/bin/pathprofd" --config /dev/null --socket "$sock" --socket-group $group \
  --admin-group pathprof-test-admins >"$dir/daemon.log" 2>&1 &
daemon=$!
trap 'kill $daemon 2>/dev/null; wait $daemon 2>/dev/null; rm -rf "$dir"' EXIT
for _ in $(seq 100); do [ -S "$sock" ] && break; sleep 0.1; done
rss() { awk '/^VmRSS/ {printf "%d", $2 / 1024}' /proc/$daemon/status; }
ps_ms() {
  start=$(date +%s%N)
  "$build/bin/pathctl" ps --socket "$sock" --timeout 5s >/dev/null 2>&1 && ok=ok || ok=FAILED
  echo "$(( ($(date +%s%N) - start) / 1000000 )) ms $ok"
}
"$build/bin/pathctl" ps --socket "$sock" >/dev/null
sleep 1
echo "host: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) CPUs"
echo "before: RSS $(rss) MiB; root's ps $(ps_ms)"
setpriv --reuid=$user --regid=$group --clear-groups /usr/bin/python3 "$here/http2-stream-flood.py" "$sock" \
  --streams "$streams" --hold "$hold" $ack >"$dir/flood.out" &
flood=$!
for _ in $(seq 600); do grep -q '^sent' "$dir/flood.out" && break; sleep 0.1; done
echo "streams sent: RSS $(rss) MiB; root's ps $(ps_ms)"
wait $flood || true
echo "flood: $(tail -1 "$dir/flood.out")"
for t in $(seq 15); do
  sleep 1
  echo "${t} s after the connection closed: RSS $(rss) MiB"
done
echo "root's ps $(ps_ms)"
