# issue 60, second call: durable dcp.save old/new beside FileSystemWriter; save_file beside the
# library's durable write of a fresh file (bench --runs 1: one run, into a new file) and of an
# overwrite (bench --runs 3, best)
set -u
cd "$(dirname "$0")"; mkdir -p old new; tar -xJf py-old.tar.xz -C old; tar -xJf py-new.tar.xz -C new
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
D=/root/sv; mkdir -p $D
bw() { sync; echo 3 > /proc/sys/vm/drop_caches; rm -f $D/b.dat.out; ./hipfile-$1 bench --mode write --size 4G --file $D/b.dat --runs $2 --no-verify --json 2>/dev/null | python3 -c "import json,sys; r=json.load(sys.stdin)['results'][0]; print(json.dumps({'way':'bench_write_runs$2','build':'$1','best':r['best_gbps'],'mean':r.get('mean_gbps')}))"; }
py() { PYTHONPATH=$PWD/$1/py timeout 120 python3 saves.py $2 $D | python3 -c "import json,sys; d=json.loads(sys.stdin.read().strip().splitlines()[-1]); d['build']='$1'; print(json.dumps(d))"; }
for r in 1 2; do
  if [ $r = 1 ]; then A=old; B=new; else A=new; B=old; fi
  echo "== round $r"
  py $A dcp; py $B dcp; py new fsw
  bw new 1; py $A save_file; py $B save_file; bw old 1; bw new 3
done 2>&1 | tee $OUT/saves2.jsonl
rm -f $D/b.dat*
