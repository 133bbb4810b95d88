#!/usr/bin/env bash
# Builds the pathprof Debian package. Usage:
#   packaging/build-deb.sh OUTDIR [--prebuilt BINDIR] [--no-lintian]
# The Debian tools want debian/ at the top of the source tree; upstream keeps it in
# packaging/debian, so this stages a tree under OUTDIR/stage: symlinks to the repository's
# top-level folders (nothing is written into the repository) plus a real copy of debian/ (debhelper
# writes its work files there). The CMake build directory stays in the stage between runs, so a
# second `make deb` is incremental. Leaves OUTDIR/pathprof_<version>_amd64.deb and, unless
# --no-lintian, OUTDIR/lintian.txt; fails on any lintian error.
set -euo pipefail

repo="$(cd "$(dirname "$0")/.." && pwd)"
out=""
prebuilt=""
run_lintian=1
while [ $# -gt 0 ]; do
  case "$1" in
    --prebuilt) prebuilt="$(cd "$2" && pwd)"; shift 2 ;;
    --no-lintian) run_lintian=0; shift ;;
    -*) echo "build-deb: unknown option $1" >&2; exit 2 ;;
    *) out="$1"; shift ;;
  esac
done
if [ -z "$out" ]; then
  echo "usage: $0 OUTDIR [--prebuilt BINDIR] [--no-lintian]" >&2
  exit 2
fi
mkdir -p "$out"
out="$(cd "$out" && pwd)"

"$repo/scripts/install-deb-deps.sh"

version="$(dpkg-parsechangelog -l "$repo/packaging/debian/changelog" -S Version)"
stage="$out/stage/pathprof-$version"
mkdir -p "$stage"
# Refresh the symlinks (folders may have been added since the last run); keep obj-* (the build).
find "$stage" -mindepth 1 -maxdepth 1 -type l -delete
for entry in "$repo"/* "$repo"/.clang-format; do
  name="$(basename "$entry")"
  case "$name" in
    build | build-* | obj-* | debian) continue ;;
  esac
  [ -e "$entry" ] && ln -s "$entry" "$stage/$name"
done
rm -rf "$stage/debian"
cp -rL "$repo/packaging/debian" "$stage/debian"

export DEB_BUILD_OPTIONS="${DEB_BUILD_OPTIONS:-} nocheck parallel=$(nproc)"
if [ -n "$prebuilt" ]; then
  export PATHPROF_PREBUILT_BIN="$prebuilt"
  # The prebuilt binaries are a test build: no debug-symbol package (and, in debian/rules,
  # fast compression).
  export DEB_BUILD_OPTIONS="$DEB_BUILD_OPTIONS noddebs"
  # -d: the compilers and -dev packages of Build-Depends are not used in this mode.
  builddeb_opts=(-d)
else
  unset PATHPROF_PREBUILT_BIN
  builddeb_opts=()
fi

rm -f "$out"/stage/*.deb "$out"/stage/*.ddeb "$out"/stage/*.changes "$out"/stage/*.buildinfo
(cd "$stage" && dpkg-buildpackage -b -us -uc --no-pre-clean "${builddeb_opts[@]}")

deb="$(ls "$out"/stage/pathprof_"$version"_*.deb)"
cp "$deb" "$out/"
echo "build-deb: $out/$(basename "$deb")"

if [ "$run_lintian" = 1 ]; then
  changes="$(ls "$out"/stage/pathprof_"$version"_*.changes)"
  # --info shows the I: tags too; the explained ones are in docs/operations.md.
  lintian --info --display-level '>=pedantic' --no-tag-display-limit "$changes" \
    >"$out/lintian.txt" 2>&1 || true
  cat "$out/lintian.txt"
  if grep -q '^E: ' "$out/lintian.txt"; then
    echo "build-deb: lintian found errors (see $out/lintian.txt)" >&2
    exit 1
  fi
fi
