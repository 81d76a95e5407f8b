#!/usr/bin/env bash
# Quick-start command 1: install what is missing, build, run the main job: orbit-train
# trains LeNet on Fashion-MNIST on 2 ranks, gradients all-reduced by orbit while backward runs.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
bash scripts/build.sh build
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
build/launcher/orbitrun -n 2 -- build/trainer/orbit-train --model lenet --backend custom "$@"
