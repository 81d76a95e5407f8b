#!/bin/bash
# orbit-train against PyTorch DDP (bench/ddp_torch.py, Gloo) on the same machine, side by
# side: for every model and seed, one orbit run then one PyTorch run with the same model,
# data, global batch, optimiser, epochs and ranks, one BLAS/OpenMP thread per rank on both
# sides. Prints a table of time per epoch and final test accuracy; keeps logs and JSON.
#
#   bench/train_compare.sh [BUILD_DIR]          (default: build)
#
# Environment: MODELS ("lenet convnet"), SEEDS ("1 2"), NPROC (2), EPOCHS_LENET (10),
# EPOCHS_CONVNET (5), BATCH (64), OPTIMIZER (sgd), LR (optimiser default), LR_STEP (1) and
# LR_GAMMA (0.7): the StepLR of PyTorch's MNIST example, which also steadies the final
# accuracy from seed to seed; BACKEND (custom, or mpi to run orbit-train under mpirun),
# DATA (Debian's Fashion-MNIST), OUT (BUILD_DIR/train_compare), PYTHON (/usr/bin/python3:
# Debian's python3-torch), and ISA, the instruction set both sides may use:
#   native  each library picks for this CPU (OPENBLAS_CORETYPE unset; oneDNN, which does
#           PyTorch's convolutions, always does): the default
#   avx2    both held to AVX2: OPENBLAS_CORETYPE=Haswell and ONEDNN_MAX_CPU_ISA=AVX2
#   env     the environment as it is (a preset OPENBLAS_CORETYPE holds back orbit's BLAS
#           and PyTorch's matrix products, but not PyTorch's convolutions)
#
# Wall time per epoch is what the programs print; on a machine shared with other work it
# moves with that work, so the table also gives the best epoch and the CPU seconds per
# epoch of all ranks together, which other load disturbs much less.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-build}
case $build in /*) ;; *) build=$here/$build ;; esac
models=${MODELS:-lenet convnet}
seeds=${SEEDS:-1 2}
nproc=${NPROC:-2}
batch=${BATCH:-64}
optimizer=${OPTIMIZER:-sgd}
backend=${BACKEND:-custom}
data=${DATA:-/usr/share/datasets/fashion-mnist}
out=${OUT:-$build/train_compare}
python=${PYTHON:-/usr/bin/python3}
train=$build/trainer/orbit-train
orbitrun=$build/launcher/orbitrun

for f in "$train" "$orbitrun"; do
    [ -x "$f" ] || { echo "train_compare: $f not built (ninja -C $build)" >&2; exit 1; }
done
"$python" -c 'import torch' 2>/dev/null || { echo "train_compare: $python has no torch (apt install python3-torch)" >&2; exit 77; }
mkdir -p "$out"
# one thread per rank on both sides; each program also sets these itself when unset
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
isa=${ISA:-native}
case $isa in
    native) unset OPENBLAS_CORETYPE ONEDNN_MAX_CPU_ISA DNNL_MAX_CPU_ISA ;;
    avx2) export OPENBLAS_CORETYPE=Haswell ONEDNN_MAX_CPU_ISA=AVX2 DNNL_MAX_CPU_ISA=AVX2 ;;
    env) ;;
    *) echo "train_compare: ISA=$isa: native, avx2 or env" >&2; exit 1 ;;
esac
export TRAIN_COMPARE_ISA="$isa (OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-unset}, ONEDNN_MAX_CPU_ISA=${ONEDNN_MAX_CPU_ISA:-unset})"

lr_args=(--lr-step "${LR_STEP:-1}" --lr-gamma "${LR_GAMMA:-0.7}")
[ -n "${LR:-}" ] && lr_args+=(--lr "$LR")

for model in $models; do
    if [ "$model" = lenet ]; then epochs=${EPOCHS_LENET:-10}; else epochs=${EPOCHS_CONVNET:-5}; fi
    common=(--model "$model" --data "$data" --epochs "$epochs" --batch-size "$batch" --optimizer "$optimizer" "${lr_args[@]}")
    for seed in $seeds; do
        tag=${model}_s${seed}
        echo "== $model, seed $seed, $epochs epochs, $nproc ranks: orbit ($backend)" >&2
        if [ "$backend" = mpi ]; then
            launch=(mpirun --allow-run-as-root -n "$nproc")
            [ "$nproc" -gt "$(nproc)" ] && launch+=(--oversubscribe)
        else
            launch=("$orbitrun" -n "$nproc" --)
        fi
        "${launch[@]}" "$train" "${common[@]}" --seed "$seed" --backend "$backend" \
            --json "$out/orbit_$tag.json" --profile "$out/orbit_$tag.trace.json" >"$out/orbit_$tag.log" 2>&1 \
            || { echo "orbit-train failed, see $out/orbit_$tag.log" >&2; exit 1; }
        grep -E "Epoch|Accuracy of the" "$out/orbit_$tag.log" >&2 || true
        echo "== $model, seed $seed: PyTorch DDP" >&2
        "$python" "$here/bench/ddp_torch.py" --nproc "$nproc" "${common[@]}" --seed "$seed" \
            --json "$out/torch_$tag.json" >"$out/torch_$tag.log" 2>&1 \
            || { echo "ddp_torch.py failed, see $out/torch_$tag.log" >&2; exit 1; }
        grep -E "Epoch|Accuracy of the" "$out/torch_$tag.log" >&2 || true
    done
done

"$python" - "$out" $models -- $seeds <<'PY'
import json, os, sys
out = sys.argv[1]
sep = sys.argv.index("--")
models, seeds = sys.argv[2:sep], sys.argv[sep + 1:]
def load(impl, m, s):
    with open(os.path.join(out, f"{impl}_{m}_s{s}.json")) as f:
        return json.load(f)
def times(r):
    d = [e["dur"] for e in r["epochs"]]
    c = [e.get("cpu", 0.0) for e in r["epochs"]]
    return sum(d) / len(d), min(d), sum(c) / len(c)
first = load("orbit", models[0], seeds[0])
print(f"\norbit-train ({first['backend']}) vs PyTorch DDP (Gloo), {first['world_size']} ranks, global batch "
      f"{first['batch_size']}, {first['optimizer']}, StepLR({first['lr_step']}, {first['lr_gamma']}), one thread "
      f"per rank, ISA {os.environ.get('TRAIN_COMPARE_ISA')}; load average at the end {os.getloadavg()[0]:.1f}\n")
print("wall s/epoch: mean (best epoch); CPU s/epoch: all ranks together\n")
print("| model | seed | epochs | orbit wall | PyTorch wall | speed-up mean (best) | orbit CPU | PyTorch CPU | CPU ratio | orbit acc % | PyTorch acc % | diff | orbit exposed comm: rank 0 (least rank) |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
for m in models:
    sp, cr, da = [], [], []
    for s in seeds:
        o, t = load("orbit", m, s), load("torch", m, s)
        (om, ob, oc), (tm, tb, tc) = times(o), times(t)
        exp = o.get("profile", {}).get("exposed_frac")
        least = o.get("profile", {}).get("least_exposed_frac")
        sp.append(tm / om)
        cr.append(tc / oc if oc > 0 else 0)
        da.append(o["accuracy"] - t["accuracy"])
        print(f"| {m} | {s} | {len(o['epochs'])} | {om:.2f} ({ob:.2f}) | {tm:.2f} ({tb:.2f}) | {tm / om:.2f}x "
              f"({tb / ob:.2f}x) | {oc:.2f} | {tc:.2f} | {cr[-1]:.2f}x | {o['accuracy']:.2f} | {t['accuracy']:.2f} | "
              f"{o['accuracy'] - t['accuracy']:+.2f} | {'%.1f%% of step' % (100 * exp) if exp is not None else '-'}"
              f"{' (%.1f%%)' % (100 * least) if least is not None else ''} |")
    print(f"| {m} | mean | | | | {sum(sp) / len(sp):.2f}x | | | {sum(cr) / len(cr):.2f}x | | | "
          f"{sum(da) / len(da):+.2f} | |")
PY
