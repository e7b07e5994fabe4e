#!/usr/bin/env python3
"""The GPU machine's peer comparisons, one command with a subcommand each (`harness.py SUBCOMMAND
--help` says what one measures, its peer and its options). The library's own paths are
`hipfile bench`'s; here hipfile-rs is measured beside what users run instead, in one process or
in paired rounds, on the same files.

Every subcommand prints what it measured (JSON, or lines of text and JSON in its record) and, where
a record is kept (--record, by default $OUT/harness.jsonl when $OUT is set), appends each JSON
object to it with the command and the time. What they share (the page cache dropped and warmed,
the files and checkpoints made, best-of-N timing, the order of paired rounds, the record) is
benchlib.py; each module holds its subcommands' measurements:

  peers_bench.py     whole, compare, random, cold, ceiling, devices   (KvikIO, naive reads, the disk)
  python_bench.py    python (futures), small                          (KvikIO from Python)
  load_bench.py      load (checkpoint_loaders.py: the loaders)        (safetensors, KvikIO, fastsafetensors)
  cache_bench.py     cache loads|procs|write                          (safetensors, fastsafetensors)
  save_bench.py      save, save-steps                                 (safetensors, torch.save, dd)
  dcp_bench.py       dcp, dcp-files                                   (PyTorch's FileSystemWriter/Reader)
  ranks_bench.py     group, ranks                                     (each rank alone)
  hf_bench.py        transformers                                     (transformers' from_pretrained)
  cufile_bench.py    cufile kvikio|batch|gds|calls|ab|elsewhere       (cuFile's users over our libcufile)
  cufile_clients.py  clients, gds-examples                            (InstantTensor, PyTorch's examples)
  remote_bench.py    remote                                           (KvikIO RemoteFile, runai, boto3, curl)
  ab_bench.py        ab                                               (two builds of hipfile-rs, old/new)

GPU packages (torch, cupy, kvikio, hipfile) are imported only by the subcommand that runs, so
`--help` and `--check` need none of them.
"""

import argparse
import glob
import os
import sys

import ab_bench
import benchlib
import cache_bench
import cufile_bench
import cufile_clients
import dcp_bench
import hf_bench
import load_bench
import peers_bench
import python_bench
import ranks_bench
import remote_bench
import save_bench

MODULES = [peers_bench, python_bench, load_bench, cache_bench, save_bench, dcp_bench, ranks_bench, hf_bench,
           cufile_bench, cufile_clients, remote_bench, ab_bench]
HELPERS = {"benchlib", "checkpoint_loaders", "harness"}  # imported by the modules above, or this file


def parser():
    p = argparse.ArgumentParser(prog="harness.py", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    out = os.environ.get("OUT")
    p.add_argument("--record", default=os.path.join(out, "harness.jsonl") if out else "",
                   help="append every JSON object printed to this file ('' for none; default: $OUT/harness.jsonl "
                   "when $OUT is set)")
    p.add_argument("--check", action="store_true",
                   help="build every subcommand's parser and help, and check that every Python file here is one "
                   "of the harness's modules and no file here is over 600 lines; measure nothing (CI runs this)")
    sub = p.add_subparsers(dest="subcommand", metavar="SUBCOMMAND")
    for module in MODULES:
        module.register(sub)
    return p, sub


MOST_LINES = 600  # the longest a file of this directory may be


def check(sub):
    """What CI checks without a GPU: every subcommand's help renders, every .py file of this
    directory is a module the harness imports, and no file here is over MOST_LINES lines."""
    for p in sub.choices.values():
        p.format_help()
    here = {os.path.splitext(os.path.basename(f))[0] for f in glob.glob(os.path.join(benchlib.HERE, "*.py"))}
    used = {m.__name__ for m in MODULES} | HELPERS
    if here != used:
        raise SystemExit(f"harness.py --check: Python files here that the harness does not use: {sorted(here - used)}; "
                         f"modules it names that are missing: {sorted(used - here)}")
    long = []
    for path in sorted(glob.glob(os.path.join(benchlib.HERE, "*"))):
        if os.path.isfile(path):
            with open(path, errors="replace") as f:
                n = sum(1 for _ in f)
            if n > MOST_LINES:
                long.append(f"{os.path.basename(path)} ({n})")
    if long:
        raise SystemExit(f"harness.py --check: over {MOST_LINES} lines: {', '.join(long)}")
    print(f"harness.py: {len(set(map(id, sub.choices.values())))} subcommands, {len(here)} Python files, all used")


def main():
    p, sub = parser()
    a = p.parse_args()
    if a.check:
        return check(sub)
    if not a.subcommand:
        p.print_help()
        return 2
    benchlib.start_record(a.record, " ".join(sys.argv[1:]))
    return a.run(a)


if __name__ == "__main__":
    sys.exit(main())
