"""Both Python APIs under hostile callers (issue 40, item 5): random sizes, offsets, buffer kinds
and lengths, closed handles and threads, each example's calls run in a child process so that a
crash (SIGSEGV, SIGABRT) fails the test instead of killing pytest. Any exception is a fine
answer; a crash, a hang, or a byte written outside the buffer a call was given (every host
buffer is followed by a guard zone the child checks) is not. Hypothesis replays its database's
failing examples first, and the explicit examples below every run."""

import json
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

FILE_SIZE = 256 << 10
GUARD = 4096

CHILD = r"""
import ctypes, json, os, sys, threading
import numpy as np
import hipfile
from hipfile import Buffer, Driver, FileHandle

GUARD = %(guard)d
path, calls, threads = sys.argv[1], json.loads(sys.argv[2]), int(sys.argv[3])
guarded = []  # (ctypes buffer, length given, total)


def host(length):
    raw = ctypes.create_string_buffer(length + GUARD)
    ctypes.memset(ctypes.addressof(raw) + length, 0xAB, GUARD)
    guarded.append((raw, length))
    return raw


class Bare:  # an address and no length
    def __init__(self, ptr):
        self.ptr = ptr


def buffer_of(kind, length):
    if kind == "device":
        return hipfile.DeviceBuffer(length)
    raw = host(length)
    if kind == "upstream":
        return Buffer(ctypes.addressof(raw), length, 0)
    if kind == "bare":
        return Bare(ctypes.addressof(raw))
    if kind == "numpy":
        return np.frombuffer((ctypes.c_char * length).from_address(ctypes.addressof(raw)), dtype=np.uint8)
    if kind == "memoryview":
        return memoryview((ctypes.c_char * length).from_address(ctypes.addressof(raw))).cast("B")
    raise ValueError(kind)


def one(api, op, kind, length, size, file_offset, buffer_offset, close_first):
    buf = buffer_of(kind, length)
    if api == "upstream":
        with FileHandle(path, os.O_RDWR) as fh:
            if close_first:
                fh.close()
            if op in ("read", "write"):
                getattr(fh, op)(buf, size, file_offset, buffer_offset)
            else:
                getattr(fh, op + "_async")(buf, size, file_offset, buffer_offset, 0)
                hipfile._hipfile.stream_synchronize(0)
    else:
        f = hipfile.open(path, "r+")
        if close_first:
            f.close()
        try:
            if op in ("read", "write"):
                getattr(f, op)(buf, size, file_offset, buffer_offset)
            elif op == "pread":
                f.pread(buf, size, file_offset, buffer_offset).get()
            else:
                f.read_batch([(buf, size, file_offset, buffer_offset)])
        finally:
            f.close()


def run(part):
    for call in part:
        try:
            one(*call)
        except Exception:
            pass


with Driver():
    parts = [calls[i::threads] for i in range(threads)]
    workers = [threading.Thread(target=run, args=(p,)) for p in parts]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
for raw, length in guarded:
    tail = ctypes.string_at(ctypes.addressof(raw) + length, GUARD)
    if tail != b"\xab" * GUARD:
        print("a call wrote past its buffer of", length, "bytes")
        sys.exit(3)
print("ok")
""" % {"guard": GUARD}

sizes = st.one_of(st.integers(-(1 << 62), 1 << 62), st.integers(-8, FILE_SIZE * 2), st.just(1 << 20))
offsets = st.one_of(st.integers(-(1 << 62), 1 << 62), st.integers(-8, FILE_SIZE * 2))
upstream_call = st.tuples(
    st.just("upstream"), st.sampled_from(["read", "write", "read_async", "write_async"]),
    st.sampled_from(["device", "upstream", "bare"]), st.integers(1, 64 << 10), sizes, offsets, offsets, st.booleans(),
)
pythonic_call = st.tuples(
    st.just("pythonic"), st.sampled_from(["read", "write", "pread", "read_batch"]),
    st.sampled_from(["device", "numpy", "memoryview"]), st.integers(1, 64 << 10),
    st.one_of(st.none(), sizes), offsets, offsets, st.booleans(),
)


@pytest.fixture(scope="module")
def data_path(tmp_path_factory):
    path = tmp_path_factory.mktemp("hostile") / "data.bin"
    path.write_bytes(bytes(range(256)) * (FILE_SIZE // 256))
    return path


def run_child(path, calls, threads):
    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(path), json.dumps(calls), str(threads)],
        capture_output=True, text=True, timeout=120,
    )
    assert out.returncode == 0 and out.stdout.strip().endswith("ok"), (
        f"return code {out.returncode} for {calls} on {threads} threads\n{out.stdout}\n{out.stderr[-2000:]}"
    )


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(calls=st.lists(st.one_of(upstream_call, pythonic_call), min_size=1, max_size=12), threads=st.sampled_from([1, 4]))
@example(calls=[("upstream", "read", "upstream", 4096, 1 << 20, 0, 0, False)], threads=1)  # the crash
@example(calls=[("upstream", "read", "bare", 4096, 4096, 0, 0, False)], threads=1)
@example(calls=[("pythonic", "read", "numpy", 4096, 8192, 0, 0, False)], threads=1)
@example(calls=[("upstream", "read_async", "upstream", 16, 64 << 10, 0, 8, False)], threads=1)
def test_no_call_crashes_or_writes_past_its_buffer(data_path, calls, threads):
    run_child(data_path, [list(c) for c in calls], threads)
