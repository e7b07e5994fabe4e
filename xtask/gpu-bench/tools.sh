#!/bin/bash
# The tools on the GPU machine: `hipfile check` (how long, and that it leaves no file), and
# `hipfile cp` of a 2 GiB file against cp and dd, warm (source in the page cache) and cold,
# each in two forms: durable (the copy on disk when the command ends: hipfile's default,
# `cp && sync`, `dd conv=fsync`) and not (HIPFILE_DURABLE_WRITES=false, plain cp and dd).
#   bash target/gpu-bench/tools.sh [ROUNDS]
set -u
B=$(cd "$(dirname "$0")" && pwd)
ROUNDS=${1:-2}
D=/root/hf-bench
mkdir -p "$D" && cd "$D" || exit 1
rm -f cufile.log dst.*
[ -s src.dat ] || head -c 2147483648 /dev/urandom > src.dat
SIZE=$(stat -c %s src.dat)
echo "== hipfile check"
start=$(date +%s%N); "$B/hipfile" check "$D/src.dat"; rc=$?; end=$(date +%s%N)
echo "check: exit $rc in $(( (end - start) / 1000000 )) ms; files left in $D: $(ls | grep -v '^src.dat$' | tr '\n' ' ')"
"$B/hipfile" check --json --backend p2p "$D/src.dat" > /dev/null; echo "check --backend p2p: exit $?"

gbps() { awk -v b="$SIZE" -v ns="$1" 'BEGIN { printf "%.2f", b / (ns / 1e9) / 1e9 }'; }
run() { # label, command...
    local label=$1; shift
    rm -f dst.*; sync
    [ "$COLD" = 1 ] && echo 3 > /proc/sys/vm/drop_caches
    local start end
    start=$(date +%s%N); "$@" > /dev/null; local rc=$?; end=$(date +%s%N)
    cmp -s src.dat dst.* || rc="$rc (copy differs)"
    printf "%-6s %-9s %-28s %6s GB/s  exit %s\n" "$MODE" "$CACHE" "$label" "$(gbps $((end - start)))" "$rc"
}
for round in $(seq "$ROUNDS"); do
    for COLD in 0 1; do
        CACHE=$([ "$COLD" = 1 ] && echo cold || echo warm)
        [ "$COLD" = 0 ] && cat src.dat > /dev/null
        MODE=durable
        run "hipfile cp" "$B/hipfile" cp src.dat dst.h
        run "hipfile cp, sync at end" sh -c "HIPFILE_DURABLE_WRITES=false '$B/hipfile' cp src.dat dst.h && sync"
        run "cp && sync" sh -c 'cp src.dat dst.c && sync'
        run "dd bs=64M conv=fsync" dd if=src.dat of=dst.d bs=64M conv=fsync status=none
        MODE=cached
        run "hipfile cp (not durable)" env HIPFILE_DURABLE_WRITES=false "$B/hipfile" cp src.dat dst.h
        run "cp" cp src.dat dst.c
        run "dd bs=64M" dd if=src.dat of=dst.d bs=64M status=none
    done
done
"$B/hipfile" cp --json src.dat dst.h
rm -f dst.*
echo "files left in $D: $(ls | grep -v '^src.dat$' | tr '\n' ' ')"
