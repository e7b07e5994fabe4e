# Copies queued one at a time at a read's pace against queued together, with and without host
# threads copying memory meanwhile (xtask/gpu-bench/copy_pace.c), from cudaHostAlloc'd memory
# and from huge pages registered with cudaHostRegister (as the bounce path stages).
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
gcc -O2 -I/usr/local/cuda/include xtask/gpu-bench/copy_pace.c -L/usr/local/cuda/lib64 -lcudart -lpthread -o /tmp/copy_pace || exit 1
for reg in 0 1; do echo "--- registered=$reg"; timeout 120 /tmp/copy_pace 300 $reg; done
echo "done in $SECONDS s"
