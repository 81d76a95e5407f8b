#!/usr/bin/env bash
# Chaos across hosts: HOSTS namespaces x 1 rank run mixed collectives until one rank SIGKILLs
# itself (test_robust chaos SEED); every survivor must fail with ORB_ERR_PEER_LOST naming that
# rank within 5 s of its death. Usage: chaos.sh TEST_ROBUST HOSTS SEED...
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
prog=$1 hosts=$2
shift 2
fails=0
for seed in "$@"; do
    out=$(ORBIT_TIMEOUT=30 bash "$here/netns_run.sh" -H "$hosts" -t 60 -- "$prog" chaos "$seed" 2>&1)
    status=$?
    if [ "$status" = 77 ]; then echo "$out"; exit 77; fi
    verdict=$(printf '%s\n' "$out" | awk -v hosts="$hosts" '
        { sub(/^\[[^]]*\] /, "") }
        $1 == "VICTIM" { victim = $2; tv = $3 }
        $1 == "SURVIVOR" { n++; st[n] = $3; t[n] = $4; line[n] = $0 }
        END {
            if (victim == "") { print "no victim died"; exit }
            if (n != hosts - 1) { print n " survivors reported, want " hosts - 1; exit }
            for (i = 1; i <= n; i++) {
                if (st[i] != "ORB_ERR_PEER_LOST") { print "survivor got " st[i] ": " line[i]; exit }
                if (index(line[i], "rank " victim " ") == 0) { print "survivor does not name rank " victim ": " line[i]; exit }
                if (t[i] - tv > 5) { printf "survivor took %.2f s: %s\n", t[i] - tv, line[i]; exit }
                if (t[i] - tv > worst) worst = t[i] - tv
            }
            printf "ok: victim rank %d, %d survivors, slowest %.3f s\n", victim, n, worst
        }')
    echo "seed $seed: $verdict"
    case $verdict in ok:*) ;; *) fails=$((fails + 1)); printf '%s\n' "$out" | tail -n 30 ;; esac
done
echo "$(($# - fails)) passed, $fails failed"
[ "$fails" = 0 ]
