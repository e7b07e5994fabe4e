# Trial switches read per call (never landed): HIPFILE_TRIAL_TAIL scales the demoted tail (percent
# of threads x L2 share), HIPFILE_TRIAL_CHUNK_KIB caps the stripe. Two rounds alternating on one
# caller's calls of the gds benchmark's tensor sizes (17672 KiB, 70688 KiB) and 64 MiB; then
# torch.cuda.gds load_storage of 9 GB with the variants alternated in one process (gds_ab.py), and
# once more with 8 MiB stripes set at start (HIPFILE_BOUNCE_CHUNK_KIB is read when the backend opens).
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
V=("" "HIPFILE_TRIAL_TAIL=50" "HIPFILE_TRIAL_TAIL=25" "HIPFILE_TRIAL_TAIL=150" "HIPFILE_TRIAL_CHUNK_KIB=2048" "HIPFILE_BOUNCE_CHUNK_KIB=8192" "HIPFILE_BOUNCE_DEMOTE=false")
for r in 1 2; do
  idx="0 1 2 3 4 5 6"; [ $r = 2 ] && idx="6 5 4 3 2 1 0"
  for i in $idx; do
    v=${V[$i]}
    echo "round $r ${v:-default}: 17672Kx1 $(b "$v" --mode read --io-size 17672K) 70688Kx1 $(b "$v" --mode read --io-size 70688K) 64Mx1 $(b "$v" --mode read --io-size 64M)"
  done
done
echo "--- load_storage, variants alternated in one process ($SECONDS s so far)"
LD_PRELOAD=$OURS HIPFILE_DURABLE_WRITES=false timeout 240 python3 target/peer/gds_ab.py /root 3 "" HIPFILE_TRIAL_TAIL=50 HIPFILE_TRIAL_TAIL=25 HIPFILE_TRIAL_TAIL=150 HIPFILE_TRIAL_CHUNK_KIB=2048 2>&1 | tail -7
echo "--- the same with HIPFILE_BOUNCE_CHUNK_KIB=8192 ($SECONDS s so far)"
HIPFILE_BOUNCE_CHUNK_KIB=8192 LD_PRELOAD=$OURS HIPFILE_DURABLE_WRITES=false timeout 150 python3 target/peer/gds_ab.py /root 2 "" HIPFILE_TRIAL_TAIL=50 2>&1 | tail -4
echo "done in $SECONDS s"
