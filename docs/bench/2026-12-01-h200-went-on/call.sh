# Commit 3facaf1 ("new": a worker whose read runs out goes on with the device's other open
# reads; Python futures in rounds of 16 running side by side) against 612ecf4 ("old"), in one
# call on the H200: `hipfile bench` binaries (release, stripped) and the Python package's
# wheels (pip wheel ./hipfile-python), KvikIO 26.10 beside each wheel, alternating, the order
# swapped in round 2.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
for v in old new; do python3 -m pip install -q --no-index --no-deps --target /tmp/ps-$v .whl/kvikio*.whl .whl/libkvikio*.whl .whl/rapids*.whl target/devwheel/$v/*.whl; done
F=/root/hb.bin
b() { "$@" --file $F --size 4G --json --no-verify --runs 5 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["results"][0]["best_gbps"])'; }
tool() {
  B=target/devbin/$1/hipfile
  echo "round $2 $1: batch128 $(b $B bench --mode randread --io-size 1M --count 128 --batch 128)" \
    "16Mx4 $(b $B bench --mode read --io-size 16M --threads 4)" \
    "64Mx2 $(b $B bench --mode read --io-size 64M --threads 2)" \
    "4Mx16 $(b $B bench --mode read --io-size 4M --threads 16)" \
    "whole $(b $B bench --mode read)"
}
py() {
  PYTHONPATH=/tmp/ps-$1 timeout 100 python3 xtask/gpu-bench/python_bench.py /root/pb.bin --size-gib 4 --runs 5 --kvikio > $OUT/pb_$1_$2.json
  echo "python $2 $1: $(python3 -c 'import json,sys; print(json.dumps(json.load(open(sys.argv[1]))))' $OUT/pb_$1_$2.json | head -c 600)"
}
tool old 1; tool new 1; tool new 2; tool old 2
py old 1; py new 1; py new 2; py old 2
