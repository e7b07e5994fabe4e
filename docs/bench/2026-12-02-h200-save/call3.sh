# Call 2's saves with mapped writes (b9526f9): the saver sizes its temporary file and the bounce
# threads store the tensors through a mapping of it, past the inode lock that held buffered
# writes to one file at 2.7-4.9 GB/s; then the GPU tests of saving and loading.
# Before the call, here: cargo xtask dist target/gpu-run/d; pip wheel --no-deps ./hipfile-python
#   -w target/devwheel/new. carry: target/gpu-run, target/devwheel
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
python3 -m pip install -q --no-index --no-deps --target /tmp/ps target/devwheel/new/*.whl 2>&1 | tail -1
export PYTHONPATH=/tmp/ps
python3 xtask/gpu-bench/save_bench.py /root/save --size-gb 4.3 --rounds 3
echo "--- $SECONDS s"
cd hipfile-python/tests && python3 -m pytest -q -p no:cacheprovider test_safetensors_gpu.py test_saving.py 2>&1 | tail -3
echo "done in $SECONDS s"
