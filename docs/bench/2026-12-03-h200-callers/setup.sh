# Sourced by this directory's call scripts on the GPU machine, from the project root, with the
# call's `hipfile` binary as $1: CUDA's libraries on the loader's path, KvikIO's wheels (.whl)
# installed under /tmp/kv, and the 4 GiB data file made where missing and read once (warm).
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
ls /tmp/kv >/dev/null 2>&1 || python3 -m pip install -q --no-index --no-deps --target /tmp/kv .whl/kvikio*.whl .whl/libkvikio*.whl .whl/rapids_logger*.whl 2>&1 | tail -1
"$1" bench --file /root/small.bin --size 4G --mode read --runs 1 --no-verify > /dev/null
