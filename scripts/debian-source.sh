# shellcheck shell=bash
# Sourced by the benchmark scripts that build Debian programs from their source packages at
# bench time (never vendored): bench-bolt-loop.sh, bench-bolt-counts.sh. Needs root for apt.

# debian_source PACKAGE: unpacks PACKAGE's Debian source into the current directory, adding a
# deb-src entry for bookworm first where apt has none.
debian_source() {
  if ! apt-get source --print-uris "$1" >/dev/null 2>&1; then
    echo "debian_source: no deb-src entries: adding" \
         "/etc/apt/sources.list.d/pathprof-deb-src.sources" >&2
    cat > /etc/apt/sources.list.d/pathprof-deb-src.sources <<'EOF'
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: bookworm
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
    apt-get update -qq
  fi
  apt-get source -qq "$1" >/dev/null 2>&1
}

# debian_lua_source: lua5.4's interpreter sources in ./src, ready to compile directly.
debian_lua_source() {
  debian_source lua5.4
  mv lua5.4-*/src src
  # debian/rules writes this header at configure time; the benchmarks skip the Debian
  # packaging (libtool, shared library) and compile the interpreter directly.
  printf '#define DEB_HOST_MULTIARCH "%s"\n' "$(gcc -print-multiarch)" > src/lua5.4-deb-multiarch.h
}
