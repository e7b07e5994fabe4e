# As users run (HEAD, c3c6140's wheel = 14e265e's data path): several processes loading one cold
# checkpoint at once, and loads in a row after a cold start, beside safetensors
set -u
cd "$(dirname "$0")"
[ -d abnew ] || tar -xJf new.tar.xz
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export PYTHONPATH=$PWD/abnew/py
H=../xtask/gpu-bench/harness.py
C=/root/ckpt/model.safetensors; mkdir -p /root/ckpt
nvidia-smi --query-gpu=name --format=csv,noheader
timeout 250 python3 $H --record $OUT/procs.jsonl cache procs $C --n 1,2,4 --settings "hipfile;safetensors" 2>&1 | grep '^{' | cut -c1-400
timeout 200 python3 $H --record $OUT/loads.jsonl cache loads $C --settings "hipfile;safetensors" --rounds 1 --loads 3 2>&1 | grep '^{' | cut -c1-400
