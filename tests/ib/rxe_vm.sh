#!/usr/bin/env bash
# Runs one job in throwaway QEMU guests that boot Debian's own kernel with Soft-RoCE
# (rdma_rxe), so real verbs RDMA traffic flows between real processes on a machine with no
# RDMA hardware and no rxe in its own kernel. Each guest's root is this machine's / (9p,
# read-only, under a tmpfs overlay), so build/ binaries and installed tools run unchanged;
# results come back through read-write 9p shares. Exit status: 0 when every rank exited 0,
# 77 when the guests cannot boot or bring rxe up (the reason is printed), else the first
# failure's status (124: the time limit). See /work/shared/notes/soft-roce.md for why it is
# built this way (no usable KVM here: software emulation; rxe0 is up 5-7 s after qemu starts
# on a quiet 2-core machine, 10-13 s while other work shares the cores).
#
# The same file is the guests' init after switch_root (--guest-init): one file to keep in
# step, and it reaches the guest through the 9p root like everything else.
set -uo pipefail

# Addresses of the guests' RoCE interfaces: guests are joined only to each other (or to
# nothing), so every run can use the same subnet.
VM_NET=10.77.0

# ---------------------------------------------------------------------------------------
# Guest side (PID 1 in each guest, started by the initramfs's /init).
# ---------------------------------------------------------------------------------------
guest_fail() {
    echo "orbit-vm: guest ${g:-?}: $*" >/dev/console
    [ -n "${ctl:-}" ] && [ -d "$ctl/st" ] && echo "$*" >"$ctl/fail.$g"
    guest_off
}

# guest_barrier NAME: until every guest has written $ctl/NAME.<guest> (ends this guest when
# another one failed; the host's own limits bound the wait).
guest_barrier() {
    local got
    shopt -s nullglob
    while :; do
        got=("$ctl/$1".*)
        [ ${#got[@]} -ge "$guests" ] && return
        got=("$ctl"/fail.*)
        [ ${#got[@]} -gt 0 ] && guest_off
        sleep 0.1
    done
}

guest_off() {
    sync
    echo o >/proc/sysrq-trigger
    sleep 30 # PID 1 must not return: that panics (which also ends qemu, but noisily)
}

# Waits for the started jobs (pids = process groups: each runs under setsid, so the time
# limit takes their children too) and writes each one's status for the host. A timer child
# and wait -n instead of polling: under software emulation every fork is felt.
guest_run() {
    local -n _pids=$1 _names=$2
    local n=${#_pids[@]} i who s timer left
    sleep "$limit" &
    timer=$!
    local st=()
    while :; do
        left=()
        for ((i = 0; i < n; i++)); do [ -z "${st[i]:-}" ] && left+=("${_pids[i]}"); done
        [ ${#left[@]} = 0 ] && break
        who=""
        wait -n -p who "${left[@]}" "$timer"
        s=$?
        [ -z "$who" ] && continue
        for ((i = 0; i < n; i++)); do
            if [ "$who" = "$timer" ]; then
                [ -n "${st[i]:-}" ] && continue
                kill -KILL -- "-${_pids[i]}" 2>/dev/null
                wait "${_pids[i]}" 2>/dev/null
                st[i]=124
                echo "${_names[i]} ran past the ${limit}s limit and was killed" >>"$out/${_names[i]}.log"
            elif [ "$who" = "${_pids[i]}" ]; then
                st[i]=$s
            else
                continue
            fi
            echo "${st[i]}" >"$ctl/st/${_names[i]}"
        done
    done
    kill "$timer" 2>/dev/null
    # whatever the jobs left behind (servers started with &) must not outlive them
    for ((i = 0; i < n; i++)); do kill -KILL -- "-${_pids[i]}" 2>/dev/null; done
}

guest_main() {
    export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root
    exec </dev/null >/dev/console 2>&1
    # Every exec of a dynamic binary over 9p costs ~0.1 s here: builtins where they do,
    # and the mounts were made by stage 1's static busybox.
    local w cmdline ctl="" g="" kv a i
    read -r cmdline </proc/cmdline
    for w in $cmdline; do
        case $w in
        orbit_vm.guest=*) g=${w#*=} ;;
        orbit_vm.ctl=*) ctl=${w#*=} ;;
        esac
    done
    # shellcheck source=/dev/null # written by the host side below
    . "$ctl/job.conf" || guest_fail "no job.conf in the control share"
    mkdir -p "$out"
    mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144 out "$out" || guest_fail "cannot mount the output share"
    case $cwd in /tmp/*) # hidden by the guest's own /tmp; stage 1 kept it reachable. The
        # whole top directory, not only the cwd: a checkout under /tmp runs its tests from
        # build/ and their scripts from tests/ (a fresh clone in /tmp/fresh, say)
        top=${cwd#/tmp/}
        top=/tmp/${top%%/*}
        mkdir -p "$top"
        mount --bind "/run/orbit-vm/hosttmp/${top#/tmp/}" "$top" ;;
    esac

    echo "orbit-vm$g" >/proc/sys/kernel/hostname
    {
        echo "127.0.0.1 localhost"
        for ((i = 1; i <= guests; i++)); do echo "$VM_NET.$i orbit-vm$i"; done
    } >/etc/hosts
    # rxe needs an Ethernet netdev with an address: one guest talks to itself through a
    # dummy, two guests through their virtio NICs.
    local ifc="" nic=virtio_net cmds="link set lo up\n"
    [ "$guests" = 1 ] && nic=dummy
    modprobe -a "$nic" rdma_rxe ib_uverbs rdma_ucm || guest_fail "modprobe $nic rdma_rxe ib_uverbs rdma_ucm failed"
    if [ "$guests" = 1 ]; then
        ifc=dummy0 # (systemd's modprobe.d has the module make none itself)
        [ -e /sys/class/net/dummy0 ] || cmds+="link add dummy0 type dummy\n"
    else
        for ((i = 0; i < 50; i++)); do
            for w in /sys/class/net/*; do
                case ${w##*/} in lo) ;; *) ifc=${w##*/} ;; esac
            done
            [ -n "$ifc" ] && break
            sleep 0.1
        done
        [ -n "$ifc" ] || guest_fail "no network interface appeared (virtio-net)"
    fi
    cmds+="addr add $VM_NET.$g/24 dev $ifc\nlink set $ifc up\n"
    printf %b "$cmds" | ip -batch - || guest_fail "cannot configure $ifc"
    rdma link add rxe0 type rxe netdev "$ifc" || guest_fail "rdma link add rxe0 on $ifc failed"
    local state=""
    for ((i = 0; i < 100; i++)); do
        read -r state </sys/class/infiniband/rxe0/ports/1/state
        case $state in *ACTIVE*) break ;; esac
        sleep 0.1
    done 2>/dev/null
    case $state in *ACTIVE*) ;; *) guest_fail "rxe0 port is not active (state: ${state:-none})" ;; esac
    # and user space sees it the same way (libibverbs and its rxe provider)
    ibv_devinfo -d rxe0 2>&1 | grep -q PORT_ACTIVE || guest_fail "ibv_devinfo does not show rxe0 PORT_ACTIVE"
    ulimit -l unlimited # memory registration pins pages
    ulimit -n 65536

    # Every guest up and reaching the others before any job starts, so no rank races
    # another guest's boot; only then is this guest "ready" (the host's end of booting).
    echo up >"$ctl/up.$g"
    guest_barrier up
    if [ "$guests" -gt 1 ]; then
        local peer=$((g % guests + 1))
        busybox ping -c 1 -W 5 "$VM_NET.$peer" >/dev/null 2>&1 ||
            busybox ping -c 1 -W 5 "$VM_NET.$peer" >/dev/null 2>&1 ||
            guest_fail "no IP traffic to guest $peer"
    fi
    echo ready >"$ctl/ready.$g"
    guest_barrier ready

    cd "$cwd" || guest_fail "no $cwd in the guest"
    local base=(PATH="$PATH" HOME=/root "${fwd[@]}") xs=() pids=() names=() args=() l r
    if [ "$mode" = shell ]; then
        for kv in "${extra[@]}"; do xs+=("${kv//@HOST@/$g}"); done
        local addrs=""
        for ((i = 1; i <= guests; i++)); do addrs+="${addrs:+ }$VM_NET.$i"; done
        for a in "${prog[@]}"; do args+=("${a//@HOST@/$g}"); done
        setsid env -i "${base[@]}" ORBIT_VM_GUEST="$g" ORBIT_VM_NGUESTS="$guests" \
            ORBIT_VM_ADDRS="$addrs" ORBIT_VM_OUT="$out" "${xs[@]}" \
            bash -c "${args[*]}" >"$out/h$g.log" 2>&1 &
        pids+=($!)
        names+=("h$g")
    else
        local nranks=$((guests * per))
        for ((l = 0; l < per; l++)); do
            r=$(((g - 1) * per + l))
            xs=()
            for kv in "${extra[@]}"; do kv=${kv//@HOST@/$g}; xs+=("${kv//@RANK@/$r}"); done
            args=()
            for a in "${prog[@]}"; do a=${a//@HOST@/$g}; args+=("${a//@RANK@/$r}"); done
            setsid env -i "${base[@]}" MASTER_ADDR="$VM_NET.1" MASTER_PORT="$port" \
                ORBIT_SECRET="$secret" RANK="$r" WORLD_SIZE="$nranks" LOCAL_RANK="$l" \
                LOCAL_WORLD_SIZE="$per" "${xs[@]}" "${args[@]}" >"$out/h${g}r$r.log" 2>&1 &
            pids+=($!)
            names+=("h${g}r$r")
        done
    fi
    guest_run pids names
    # Stay up (answering the others' last packets) until every guest is through.
    echo ok >"$ctl/done.$g"
    guest_barrier "done"
    guest_off
}

if [ "${1:-}" = --guest-init ]; then
    guest_main
    exit 0
fi

# ---------------------------------------------------------------------------------------
# Host side.
# ---------------------------------------------------------------------------------------
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
self=$here/$(basename "${BASH_SOURCE[0]}")

usage() {
    cat <<USAGE
usage: $0 [options] -- PROGRAM [ARGS...]
  -g GUESTS   QEMU guests ("hosts"), 1 or 2; one guest's rxe0 sits on a dummy interface,
              two guests' on virtio NICs joined to each other only              [1]
  -r RANKS    ranks per guest                                                  [2]
  -t SECONDS  time limit for the job inside; then every rank is killed        [120]
  -e VAR=VAL  extra environment for every rank (repeatable; @HOST@, @RANK@ as below)
  -m MB       memory of each guest                                             [1024]
  -o DIR      keep the output: DIR/h<guest>r<rank>.log (shell mode: DIR/h<guest>.log),
              DIR/console<guest>.log                          [a temp dir, removed after]
  -s          shell mode: "PROGRAM ARGS" (joined by spaces) runs once per guest under
              bash -c, with ORBIT_VM_GUEST (1..), ORBIT_VM_NGUESTS, ORBIT_VM_ADDRS (the
              guests' addresses, guest 1 first) and ORBIT_VM_OUT (DIR, read-write)
  -k          print the ranks' output only when the job fails
Rank mode: every rank gets RANK WORLD_SIZE LOCAL_RANK LOCAL_WORLD_SIZE MASTER_ADDR (guest 1)
MASTER_PORT and a fresh ORBIT_SECRET, and runs in this directory (seen through 9p; writes
stay in the guest). In PROGRAM, ARGS and -e values, @HOST@ becomes the guest's number and
@RANK@ the rank. Ranks also get this environment's PATH, LD_LIBRARY_PATH and ORBIT_*.
Environment: ORBIT_VM_SMP (vCPUs a guest), ORBIT_VM_BOOT_TIMEOUT (s, [90]),
ORBIT_VM_NET=mcast (join two guests by UDP multicast instead of unix datagram sockets).
USAGE
}

skip() {
    echo "$0: SKIP: $*" >&2
    exit 77
}

guests=1 per=2 limit=120 mem=1024 outdir="" mode=ranks quiet=0
extra=()
while getopts "g:r:t:e:m:o:skh" opt; do
    case $opt in
    g) guests=$OPTARG ;;
    r) per=$OPTARG ;;
    t) limit=$OPTARG ;;
    e) extra+=("$OPTARG") ;;
    m) mem=$OPTARG ;;
    o) outdir=$OPTARG ;;
    s) mode=shell ;;
    k) quiet=1 ;;
    h) usage; exit 0 ;;
    *) usage >&2; exit 2 ;;
    esac
done
shift $((OPTIND - 1))
[ "${1:-}" = "--" ] && shift
[ $# -ge 1 ] || { usage >&2; exit 2; }
case $guests$per$limit$mem in *[!0-9]*) echo "$0: -g, -r, -t and -m take numbers" >&2; exit 2 ;; esac
if [ "$guests" -lt 1 ] || [ "$guests" -gt 2 ] || [ "$per" -lt 1 ]; then
    echo "$0: need 1 or 2 guests, >= 1 rank each" >&2
    exit 2
fi
prog=("$@")
boot_timeout=${ORBIT_VM_BOOT_TIMEOUT:-90}

[ "$(id -u)" = 0 ] || skip "needs root (installs packages; qemu exports / to the guests)"
bash "$here/vm_deps.sh" || skip "the VM packages are missing and could not be installed (tests/ib/vm_deps.sh)"
command -v qemu-system-x86_64 >/dev/null || skip "qemu-system-x86_64 is not installed"
if [ ! -x /bin/busybox ] || ldd /bin/busybox >/dev/null 2>&1; then
    skip "/bin/busybox is missing or not static (busybox-static)"
fi

# Debian's kernel, not the running one (which has no rxe): the newest whose module tree
# has rdma_rxe.
kver=""
for k in $(find /boot -maxdepth 1 -name 'vmlinuz-*-amd64' 2>/dev/null | sed 's|^/boot/vmlinuz-||' | sort -rV); do
    if [ -r "/boot/vmlinuz-$k" ] && [ -n "$(find "/lib/modules/$k/kernel/drivers/infiniband/sw/rxe" -name 'rdma_rxe.ko*' 2>/dev/null)" ]; then
        kver=$k
        break
    fi
done
[ -n "$kver" ] || skip "no /boot/vmlinuz-*-amd64 with rdma_rxe.ko in its /lib/modules tree (linux-image-amd64)"
moddir=/lib/modules/$kver

# Under software emulation, unpacking the compressed kernel costs every boot ~3 s; QEMU can
# boot the uncompressed vmlinux through its PVH entry instead. Unpacked once per kernel
# file (named by version, size and mtime, so a reinstalled kernel is unpacked again).
unpack_kernel() { # BZIMAGE OUT: the first compressed stream in it that unpacks to an ELF
    local img=$1 o=$2 t off
    for t in "xz -dc:\xfd7zXZ" "zstd -qdc:\x28\xb5\x2f\xfd" "gzip -dc:\x1f\x8b\x08"; do
        off=$(LC_ALL=C grep -obUaP -m1 "${t#*:}" "$img" 2>/dev/null | head -1 | cut -d: -f1)
        [ -n "$off" ] || continue
        # the stream is followed by the rest of the image: the tool's complaint is expected
        # shellcheck disable=SC2086 # the tool and its options
        tail -c +$((off + 1)) "$img" | ${t%%:*} >"$o" 2>/dev/null
        [ "$(head -c 4 "$o" | od -An -tx1 | tr -d ' ')" = 7f454c46 ] && return 0
    done
    return 1
}
kernel=/boot/vmlinuz-$kver
if grep -q '^CONFIG_PVH=y' "/boot/config-$kver" 2>/dev/null; then
    cache=${ORBIT_VM_CACHE:-/var/tmp/orbit-vm-cache}
    vmlinux=$cache/vmlinux-$kver-$(stat -c '%s-%Y' "$kernel")
    if [ ! -s "$vmlinux" ] && mkdir -p "$cache" 2>/dev/null; then
        find "$cache" -maxdepth 1 -name "vmlinux-$kver-*" -mmin +10 -delete 2>/dev/null
        if unpack_kernel "$kernel" "$vmlinux.$$"; then mv -f "$vmlinux.$$" "$vmlinux"; fi
        rm -f "$vmlinux.$$"
    fi
    [ -s "$vmlinux" ] && kernel=$vmlinux
fi

# vCPUs: a host core each, at most 2 a guest (software emulation runs a thread per vCPU).
# On 2 cores, two guests of 2 vCPUs took 1.5-2x as long to boot as two of 1 (2026-11-25).
ncores=$(nproc)
smp=${ORBIT_VM_SMP:-$((ncores / guests))}
[ "$smp" -gt 2 ] && smp=2
[ "$smp" -ge 1 ] || smp=1

work=$(mktemp -d /tmp/orbit-rxe.XXXXXX)
qpids=()
# shellcheck disable=SC2317 # called by the EXIT trap
cleanup() {
    local p f
    for f in "$work"/qemu*.pid; do
        [ -f "$f" ] && kill -KILL "$(cat "$f")" 2>/dev/null
    done
    # TERM, not KILL, for timeout itself: it passes that on to a qemu not started far
    # enough to have written its pid, and bash says nothing of a job that exits by itself
    for p in "${qpids[@]}"; do kill -TERM "$p" 2>/dev/null; done
    for p in "${qpids[@]}"; do wait "$p" 2>/dev/null; done
    rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

if [ -n "$outdir" ]; then
    mkdir -p "$outdir" || { echo "$0: cannot create $outdir" >&2; exit 2; }
    out=$(cd "$outdir" && pwd)
else
    out=$work/out
    mkdir -p "$out"
fi
mkdir -p "$work/st"

# The initramfs: static busybox plus what mounting the 9p root takes (virtio-pci, 9p,
# overlay), in load order from the kernel's modules.dep. Built per run: it takes well under
# a second and can never be stale.
modpath() { # NAME -> its path relative to the module tree
    grep -m1 -E "(^|/)$1\.ko(\.(xz|zst|gz))?:" "$moddir/modules.dep" | cut -d: -f1
}
declare -A seen=()
order=()
visit() {
    local m=$1 d
    [ -n "${seen[$m]:-}" ] && return
    seen[$m]=1
    local deps
    read -ra deps < <(grep -m1 "^$m:" "$moddir/modules.dep" | cut -d: -f2)
    for d in "${deps[@]}"; do visit "$d"; done
    order+=("$m")
}
for m in virtio_pci 9pnet_virtio 9p overlay; do
    p=$(modpath "$m")
    [ -n "$p" ] || skip "module $m is not in $moddir"
    visit "$p"
done
ird=$work/initrd
mkdir -p "$ird"/{bin,dev,proc,sys,lower,upper,newroot,mod}
cp /bin/busybox "$ird/bin/busybox"
i=10
for m in "${order[@]}"; do
    f=$ird/mod/$i-$(basename "${m%%.ko*}").ko
    case $m in
    *.xz) xz -dc "$moddir/$m" >"$f" ;;
    *.zst) zstd -qdc "$moddir/$m" >"$f" ;;
    *.gz) gzip -dc "$moddir/$m" >"$f" ;;
    *) cp "$moddir/$m" "$f" ;;
    esac || skip "cannot copy $m for the initramfs"
    i=$((i + 1))
done
cat >"$ird/init" <<'INIT'
#!/bin/busybox sh
# Stage 1: the host's / read-only over 9p with a tmpfs on top, the guest's own /run, /tmp,
# /dev/shm, /dev/pts and the control share, then the guest side of rxe_vm.sh.
b=/bin/busybox
fail() { echo "orbit-vm: $*"; $b poweroff -f; }
$b mount -t proc proc /proc
$b mount -t sysfs sys /sys
$b mount -t devtmpfs dev /dev
for w in $($b cat /proc/cmdline); do case $w in orbit_vm.ctl=*) ctl=${w#*=} ;; esac; done
[ -n "$ctl" ] || fail "no orbit_vm.ctl= on the kernel command line"
for m in /mod/*.ko; do $b insmod $m || fail "insmod $m failed"; done
$b mount -t 9p -o trans=virtio,version=9p2000.L,ro,msize=262144,cache=loose root /lower || fail "cannot mount / over 9p"
$b mount -t tmpfs -o mode=755,size=50% upper /upper
$b mkdir /upper/u /upper/w
$b mount -t overlay -o lowerdir=/lower,upperdir=/upper/u,workdir=/upper/w root /newroot || fail "cannot mount the overlay"
for d in proc sys dev; do $b mount --move /$d /newroot/$d; done
n=/newroot
$b mount -t tmpfs -o mode=755 run $n/run
# the host's /tmp stays reachable for a working directory that lives there
$b mkdir -p $n/run/orbit-vm/hosttmp $n/dev/shm $n/dev/pts
$b mount --bind $n/tmp $n/run/orbit-vm/hosttmp
$b mount -t tmpfs -o mode=1777 tmp $n/tmp
$b mount -t tmpfs -o mode=1777,size=50% shm $n/dev/shm
$b mount -t devpts -o mode=620,ptmxmode=666 devpts $n/dev/pts
$b mkdir -p "$n$ctl"
$b mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144 ctl "$n$ctl" || fail "cannot mount the control share"
INIT
# this file as the guest sees it (the guest's /tmp is its own)
gself=$self
case $self in /tmp/*) gself=/run/orbit-vm/hosttmp/${self#/tmp/} ;; esac
# shellcheck disable=SC2016 # $b and $n are stage 1's
printf '[ -f $n%q ] || fail "no %q in the guest"\nexec $b switch_root /newroot /bin/bash %q --guest-init\n' \
    "$gself" "$gself" "$gself" >>"$ird/init"
chmod +x "$ird/init"
(cd "$ird" && find . | cpio -o -H newc --quiet) >"$work/initrd.cpio" || skip "cannot pack the initramfs (cpio)"

# What the guests run, for the guest side to source.
secret=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
port=29500
cwd=$(pwd)
fwd=()
for v in $(compgen -e); do
    case $v in
    ORBIT_SECRET | ORBIT_VM_*) ;;
    ORBIT_* | LD_LIBRARY_PATH | LANG | LC_ALL) fwd+=("$v=${!v}") ;;
    esac
done
[ -n "${PATH:-}" ] && fwd+=("PATH=$PATH")
declare -p mode guests per limit cwd secret port out prog extra fwd >"$work/job.conf"

netmode=dgram
[ "${ORBIT_VM_NET:-}" = mcast ] && netmode=mcast
start=${EPOCHREALTIME//[!0-9]/}
for ((g = 1; g <= guests; g++)); do
    # shellcheck disable=SC2054 # qemu's options take commas
    q=(qemu-system-x86_64 -nodefaults -no-user-config -accel tcg,thread=multi -cpu max
        -m "$mem" -smp "$smp" -display none -no-reboot
        -serial "file:$out/console$g.log" -pidfile "$work/qemu$g.pid"
        -kernel "$kernel" -initrd "$work/initrd.cpio"
        -append "console=ttyS0 quiet panic=-1 mitigations=off orbit_vm.guest=$g orbit_vm.ctl=$work"
        -fsdev local,id=root,path=/,security_model=none,readonly=on,multidevs=remap
        -device virtio-9p-pci,fsdev=root,mount_tag=root
        -fsdev "local,id=ctl,path=${work//,/,,},security_model=none"
        -device virtio-9p-pci,fsdev=ctl,mount_tag=ctl
        -fsdev "local,id=out,path=${out//,/,,},security_model=none"
        -device virtio-9p-pci,fsdev=out,mount_tag=out)
    if [ "$guests" -gt 1 ]; then
        if [ "$netmode" = dgram ]; then
            # each guest sends to the other's socket; no IP on the host is involved
            q+=(-netdev "dgram,id=n0,local.type=unix,local.path=$work/g$g.sock,remote.type=unix,remote.path=$work/g$((3 - g)).sock")
        else
            q+=(-netdev "socket,id=n0,mcast=239.77.$((($$ >> 8) % 256)).$(($$ % 256)):$((20000 + $$ % 10000)),localaddr=127.0.0.1")
        fi
        q+=(-device "virtio-net-pci,netdev=n0,mac=52:54:00:77:00:0$g")
    fi
    # timeout: qemu must not outlive this script even if it is SIGKILLed
    timeout -s KILL $((boot_timeout + limit + 60)) "${q[@]}" >"$work/qemu$g.err" 2>&1 &
    qpids+=($!)
done

alive() { kill -0 "${qpids[$1 - 1]}" 2>/dev/null; }
console_reason() { # the guest's own last word, a kernel's, qemu's, or the console's last
    local r
    r=$(grep -a 'orbit-vm:' "$out/console$1.log" 2>/dev/null | tail -1)
    [ -z "$r" ] && r=$(grep -aE 'Kernel panic|BUG:|Oops' "$out/console$1.log" 2>/dev/null | tail -1)
    [ -z "$r" ] && r=$(grep -v 'module ui-' "$work/qemu$1.err" | tail -1)
    [ -z "$r" ] && r=$(grep -a . "$out/console$1.log" 2>/dev/null | tail -1)
    r=$(printf %s "$r" | tr -d '\r')
    echo "${r:-no message}"
}
boot_skip() {
    local g
    for ((g = 1; g <= guests; g++)); do
        tail -n 15 "$out/console$g.log" 2>/dev/null | tr -d '\r' | sed "s/^/[console$g] /"
    done
    skip "$@"
}

# Boot: every guest says ready (rxe0 active) or why not.
deadline=$((SECONDS + boot_timeout))
while :; do
    nready=0
    for ((g = 1; g <= guests; g++)); do
        [ -f "$work/fail.$g" ] && boot_skip "guest $g: $(cat "$work/fail.$g")"
        if [ -f "$work/ready.$g" ]; then
            nready=$((nready + 1))
        elif ! alive "$g"; then
            boot_skip "guest $g stopped while booting: $(console_reason "$g")"
        fi
    done
    [ "$nready" = "$guests" ] && break
    [ "$SECONDS" -ge "$deadline" ] && boot_skip "guests not up with rxe0 within ${boot_timeout}s"
    sleep 0.1
done
[ "$quiet" = 0 ] && echo "rxe_vm: $guests guest(s) up with rxe0 in $(((${EPOCHREALTIME//[!0-9]/} - start) / 1000))ms (kernel $kver, -smp $smp)" >&2

# The job: the guests enforce the limit themselves; this is the outer bound.
deadline=$((SECONDS + limit + 30))
timedout=0
while :; do
    ndone=0
    for ((g = 1; g <= guests; g++)); do
        if [ -f "$work/done.$g" ] || [ -f "$work/fail.$g" ] || ! alive "$g"; then ndone=$((ndone + 1)); fi
    done
    [ "$ndone" = "$guests" ] && break
    if [ "$SECONDS" -ge "$deadline" ]; then timedout=1; break; fi
    sleep 0.2
done
# a powered-off guest's qemu exits by itself; give it a moment before cleanup kills it
for ((i = 0; i < 50; i++)); do
    n=0
    for ((g = 1; g <= guests; g++)); do alive "$g" && n=$((n + 1)); done
    [ "$n" = 0 ] && break
    sleep 0.1
done

status=0
names=()
for ((g = 1; g <= guests; g++)); do
    if [ "$mode" = shell ]; then
        names+=("h$g")
    else
        for ((l = 0; l < per; l++)); do names+=("h${g}r$(((g - 1) * per + l))"); done
    fi
done
for n in "${names[@]}"; do
    s=$(cat "$work/st/$n" 2>/dev/null)
    if [ -z "$s" ]; then
        g=${n#h}
        g=${g%%r*}
        if [ -f "$work/fail.$g" ]; then
            echo "$n: guest $g failed: $(cat "$work/fail.$g")" >&2
            s=1
        elif [ "$timedout" = 1 ]; then
            echo "$n: guest $g did not finish within ${limit}s + 30s" >&2
            s=124
        else
            echo "$n: guest $g stopped before the job ended: $(console_reason "$g")" >&2
            s=1
        fi
        echo "$s" >"$work/st/$n"
    fi
    [ "$s" != 0 ] && [ "$status" = 0 ] && status=$s
done
if [ "$status" != 0 ] || [ "$quiet" = 0 ]; then
    for n in "${names[@]}"; do
        [ -f "$out/$n.log" ] && sed "s/^/[$n] /" "$out/$n.log"
        s=$(cat "$work/st/$n")
        [ "$s" = 0 ] || echo "[$n] exit status $s"
    done
fi
[ "$status" = 124 ] && echo "$0: the job ran past ${limit}s" >&2
exit "$status"
