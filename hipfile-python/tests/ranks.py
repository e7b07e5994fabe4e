"""Processes of one ``torch.distributed`` group on this machine, for the tests that need several
ranks (gloo over loopback): ``run(script, world, *args)``."""

import os
import socket
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run(script: str, world: int, *args, env=None, check: bool = True, timeout: float = 240):
    """``script`` (in this directory) with ``args`` in ``world`` processes of one group; their
    ``(returncode, output)``. ``check``: fail unless every one ended with 0. A group still running
    after ``timeout`` seconds is killed and the test fails (a hang is a failure)."""
    port = free_port()
    procs = []
    for rank in range(world):
        rank_env = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank),
                        WORLD_SIZE=str(world), LOCAL_RANK=str(rank), PYTHONWARNINGS="ignore", **(env or {}))
        procs.append(subprocess.Popen([sys.executable, os.path.join(HERE, script), *map(str, args)],
                                      env=rank_env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT))
    results = []
    try:
        for p in procs:
            out = p.communicate(timeout=timeout)[0].decode(errors="replace")
            results.append((p.returncode, out))
    except subprocess.TimeoutExpired:
        for p in procs:
            p.kill()
        raise AssertionError(f"{script} {args}: the group was still running after {timeout} s (a hang)")
    if check:
        assert all(code == 0 for code, _ in results), "\n".join(out for _, out in results)
    return results
