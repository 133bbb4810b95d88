#!/usr/bin/env bash
# Thesis Figure 5.7-style table: complete and dynamic overlap of the Hot Path Table with the exact
# BL path profile, for HPT sizes x associativities, over the bundled synthetic workloads.
# usage: scripts/hwmodel-sweep.sh BUILD_DIR [extra pathctl sim options, e.g. --seed 2]
# With --json it prints pathprof.v1.SimSweepReport (proto/pathprof/v1/sim.proto) instead.
set -euo pipefail
build="${1:?usage: scripts/hwmodel-sweep.sh BUILD_DIR [options]}"
shift
exec "$build/bin/pathctl" sim --sweep --workload all --branches 20000000 \
  --sizes 128,256,512,1024,2048 --ways 2,4,8,16,32 "$@"
