#!/usr/bin/env bash
# Installs the Debian 12 packages pathprof builds and tests with. Idempotent, and fast when
# everything is present: it asks dpkg first and only calls apt when something is missing.
set -euo pipefail

packages=(
  build-essential cmake ninja-build ccache pkg-config clang-format
  zlib1g-dev libgtest-dev libgmock-dev libbenchmark-dev
  libelf-dev libdw-dev libipt-dev libzydis-dev
  libbpf-dev bpftool clang llvm libseccomp-dev
  libgrpc++-dev protobuf-compiler-grpc protobuf-compiler libprotobuf-dev libabsl-dev
  libncurses-dev libsystemd-dev libdebuginfod-dev debuginfod tmux
  linux-perf bpftrace golang-go golang-github-google-pprof-dev bolt-15 autofdo
  libcpp-httplib-dev libssl-dev libtomlplusplus-dev prometheus
  python3 curl util-linux mold
  # Debian's own programs the emulated-window test runs (tests/stepping/emulated_windows_test.cc)
  xz-utils zstd sqlite3
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "install-deps: missing packages: ${missing[*]}" >&2
  echo "install-deps: run as root (or: sudo apt-get install ${missing[*]})" >&2
  exit 1
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}"
