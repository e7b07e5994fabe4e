#!/usr/bin/env bash
# Issue 44's figures on the GPU machine, builds alternated in one call: small reads and one
# caller's sequential calls from the Rust API (best and mean GB/s, CPU s/GB), the 16-caller
# rounds beside KvikIO (harness.py random), Python futures into slices beside KvikIO in paired
# rounds (harness.py python --futures-only), and the per-call costs from Python (--per-call).
#   BUILDS="old new" A=DIR WHEEL_OLD=DIR WHEEL_NEW=DIR xtask/gpu-bench/small.sh
# A holds one stripped `hipfile` binary per build, named as in BUILDS; the wheels are the first
# and last builds' Python packages; KvikIO's wheels are in .whl. Results land in $OUT.
set -u
G=xtask/gpu-bench
F=/root/small.bin
OUT=${OUT:-/tmp/small-out}
A=${A:-target/gpu-run/ab}
BUILDS=${BUILDS:-old new}
mkdir -p "$OUT"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
python3 -m pip install -q --no-index --no-deps --target /tmp/kv .whl/kvikio*.whl .whl/libkvikio*.whl .whl/rapids_logger*.whl 2>&1 | tail -1
for w in old new; do
  v=WHEEL_${w^^}; python3 -m pip install -q --no-index --no-deps --target /tmp/hf_$w ${!v}/*.whl 2>&1 | tail -1
done
py() { local w=$1; shift; PYTHONPATH=/tmp/hf_$w:/tmp/kv timeout 120 python3 "$@"; }
last=${BUILDS##* }
$A/$last bench --file $F --size 4G --mode read --runs 1 --no-verify >/dev/null
summary='import json,sys; r=json.load(sys.stdin)["results"][0]; print(r["best_gbps"], r["mean_gbps"], r.get("cpu_s_per_gb", "-"))'
echo "== Rust API: best GB/s, mean GB/s, CPU s/GB"
for r in 1 2; do for b in $BUILDS; do
  for s in "randread 4K 1 20000" "randread 4K 16 64000" "randread 64K 16 32000" "randread 1M 16 128" "read 4M 1" "read 16M 1" \
           "read 64M 1" "read 4M 4" "read 4G 1"; do set -- $s
    extra=(); [ "$1" = randread ] && extra=(--count $4); [ "$2" = 4G ] || extra+=(--io-size $2)
    echo "$r $b $1 $2 x $3: $($A/$b bench --file $F --size 4G --mode $1 --threads $3 "${extra[@]}" --runs 3 --no-verify --json | python3 -c "$summary")"
  done
done; done | tee "$OUT/rust.txt"
echo "== 16 callers x 128 random 1 MiB, rounds beside KvikIO"
for b in $BUILDS; do
  py new $G/harness.py random --hipfile $A/$b --file $F --rounds 5 --json "$OUT/rounds-$b.json" > "$OUT/rounds-$b.txt" 2>&1
  echo "$b: $(grep -o 'hipfile [0-9.]*  KvikIO best [0-9.]*  ratio [0-9.]*x' "$OUT/rounds-$b.txt" | tr '\n' ';') $(tail -1 "$OUT/rounds-$b.txt")"
done
echo "== Python futures, paired rounds beside KvikIO (16 threads)"
futures='import json,sys; d=json.load(open(sys.argv[1])); p="hipfile 128 random 1MiB futures"; k=d["kvikio t=16 128 random 1MiB futures"]; print(" | ".join("%s %.2f (%.2fx)" % (n[len(p):] or " one array", v, v / k) for n, v in d.items() if n.startswith(p)), "| kvikio", k)'
for r in 1 2 3 4 5; do for w in old new; do
  py $w $G/harness.py python $F --size-gib 4 --runs 3 --kvikio --futures-only > "$OUT/futures-$w-$r.json" 2>&1
  echo "$r $w: $(python3 -c "$futures" "$OUT/futures-$w-$r.json" 2>&1 | tail -1)"
done; done
echo "== Python per-call costs (us)"
for w in old new; do
  b=old; [ $w = new ] && b=$last
  py $w $G/harness.py python /root/pc.bin --per-call $A/$b > "$OUT/percall-$w.json" 2>&1
  echo "-- $w"; grep -E '(us|us/call)": ' "$OUT/percall-$w.json" | tr -d '\n'; echo
done
