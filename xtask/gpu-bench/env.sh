# Sourced by the bundle's scripts (run.sh, profile.sh, streams.sh), from the project root on the
# GPU machine: where the bundle, the results and the shared 4 GiB data file are, the peer
# baseline (the harness's `whole`, or the script `cargo xtask gpu-bench --peer PATH` put in the
# bundle), and CUDA's libraries on the loader's path.
B=target/gpu-bench
OUT=${OUT:-$B/out}
DATA=${HIPFILE_BENCH_DIR:-/root/hf-bench}/data.bin
BASELINE="$B/harness.py whole"
if [ -e "$B/kvikio_baseline.py" ]; then BASELINE=$B/kvikio_baseline.py; fi
mkdir -p "$OUT" "$(dirname "$DATA")"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
