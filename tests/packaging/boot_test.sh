#!/usr/bin/env bash
# Boot test of the Debian package: builds the .deb from the binaries of this build, installs it
# into a clean Debian 12 root made with debootstrap, boots that root with systemd as PID 1
# (systemd-nspawn --boot; the host's own init is never touched) and checks, inside it, that the
# unit the package enabled comes up hardened and answers pathctl.
#
#   boot_test.sh BINDIR WORKDIR
#
# The debootstrap root is cached as WORKDIR/cache/*.tar (or $PATHPROF_ROOT_CACHE), and the .debs
# apt fetches for the package's dependencies in WORKDIR/cache/archives, so reruns are fast.
# The first debootstrap (minutes, from the network) happens only with PATHPROF_BOOT_BOOTSTRAP=1,
# which `make check-packaging` sets; `make test` leaves this test out (label `boot`).
# Exit 77 (CTest: skipped) with the reason when this host cannot do it: not root, no daemon
# built, no cached root and no leave to debootstrap one, no Debian mirror, or systemd-nspawn
# cannot boot a container here.
set -uo pipefail

bindir="$(cd "${1:?usage: boot_test.sh BINDIR WORKDIR}" && pwd)"
work="${2:?usage: boot_test.sh BINDIR WORKDIR}"
repo="$(cd "$(dirname "$0")/../.." && pwd)"
mkdir -p "$work"
work="$(cd "$work" && pwd)"
cache="${PATHPROF_ROOT_CACHE:-$work/cache}"
suite=bookworm
include=systemd,systemd-sysv,dbus,debian-archive-keyring
tarball="$cache/debian-$suite-minbase-systemd-v1.tar"
root="$work/root"
nspawn_pid=""
passed=0
failed=0

log() { printf 'boot_test [%3ds]: %s\n' "$SECONDS" "$*"; }
skip() {
  log "SKIP: $*"
  exit 77
}
pass() {
  passed=$((passed + 1))
  log "ok: $*"
}
fail() {
  failed=$((failed + 1))
  log "FAIL: $*"
}

cleanup() {
  if [ -n "$nspawn_pid" ] && kill -0 "$nspawn_pid" 2>/dev/null; then
    # nspawn turns SIGTERM into a clean poweroff of the container.
    kill -TERM "$nspawn_pid" 2>/dev/null
    for _ in $(seq 1 60); do kill -0 "$nspawn_pid" 2>/dev/null || break; sleep 0.5; done
    if kill -0 "$nspawn_pid" 2>/dev/null; then
      log "container did not halt in 30 s; killing nspawn (pid $nspawn_pid)"
      kill -KILL "$nspawn_pid" 2>/dev/null
    fi
    wait "$nspawn_pid" 2>/dev/null
  fi
  [ -d "$root" ] && rm -rf --one-file-system "$root"
}
trap cleanup EXIT
trap 'log "interrupted"; exit 1' TERM INT HUP

[ "$(id -u)" -eq 0 ] || skip "needs root (debootstrap, systemd-nspawn)"
for b in pathprofd pathctl pathprof-tracer pathprof-emulator pathprof-import pathprof-symbolizer; do
  [ -x "$bindir/$b" ] || skip "no $b in $bindir (build it first)"
done
"$repo/scripts/install-deb-deps.sh" >"$work/install-deb-deps.log" 2>&1 ||
  skip "cannot install the packaging tools: $(tail -n 3 "$work/install-deb-deps.log")"

# 1. The package, from this build's binaries (lintian runs in `make deb`, not here).
log "building the package from $bindir"
rm -rf "$work/deb"
if ! "$repo/packaging/build-deb.sh" "$work/deb" --prebuilt "$bindir" --no-lintian \
  >"$work/build-deb.log" 2>&1; then
  tail -n 40 "$work/build-deb.log"
  log "FAIL: the package did not build (log: $work/build-deb.log)"
  exit 1
fi
deb="$(ls "$work"/deb/pathprof_*.deb)"
log "built $(basename "$deb")"

# 2. A clean Debian root: debootstrap once, then unpack the cached tarball each run.
mirror="${PATHPROF_DEBIAN_MIRROR:-}"
if [ -z "$mirror" ]; then
  # The host's own apt configuration names the mirror (deb822 first, then one-line sources).
  mirror="$(awk '/^URIs:/ {print $2; exit}' /etc/apt/sources.list.d/debian.sources 2>/dev/null)"
  [ -n "$mirror" ] ||
    mirror="$(awk '$1 == "deb" && $0 ~ /debian/ {print $2; exit}' /etc/apt/sources.list 2>/dev/null)"
fi
if [ ! -f "$tarball" ]; then
  # Minutes of network fetches: only where asked for (`make check-packaging` asks), never in a
  # plain ctest run, which must fit the suite's time budget (docs/performance.md).
  [ "${PATHPROF_BOOT_BOOTSTRAP:-0}" = 1 ] ||
    skip "no cached Debian root ($tarball); \`make check-packaging\` debootstraps one from the network (PATHPROF_BOOT_BOOTSTRAP=1)"
  [ -n "$mirror" ] || skip "no Debian mirror in the host's apt sources; set PATHPROF_DEBIAN_MIRROR"
  log "debootstrap $suite from the host's mirror (once; cached as $tarball)"
  mkdir -p "$cache"
  rm -rf "$work/bootstrap"
  if ! timeout 420 debootstrap --variant=minbase --include="$include" "$suite" \
    "$work/bootstrap" "$mirror" >"$work/debootstrap.log" 2>&1; then
    rm -rf --one-file-system "$work/bootstrap"
    skip "debootstrap failed (no mirror reachable?): $(tail -n 3 "$work/debootstrap.log")"
  fi
  # The same suites as the host (updates, security), so the libraries this build linked against
  # resolve; package lists fetched now, once, into the tarball.
  if [ -f /etc/apt/sources.list.d/debian.sources ]; then
    cp /etc/apt/sources.list.d/debian.sources "$work/bootstrap/etc/apt/sources.list.d/"
    : >"$work/bootstrap/etc/apt/sources.list"
  fi
  chroot "$work/bootstrap" apt-get update -qq >>"$work/debootstrap.log" 2>&1 ||
    log "apt-get update in the new root failed; install will retry"
  chroot "$work/bootstrap" apt-get clean
  tar -C "$work/bootstrap" -cf "$tarball.tmp" . && mv "$tarball.tmp" "$tarball"
  rm -rf --one-file-system "$work/bootstrap"
fi
rm -rf --one-file-system "$root"
mkdir -p "$root" "$cache/archives/partial"
tar -C "$root" -xf "$tarball"
pass "clean $suite root unpacked"

# nspawn's own bounding set and seccomp filter leave out CAP_BPF, CAP_PERFMON, bpf(2) and
# perf_event_open(2); the container must have them for the unit's grants to mean anything.
nspawn_common=(-q -D "$root" --register=no --keep-unit
  --capability=CAP_BPF,CAP_PERFMON,CAP_SYS_PTRACE,CAP_DAC_READ_SEARCH,CAP_SETUID,CAP_SETGID,CAP_SYS_NICE
  --system-call-filter="bpf perf_event_open")

# 3. Install, as an administrator would: apt resolves the package's dependencies.
mkdir -p "$root/var/tmp/pkg"
cp "$deb" "$root/var/tmp/pkg/"
install_cmd="apt-get install -y -qq --no-install-recommends /var/tmp/pkg/$(basename "$deb")"
if ! timeout 300 systemd-nspawn "${nspawn_common[@]}" --pipe \
  --bind="$cache/archives:/var/cache/apt/archives" -- /bin/sh -c \
  "export DEBIAN_FRONTEND=noninteractive; $install_cmd || { apt-get update -qq && $install_cmd; }" \
  >"$work/install.log" 2>&1 </dev/null; then
  if grep -q 'Failed to\|nspawn' "$work/install.log" && ! grep -q 'apt\|dpkg' "$work/install.log"; then
    skip "systemd-nspawn cannot run a container here: $(tail -n 3 "$work/install.log")"
  fi
  tail -n 30 "$work/install.log"
  log "FAIL: apt could not install the package (log: $work/install.log)"
  exit 1
fi
pass "package installed with its dependencies"

# Offline checks of the installed files, before boot.
[ -f "$root/etc/pathprof/pathprofd.toml" ] && pass "sample config installed" ||
  fail "no /etc/pathprof/pathprofd.toml"
grep -qx '/etc/pathprof/pathprofd.toml' "$root/var/lib/dpkg/info/pathprof.conffiles" 2>/dev/null &&
  pass "pathprofd.toml is a conffile" || fail "pathprofd.toml is not a conffile"
[ -L "$root/etc/systemd/system/multi-user.target.wants/pathprofd.service" ] &&
  pass "pathprofd.service enabled by the package" || fail "pathprofd.service not enabled"
grep -q '^pathprof:' "$root/etc/passwd" && pass "pathprof system user created (sysusers)" ||
  fail "no pathprof user"
verify_out="$(systemd-analyze verify --man=no --root="$root" pathprofd.service 2>&1)"
if [ $? -eq 0 ] && [ -z "$verify_out" ]; then
  pass "systemd-analyze verify of the installed unit is clean"
else
  fail "systemd-analyze verify: $verify_out"
fi

# 4. Boot it. The console is not needed: the container is driven with nsenter.
log "booting the root with systemd-nspawn --boot"
systemd-nspawn "${nspawn_common[@]}" --boot --console=passive >"$work/boot.log" 2>&1 </dev/null &
nspawn_pid=$!
leader=""
for _ in $(seq 1 100); do
  leader="$(pgrep -P "$nspawn_pid" -x systemd 2>/dev/null | head -n 1)"
  [ -n "$leader" ] && break
  kill -0 "$nspawn_pid" 2>/dev/null || break
  sleep 0.2
done
[ -n "$leader" ] || skip "systemd-nspawn --boot did not start systemd: $(tail -n 5 "$work/boot.log")"
ct() { nsenter -t "$leader" -a -- /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin "$@"; }

# systemctl answers once PID 1 has set up its private socket; then wait for the boot to end.
state=""
for _ in $(seq 1 100); do
  state="$(ct systemctl is-system-running 2>&1)"
  case "$state" in *"Failed to connect"* | *"No such file"*) sleep 0.3 ;; *) break ;; esac
done
state="$(ct timeout 120 systemctl is-system-running --wait 2>&1)"
case "$state" in
  running) pass "container booted (system $state)" ;;
  degraded)
    pass "container booted (system degraded)"
    ct systemctl --failed --no-pager --plain
    ;;
  *) skip "the container did not finish booting (state '$state'): $(tail -n 5 "$work/boot.log")" ;;
esac

# 5. The unit: started at boot by the package's enablement, Type=notify so active == READY=1.
for _ in $(seq 1 150); do
  s="$(ct systemctl is-active pathprofd.service)"
  [ "$s" = active ] || [ "$s" = failed ] && break
  sleep 0.2
done
if [ "$s" != active ]; then
  fail "pathprofd.service is '$s' after boot"
  ct systemctl status --no-pager pathprofd.service
  ct journalctl -b -u pathprofd.service --no-pager | tail -n 40
  log "$passed passed, $failed failed"
  exit 1
fi
pass "pathprofd.service active after boot (READY=1 received)"

main_pid="$(ct systemctl show -P MainPID pathprofd.service)"
status_file="$(ct cat /proc/"$main_pid"/status)"
uid="$(awk '/^Uid:/ {print $3}' <<<"$status_file")"
pp_uid="$(ct id -u pathprof)"
[ "$uid" = "$pp_uid" ] && pass "daemon runs as pathprof (uid $uid), not root" ||
  fail "daemon euid $uid, expected pathprof ($pp_uid)"
# CAP_DAC_READ_SEARCH (2), CAP_SETGID (6), CAP_SETUID (7), CAP_SYS_PTRACE (19), CAP_SYS_NICE (23),
# CAP_PERFMON (38), CAP_BPF (39), and nothing else.
want_caps=000000c0008800c4
for set in CapEff CapBnd; do
  got="$(awk -v s="$set:" '$1 == s {print $2}' <<<"$status_file")"
  [ "$got" = "$want_caps" ] && pass "$set = $got" || fail "$set = $got, want $want_caps"
done
nnp="$(awk '$1 == "NoNewPrivs:" {print $2}' <<<"$status_file")"
[ "$nnp" = 1 ] && pass "NoNewPrivs set" || fail "NoNewPrivs = $nnp"
seccomp="$(awk '$1 == "Seccomp:" {print $2}' <<<"$status_file")"
[ "$seccomp" = 2 ] && pass "seccomp filter active" || fail "Seccomp = $seccomp"

sock=/run/pathprof/pathprofd.sock
if ct test -S "$sock"; then
  pass "socket $sock ($(ct stat -c '%A %U:%G' "$sock"))"
else
  fail "no socket at $sock"
fi

# pathctl inside the container asks the daemon (GetCapabilities over the socket). The daemon's
# own probe must find ptrace working: that needs the unit's CAP_SYS_PTRACE and its seccomp
# filter letting ptrace through.
pathctl_out="$(ct timeout 20 pathctl caps --json --socket "$sock" 2>&1)"
if [ $? -eq 0 ] && grep -Eq '"daemon_version": *"[0-9]' <<<"$pathctl_out"; then
  pass "pathctl caps --socket answered by the daemon"
  printf '%s\n' "$pathctl_out" | sed 's/^/  | /'
  if grep -Eq '"ptrace_bursts": *\{ *"available": *true' <<<"$pathctl_out"; then
    pass "the daemon can ptrace (CAP_SYS_PTRACE and the syscall filter work)"
  else
    fail "the daemon reports ptrace bursts unavailable"
  fi
  # The same probe as root outside the unit tells what the host and container allow; whatever
  # root can do here, the unit's capabilities and filter must let the daemon do too.
  local_out="$(ct timeout 20 pathctl caps --json 2>&1)"
  if grep -Eq '"ebpf_stacks": *\{ *"available": *true' <<<"$local_out"; then
    if grep -Eq '"ebpf_stacks": *\{ *"available": *true' <<<"$pathctl_out"; then
      pass "the daemon can load and attach eBPF (CAP_BPF, CAP_PERFMON, bpf in the filter)"
    else
      fail "root in the container can use eBPF but the daemon cannot"
    fi
  else
    log "eBPF unavailable even to root in this container; not checked: $local_out"
  fi
else
  fail "pathctl caps --json --socket $sock: $pathctl_out"
fi
ps_out="$(ct timeout 20 pathctl ps --socket "$sock" 2>&1)"
if [ $? -eq 0 ] && grep -q 'systemd' <<<"$ps_out"; then
  pass "pathctl ps --socket lists the container's processes (PID 1 included)"
else
  fail "pathctl ps --socket $sock: $ps_out"
fi

wd="$(ct systemctl show -P WatchdogTimestampMonotonic pathprofd.service)"
[ -n "$wd" ] && [ "$wd" != 0 ] && pass "watchdog pinged (WATCHDOG=1 at ${wd} us)" ||
  fail "no WATCHDOG=1 seen (WatchdogTimestampMonotonic='$wd')"

# SIGHUP: reload keeps the same process.
if ct timeout 30 systemctl reload pathprofd.service &&
  [ "$(ct systemctl show -P MainPID pathprofd.service)" = "$main_pid" ] &&
  [ "$(ct systemctl is-active pathprofd.service)" = active ]; then
  pass "systemctl reload (SIGHUP) kept pid $main_pid running"
else
  fail "reload did not keep the daemon running"
fi

# The exposure score, measured live on the running unit.
ct systemd-analyze security --no-pager pathprofd.service >"$work/security.txt" 2>&1
security="$(tail -n 1 "$work/security.txt")"
log "$security (table: $work/security.txt)"
score="$(grep -o 'level for pathprofd.service: [0-9.]*' <<<"$security" | awk '{print $NF}')"
if [ -n "$score" ] && awk -v s="$score" 'BEGIN {exit !(s <= 3.0)}'; then
  pass "systemd-analyze security exposure $score <= 3.0"
else
  fail "systemd-analyze security exposure '$score' (want <= 3.0)"
fi

# SIGTERM: STOPPING=1, clean exit 0, socket gone.
ct timeout 30 systemctl stop pathprofd.service
result="$(ct systemctl show -P Result pathprofd.service)"
code="$(ct systemctl show -P ExecMainStatus pathprofd.service)"
[ "$result" = success ] && [ "$code" = 0 ] && pass "stop: clean exit (Result=$result, status $code)" ||
  fail "stop: Result=$result ExecMainStatus=$code"
ct test -e "$sock" && fail "socket left behind after stop" || pass "socket removed on stop"

# Removal keeps the conffile; purge removes it.
ct /bin/sh -c 'DEBIAN_FRONTEND=noninteractive apt-get remove -y -qq pathprof' >>"$work/install.log" 2>&1
if ! ct test -e /usr/sbin/pathprofd && ct test -f /etc/pathprof/pathprofd.toml; then
  pass "remove: binaries gone, conffile kept"
else
  fail "remove: unexpected files left or conffile lost"
fi
ct /bin/sh -c 'DEBIAN_FRONTEND=noninteractive apt-get purge -y -qq pathprof' >>"$work/install.log" 2>&1
ct test -e /etc/pathprof/pathprofd.toml && fail "purge left the conffile" ||
  pass "purge: conffile removed"

log "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
