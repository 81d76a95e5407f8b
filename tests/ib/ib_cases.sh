#!/usr/bin/env bash
# ib setup and failure cases, run inside one Soft-RoCE guest (rxe_vm.sh -s): two ranks with
# their own ORBIT_HOSTID, so they are "hosts" apart that reach each other through rxe0.
# Each case names the settings, what each rank must see (test_ib_init ok | fail TEXT...) and
# what the INFO log must show about the transport choice. Prints one line per case and
# "N passed, N failed"; exits 1 on any failure.
#   usage: ib_cases.sh BUILD_DIR
set -uo pipefail
build=$1
prog=$build/tests/ib/test_ib_init
robust=$build/tests/robust/test_robust
work=$(mktemp -d)
addr=${ORBIT_VM_ADDRS%% *}
pass=0 fails=0

# run2 LIMIT VAR=VAL... -- ARGS: NR ranks (2 unless NR is set) with the settings, each with its
# own host id; per-rank settings as R0:VAR=VAL or R1:VAR=VAL. Logs in $work/r<rank>.log;
# returns the first nonzero status.
run2() {
    local limit=$1; shift
    local common=() r0=() r1=() n=${NR:-2}
    while [ "$1" != -- ]; do
        case $1 in R0:*) r0+=("${1#R0:}") ;; R1:*) r1+=("${1#R1:}") ;; *) common+=("$1") ;; esac
        shift
    done
    shift
    local port=$((20000 + RANDOM % 20000)) secret
    secret=$(od -An -tx1 -N16 /dev/urandom | tr -d ' \n')
    local pids=() r st=0 s
    rm -f "$work"/r*.log
    for ((r = 0; r < n; r++)); do
        local mine=()
        [ $r = 0 ] && mine=("${r0[@]}")
        [ $r = 1 ] && mine=("${r1[@]}")
        env RANK=$r WORLD_SIZE=$n LOCAL_RANK=0 LOCAL_WORLD_SIZE=1 MASTER_ADDR="${MASTER:-$addr}" MASTER_PORT=$port \
            ORBIT_SECRET="$secret" ORBIT_HOSTID=h$r ORBIT_DEBUG=INFO ORBIT_INIT_TIMEOUT=20 ORBIT_TIMEOUT=20 \
            "${common[@]}" "${mine[@]}" timeout -k 2 "$limit" "$@" >"$work/r$r.log" 2>&1 &
        pids+=($!)
    done
    for ((r = 0; r < n; r++)); do
        wait "${pids[r]}" 2>/dev/null; s=$?
        [ $st = 0 ] && st=$s
    done
    return $st
}

# verdict NAME STATUS [GREP_PATTERN]: the ranks' status, then the INFO line the case is about
verdict() {
    local name=$1 st=$2 pat=${3:-}
    local why=""
    [ "$st" != 0 ] && why="a rank exited $st"
    if [ -z "$why" ] && [ -n "$pat" ] && ! grep -q -- "$pat" "$work/r0.log"; then why="rank 0's log lacks \"$pat\""; fi
    if [ -z "$why" ]; then
        pass=$((pass + 1)); echo "ok    $name"
    else
        fails=$((fails + 1)); echo "FAIL  $name: $why"
        sed 's/^/    r0: /' "$work/r0.log" | grep -v "INFO: orb_" | tail -8
        sed 's/^/    r1: /' "$work/r1.log" | grep -v "INFO: orb_" | tail -8
    fi
}

run2 60 -- "$prog" ok
verdict "auto: both ends have rxe0 -> ib" $? "ib: 1 of 1 peer(s) on other hosts connected over rxe0"
run2 60 ORBIT_NET=tcp -- "$prog" ok
verdict "ORBIT_NET=tcp -> tcp, ib not opened" $? "ib: off (ORBIT_NET=tcp)"
run2 60 R0:ORBIT_NET=tcp -- "$prog" ok
verdict "one end ORBIT_NET=tcp -> the pair uses tcp" $?
run2 60 ORBIT_IB_HCA=mlx5 -- "$prog" ok
verdict "ORBIT_IB_HCA selects nothing -> tcp, said at INFO" $? "ib: off (no active port selected by ORBIT_IB_HCA=mlx5"
run2 60 ORBIT_IB_HCA==rxe0:1 -- "$prog" ok
verdict "ORBIT_IB_HCA==rxe0:1 (exact, port) -> ib" $? "connected over rxe0 port 1"
run2 60 ORBIT_IB_HCA=^rxe -- "$prog" ok
verdict "ORBIT_IB_HCA=^rxe excludes it -> tcp" $? "ib: off (no active port"
run2 60 ORBIT_NET=ib ORBIT_IB_HCA=mlx5 -- "$prog" fail "ORBIT_NET=ib, but RDMA is not usable here" "ORBIT_IB_HCA=mlx5"
verdict "ORBIT_NET=ib without a selected port -> init fails saying why" $?
run2 60 ORBIT_IB_HCA=rxe0:x -- "$prog" fail "rank " "ORBIT_IB_HCA entry \"rxe0:x\""
verdict "malformed ORBIT_IB_HCA -> init fails naming the entry" $?
run2 60 ORBIT_NET=verbs -- "$prog" fail "ORBIT_NET=verbs is not one of ib, tcp"
verdict "unknown ORBIT_NET -> init fails naming it" $?
run2 60 ORBIT_IB_GID_INDEX=99999 -- "$prog" fail "ORBIT_IB_GID_INDEX=99999 is outside rxe0 port 1's GID table"
verdict "ORBIT_IB_GID_INDEX out of range -> init fails naming it" $?
run2 60 ORBIT_IB_GID_INDEX=999 -- "$prog" fail "ORBIT_IB_GID_INDEX=999: that entry of rxe0 port 1's GID table is empty"
verdict "ORBIT_IB_GID_INDEX of an unused entry -> init fails naming it" $?

# A rank killed mid-job: every survivor fails with ORB_ERR_PEER_LOST naming it within 5 s
# of its death (test_robust chaos: the victim SIGKILLs itself; only RDMA connects them).
for nr_seed in "2 3" "2 5" "3 7"; do
    set -- $nr_seed
    NR=$1 run2 60 ORBIT_NET=ib -- "$robust" chaos "$2"
    line=$(cat "$work"/r*.log | grep -E "^(VICTIM|SURVIVOR)" | tr '\n' ' ')
    verdict=$(cat "$work"/r*.log | awk -v n="$1" '
        $1 == "VICTIM" { victim = $2; tv = $3 }
        $1 == "SURVIVOR" { k++; st[k] = $3; t[k] = $4; line[k] = $0 }
        END {
            if (victim == "") { print "no victim died"; exit }
            if (k != n - 1) { print k " survivors reported, want " n - 1; exit }
            for (i = 1; i <= k; i++) {
                if (st[i] != "ORB_ERR_PEER_LOST") { print "a survivor got " st[i]; exit }
                if (index(line[i], "rank " victim " ") == 0) { print "a survivor does not name rank " victim; exit }
                if (t[i] - tv > 5) { printf "a survivor took %.2f s\n", t[i] - tv; exit }
                if (t[i] - tv > worst) worst = t[i] - tv
            }
            printf "ok: victim rank %d, %d survivor(s), slowest %.2f s\n", victim, k, worst
        }')
    case $verdict in
    ok:*) pass=$((pass + 1)); echo "ok    killed rank, $1 ranks, seed $2: ${verdict#ok: }" ;;
    *) fails=$((fails + 1)); echo "FAIL  killed rank, $1 ranks, seed $2: $verdict: $line"
       grep -hv "INFO: orb_" "$work"/r*.log | tail -n 12 ;;
    esac
done

run2 60 ORBIT_NET=ib -- "$prog" lose
verdict "a rank gone without a word -> PEER_LOST, then destroy does not wait for it" $? "rank 0: ok (lost after"

# No active port: the interface under rxe0 goes down (its port follows), bootstrap over lo.
ip link set dummy0 down
for _ in $(seq 50); do
    grep -q ACTIVE /sys/class/infiniband/rxe0/ports/1/state || break
    sleep 0.1
done
state=$(cat /sys/class/infiniband/rxe0/ports/1/state)
MASTER=127.0.0.1 run2 60 -- "$prog" ok
verdict "port down ($state) -> tcp, said at INFO" $? "ib: off (no active port"
MASTER=127.0.0.1 run2 60 ORBIT_NET=ib -- "$prog" fail "ORBIT_NET=ib, but RDMA is not usable here" "no active port"
verdict "port down and ORBIT_NET=ib -> init fails saying why" $?
ip link set dummy0 up

rm -rf "$work"
echo "$pass passed, $fails failed"
[ "$fails" = 0 ]
