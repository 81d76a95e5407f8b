#!/usr/bin/env bash
# Quick-start command 1: install what is missing, build, run the main job
# (a 2-rank all-reduce benchmark with result checking).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
bash scripts/build.sh build
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
build/launcher/orbitrun -n 2 -- build/bench/allreduce_bench --size 8:64M --factor 4 --check
