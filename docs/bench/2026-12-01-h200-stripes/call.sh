# Sections: `bash call.sh tool` (the tool's A/B), `probe`, `python`. tool-lifo.txt: the first
# tool run and the probe (stripes' slots were then handed out newest first, see performance.md).
#
# Reads through stripes (HIPFILE_BOUNCE_READS=stripes) against lanes (the default), one binary
# and one wheel, alternating, the order swapped in round 2; and xtask/gpu-bench/stripe_probe.c,
# the same idea without the library. Before the call, here:
#   cargo build --release -p hipfile-tools && mkdir -p target/devbin/new &&
#     cp target/release/hipfile target/devbin/new/ && strip target/devbin/new/hipfile
#   pip wheel --no-deps ./hipfile-python -w target/devwheel/new
# carry: target/devbin, target/devwheel, .whl (KvikIO's wheels, for python_bench.py --kvikio).
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
F=/root/hb.bin
B=target/devbin/new/hipfile
b() { "$B" bench --file $F --size 4G --json --no-verify --runs ${R:-5} "$@" 2>/dev/null |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["results"][0]["best_gbps"])'; }
tool() {
  export HIPFILE_BOUNCE_READS=$1
  echo "round $2 $1: whole $(b --mode read) 4Mx1 $(b --mode read --io-size 4M) 16Mx1 $(b --mode read --io-size 16M)" \
    "64Mx1 $(b --mode read --io-size 64M) batch128 $(b --mode randread --io-size 1M --count 128 --batch 128)" \
    "1Mx16 $(b --mode randread --io-size 1M --count 128 --threads 16) 4Mx16 $(b --mode read --io-size 4M --threads 16)" \
    "16Mx4 $(b --mode read --io-size 16M --threads 4) cold $(R=2 b --mode read --cold)"
  unset HIPFILE_BOUNCE_READS
}
if [ "$1" = tool ]; then
tool lanes 1; tool stripes 1; tool stripes 2; tool lanes 2
fi
if [ "$1" = probe ]; then
# The probe: lanes' shape (piece == stripe) against stripes filled together, 16 threads.
gcc -O2 -I/usr/local/cuda/include xtask/gpu-bench/stripe_probe.c -L/usr/local/cuda/lib64 -lcudart -lpthread -o /tmp/sp &&
  for args in "4096 1024 1024" "4096 1024 128" "16384 4096 4096" "16384 4096 256" "16384 4096 512" \
    "65536 4096 4096" "65536 4096 256" "4194304 4096 4096" "4194304 4096 256"; do
    timeout 60 /tmp/sp $F $args
  done
fi
if [ "$1" = python ]; then
# Python, KvikIO beside (futures, one batch, the whole file into CuPy and PyTorch).
python3 -m pip install -q --no-index --no-deps --target /tmp/ps .whl/kvikio*.whl .whl/libkvikio*.whl .whl/rapids*.whl target/devwheel/new/*.whl
for v in lanes stripes; do
  HIPFILE_BOUNCE_READS=$v PYTHONPATH=/tmp/ps timeout 100 python3 xtask/gpu-bench/python_bench.py /root/pb.bin --size-gib 4 --runs 5 --kvikio > $OUT/pb_$v.json
done
fi
# Then, if stripes win: the data-safety program (xtask/gpu-bench/safety.sh) with
# HIPFILE_BOUNCE_READS=stripes, and the loader (load_bench.py) and cuFile (cufile_bench.py) calls.
