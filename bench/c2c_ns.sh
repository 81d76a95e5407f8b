# Sourced by bench/compare.sh and bench/compare_builds.sh: c2c_ns BUILD_DIR prints bench/c2c's
# cache-line round trip between the first two CPUs in ns, or - where it cannot tell (one CPU:
# exit 77; not built). Runs are bracketed by it: a VM's vCPUs move between cores that share a
# cache and cores that do not, and shared-memory figures move with them (docs/bench.md).
c2c_ns() {
    local out
    out=$("$1/bench/c2c" 2>/dev/null | tail -n 1) || { echo -; return; }
    set -- $out
    [ "${1:-}" = c2c_ns ] && echo "$2" || echo -
}
