# Issue 41's A/B: the build of the session's start (9c978e5, "old") beside the restructured one
# ("new"), alternated in one call, on the Python paths that run the whole library: a warm 4 GiB
# file read whole into CuPy and PyTorch, 128 random 1 MiB reads as futures and as one batch
# (python_bench.py), and a warm 8.7 GB safetensors checkpoint through load_file (load_bench.py).
# Before the call, here: the old wheel built from a worktree of 9c978e5 and the new one from
# the checkout (pip wheel --no-deps hipfile-python), in target/devwheel/{old,new}.
# carry: target/devwheel
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
for v in old new; do
  python3 -m pip install -q --no-index --no-deps --target /tmp/$v target/devwheel/$v/*.whl 2>&1 | tail -2
done
one() { python3 -c "import json,sys; d=json.load(sys.stdin); d.pop('runtime',None); print(json.dumps(d))"; }
for r in 1 2 3; do
  for v in old new; do
    echo "python_bench $v round $r: $(PYTHONPATH=/tmp/$v python3 xtask/gpu-bench/python_bench.py /root/pb.bin --size-gib 4 --runs 3 2>>$OUT/err.txt | one)"
  done
done
echo "--- $SECONDS s"
for r in 1 2; do
  for v in old new; do
    PYTHONPATH=/tmp/$v python3 xtask/gpu-bench/load_bench.py /root/ckpt --size-gb 8.6 --runs 2 --peers "" --json $OUT/load-$v-$r.json > /dev/null 2>>$OUT/err.txt
    echo "load_bench $v round $r, warm GB/s: $(python3 -c "import json; w=json.load(open('$OUT/load-$v-$r.json'))['warm']; print(json.dumps({k: x.get('best_gbps') for k, x in w.items() if isinstance(x, dict)}))")"
  done
done
echo "done in $SECONDS s"
