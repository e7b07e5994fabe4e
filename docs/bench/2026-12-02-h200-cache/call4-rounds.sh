# The page-cache policy's cold load settled (issue 39): the build of the review (9c978e5), the
# 8.7 GB checkpoint loaded cold then warm by a fresh process, bypass (the old behaviour) and
# auto alternated over four rounds, beside safetensors and auto with 16 MiB stripes; the disk
# read raw (dd, direct and buffered) for its ceiling; threads 8 and 32 under auto; fastsafetensors
# forced onto GDS over ours beside it as installed, alternated over three rounds; a CuPy array
# on managed memory read and written (issue 40, item 6).
# In call4-rounds.txt the paths under the checkout are written relative to the repository root.
# Before the call, here: cargo xtask dist target/gpu-run/d; pip wheel --no-deps ./hipfile-python
#   -w target/devwheel/new. carry: target/gpu-run, target/devwheel, .whl
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
python3 -m pip install -q --no-index --no-deps --target /tmp/ps target/devwheel/new/*.whl .whl/fastsafetensors*.whl 2>&1 | tail -2
export PYTHONPATH=/tmp/ps
C=xtask/gpu-bench/cache_bench.py
F=/root/ckpt/model.safetensors
OURS=$PWD/target/gpu-run/d/lib/cufile/libcufile.so.0
B=hipfile,HIPFILE_PAGE_CACHE=bypass
uname -r; cat /sys/block/vda/queue/read_ahead_kb /sys/block/vda/queue/max_sectors_kb 2>/dev/null | tr '\n' ' '; echo "(read_ahead_kb max_sectors_kb)"
python3 $C loads $F --size-gb 8.6 --rounds 1 --loads 1 --settings "safetensors"
for flag in iflag=direct ""; do
  sync; echo 3 > /proc/sys/vm/drop_caches
  echo "dd bs=16M $flag: $(dd if=$F of=/dev/null bs=16M $flag 2>&1 | tail -1)"
done
echo "--- $SECONDS s"
python3 $C loads $F --rounds 4 --loads 2 --settings "$B;hipfile;hipfile,HIPFILE_BOUNCE_CHUNK_KIB=16384;safetensors"
echo "--- $SECONDS s"
python3 $C loads $F --rounds 2 --loads 1 --settings "$B;hipfile,HIPFILE_BOUNCE_THREADS=8;hipfile,HIPFILE_BOUNCE_THREADS=32"
echo "--- $SECONDS s"
python3 $C loads $F --rounds 3 --loads 2 --settings "fastsafetensors-gds-forced,LD_PRELOAD=$OURS;fastsafetensors-gds"
echo "--- $SECONDS s"
python3 - <<'PY'
import os, cupy, hipfile
n = 8 << 20
data = os.urandom(n)
with open("/root/managed.bin", "wb") as f:
    f.write(data)
arr = cupy.ndarray((n,), dtype=cupy.uint8, memptr=cupy.cuda.malloc_managed(n))
out = {}
with hipfile.open("/root/managed.bin", "r+") as f:
    out["read"] = f.read(arr)
    out["equal"] = bytes(arr.get()) == data
    arr[:] = 7
    out["write"] = f.write(arr, file_offset=n)
    try:
        f.read(arr, size=n + 4096)
        out["past the end"] = "served (wrong)"
    except Exception as e:
        out["past the end"] = repr(e)
with open("/root/managed.bin", "rb") as f:
    f.seek(n)
    out["written equal"] = f.read() == bytes([7]) * n
print("managed memory (CuPy):", out)
PY
echo "done in $SECONDS s"
