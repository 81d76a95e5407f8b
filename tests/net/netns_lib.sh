# shellcheck shell=bash
# "Hosts" made of network namespaces on this machine, with real TCP between them. Sourced by
# tests/net/netns_run.sh (the test harness) and bench/net_compare.sh.
#
#   netns "orbtest-PID-br": a bridge br0 (10.A.B.254/24): the switch, and where mpirun runs
#   netns "orbtest-PID-hN": eth0 (10.A.B.N/24), a veth whose other end is a port of br0
#
# Ranks in one namespace share memory (same network namespace = same host for orbit); ranks
# in different ones talk TCP. The root namespace's interfaces are never touched; call
# orbtest_cleanup on exit (orbtest_setup installs it as the EXIT trap).
# shellcheck disable=SC2034 # the ORBTEST_* variables are read by the scripts that source this

ORBTEST_PREFIX=orbtest-$$
# Unique per job: the names carry our pid, the subnet is derived from it (each job also has
# its own bridge, so even equal subnets would never meet).
ORBTEST_SUBNET=10.$((($$ >> 8) % 200 + 20)).$(($$ % 256))
ORBTEST_HOSTS=0
export ORBTEST_PREFIX ORBTEST_SUBNET
ORBTEST_SKIP=""
ORBTEST_WORK=""
_orbtest_ns=()
_orbtest_pids=()

orbtest_cleanup() {
    local p n
    for p in "${_orbtest_pids[@]}"; do kill -KILL "$p" 2>/dev/null; done
    for n in "${_orbtest_ns[@]}"; do
        # whatever the job left running in our namespaces (mpirun daemons, ranks), by pid
        for p in $(ip netns pids "$n" 2>/dev/null); do kill -KILL "$p" 2>/dev/null; done
    done
    for n in "${_orbtest_ns[@]}"; do ip netns del "$n" 2>/dev/null; done
    _orbtest_ns=()
    [ -n "$ORBTEST_WORK" ] && rm -rf "$ORBTEST_WORK"
    ORBTEST_WORK=""
}

# orbtest_setup HOSTS [NETEM [RATE]]: NETEM are tc netem arguments for every host's egress
# ("delay 1ms"), RATE a tc tbf rate ("1gbit"); returns 0, or 77 with the reason in
# ORBTEST_SKIP.
orbtest_setup() {
    local hosts=$1 netem=${2:-} rate=${3:-} h i ns err br=$ORBTEST_PREFIX-br
    trap orbtest_cleanup EXIT
    trap 'exit 130' INT TERM
    [ "$(id -u)" = 0 ] || { ORBTEST_SKIP="network namespaces need root (CI runs the net suite as root)"; return 77; }
    command -v ip >/dev/null || { ORBTEST_SKIP="iproute2 (ip) is not installed"; return 77; }
    if [ -n "$netem$rate" ] && ! command -v tc >/dev/null; then
        ORBTEST_SKIP="tc (iproute2) is not installed"
        return 77
    fi
    # Leftovers of jobs that were SIGKILLed before their cleanup ran: namespaces named after a
    # pid that is gone.
    local stale p
    for stale in $(ip netns list 2>/dev/null | grep -o '^orbtest-[0-9]*-[a-z0-9]*'); do
        p=${stale#orbtest-}
        p=${p%%-*}
        if ! kill -0 "$p" 2>/dev/null; then
            for p in $(ip netns pids "$stale" 2>/dev/null); do kill -KILL "$p" 2>/dev/null; done
            ip netns del "$stale" 2>/dev/null
        fi
    done
    ORBTEST_WORK=$(mktemp -d "/tmp/$ORBTEST_PREFIX.XXXXXX")
    if ! err=$(ip netns add "$br" 2>&1); then
        ORBTEST_SKIP="cannot create a network namespace: $err"
        return 77
    fi
    _orbtest_ns+=("$br")
    ip -n "$br" link set lo up
    if ! err=$(ip -n "$br" link add br0 type bridge 2>&1); then
        ORBTEST_SKIP="cannot create a bridge: $err"
        return 77
    fi
    ip -n "$br" addr add "$ORBTEST_SUBNET.254/24" dev br0
    ip -n "$br" link set br0 up
    for ((h = 1; h <= hosts; h++)); do
        ns=$ORBTEST_PREFIX-h$h
        if ! err=$(ip netns add "$ns" 2>&1); then
            ORBTEST_SKIP="cannot create namespace $ns: $err"
            return 77
        fi
        _orbtest_ns+=("$ns")
        if ! err=$(ip link add eth0 netns "$ns" type veth peer name p$h netns "$br" 2>&1); then
            ORBTEST_SKIP="cannot create a veth pair: $err"
            return 77
        fi
        ip -n "$br" link set p$h master br0 up
        ip -n "$ns" link set lo up
        ip -n "$ns" addr add "$ORBTEST_SUBNET.$h/24" dev eth0
        ip -n "$ns" link set eth0 up
        local parent=root
        if [ -n "$netem" ]; then
            # shellcheck disable=SC2086 # netem takes its arguments as separate words
            if ! err=$(tc -n "$ns" qdisc add dev eth0 root handle 1: netem $netem 2>&1); then
                ORBTEST_SKIP="tc netem failed (this kernel has no sch_netem?): $err"
                return 77
            fi
            parent="parent 1:1"
        fi
        if [ -n "$rate" ]; then
            # shellcheck disable=SC2086 # parent is two words under netem
            if ! err=$(tc -n "$ns" qdisc add dev eth0 $parent handle 10: tbf rate "$rate" burst 256kb latency 100ms 2>&1); then
                ORBTEST_SKIP="tc tbf failed (this kernel has no sch_tbf?): $err"
                return 77
            fi
        fi
    done
    for ((h = 1; h <= hosts; h++)); do # links up before anything talks
        for ((i = 0; i < 50; i++)); do
            ip -n "$ORBTEST_PREFIX-h$h" link show eth0 | grep -q "state UP" && break
            sleep 0.1
        done
    done
    ORBTEST_HOSTS=$hosts
    return 0
}

# orbtest_serve PORT CMD...: CMD (a server on PORT, its output dropped) started in h2, and
# waited for until it listens (2.5 s at most); its pid in ORBTEST_SERVER_PID, killed at
# cleanup if it still runs.
orbtest_serve() {
    local port=$1
    shift
    ip netns exec "$ORBTEST_PREFIX-h2" "$@" >/dev/null 2>&1 &
    ORBTEST_SERVER_PID=$!
    _orbtest_pids+=("$ORBTEST_SERVER_PID")
    for ((i = 0; i < 50; i++)); do
        ip netns exec "$ORBTEST_PREFIX-h2" ss -ltn 2>/dev/null | grep -q ":$port " && return 0
        sleep 0.05
    done
}

# orbtest_iperf SECONDS [CC [bidir]]: h1 -> h2 throughput in GB/s (receiver side) of one
# stream, with the system's congestion control or CC, on stdout. With "bidir", one stream
# each way at once (what an all-reduce between two hosts does): the mean of the two ways.
orbtest_iperf() {
    local secs=$1 cc=${2:+-C $2} bidir=${3:+--bidir}
    orbtest_serve 5201 iperf3 -s -1 -p 5201
    # shellcheck disable=SC2086 # cc is an option and its value, or nothing
    ip netns exec "$ORBTEST_PREFIX-h1" iperf3 -c "$ORBTEST_SUBNET.2" -p 5201 -t "$secs" $cc $bidir -J 2>/dev/null |
        /usr/bin/python3 -c '
import json, sys
e = json.load(sys.stdin)["end"]
ways = [e[k]["bits_per_second"] / 8e9 for k in ("sum_received", "sum_received_bidir_reverse") if k in e]
print("%.3f" % (sum(ways) / len(ways)))'
    wait "$ORBTEST_SERVER_PID" 2>/dev/null
}

# orbtest_mpi_agent: an rsh agent for mpirun that enters the namespace named as the host.
orbtest_mpi_agent() {
    local agent=$ORBTEST_WORK/ns_rsh
    if [ ! -x "$agent" ]; then
        # Open MPI runs "AGENT HOST COMMAND..." where COMMAND is a shell line for the far side.
        # Each "host" gets its own TMPDIR: the namespaces share /tmp and the hostname, and two
        # daemons creating the same Open MPI session directory at once made one of them fail.
        # shellcheck disable=SC2016 # the far side expands them
        printf '#!/bin/sh\nhost=$1\nshift\nmkdir -p "%s/tmp-$host"\nexec ip netns exec "$host" env TMPDIR="%s/tmp-$host" /bin/sh -c "$*"\n' \
            "$ORBTEST_WORK" "$ORBTEST_WORK" >"$agent"
        chmod +x "$agent"
    fi
    echo "$agent"
}

# orbtest_job STYLE PER LIMIT OUTDIR [VAR=VAL...] -- PROGRAM [ARGS...]
# Runs one job: PER ranks on each host, ranks told who they are the STYLE way (torchrun,
# slurm, mpi; see netns_run.sh). Output of rank r goes to OUTDIR/out.r (mpi: OUTDIR/out.mpi).
# In PROGRAM and ARGS, @HOST@ becomes the host's number and @RANK@ the rank (not for mpi).
# Returns 0 when every rank exited 0, else the first failure's status (124: time limit).
orbtest_job() {
    local style=$1 per=$2 limit=$3 outdir=$4 r h a kv s
    shift 4
    local extra=()
    while [ $# -gt 0 ] && [ "$1" != "--" ]; do extra+=("$1"); shift; done
    shift
    local nranks=$((ORBTEST_HOSTS * per)) master=$ORBTEST_SUBNET.1 port=29500
    local secret
    secret=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
    mkdir -p "$outdir"
    if [ "$style" = mpi ]; then
        # What a user adds to a plain mpirun: where rank 0 is. The port (29500) and the secret
        # (derived from the job id) are left to their defaults on purpose.
        local hostlist="" xs=(-x MASTER_ADDR="$master")
        for ((h = 1; h <= ORBTEST_HOSTS; h++)); do hostlist+="${hostlist:+,}$ORBTEST_PREFIX-h$h:$per"; done
        for kv in "${extra[@]}"; do xs+=(-x "$kv"); done
        for kv in $(env | grep -o '^ORBIT_[A-Z_]*' || true); do xs+=(-x "$kv"); done
        # rtc ^hwloc: Open MPI 4.1's remote daemons (orted) now and then crash at start in
        # hwloc_shmem_topology_write, mapping the shared topology into a hole of their address
        # space (2 launches in ~10 on 2026-11-21); without that component they do not share it.
        local mpiargs=()
        while [ $# -gt 0 ] && [ "${1#--mca}" != "$1" ]; do mpiargs+=("$1" "$2" "$3"); shift 3; done
        timeout -s KILL "$limit" ip netns exec "$ORBTEST_PREFIX-br" \
            env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
            mpirun --oversubscribe -np "$nranks" --host "$hostlist" \
            --mca plm rsh --mca plm_rsh_agent "$(orbtest_mpi_agent)" --mca rtc ^hwloc \
            --mca oob_tcp_if_include "$ORBTEST_SUBNET.0/24" --mca btl_tcp_if_include "$ORBTEST_SUBNET.0/24" \
            "${mpiargs[@]}" "${xs[@]}" "$@" >"$outdir/out.mpi" 2>&1 &
        _orbtest_pids+=($!)
        wait $!
        s=$?
        [ "$s" = 137 ] && s=124
        return "$s"
    fi
    local pids=() rstatus=()
    for ((r = 0; r < nranks; r++)); do
        h=$((r / per + 1))
        local envs=("MASTER_ADDR=$master" "MASTER_PORT=$port" "ORBIT_SECRET=$secret")
        if [ "$style" = torchrun ]; then
            envs+=("RANK=$r" "WORLD_SIZE=$nranks" "LOCAL_RANK=$((r % per))" "LOCAL_WORLD_SIZE=$per")
        else
            envs+=("SLURM_PROCID=$r" "SLURM_NTASKS=$nranks" "SLURM_LOCALID=$((r % per))"
                "SLURM_NNODES=$ORBTEST_HOSTS" "SLURM_NODEID=$((h - 1))" "SLURM_JOB_ID=$$")
        fi
        local args=()
        for a in "$@"; do a=${a//@HOST@/$h}; args+=("${a//@RANK@/$r}"); done
        ip netns exec "$ORBTEST_PREFIX-h$h" env "${envs[@]}" "${extra[@]}" "${args[@]}" >"$outdir/out.$r" 2>&1 &
        pids+=($!)
        _orbtest_pids+=($!)
        rstatus+=("")
    done
    # Every rank runs to its end: a failed rank does not stop the others (their own error
    # handling is part of what the tests check); the time limit does.
    local deadline=$((SECONDS + limit)) ndone=0 first=0
    while [ $ndone -lt $nranks ]; do
        for ((r = 0; r < nranks; r++)); do
            [ -n "${rstatus[r]}" ] && continue
            if ! kill -0 "${pids[r]}" 2>/dev/null; then
                wait "${pids[r]}"
                rstatus[r]=$?
                ndone=$((ndone + 1))
            elif [ $SECONDS -ge $deadline ]; then
                kill -KILL "${pids[r]}" 2>/dev/null
                wait "${pids[r]}" 2>/dev/null
                rstatus[r]=124
                ndone=$((ndone + 1))
                echo "rank $r ran past the ${limit}s limit and was killed" >>"$outdir/out.$r"
            fi
        done
        [ $ndone -lt $nranks ] && sleep 0.02
    done
    for ((r = 0; r < nranks; r++)); do
        echo "${rstatus[r]}" >"$outdir/status.$r"
        if [ "${rstatus[r]}" != 0 ] && [ "$first" = 0 ]; then first=${rstatus[r]}; fi
    done
    return "$first"
}

# orbtest_show OUTDIR PER: the ranks' output, each line tagged with host and rank.
orbtest_show() {
    local outdir=$1 per=$2 f r
    if [ -f "$outdir/out.mpi" ]; then
        cat "$outdir/out.mpi"
        return
    fi
    for ((r = 0; ; r++)); do
        f=$outdir/out.$r
        [ -f "$f" ] || break
        sed "s/^/[h$((r / per + 1)) r$r] /" "$f"
        [ "$(cat "$outdir/status.$r" 2>/dev/null)" = 0 ] || echo "[h$((r / per + 1)) r$r] exit status $(cat "$outdir/status.$r" 2>/dev/null)"
    done
}
