"""A property test: random reads and writes through the Pythonic API, into device and host
buffers, against a model of the file (a bytearray)."""

import numpy as np
import pytest

import hipfile

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import example, given, settings, strategies as st  # noqa: E402

FILE_SIZE = 1 << 16
BUF_SIZE = 1 << 15

op = st.tuples(
    st.sampled_from(["read", "write"]),
    st.sampled_from(["device", "host"]),
    st.integers(0, BUF_SIZE),  # size
    st.integers(0, FILE_SIZE + 4096),  # file offset (past the end too)
    st.integers(0, BUF_SIZE),  # buffer offset
)


@settings(max_examples=60, deadline=None)
@given(st.lists(op, min_size=1, max_size=12), st.integers(0, 2**32 - 1))
@example([("write", "device", 0, FILE_SIZE + 1, 0)], 0)  # nothing written past the end
@example([("read", "device", 0, 0, BUF_SIZE)], 0)  # nothing read at the buffer's very end
@example([("read", "host", 0, 0, BUF_SIZE), ("write", "host", 0, FILE_SIZE + 1, BUF_SIZE)], 0)
def test_reads_and_writes_match_a_model(tmp_path_factory, ops, seed):
    rng = np.random.default_rng(seed)
    path = tmp_path_factory.mktemp("model") / "f.bin"
    model = bytearray(rng.integers(0, 256, FILE_SIZE, dtype=np.uint8).tobytes())
    path.write_bytes(model)
    buffers = {"device": hipfile.DeviceBuffer(BUF_SIZE), "host": np.zeros(BUF_SIZE, np.uint8)}
    shadow = {"device": bytearray(BUF_SIZE), "host": bytearray(BUF_SIZE)}
    buffers["device"].copy_from(bytes(BUF_SIZE))

    with hipfile.open(path, "r+") as f:
        for kind, where, size, file_offset, buf_offset in ops:
            buf = buffers[where]
            if buf_offset + size > BUF_SIZE:
                with pytest.raises(ValueError):
                    getattr(f, kind)(buf, size, file_offset, buf_offset)
                continue
            if kind == "read":
                expect = model[file_offset : file_offset + size]
                assert f.read(buf, size, file_offset, buf_offset) == len(expect)
                shadow[where][buf_offset : buf_offset + len(expect)] = expect
            else:
                chunk = bytes(shadow[where][buf_offset : buf_offset + size])
                assert f.write(buf, size, file_offset, buf_offset) == size
                if file_offset > len(model) and size > 0:  # nothing written: no hole either
                    model.extend(bytes(file_offset - len(model)))
                model[file_offset : file_offset + size] = chunk
            held = buffers["device"].to_bytes() if where == "device" else buffers["host"].tobytes()
            assert held == bytes(shadow[where])
    assert path.read_bytes() == bytes(model)
