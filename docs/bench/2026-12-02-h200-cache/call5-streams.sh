# Trial (issue 39): a cold read that keeps the page cache in several streams, each a run of the
# file read in order through its own descriptor (its own readahead), the runs' stripes taken in
# turn (HIPFILE_TRIAL_STREAMS=N; 1 is the build of call 4). The 8.7 GB checkpoint loaded cold
# then warm by a fresh process, bypass (the old behaviour) and 1, 2, 4, 8 streams alternated over
# four rounds; fastsafetensors forced onto GDS over ours (4 streams) beside it as installed.
# The trial build (HIPFILE_TRIAL_STREAMS, on top of 9c978e5) was not kept: no measurable gain.
# In call5-streams.txt the paths under the checkout are written relative to the repository root.
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
python3 $C loads $F --size-gb 8.6 --rounds 1 --loads 1 --settings "$B"
echo "--- $SECONDS s"
python3 $C loads $F --rounds 4 --loads 2 --settings "$B;hipfile;hipfile,HIPFILE_TRIAL_STREAMS=2;hipfile,HIPFILE_TRIAL_STREAMS=4;hipfile,HIPFILE_TRIAL_STREAMS=8"
echo "--- $SECONDS s"
python3 $C loads $F --rounds 2 --loads 1 --settings "fastsafetensors-gds-forced,LD_PRELOAD=$OURS,HIPFILE_TRIAL_STREAMS=4;fastsafetensors-gds"
echo "done in $SECONDS s"
