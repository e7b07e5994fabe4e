# The first load of a process against its later ones (issue 25: within 10%), two wheels
# alternating in fresh processes: a (stripes, 08c094d) and b (the same, staging pages faulted in
# with MADV_POPULATE_WRITE before the runtime registers them). Carry target/devwheel.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
for v in a b; do python3 -m pip install -q --no-index --no-deps --target /tmp/ps_$v target/devwheel/$v/*.whl; done
mkdir -p /root/ckpt
PYTHONPATH=/tmp/ps_a python3 -c "import sys; sys.path.insert(0, 'xtask/gpu-bench'); import load_bench as l; l.make_checkpoint('/root/ckpt/model.safetensors', 9.2, 32)"
F=/root/ckpt/model.safetensors
cat $F > /dev/null
for r in 1 2 3; do
  for v in a b; do
    cat $F > /dev/null
    echo "round $r $v: $(PYTHONPATH=/tmp/ps_$v timeout 60 python3 docs/bench/2026-12-01-h200-first-load/first_probe.py $F 2>&1 | tail -1)"
  done
done
