# Is it the method? load_storage of the same 9 GB shapes, no destination registered (gds_ab.py),
# beside cufile_bench.py gds (half the destinations registered with gds_register_buffer).
# carry: target/gpu-run, target/peer
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
OURS=$PWD/target/gpu-run/d/lib/cufile/libcufile.so.0
echo "gds_ab, none registered:"; LD_PRELOAD=$OURS timeout 150 python3 target/peer/gds_ab.py /root 3 "" 2>&1 | tail -2
echo "cufile_bench gds: $(LD_PRELOAD=$OURS HIPFILE_DURABLE_WRITES=false timeout 240 python3 xtask/gpu-bench/cufile_bench.py gds /root --size-gb 9 --runs 5 2>>$OUT/err.txt | tr -d '\n')"
echo "done in $SECONDS s"
