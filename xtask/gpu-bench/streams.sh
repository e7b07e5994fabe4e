#!/usr/bin/env bash
# Runs on the GPU machine, from the project root (after `cargo xtask gpu-bench`): stream-ordered
# I/O over CUDA. First the C program of the tests (tests/c/async.c) under each signal and
# backend; then 64 reads of 64 MiB of a warm 4 GiB file on one stream, under each signal, beside
# the same 64 calls made synchronously (two rounds, alternating), and writes the same way. The
# stream runs report the time each call took to queue and how long a host function on another
# stream waited meanwhile. Results land in $OUT (or target/gpu-bench/out).
set -euo pipefail
. "$(dirname "$0")/env.sh"
D=$(dirname "$DATA")/async
mkdir -p "$D"
for signal in hostfn event inline; do
    for backend in auto bounce; do
        HIPFILE_STREAM_SIGNAL=$signal HIPFILE_BACKEND=$backend $B/async_cuda "$D" > /dev/null
        echo "async_cuda ($signal, $backend): ok"
    done
done
H="$B/hipfile bench --file $DATA --size 4G --json"
$H --mode read --runs 1 > /dev/null 2>&1 # creates and warms the file
$H --mode read --runs 3 2> /dev/null > "$OUT/sync-read-whole.json"
for round in 1 2; do
    $H --mode read --io-size 64M --runs 5 --probe 2> /dev/null > "$OUT/sync-read-$round.json"
    for signal in hostfn event inline; do
        HIPFILE_STREAM_SIGNAL=$signal $H --mode read --io-size 64M --runs 5 --stream 2> /dev/null \
            > "$OUT/stream-read-$signal-$round.json"
    done
done
W="$B/hipfile bench --file $(dirname "$DATA")/write.bin --size 1G --json --mode write --io-size 64M --runs 2"
$W 2> /dev/null > "$OUT/sync-write.json"
$W --stream 2> /dev/null > "$OUT/stream-write.json"
python3 - "$OUT" <<'PY' | tee "$OUT/streams-summary.txt"
import json, sys, glob, os
for path in sorted(glob.glob(os.path.join(sys.argv[1], "s*-*.json"))):
    for r in json.load(open(path))["results"]:
        s = r.get("stream") or {}
        extra = ""
        if s:
            extra = " queue %.1f/%.1f us (%d calls), other stream %.1f/%.1f us (%d probes)" % (
                s["enqueue_median_us"], s["enqueue_worst_us"], s["queued_calls"],
                s["other_stream_median_us"], s["other_stream_worst_us"], s["other_stream_probes"])
        print("%-28s %-5s best %6.2f mean %6.2f runs %s verified %s%s" % (
            os.path.basename(path), r["mode"], r["best_gbps"], r["mean_gbps"], r["run_gbps"], r["verified"], extra))
PY
