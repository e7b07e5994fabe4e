#!/usr/bin/env bash
# A device's threads shared by the requests in flight lately (new) against in flight now
# (old), alternated: 16 callers x 8 random 1 MiB (5 runs a process), one caller's 1/4/16/64
# MiB calls, 4 callers of 16 MiB, a whole warm file; then rounds beside KvikIO for each.
set -u
G=xtask/gpu-bench
R=target/gpu-run/crowd
F=/root/small.bin
. "$(dirname "$0")/setup.sh" "$R/new"  # (as run, these lines were inline)
summary='import json,sys; r=json.load(sys.stdin)["results"][0]; print("best", r["best_gbps"], "mean", r["mean_gbps"], "cpu_s/GB", r["cpu_s_per_gb"], "runs", r["run_gbps"])'
for r in 1 2 3; do for b in old new; do
  for s in "randread 1M 16 128 5" "read 1M 1 - 3" "read 4M 1 - 3" "read 16M 1 - 3" "read 64M 1 - 3" "read 16M 4 - 3" "read 4G 1 - 2"; do set -- $s
    extra=(); [ "$1" = randread ] && extra=(--count $4); [ "$2" = 4G ] || extra+=(--io-size $2)
    echo "$r $b $1 $2 x $3: $($R/$b bench --file $F --size 4G --mode $1 --threads $3 "${extra[@]}" --runs $5 --no-verify --json | python3 -c "$summary")"
  done
done; done
for b in old new; do
  echo "== rounds beside KvikIO, $b"
  PYTHONPATH=/tmp/kv timeout 140 python3 $G/rounds.py --hipfile $R/$b --file $F --mode randread --rounds 4 2>&1 | tail -5
done
