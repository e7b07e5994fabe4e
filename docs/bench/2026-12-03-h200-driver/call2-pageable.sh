#!/usr/bin/env bash
# The probe again (driver_probe.c), the runtime's copy from pinned memory against the driver's
# and against the runtime's from pageable memory, twice, alternating nothing else.
set -u
G=xtask/gpu-bench
R=target/gpu-run/drv
F=/root/small.bin
. docs/bench/2026-12-03-h200-callers/setup.sh "$R/hipfile"
gcc -O2 -I/usr/local/cuda/include -o /tmp/driver $G/driver_probe.c -L/usr/local/cuda/lib64 \
    -L/usr/local/cuda/lib64/stubs -lcudart -lcuda -lpthread || exit 1
for r in 1 2; do echo "== pass $r"; timeout 200 /tmp/driver $F 014; done 2>&1 | tee $OUT/probe.txt
