# The review commit (612ecf4, "new") against caac448 ("old"): the Python package's wheels built
# here (pip wheel ./hipfile-python), each with KvikIO 26.10 beside it, alternating, in one call
# on the H200. KvikIO's figures are in round 1 old's file (same call).
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
for v in old new; do python3 -m pip install -q --no-index --no-deps --target /tmp/ps-$v .whl/kvikio*.whl .whl/libkvikio*.whl .whl/rapids*.whl target/devwheel/$v/*.whl; done
for r in 1 2; do for v in old new; do
  PYTHONPATH=/tmp/ps-$v timeout 60 python3 xtask/gpu-bench/python_bench.py /root/pb.bin --size-gib 4 --runs 5 $([ $r = 1 ] && [ $v = old ] && echo --kvikio) > $OUT/pb_${v}_$r.json
done; done
# Before it, in a separate call: the package's pytest suite with the new wheel (74 passed,
# 3 skipped), and python_bench.py --runs 3 --kvikio (python_bench_runs3_new.json).
