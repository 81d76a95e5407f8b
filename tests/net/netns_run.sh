#!/usr/bin/env bash
# Runs one job across "hosts" made of network namespaces on this machine (netns_lib.sh), with
# real TCP between them, and always removes the namespaces afterwards. Exit status: 0 when
# every rank exited 0, 77 when namespaces cannot be made here (the reason is printed), else
# the first failure's status (124: the time limit).
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=netns_lib.sh
. "$here/netns_lib.sh"

usage() {
    cat <<USAGE
usage: $0 [options] -- PROGRAM [ARGS...]
  -H HOSTS    namespaces ("hosts"), 1..8                                   [2]
  -r RANKS    ranks per host                                               [1]
  -l STYLE    how ranks learn who they are:
                torchrun  RANK WORLD_SIZE LOCAL_RANK LOCAL_WORLD_SIZE MASTER_ADDR MASTER_PORT
                slurm     SLURM_PROCID SLURM_NTASKS SLURM_LOCALID SLURM_NNODES SLURM_NODEID
                          SLURM_JOB_ID (+ MASTER_ADDR MASTER_PORT)
                mpi       mpirun -np N --host NS-h1:R,NS-h2:R,... started in the bridge's
                          namespace, reaching each host through an rsh agent that enters its
                          namespace; ARGS may start with --mca NAME VALUE triples for mpirun
                                                                           [torchrun]
  -d NETEM    tc netem arguments for every host's egress, e.g. "delay 1ms"
  -b RATE     a tc tbf rate limit on every host's egress, e.g. "1gbit" (under -d's netem)
  -t SECONDS  time limit for the job; then every rank is killed            [120]
  -e VAR=VAL  extra environment for every rank (repeatable)
  -k          print the ranks' output only when the job fails
  -i          measure the h1 -> h2 link with iperf3 first
Every rank also gets MASTER_ADDR (host 1), MASTER_PORT and a fresh ORBIT_SECRET (mpi style:
MASTER_ADDR only, the rest left to orbit's defaults, as in a user's mpirun line). In PROGRAM
and ARGS, @HOST@ becomes the host's number and @RANK@ the rank (torchrun and slurm styles).
USAGE
}

hosts=2 per=1 style=torchrun netem="" rate="" limit=120 quiet=0 iperf=0
extra=()
while getopts "H:r:l:d:b:t:e:kih" opt; do
    case $opt in
    H) hosts=$OPTARG ;;
    r) per=$OPTARG ;;
    l) style=$OPTARG ;;
    d) netem=$OPTARG ;;
    b) rate=$OPTARG ;;
    t) limit=$OPTARG ;;
    e) extra+=("$OPTARG") ;;
    k) quiet=1 ;;
    i) iperf=1 ;;
    h) usage; exit 0 ;;
    *) usage >&2; exit 2 ;;
    esac
done
shift $((OPTIND - 1))
[ "${1:-}" = "--" ] && shift
[ $# -ge 1 ] || { usage >&2; exit 2; }
case $hosts$per$limit in *[!0-9]*) echo "$0: -H, -r and -t take numbers" >&2; exit 2 ;; esac
if [ "$hosts" -lt 1 ] || [ "$hosts" -gt 8 ] || [ "$per" -lt 1 ]; then
    echo "$0: need 1..8 hosts, >= 1 rank each" >&2
    exit 2
fi
case $style in torchrun | slurm | mpi) ;; *) echo "$0: -l $style: torchrun, slurm or mpi" >&2; exit 2 ;; esac
if [ "$style" = mpi ] && ! command -v mpirun >/dev/null; then echo "SKIP: mpirun (Open MPI) is not installed"; exit 77; fi
if [ "$iperf" = 1 ] && ! command -v iperf3 >/dev/null; then echo "SKIP: iperf3 is not installed"; exit 77; fi

orbtest_setup "$hosts" "$netem" "$rate" || { echo "SKIP: $ORBTEST_SKIP"; exit 77; }
if [ "$iperf" = 1 ] && [ "$hosts" -ge 2 ]; then
    echo "iperf3 h1 -> h2: $(orbtest_iperf 3) GB/s"
fi
orbtest_job "$style" "$per" "$limit" "$ORBTEST_WORK/job" "${extra[@]}" -- "$@"
status=$?
if [ "$status" != 0 ] || [ "$quiet" = 0 ]; then orbtest_show "$ORBTEST_WORK/job" "$per"; fi
[ "$status" = 124 ] && echo "$0: the job ran past ${limit}s" >&2
exit "$status"
