# Trial switch read per call (never landed): HIPFILE_TRIAL_STREAMS=2 queues odd stripes' copies on
# a second stream (so two copies may run at once). Beside it, HIPFILE_BOUNCE_THREADS=12 and 24 (16
# by default here). Two rounds alternating on one caller's 17672 KiB, 70688 KiB, 64 MiB and 4 MiB
# calls and a whole file; a verified run of the trial; then load_storage with the default and the
# trial alternated in one process (4 rounds).
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
V=("" "HIPFILE_TRIAL_STREAMS=2" "HIPFILE_BOUNCE_THREADS=12" "HIPFILE_BOUNCE_THREADS=24")
for r in 1 2; do
  idx="0 1 2 3"; [ $r = 2 ] && idx="3 2 1 0"
  for i in $idx; do
    v=${V[$i]}
    echo "round $r ${v:-default}: 17672Kx1 $(b "$v" --mode read --io-size 17672K) 70688Kx1 $(b "$v" --mode read --io-size 70688K) 64Mx1 $(b "$v" --mode read --io-size 64M) 4Mx1 $(b "$v" --mode read --io-size 4M) file $(R=2 b "$v" --mode read)"
  done
done
echo "--- verified, HIPFILE_TRIAL_STREAMS=2:"
HIPFILE_TRIAL_STREAMS=2 timeout 120 $B bench --file $F --size 4G --mode read --io-size 70688K --runs 1 2>&1 | tail -2
echo "--- load_storage, alternated in one process ($SECONDS s so far)"
LD_PRELOAD=$OURS HIPFILE_DURABLE_WRITES=false timeout 240 python3 target/peer/gds_ab.py /root 4 "" HIPFILE_TRIAL_STREAMS=2 2>&1 | tail -3
echo "done in $SECONDS s"
