#!/usr/bin/env bash
# A short profiled run of the cold and random comparisons beside KvikIO (same call, same file).
set -euo pipefail
. "$(dirname "$0")/env.sh"
python3 -m pip install -q --no-index --no-deps --target .pysite .whl/*.whl
export PYTHONPATH=$PWD/.pysite
python3 $BASELINE --file "$DATA" --size-gib 4 --threads 4,16 --runs 2 --cold --random 128 --json "$OUT/peers.json" | grep -E "cold|randread"
H="$B/hipfile bench --file $DATA --size 4G --profile"
$H --mode read --cold --runs 2
$H --mode randread --io-size 1M --count 128 --threads 16 --runs 3
$H --mode read --runs 3
