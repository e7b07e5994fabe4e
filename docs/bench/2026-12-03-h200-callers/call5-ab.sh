#!/usr/bin/env bash
# The crowd rule (new) against the landed build (old), every mode alternated build by build.
set -u
R=target/gpu-run/crowd
F=/root/small.bin
. "$(dirname "$0")/setup.sh" "$R/new"  # (as run, these lines were inline)
summary='import json,sys; r=json.load(sys.stdin)["results"][0]; print("best", r["best_gbps"], "mean", r["mean_gbps"], "cpu_s/GB", r["cpu_s_per_gb"])'
for r in 1 2 3; do
  for s in "randread 1M 16 128 5" "read 4M 1 - 3" "read 16M 1 - 3" "read 64M 1 - 3" "read 16M 4 - 3"; do set -- $s
    for b in old new; do
      extra=(); [ "$1" = randread ] && extra=(--count $4)
      echo "$r $b $1 $2 x $3: $($R/$b bench --file $F --size 4G --mode $1 --threads $3 --io-size $2 "${extra[@]}" --runs $5 --no-verify --json | python3 -c "$summary")"
    done
  done
done
for i in 1 2; do for b in old new; do
  echo "== rounds $i $b"; PYTHONPATH=/tmp/kv timeout 100 python3 xtask/gpu-bench/rounds.py --hipfile $R/$b --file $F --mode randread --rounds 3 2>&1 | tail -4
done; done
