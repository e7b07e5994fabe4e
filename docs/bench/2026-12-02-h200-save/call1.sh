# Saving (issue 42, item 1): hipfile.safetensors.save_file from GPU memory beside
# safetensors.torch.save_file and torch.save, to the page cache and durable, and dd's O_DIRECT
# write of the same size (the disk), 4.3 GB of bf16/fp32 tensors, two rounds in opposite
# orders (save_bench.py); then the GPU tests of saving (byte for byte against safetensors.torch,
# every dtype) and of the loader.
# Before the call, here: cargo xtask dist target/gpu-run/d; pip wheel --no-deps ./hipfile-python
#   -w target/devwheel/new. carry: target/gpu-run, target/devwheel
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
python3 -m pip install -q --no-index --no-deps --target /tmp/ps target/devwheel/new/*.whl 2>&1 | tail -1
export PYTHONPATH=/tmp/ps
python3 -c "import torch, safetensors; print('torch', torch.__version__, 'safetensors', safetensors.__version__)"
python3 xtask/gpu-bench/save_bench.py /root/save --size-gb 4.3 --rounds 2
echo "--- $SECONDS s"
cd hipfile-python/tests && python3 -m pytest -q -p no:cacheprovider test_safetensors_gpu.py test_saving.py 2>&1 | tail -5
echo "done in $SECONDS s"
