#!/usr/bin/env bash
# 16 callers x 8 random 1 MiB: the landed build against trial switches (helpers' awake time,
# no helpers for any request), beside the reads by hand with every line demoted; 4 rounds
# alternated, 5 runs a process; then rounds beside KvikIO, landed and solo.
set -u
G=xtask/gpu-bench
R=target/gpu-run/trial
F=/root/small.bin
. "$(dirname "$0")/setup.sh" "$R/hipfile"  # (as run, these lines were inline)
gcc -O2 -I/usr/local/cuda/include -o /tmp/callers $G/callers_probe.c -L/usr/local/cuda/lib64 -lcudart -lpthread || exit 1
summary='import json,sys; r=json.load(sys.stdin)["results"][0]; p=r["profile"].get("bounce",{}); print("best", r["best_gbps"], "runs", r["run_gbps"], "wait_ms", r["run_cpu_wait_ms"], "cpu_s/GB", r["cpu_s_per_gb"], "|", {k: v for k, v in p.items() if v})'
ours() { env "$@" $R/hipfile bench --file $F --size 4G --mode randread --io-size 1M --count 128 --threads 16 --runs 5 --no-verify --json --profile | python3 -c "$summary"; }
for r in 1 2 3 4; do
  echo "$r probe host 1: $(/tmp/callers $F 16 8 1048576 5 host 1 $((r * 7 + 1)) | awk '{printf "%s | ", $2}')"
  echo "$r landed: $(ours X=1)"
  echo "$r awake0: $(ours HIPFILE_TRIAL_AWAKE_US=0)"
  echo "$r awake200: $(ours HIPFILE_TRIAL_AWAKE_US=200)"
  echo "$r solo: $(ours HIPFILE_TRIAL_SOLO=1)"
  echo "$r solo+awake0: $(ours HIPFILE_TRIAL_SOLO=1 HIPFILE_TRIAL_AWAKE_US=0)"
done
for v in X=1 HIPFILE_TRIAL_SOLO=1; do
  echo "== rounds beside KvikIO, $v"
  env $v PYTHONPATH=/tmp/kv timeout 150 python3 $G/rounds.py --hipfile $R/hipfile --file $F --mode randread --rounds 4 2>&1 | tail -5
done
