# Trial 2 of the page-cache policy (issue 39), the same checkpoint: bypass beside keep, and keep
# with trial switches: HIPFILE_TRIAL_SEQ (POSIX_FADV_SEQUENTIAL), HIPFILE_TRIAL_WHOLE (a part the
# page cache holds none of read whole by one thread, buffered), HIPFILE_TRIAL_TOUCH (what came
# from the disk read a second time, to see whether the second load's 25-27 GB/s is the pages'
# first re-access); then the write and read back, three rounds.
# carry: target/gpu-run, target/devwheel, .whl
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
python3 -m pip install -q --no-index --no-deps --target /tmp/ps target/devwheel/new/*.whl 2>&1 | tail -2
export PYTHONPATH=/tmp/ps
C=xtask/gpu-bench/cache_bench.py
F=/root/ckpt/model.safetensors
K=hipfile,HIPFILE_PAGE_CACHE=keep
python3 $C loads $F --size-gb 8.6 --rounds 2 --loads 3 --settings "hipfile,HIPFILE_PAGE_CACHE=bypass;$K;$K,HIPFILE_TRIAL_SEQ=1;$K,HIPFILE_TRIAL_WHOLE=1;$K,HIPFILE_TRIAL_TOUCH=1;$K,HIPFILE_TRIAL_WHOLE=1,HIPFILE_TRIAL_TOUCH=1"
echo "--- $SECONDS s"
python3 $C write /root --size-gb 4 --rounds 3 --settings "hipfile,HIPFILE_PAGE_CACHE=bypass;hipfile,HIPFILE_PAGE_CACHE=keep"
echo "done in $SECONDS s"
