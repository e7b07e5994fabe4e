#!/usr/bin/env bash
# What makes the slow runs of 16 callers x 8 random 1 MiB reads: the library's runs (default,
# no helper threads, no demotion) against the same reads by hand (callers_probe.c: pinned
# memory from cudaMallocHost or on huge pages, lines demoted or not), alternated, every run
# with its threads' CPU wait; and rounds beside KvikIO.
set -u
G=xtask/gpu-bench
R=target/gpu-run/callers
F=/root/small.bin
. "$(dirname "$0")/setup.sh" "$R/hipfile"  # (as run, these lines were inline)
nproc; lscpu | grep -E 'Model name|Thread|Core|Socket|L2|L3|NUMA node0' ; cat /sys/kernel/mm/transparent_hugepage/enabled
gcc -O2 -I/usr/local/cuda/include -o /tmp/callers $G/callers_probe.c -L/usr/local/cuda/lib64 -lcudart -lpthread || exit 1
summary='import json,sys; r=json.load(sys.stdin)["results"][0]; print("best", r["best_gbps"], "runs", r["run_gbps"], "wait_ms", r["run_cpu_wait_ms"], "preempted", r["run_preempted"], "cpu_s/GB", r["cpu_s_per_gb"])'
ours() { env "$@" $R/hipfile bench --file $F --size 4G --mode randread --io-size 1M --count 128 --threads 16 --runs 5 --no-verify --json | python3 -c "$summary"; }
for r in 1 2 3 4; do
  for v in "host 0" "host 1" "thp 0" "thp 1"; do
    echo "$r probe $v: $(/tmp/callers $F 16 8 1048576 5 $v $((r * 7 + 1)) | awk '{printf "%s | ", $0}')"
  done
  echo "$r hipfile default: $(ours X=1)"
  echo "$r hipfile threads=1: $(ours HIPFILE_BOUNCE_THREADS=1)"
  echo "$r hipfile demote=false: $(ours HIPFILE_BOUNCE_DEMOTE=false)"
done
echo "== rounds beside KvikIO"
PYTHONPATH=/tmp/kv timeout 200 python3 $G/rounds.py --hipfile $R/hipfile --file $F --mode randread --rounds 5 2>&1 | tail -6
