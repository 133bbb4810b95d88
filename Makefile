# pathprof: thin wrapper over CMake + Ninja. `make` builds, `make test` installs what is missing
# and runs every test under ASan+UBSan, `make demo` shows it working, `make bench` measures,
# `make deb` builds the Debian package (and runs lintian on it).
BUILD      ?= build
ASAN_BUILD ?= build-asan
DEB_BUILD  ?= build-deb
JOBS       ?= $(shell nproc)
CMAKE_GEN  := -G Ninja
# One compiler cache for every clone of the repository on the machine (paths under the clone
# are made relative, so a fresh clone elsewhere hits what another clone compiled); the
# sloppiness lets ccache cache the precompiled headers' users.
export CCACHE_DIR ?= $(if $(HOME),$(HOME)/.cache/pathprof-ccache,$(CURDIR)/.cache/ccache)
export CCACHE_BASEDIR ?= $(CURDIR)
export CCACHE_SLOPPINESS ?= pch_defines,time_macros,include_file_mtime,include_file_ctime

.PHONY: all deps configure test test-release bench demo deb format clean

all: $(BUILD)/build.ninja
	cmake --build $(BUILD) -j $(JOBS)

deps:
	@scripts/install-deps.sh

$(BUILD)/build.ninja: | deps
	cmake -S . -B $(BUILD) $(CMAKE_GEN) -DCMAKE_BUILD_TYPE=RelWithDebInfo

# The benchmarks are compiled here too (not run), so that `make test`, which CI runs, fails
# when one no longer compiles: `make` builds them, and a fresh clone's `make` once broke unseen.
$(ASAN_BUILD)/build.ninja: | deps
	cmake -S . -B $(ASAN_BUILD) $(CMAKE_GEN) -DCMAKE_BUILD_TYPE=Debug -DPATHPROF_SANITIZE=ON \
	  -DPATHPROF_BUILD_BENCH=ON

# Tests run from the sanitizer build (its own pathctl, pathprofd and examples included);
# `make demo` and `make bench` use the release build in $(BUILD). The per-test timeout leaves
# room for the one slow test: the OSP bar traces 16 FFT rounds by single-stepping (~4 min here).
test: deps $(ASAN_BUILD)/build.ninja
	cmake --build $(ASAN_BUILD) -j $(JOBS)
	cd $(ASAN_BUILD) && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
	  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  ctest --output-on-failure -j $(JOBS) --timeout 900

bench: all
	scripts/run-benchmarks.sh $(BUILD)

# Builds only what the demo runs.
demo: $(BUILD)/build.ninja
	cmake --build $(BUILD) -j $(JOBS) --target pathctl pathprof-tracer example_hotloop
	scripts/demo.sh $(BUILD)

# A release build of its own in $(DEB_BUILD)/stage (incremental on reruns); the .deb and
# lintian.txt land in $(DEB_BUILD). See docs/operations.md.
deb: deps
	packaging/build-deb.sh $(DEB_BUILD)

format:
	git ls-files '*.cc' '*.h' | xargs clang-format -i

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(DEB_BUILD)
