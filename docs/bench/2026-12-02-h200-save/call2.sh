# Call 1 again with durable saves as one durable call (each chunk's writeback started as it is
# written) instead of writes then one fsync; and how fast buffered pwrite fills the page cache
# from 1, 4 and 16 threads, into one file and into a file each (write_probe.py: Python threads,
# which release the GIL in pwrite), for what bounds a save to the page cache.
# Before the call, here: cargo xtask dist target/gpu-run/d; pip wheel --no-deps ./hipfile-python
#   -w target/devwheel/new. carry: target/gpu-run, target/devwheel
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
python3 -m pip install -q --no-index --no-deps --target /tmp/ps target/devwheel/new/*.whl 2>&1 | tail -1
export PYTHONPATH=/tmp/ps
python3 xtask/gpu-bench/write_probe.py /root/probe --threads 1,4,16 --per-mib 512
echo "--- $SECONDS s"
python3 xtask/gpu-bench/save_bench.py /root/save --size-gb 4.3 --rounds 2
echo "done in $SECONDS s"
