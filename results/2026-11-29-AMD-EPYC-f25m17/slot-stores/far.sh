#!/usr/bin/env bash
# Brings this VM's two vCPUs apart (what we found triggers it here: Open MPI's 64 MiB
# broadcast for 15 s), up to 4 tries; exits 0 once c2c's round trip is over 150 ns.
build=$1; here=$(dirname "$0")
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
[ -x /tmp/c2c ] || gcc -O2 -pthread -o /tmp/c2c "$here/c2c.c"
for k in 1 2 3 4; do
  timeout 15 mpirun --oversubscribe -np 2 "$build/bench/broadcast_bench" --backend mpi --size 64M --iters 300 >/dev/null 2>&1
  [ "$(/tmp/c2c | awk '{print $3}')" -gt 150 ] && exit 0
done
exit 1
