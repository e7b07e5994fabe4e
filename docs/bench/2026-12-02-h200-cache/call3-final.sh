# The page-cache policy (issue 39), the final build, everything beside its peer in one call:
# the 8.7 GB checkpoint loaded three times per fresh process after the cache was dropped, bypass
# (the old behaviour) beside the default (auto) and safetensors; N processes at once; a 4 GB
# write then read back; torch.cuda.gds save_storage then load_storage of what the save left,
# over our libcufile; fastsafetensors with GDS on (its check for /dev/nvidia-fs0 told yes) over
# ours, beside it as installed over NVIDIA's (which takes its own O_DIRECT reader here); auto
# with a 4 GiB limit (a file "larger than memory").
# Before the call, here: cargo xtask dist target/gpu-run/d; pip wheel --no-deps ./hipfile-python
#   -w target/devwheel/new. carry: target/gpu-run, target/devwheel, .whl
# In call3-final.txt the paths under the checkout are written relative to the repository root.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
python3 -m pip install -q --no-index --no-deps --target /tmp/ps target/devwheel/new/*.whl .whl/fastsafetensors*.whl 2>&1 | tail -2
export PYTHONPATH=/tmp/ps
C=xtask/gpu-bench/cache_bench.py
F=/root/ckpt/model.safetensors
OURS=$PWD/target/gpu-run/d/lib/cufile/libcufile.so.0
B=hipfile,HIPFILE_PAGE_CACHE=bypass
python3 $C loads $F --size-gb 8.6 --rounds 2 --loads 3 --settings "$B;hipfile;safetensors"
echo "--- $SECONDS s"
python3 $C procs $F --n 1,2,4 --settings "hipfile"
echo "--- $SECONDS s"
python3 $C write /root --size-gb 4 --rounds 1 --settings "$B;hipfile"
echo "--- $SECONDS s"
for s in bypass auto; do
  echo "torch.cuda.gds over ours, $s: $(LD_PRELOAD=$OURS HIPFILE_PAGE_CACHE=$s timeout 90 python3 xtask/gpu-bench/cufile_bench.py gds /root --size-gb 2 --runs 2 --as-saved 2>>$OUT/err.txt | tr -d '\n')"
done
echo "--- $SECONDS s"
python3 $C loads $F --rounds 1 --loads 2 --settings "fastsafetensors-gds-forced,LD_PRELOAD=$OURS;fastsafetensors-gds"
echo "--- $SECONDS s"
python3 $C loads $F --rounds 1 --loads 1 --settings "hipfile,HIPFILE_PAGE_CACHE_LIMIT_MIB=4096,HIPFILE_LOG=debug"
target/gpu-run/d/bin/hipfile check $F 2>&1 | grep -i "page cache"
echo "done in $SECONDS s"
