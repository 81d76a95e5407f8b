#!/usr/bin/env bash
# ab.sh with the vCPUs brought apart (far.sh) before each collective; R rounds.
# usage: far-ab.sh BUILD R OUTFILE
here=$(dirname "$0"); build=$1; R=$2; out=$3
for r in $(seq 1 "$R"); do
  for c in reduce sendrecv broadcast allgather allreduce alltoall scatter gather; do
    bash "$here/far.sh" "$build" || echo "# far.sh: the vCPUs stayed near" >> "$out"
    bash "$here/ab.sh" "$build" 1 "$out" "$c"
  done
done
