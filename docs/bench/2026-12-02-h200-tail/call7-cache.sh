# Does it matter how a file came into the page cache? The tool's one-caller calls and
# load_storage, on files as written and read back (call7-cache.py).
# carry: target/gpu-run
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
G=$PWD/target/gpu-run
B=$G/d/bin/hipfile
OURS=$G/d/lib/cufile/libcufile.so.0
F=/root/hb.bin
uname -r; cat /sys/kernel/mm/transparent_hugepage/enabled; findmnt -no FSTYPE,OPTIONS -T /root
timeout 120 $B bench --file $F --size 4G --mode read --runs 1 --json --no-verify > /dev/null
b() { timeout 60 "$B" bench --file $F --size 4G --json --no-verify --runs ${R:-4} "$@" 2>/dev/null |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["results"][0]["best_gbps"])'; }
drop() { python3 -c 'import os,sys; fd=os.open(sys.argv[1], os.O_RDONLY); os.posix_fadvise(fd,0,0,os.POSIX_FADV_DONTNEED); os.close(fd)' $F; dd if=$F of=/dev/null bs=64M 2>&1 | tail -1; }
t() { echo "$1: whole $(R=2 b --mode read) 17672Kx1 $(b --mode read --io-size 17672K) 70688Kx1 $(b --mode read --io-size 70688K)"; }
t "as written"; drop; t "read back"
LD_PRELOAD=$OURS timeout 300 python3 docs/bench/2026-12-02-h200-tail/call7-cache.py /root 2>&1 | grep -v Warning
echo "done in $SECONDS s"
