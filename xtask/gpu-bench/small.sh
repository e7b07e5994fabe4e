#!/usr/bin/env bash
# Issue 44's shapes on the GPU machine, an old and a new build alternated in one call: the floor
# of a small read done by hand (small_probe.c); 4 and 64 KiB reads from 1 and 16 threads beside
# KvikIO (small_bench.py); where the new build's threads spend a small read's time (--profile);
# CPU seconds for a whole-file read and for 16 callers; the 16-caller rounds alternated with
# KvikIO (rounds.py); Python futures into slices beside KvikIO (python_bench.py).
#   OLD=BIN NEW=BIN WHEEL_OLD=DIR WHEEL_NEW=DIR xtask/gpu-bench/small.sh   (KvikIO's wheels in .whl)
# Everything lands in $OUT (default /tmp/small-out); summaries are printed.
set -u
G=xtask/gpu-bench
F=/root/small.bin
OUT=${OUT:-/tmp/small-out}
mkdir -p "$OUT"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
python3 -m pip install -q --no-index --no-deps --target /tmp/kv .whl/kvikio*.whl .whl/libkvikio*.whl .whl/rapids_logger*.whl 2>&1 | tail -1
for b in old new; do
  w=WHEEL_${b^^}; python3 -m pip install -q --no-index --no-deps --target /tmp/hf_$b ${!w}/*.whl 2>&1 | tail -1
done
bin() { if [ "$1" = old ]; then echo "$OLD"; else echo "$NEW"; fi; }
with() { local b=$1; shift; PYTHONPATH=/tmp/hf_$b:/tmp/kv "$@"; }
$NEW bench --file $F --size 4G --mode read --runs 1 --no-verify >/dev/null
echo "== floor (small_probe.c)"
gcc -O2 -I/usr/local/cuda/include $G/small_probe.c -L/usr/local/cuda/lib64 -lcudart -lpthread -o /tmp/small_probe \
  && /tmp/small_probe $F | tee "$OUT/probe.txt"
echo "== small reads beside KvikIO"
for r in 1 2; do for b in old new; do
  echo "-- $b"; with $b timeout 150 python3 $G/small_bench.py --hipfile $(bin $b) --file $F --rounds 1 --kvikio \
    > "$OUT/small-$b-$r.txt" 2>&1; grep '^round' "$OUT/small-$b-$r.txt" || tail -3 "$OUT/small-$b-$r.txt"
done; done
echo "== profiles and CPU (4 GiB file)"
for b in old new; do for shape in "4K 1 20000" "4K 16 64000" "64K 16 32000" "1M 16 128" "4G 1 0"; do set -- $shape
  if [ "$1" = 4G ]; then m=(--mode read); else m=(--mode randread --io-size $1 --count $3); fi
  /usr/bin/time -f "cpu %U user %S sys %e wall" $(bin $b) bench --file $F --size 4G "${m[@]}" --threads $2 --runs 3 \
    --no-verify --profile > "$OUT/profile-$b-$1-$2.txt" 2>&1
  echo "$b $1 x $2: $(grep -E '^(rand)?read ' "$OUT/profile-$b-$1-$2.txt" | tr -s ' ') | $(grep '^cpu' "$OUT/profile-$b-$1-$2.txt")"
done; done
grep -h "bounce:" "$OUT"/profile-new-4K-1.txt "$OUT"/profile-new-4K-16.txt | cut -c1-400
echo "== 16 callers x 128 random 1 MiB, rounds beside KvikIO"
for cfg in old new new-t1; do
  b=${cfg%-t1}; env=(); [ "$cfg" = new-t1 ] && env=(HIPFILE_BOUNCE_THREADS=1)
  with $b env "${env[@]}" timeout 120 python3 $G/rounds.py --hipfile $(bin $b) --file $F --mode randread --rounds 5 \
    --profile --json "$OUT/rounds-$cfg.json" > "$OUT/rounds-$cfg.txt" 2>&1
  echo "$cfg: $(cut -c1-80 "$OUT/rounds-$cfg.txt" | tr '\n' ';')"
done
echo "== Python: futures into slices, per-call costs"
for b in old new; do
  with $b timeout 100 python3 $G/python_bench.py $F --size-gib 4 --runs 3 --kvikio > "$OUT/python-$b.json" 2>&1
  with $b timeout 60 python3 $G/python_bench.py /root/pc.bin --per-call $(bin $b) > "$OUT/percall-$b.json" 2>&1
  echo "-- $b"; grep -h -E 'futures|slice|torch us|cupy us|rust us|device us' "$OUT/python-$b.json" "$OUT/percall-$b.json"
done
