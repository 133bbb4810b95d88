#!/usr/bin/env bash
# Installs the Debian packages that building the pathprof .deb and its boot test need (kept out
# of install-deps.sh so that `make test` stays lean). Idempotent; asks dpkg before calling apt.
set -euo pipefail

packages=(
  debhelper devscripts lintian fakeroot dpkg-dev
  debootstrap systemd-container
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -ne 0 ]; then
  echo "install-deb-deps: missing packages: ${missing[*]}" >&2
  echo "install-deb-deps: run as root (or: sudo apt-get install ${missing[*]})" >&2
  exit 1
fi
echo "install-deb-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get -o DPkg::Lock::Timeout=300 install -y -qq --no-install-recommends "${missing[@]}"
