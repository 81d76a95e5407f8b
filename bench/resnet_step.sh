#!/bin/bash
# Step time and exposed communication of orbit-train against PyTorch DDP over Gloo
# (bench/ddp_torch.py) on the same model, data, batch and ranks, one thread per rank. Each
# round runs, in this order, orbit-train, orbit-train --no-sync, PyTorch, PyTorch --no-sync
# (DDP's no_sync(): the same step without the gradient all-reduce); each run trains EPOCHS
# epochs of STEPS steps and the last epoch's wall time / steps is its step time (the first
# carries the warm-up). Medians over the rounds; exposed communication = median step -
# median no-sync step, as bench/torch_ddp_step.py defines it.
#
#   bench/resnet_step.sh [BUILD_DIR]            (default: build)
#
# Environment: MODEL (resnet20), ROUNDS (5), STEPS (20), EPOCHS (2), BATCH (64, global),
# NPROC (2), LR (0.05), DATA (Debian's Fashion-MNIST; synthetic:C,H,W,K for generated data),
# EXTRA (more options for both programs, e.g. "--grad-dtype bf16"), PYTHON (the torch
# venv's python, scripts/torch_env.sh), OUT (BUILD_DIR/resnet_step: logs and JSON).
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-build}
case $build in /*) ;; *) build=$here/$build ;; esac
model=${MODEL:-resnet20}
rounds=${ROUNDS:-5}
steps=${STEPS:-20}
epochs=${EPOCHS:-2}
batch=${BATCH:-64}
nproc=${NPROC:-2}
lr=${LR:-0.05}
data=${DATA:-/usr/share/datasets/fashion-mnist}
extra=${EXTRA:-}
out=${OUT:-$build/resnet_step}
train=$build/trainer/orbit-train
orbitrun=$build/launcher/orbitrun

for f in "$train" "$orbitrun"; do
    [ -x "$f" ] || { echo "resnet_step: $f not built (ninja -C $build)" >&2; exit 1; }
done
python=${PYTHON:-}
if [ -z "$python" ]; then
    python=$(ORBIT_BUILD=$build bash "$here/scripts/torch_env.sh") || exit $?
fi
"$python" -c 'import torch, torchvision' 2>/dev/null ||
    { echo "resnet_step: $python has no torch/torchvision (bash scripts/torch_env.sh)" >&2; exit 77; }
mkdir -p "$out"
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1

# Both programs end with an evaluation that is not timed: with IDX data it runs on a copy of
# the set whose test part is cut to its first 1000 images (PyTorch takes ~30 s for 10000).
if [ -d "$data" ]; then
    small=$out/data
    mkdir -p "$small"
    "$python" - "$data" "$small" <<'PY'
import gzip, os, struct, sys
src, dst = sys.argv[1:]
def read(name):
    for n in (name + ".gz", name):
        p = os.path.join(src, n)
        if os.path.exists(p):
            return (gzip.open if n.endswith(".gz") else open)(p, "rb").read()
    sys.exit(f"resnet_step: {src} has no {name}[.gz]")
for split in ("train", "t10k"):
    imgs, labels = read(f"{split}-images-idx3-ubyte"), read(f"{split}-labels-idx1-ubyte")
    if split == "t10k":
        n, h, w = struct.unpack(">III", imgs[4:16])
        n = min(n, 1000)
        imgs = imgs[:4] + struct.pack(">I", n) + imgs[8:16 + n * h * w]
        labels = labels[:4] + struct.pack(">I", n) + labels[8:8 + n]
    open(os.path.join(dst, f"{split}-images-idx3-ubyte"), "wb").write(imgs)
    open(os.path.join(dst, f"{split}-labels-idx1-ubyte"), "wb").write(labels)
PY
    data=$small
fi

common=(--model "$model" --data "$data" --epochs "$epochs" --steps "$steps" --batch-size "$batch" --lr "$lr")
# shellcheck disable=SC2206
common+=($extra)
for r in $(seq "$rounds"); do
    for kind in orbit orbit-nosync torch torch-nosync; do
        flags=()
        case $kind in *-nosync) flags=(--no-sync) ;; esac
        json=$out/$kind-$r.json
        case $kind in
            orbit*) "$orbitrun" -n "$nproc" -- "$train" "${common[@]}" "${flags[@]}" --json "$json" \
                        >"$out/$kind-$r.log" 2>&1 ;;
            torch*) "$python" "$here/bench/ddp_torch.py" --nproc "$nproc" "${common[@]}" "${flags[@]}" --json "$json" \
                        >"$out/$kind-$r.log" 2>&1 ;;
        esac || { echo "resnet_step: $kind round $r failed (see $out/$kind-$r.log)" >&2; exit 1; }
        echo "resnet_step: round $r $kind done" >&2
    done
done

"$python" - "$out" "$rounds" "$model" "$batch" "$nproc" "$steps" "$extra" <<'EOF'
import json, statistics, sys
out, rounds, model, batch, nproc, steps, extra = sys.argv[1], int(sys.argv[2]), *sys.argv[3:]
ms = {}
for kind in ("orbit", "orbit-nosync", "torch", "torch-nosync"):
    v = []
    for r in range(1, rounds + 1):
        e = json.load(open(f"{out}/{kind}-{r}.json"))["epochs"][-1]
        v.append(1e3 * e["dur"] / e["steps"] if "steps" in e else 1e3 * e["dur"] / int(steps))
    ms[kind] = v
med = {k: statistics.median(v) for k, v in ms.items()}
print(f"# {model}, {nproc} ranks x batch {int(batch) // int(nproc)}, {steps} steps an epoch, last epoch of each run, "
      f"{rounds} rounds {extra}")
for k, v in ms.items():
    print(f"# {k:13s} step ms: " + " ".join(f"{x:.1f}" for x in v) + f"   median {med[k]:.1f}")
eo = med["orbit"] - med["orbit-nosync"]
et = med["torch"] - med["torch-nosync"]
print(f"| {model} | {med['orbit']:.1f} | {med['orbit-nosync']:.1f} | {eo:.1f} | {med['torch']:.1f} | "
      f"{med['torch-nosync']:.1f} | {et:.1f} | {med['torch'] / med['orbit']:.2f} | "
      + (f"{et / eo:.2f} |" if eo > 0 else "n/a (orbit exposed <= 0) |"))
json.dump({"model": model, "steps_ms": ms, "median_ms": med, "exposed_ms": {"orbit": eo, "torch": et}},
          open(f"{out}/summary.json", "w"), indent=1)
EOF
