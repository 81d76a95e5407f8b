#!/bin/bash
# One-way message rate (msgrate.c), OLD and NEW orbit builds and Open MPI, alternating, REPS
# rounds; prints every run (million messages a second, median of 5 repetitions of N inside).
#   bash msgrate.sh OLD_BUILD NEW_BUILD REPS SIZE...
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
old=$1 new=$2 reps=$3; shift 3
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
gcc -O2 -I"$new/../include" "$here/msgrate.c" -o /tmp/msgrate_old -L"$old" -l:liborbit.so.0 -Wl,-rpath,"$old"
gcc -O2 -I"$new/../include" "$here/msgrate.c" -o /tmp/msgrate_new -L"$new" -l:liborbit.so.0 -Wl,-rpath,"$new"
mpicc -O2 -DUSE_MPI "$here/msgrate.c" -o /tmp/msgrate_mpi
for s in "$@"; do
    for ((r = 1; r <= reps; r++)); do
        o=$("$new/launcher/orbitrun" -n 2 /tmp/msgrate_old "$s" 200000 5 2>/dev/null | awk '{print $NF}')
        n=$("$new/launcher/orbitrun" -n 2 /tmp/msgrate_new "$s" 200000 5 2>/dev/null | awk '{print $NF}')
        m=$(mpirun --oversubscribe -np 2 /tmp/msgrate_mpi "$s" 200000 5 2>/dev/null | awk '{print $NF}')
        echo "size $s rep $r old $o new $n mpi $m"
    done
done
