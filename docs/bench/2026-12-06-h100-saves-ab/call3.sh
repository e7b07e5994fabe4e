# issue 60 on an H200 (where its 0.6x was seen): old (0bc54c1) and new (14e265e) alternated,
# save_file and dcp.save durable beside the library's durable write (one run and best of 3),
# safetensors + fsync, FileSystemWriter and dd, each in a fresh process
set -u
cd "$(dirname "$0")"
for b in old new; do rm -rf ab$b; tar -xJf $b.tar.xz; done
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
D=/root/sv; mkdir -p $D
nvidia-smi --query-gpu=name --format=csv,noheader; df -h /root | tail -1
bw() { sync; echo 3 > /proc/sys/vm/drop_caches; rm -f $D/b.dat.out; ./ab$1/hipfile bench --mode write --size 4G --file $D/b.dat --runs $2 --no-verify --json 2>/dev/null | python3 -c "import json,sys; r=json.load(sys.stdin)['results'][0]; print(json.dumps({'way':'bench_write_runs$2','build':'$1','best':r['best_gbps'],'mean':r.get('mean_gbps')}))"; }
py() { PYTHONPATH=$PWD/ab$1/py timeout 120 python3 saves.py $2 $D | python3 -c "import json,sys; d=json.loads(sys.stdin.read().strip().splitlines()[-1]); d['build']='$1'; print(json.dumps(d))"; }
ddw() { sync; echo 3 > /proc/sys/vm/drop_caches; s=$(date +%s.%N); dd if=/dev/zero of=$D/dd bs=64M count=64 oflag=direct conv=fsync 2>/dev/null; e=$(date +%s.%N); python3 -c "print('{\"way\":\"dd_odirect\",\"gbps\":%.3f}' % (4294967296/($e-$s)/1e9))"; rm -f $D/dd; }
for r in 1 2; do
  if [ $r = 1 ]; then A=old; B=new; else A=new; B=old; fi
  echo "== round $r"
  bw new 1; py $A save_file; py $B save_file; bw old 1; bw new 3; ddw
  py new st_fsync
  py $A dcp; py $B dcp; py new fsw
done 2>&1 | tee $OUT/saves_h200.jsonl
rm -f $D/b.dat*
