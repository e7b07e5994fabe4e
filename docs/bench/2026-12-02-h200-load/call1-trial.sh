# One trial build (HIPFILE_TRIAL: bit 1 demotes a read's first stripe too, bit 2 cuts a lone read's
# first stripe to a quarter, read in smaller pieces), two rounds alternating: one caller's calls of
# the gds benchmark's tensor sizes (17672 KiB, 70688 KiB) and of 4 MiB, torch.cuda.gds
# load_storage of 9 GB; then HIPFILE_BOUNCE_DEMOTE on four callers of 16 MiB, and PyTorch's own
# TestGDS (test_cuda.py) over ours and over NVIDIA's library.
# carry: target/gpu-run, target/peer
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
G=$PWD/target/gpu-run
B=$G/d/bin/hipfile
OURS=$G/d/lib/cufile/libcufile.so.0
F=/root/hb.bin
timeout 120 $B bench --file $F --size 4G --mode read --runs 1 --json --no-verify > /dev/null
b() { timeout 60 "$B" bench --file $F --size 4G --json --no-verify --runs ${R:-4} "$@" 2>/dev/null |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["results"][0]["best_gbps"])'; }
for r in 1 2; do
  order="0 1 2 3"; [ $r = 2 ] && order="3 2 1 0"
  for t in $order; do
    export HIPFILE_TRIAL=$t
    echo "round $r trial $t: 17672Kx1 $(b --mode read --io-size 17672K) 70688Kx1 $(b --mode read --io-size 70688K) 4Mx1 $(b --mode read --io-size 4M)" \
      "gds $(LD_PRELOAD=$OURS HIPFILE_DURABLE_WRITES=false timeout 120 python3 xtask/gpu-bench/cufile_bench.py gds /root --size-gb 9 --runs 3 2>>$OUT/err.txt | cut -c60-150)"
  done
done
unset HIPFILE_TRIAL
for r in 1 2; do
  for d in true false; do echo "round $r HIPFILE_BOUNCE_DEMOTE=$d: 16Mx4 $(HIPFILE_BOUNCE_DEMOTE=$d b --mode read --io-size 16M --threads 4) 16Mx1 $(HIPFILE_BOUNCE_DEMOTE=$d b --mode read --io-size 16M)"; done
done
echo "--- PyTorch's TestGDS ($SECONDS s so far)"
python3 -c 'import psutil, tempfile, os; print("tmp", os.path.realpath(tempfile.gettempdir()), [(p.mountpoint, p.fstype) for p in psutil.disk_partitions() if p.mountpoint in ("/", "/tmp", "/root")])'
M=$(python3 -c 'import os, psutil; print(next((p.mountpoint for p in psutil.disk_partitions() if p.fstype in ("ext4", "xfs") and os.access(p.mountpoint, os.W_OK)), ""))')
echo "an ext4/xfs mount: ${M:-none}"
echo "over ours:"; LD_PRELOAD=$OURS timeout 120 python3 target/peer/test_cuda_gds.py -v 2>&1 | tail -6
echo "over NVIDIA's:"; timeout 120 python3 target/peer/test_cuda_gds.py -v 2>&1 | tail -6
if [ -n "$M" ]; then
  echo "TMPDIR=$M, over ours:"; TMPDIR=$M LD_PRELOAD=$OURS timeout 120 python3 target/peer/test_cuda_gds.py -v 2>&1 | tail -4
  echo "TMPDIR=$M, over NVIDIA's:"; TMPDIR=$M timeout 120 python3 target/peer/test_cuda_gds.py -v 2>&1 | tail -4
fi
echo "done in $SECONDS s"
