#!/usr/bin/env python3
"""Prints hipfile bench beside the peer baseline (KvikIO), from the JSON files run.sh wrote,
with the ratios the bounce issue asks for."""
import json
import sys
from pathlib import Path

out = Path(sys.argv[1])
peers = json.loads((out / "peers.json").read_text())


def ours(name, mode):
    results = json.loads((out / name).read_text())["results"]
    (r,) = [r for r in results if r["mode"] == mode]
    assert r["verified"] is not False, f"{name}: verification failed"
    return r["best_gbps"]


def peer(key):
    return peers[key]


platform = json.loads((out / "ours-read.json").read_text())["platform"]
warm_default = ours("ours-read.json", "read")
warm_best = max([warm_default] + [ours(f"ours-read-t{t}.json", "read") for t in (1, 4, 16)])
kv_warm = {t: peer(f"read warm kvikio-compat t={t}") for t in (1, 4, 16)}
kv_cold = max(peer(f"read cold kvikio-compat t={t}") for t in (1, 4, 16))
cold = ours("ours-read-cold.json", "read")
raw = peer("raw disk O_DIRECT 8x4MiB cold")
write = ours("ours-write.json", "write")
kv_write = max(peer(f"write+fdatasync kvikio-compat t={t}") for t in (1, 4, 16))
rand = ours("ours-randread.json", "randread")
kv_rand = max(peer(f"randread 1MiB x128 warm kvikio-compat t={t}") for t in (1, 4, 16))

rows = [
    ("warm read 4 GiB, hipfile default", warm_default, "KvikIO default (t=1)", kv_warm[1], 5.0),
    ("warm read 4 GiB, hipfile best of 1/4/16/default", warm_best, "KvikIO best of 1/4/16", max(kv_warm.values()), 1.1),
    ("cold read 4 GiB", cold, "KvikIO best cold", kv_cold, 1.0),
    ("cold read 4 GiB", cold, "raw O_DIRECT disk", raw, 0.95),
    ("write 4 GiB + fdatasync", write, "KvikIO write+fdatasync best", kv_write, 1.2),
    ("random 1 MiB reads x128, 16 threads", rand, "KvikIO best of 1/4/16", kv_rand, 1.0),
]
print(f"\nplatform: {platform}\n")
print(f"{'measurement':<48} {'hipfile':>8} {'peer':>8}  {'ratio':>6}  {'target':>6}  peer")
for name, mine, peer_name, theirs, target in rows:
    ratio = mine / theirs if theirs else float("inf")
    mark = "ok" if ratio >= target else "MISSED"
    print(f"{name:<48} {mine:>8.2f} {theirs:>8.2f}  {ratio:>5.2f}x  {target:>5.2f}x  {peer_name} [{mark}]")
print(f"\nwarm read >= 50 GB/s: {warm_best:.2f} [{'ok' if warm_best >= 50 else 'MISSED'}]")
