#!/usr/bin/env bash
# Instructions a call a rank (callgrind), 8-byte calls, 2 ranks: the difference between a run
# of 12000 and one of 2000 timed calls, over 10000, so that init and exit cancel. Waiting
# ranks poll, and polls count too: read differences of a few percent as noise.
# usage: instr.sh BUILD_DIR OUT_FILE [COLL...]   (ORBIT backend; MPI=1 for Open MPI)
set -euo pipefail
build=$1; out=$2; shift 2
colls=${*:-allreduce broadcast reduce gather scatter allgather reduce_scatter alltoall sendrecv}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
for c in $colls; do
    for it in 2000 12000; do
        if [ "${MPI:-0}" = 1 ]; then
            mpirun --allow-run-as-root --oversubscribe -np 2 valgrind --tool=callgrind \
                --callgrind-out-file=/dev/null "$build/bench/${c}_bench" --backend mpi --size 8 \
                --iters $it --warmup 10 --no-inplace > "$tmp/$c.$it" 2>&1
        else
            "$build/launcher/orbitrun" -n 2 valgrind --tool=callgrind --callgrind-out-file=/dev/null \
                "$build/bench/${c}_bench" --size 8 --iters $it --warmup 10 --no-inplace > "$tmp/$c.$it" 2>&1
        fi
    done
    python3 - "$c" "$tmp/$c.2000" "$tmp/$c.12000" <<'PY' | tee -a "$out"
import re, sys
def refs(f):
    r = {}
    for l in open(f):
        m = re.search(r'(?:\[(\d)\] )?==(\d+)== I\s+refs:\s+([\d,]+)', l)
        if m: r[len(r)] = int(m.group(3).replace(',', ''))
    return sorted(r.values())
a, b = refs(sys.argv[2]), refs(sys.argv[3])
d = [(y - x) / 10000 for x, y in zip(a, b)]
print(f"{sys.argv[1]:15s} " + " ".join(f"{v:7.0f}" for v in d))
PY
done
