# The library with the tails of reads demoted (HIPFILE_TRIAL_DEMOTE: 0 none, as before; 1 the
# tail, the last threads x L2 bytes of each read; 2 every piece), and workers awake 2 ms
# instead of 200 us (HIPFILE_TRIAL_AWAKE_US), alternating, two rounds; then cuFile's users
# (KvikIO, torch.cuda.gds, cuFile batch) over ours, demote 0 against 1.
# carry: target/gpu-run .whl
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
G=$PWD/target/gpu-run
B=$G/d/bin/hipfile
F=/root/hb.bin
rm -rf .pysite
python3 -m pip install -q --no-index --no-deps --target .pysite .whl/kvikio*.whl .whl/libkvikio*.whl .whl/rapids*.whl 2>&1 | tail -2
export PYTHONPATH=$PWD/.pysite
timeout 120 $B bench --file $F --size 4G --mode read --runs 1 --json --no-verify > /dev/null
b() { timeout 60 "$B" bench --file $F --size 4G --json --no-verify --runs ${R:-4} "$@" 2>/dev/null |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["results"][0]["best_gbps"])'; }
row() {
  echo "$1: 4M $(b --mode read --io-size 4M) 16M $(b --mode read --io-size 16M) 64M $(b --mode read --io-size 64M)" \
    "batch $(R=5 b --mode randread --io-size 1M --count 128 --batch 128) 4x16M $(b --mode read --io-size 16M --threads 4)" \
    "16x4M $(b --mode read --io-size 4M --threads 16) whole $(R=2 b --mode read)"
}
for r in 1 2; do
  order="0 1 2 a"; [ $r = 2 ] && order="a 2 1 0"
  for m in $order; do
    if [ $m = a ]; then HIPFILE_TRIAL_DEMOTE=1 HIPFILE_TRIAL_AWAKE_US=2000 row "round $r demote 1 awake 2000"
    else HIPFILE_TRIAL_DEMOTE=$m row "round $r demote $m"; fi
  done
done
C=$G/d/lib/cufile/libcufile.so.0
for m in 0 1; do
  export HIPFILE_TRIAL_DEMOTE=$m
  echo "demote $m kvikio OFF: $(LD_PRELOAD=$C KVIKIO_COMPAT_MODE=OFF timeout 200 python3 xtask/gpu-bench/cufile_bench.py kvikio $F 2>>$OUT/err.txt)"
  echo "demote $m cuFile batch: $(LD_PRELOAD=$C timeout 120 python3 xtask/gpu-bench/cufile_bench.py batch $F --runs 7 2>>$OUT/err.txt)"
  echo "demote $m gds: $(LD_PRELOAD=$C HIPFILE_DURABLE_WRITES=false timeout 240 python3 xtask/gpu-bench/cufile_bench.py gds /root --size-gb 9 --runs 3 2>>$OUT/err.txt)"
done
unset HIPFILE_TRIAL_DEMOTE
echo "kvikio over NVIDIA's (default AUTO): $(timeout 200 python3 xtask/gpu-bench/cufile_bench.py kvikio $F 2>>$OUT/err.txt)"
echo "done in $SECONDS s"
