# Trial switch read per call (never landed): HIPFILE_TRIAL_AWAKE_US sets how long a waiting thread
# looks for its next job before it sleeps (200 us by default). A 72 MB call's copies run for
# several hundred us after its reads end, so between one caller's calls the readers fall asleep.
# Two rounds alternating on one caller's calls, four callers of 16 MiB, one batch; then
# load_storage with the variants alternated in one process (3 rounds).
# carry: target/gpu-run, target/peer
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
G=$PWD/target/gpu-run
B=$G/d/bin/hipfile
OURS=$G/d/lib/cufile/libcufile.so.0
F=/root/hb.bin
timeout 120 $B bench --file $F --size 4G --mode read --runs 1 --json --no-verify > /dev/null
b() { local v=$1; shift; timeout 60 env $v "$B" bench --file $F --size 4G --json --no-verify --runs ${R:-4} "$@" 2>/dev/null |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["results"][0]["best_gbps"])'; }
V=("" "HIPFILE_TRIAL_AWAKE_US=1000" "HIPFILE_TRIAL_AWAKE_US=2000" "HIPFILE_TRIAL_AWAKE_US=5000")
for r in 1 2; do
  idx="0 1 2 3"; [ $r = 2 ] && idx="3 2 1 0"
  for i in $idx; do
    v=${V[$i]}
    echo "round $r ${v:-default}: 17672Kx1 $(b "$v" --mode read --io-size 17672K) 70688Kx1 $(b "$v" --mode read --io-size 70688K) 4Mx1 $(b "$v" --mode read --io-size 4M)" \
      "16Mx4 $(b "$v" --mode read --io-size 16M --threads 4) batch128 $(b "$v" --mode randread --io-size 1M --count 128 --batch 128)"
  done
done
echo "--- load_storage, alternated in one process ($SECONDS s so far)"
LD_PRELOAD=$OURS HIPFILE_DURABLE_WRITES=false timeout 240 python3 target/peer/gds_ab.py /root 3 "" HIPFILE_TRIAL_AWAKE_US=1000 HIPFILE_TRIAL_AWAKE_US=2000 HIPFILE_TRIAL_AWAKE_US=5000 2>&1 | tail -5
echo "done in $SECONDS s"
