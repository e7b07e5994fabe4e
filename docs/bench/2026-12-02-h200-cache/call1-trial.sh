# Trial of the page-cache policy (issue 39): a 8.6 GB checkpoint loaded three times per fresh
# process after the cache was dropped, under bypass (the old behaviour), keep, and keep with
# read-ahead hints of 32 and 128 MiB (HIPFILE_TRIAL_AHEAD_MIB), beside safetensors; then N
# processes at once under keep, and a 4 GB write then read back under bypass and keep.
# Before the call, here: cargo xtask dist target/gpu-run/d; pip wheel --no-deps ./hipfile-python
#   -w target/devwheel/new. carry: target/gpu-run, target/devwheel, .whl
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
python3 -m pip install -q --no-index --no-deps --target /tmp/ps target/devwheel/new/*.whl .whl/fastsafetensors*.whl 2>&1 | tail -2
export PYTHONPATH=/tmp/ps
C=xtask/gpu-bench/cache_bench.py
F=/root/ckpt/model.safetensors
cat /sys/block/vda/queue/read_ahead_kb /sys/block/vda/queue/max_sectors_kb /sys/block/vda/queue/nr_requests 2>/dev/null | tr '\n' ' '; echo "(read_ahead_kb max_sectors_kb nr_requests)"
grep MemAvailable /proc/meminfo
python3 $C loads $F --size-gb 8.6 --rounds 2 --loads 3 --settings "hipfile,HIPFILE_PAGE_CACHE=bypass;hipfile,HIPFILE_PAGE_CACHE=keep;hipfile,HIPFILE_PAGE_CACHE=keep,HIPFILE_TRIAL_AHEAD_MIB=32;hipfile,HIPFILE_PAGE_CACHE=keep,HIPFILE_TRIAL_AHEAD_MIB=128;safetensors"
echo "--- $SECONDS s"
python3 $C procs $F --n 1,2,4 --settings "hipfile,HIPFILE_PAGE_CACHE=keep"
echo "--- $SECONDS s"
python3 $C write /root --size-gb 4 --rounds 2 --settings "hipfile,HIPFILE_PAGE_CACHE=bypass;hipfile,HIPFILE_PAGE_CACHE=keep"
echo "done in $SECONDS s"
