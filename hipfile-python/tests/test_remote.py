"""Objects by URL (docs/remote.md) against a real S3 server (SeaweedFS) and a plain HTTP server:
every entry point that takes a path takes a URL, bitwise; the node cache's rules; errors that
name the URL."""

import errno
import os
import uuid

import numpy as np
import pytest

import hipfile
from hipfile import safetensors as hst

st_numpy = pytest.importorskip("safetensors.numpy")


def tensors(seed=1, layers=4):
    rng = np.random.default_rng(seed)
    out = {f"layers.{i}.w": rng.standard_normal((64 + i, 129), dtype=np.float32) for i in range(layers)}
    out["bias"] = rng.integers(-9, 9, (1001,), dtype=np.int16)
    out["scalar"] = np.array(2.5, dtype=np.float64)
    return out


def key(name):
    return f"{uuid.uuid4().hex[:8]}/{name}"


def same(a, b):
    assert sorted(a) == sorted(b)
    for k in a:
        assert a[k].dtype == b[k].dtype and a[k].shape == b[k].shape and a[k].tobytes() == b[k].tobytes(), k


def test_open_reads_an_object_into_any_buffer(s3_store, data):
    k = key("data.bin")
    s3_store.put("hipfile", k, data.tobytes())
    url = f"s3://hipfile/{k}"
    with hipfile.open(url) as f:
        assert isinstance(f, hipfile.RemoteFile) and f.size() == data.nbytes and f.name == url
        host = np.empty_like(data)
        assert f.read(host) == data.nbytes and host.tobytes() == data.tobytes()
        dev = hipfile.DeviceBuffer(1 << 16)
        assert f.read(dev, 1 << 16, 12345) == 1 << 16
        assert dev.to_bytes() == data.tobytes()[12345 : 12345 + (1 << 16)]
        a, b = bytearray(100), bytearray(4096)
        assert f.read_batch([(a, 100, 7, 0), (b, None, data.nbytes - 96, 0)]) == [100, 96]
        assert bytes(a) == data.tobytes()[7:107] and bytes(b[:96]) == data.tobytes()[-96:]
        fut = f.pread(b, 4096, 4096)
        assert fut.get() == 4096 and bytes(b) == data.tobytes()[4096:8192]
        with pytest.raises(OSError):
            f.write(b)


def test_load_file_safe_open_and_save_file_by_url(s3_store, tmp_path):
    t = tensors()
    local = tmp_path / "model.safetensors"
    st_numpy.save_file(t, str(local))
    k = key("model.safetensors")
    s3_store.put("hipfile", k, local.read_bytes())
    url = f"s3://hipfile/{k}"
    same(hst.load_file(url, framework="np"), st_numpy.load_file(str(local)))
    same(hst.load_file(url, framework="np", copy=True), st_numpy.load_file(str(local)))
    with hst.safe_open(url, framework="np") as f:
        assert f.keys() == sorted(t)
        assert f.get_tensor("bias").tobytes() == t["bias"].tobytes()
        assert f.get_slice("layers.2.w")[3:9].tobytes() == t["layers.2.w"][3:9].tobytes()
    rows = hst.load_file(url, framework="np", shard=(1, 3))["layers.1.w"]
    assert rows.tobytes() == np.array_split(t["layers.1.w"], 3)[1].tobytes()
    # Saved to an object: byte for byte what safetensors writes.
    out = f"s3://hipfile/{key('saved.safetensors')}"
    hst.save_file(t, out, metadata={"format": "np"})
    assert s3_store.get("hipfile", out.split("/", 3)[3]) == st_numpy.save(t, metadata={"format": "np"})


def test_model_directories_round_trip_through_a_prefix(s3_store):
    t = tensors(seed=2, layers=6)
    prefix = f"s3://hipfile/{key('ckpt')}/"
    written = hst.save_model_dir(t, prefix, max_shard_size=100_000)
    assert written[-1].endswith("model.safetensors.index.json") and len(written) > 2
    same(hst.load_model_dir(prefix, framework="np"), t)
    # Without an index: every object of the prefix.
    single = f"s3://hipfile/{key('one')}/"
    hst.save_model_dir(t, single)
    same(hst.load_model_dir(single, framework="np"), t)


def test_the_node_cache_serves_a_second_load_and_fetches_a_changed_object(s3_store, tmp_path):
    cache = tmp_path / "cache"
    k = key("cached.safetensors")
    first, second = tensors(seed=3), tensors(seed=4)
    s3_store.put("hipfile", k, st_numpy.save(first))
    url = f"s3://hipfile/{k}"
    same(hst.load_file(url, framework="np", cache_dir=cache), first)
    entries = hipfile._remote.cache_entries(cache)
    assert [e[0] for e in entries] == [url]
    # Served from the node's copy: the same result with the object's bytes unread (the copy is
    # there, whole, at the version the store names).
    same(hst.load_file(url, framework="np", cache_dir=cache), first)
    with hipfile.open(url, cache_dir=cache) as f:
        assert isinstance(f, hipfile.File) and os.path.dirname(f.name) == str(cache)
    s3_store.put("hipfile", k, st_numpy.save(second))
    same(hst.load_file(url, framework="np", cache_dir=cache), second)
    # The environment's cache, used by every entry point.
    os.environ["HIPFILE_REMOTE_CACHE"] = str(tmp_path / "env-cache")
    try:
        same(hst.load_file(url, framework="np"), second)
        assert [e[0] for e in hipfile._remote.cache_entries()] == [url]
    finally:
        del os.environ["HIPFILE_REMOTE_CACHE"]


def test_a_cache_that_cannot_hold_the_object_falls_back_to_the_store(s3_store, tmp_path):
    k = key("big.safetensors")
    t = tensors(seed=5)
    s3_store.put("hipfile", k, st_numpy.save(t))
    url = f"s3://hipfile/{k}"
    # A limit below the object's size: the store serves it, and the log says so.
    assert hipfile._remote.localize(url, tmp_path / "small", limit=1000) is None
    # A cache that cannot be made (its directory would be under a file; as root, the test's user
    # here, a read-only directory is written anyway): the store serves it too.
    (tmp_path / "a-file").write_bytes(b"")
    with hipfile.open(url, cache_dir=tmp_path / "a-file" / "cache") as f:
        assert isinstance(f, hipfile.RemoteFile) and f.size() > 0
    same(hst.load_file(url, framework="np"), t)


def test_writing_an_object_appears_only_when_whole(s3_store, data):
    k = key("written.bin")
    url = f"s3://hipfile/{k}"
    with pytest.raises(RuntimeError):
        with hipfile.open(url, "w") as f:
            f.write(data)
            raise RuntimeError("the writer fails midway")
    assert not s3_store.exists("hipfile", k)
    with hipfile.open(url, "w") as f:
        f.write(data[: 1000])
        f.write(data[1000:])
        with pytest.raises(OSError):
            f.write(data, file_offset=5)  # not where the object ends: refused
    assert s3_store.get("hipfile", k) == data.tobytes()


def test_errors_name_the_url_and_carry_the_errno(s3_store):
    with pytest.raises(FileNotFoundError) as e:
        hipfile.open("s3://hipfile/no/such/object")
    assert "s3://hipfile/no/such/object" in str(e.value) and e.value.errno == errno.ENOENT
    with pytest.raises(FileNotFoundError):
        hst.load_file("s3://no-such-bucket/model.safetensors", framework="np")
    with pytest.raises(OSError) as e:
        hipfile.open("s3:///nobucket")
    assert e.value.errno == errno.EINVAL
    saved = os.environ["AWS_ENDPOINT_URL"]
    os.environ["AWS_ENDPOINT_URL"] = f"http://127.0.0.1:{__import__('stores').free_port()}"
    try:
        with pytest.raises(OSError) as e:
            hipfile.open("s3://hipfile/x")
        assert e.value.errno == errno.EIO and "s3://hipfile/x" in str(e.value)
    finally:
        os.environ["AWS_ENDPOINT_URL"] = saved


def test_http_urls_with_ranges(range_server, tmp_path):
    t = tensors(seed=6)
    st_numpy.save_file(t, str(range_server.root / "model.safetensors"))
    url = f"{range_server.url}/model.safetensors"
    same(hst.load_file(url, framework="np"), t)
    same(hst.load_file(url, framework="np", cache_dir=tmp_path / "c"), t)
    with pytest.raises(FileNotFoundError):
        hipfile.open(f"{range_server.url}/missing.safetensors")


def test_a_forked_child_reads_objects_with_a_runtime_of_its_own(s3_store, data):
    k = key("fork.bin")
    s3_store.put("hipfile", k, data.tobytes())
    url = f"s3://hipfile/{k}"
    with hipfile.open(url) as f:
        assert f.read(bytearray(10)) == 10  # the parent's runtime and client exist
    pid = os.fork()
    if pid == 0:
        code = 2
        try:
            import signal

            signal.alarm(60)  # a child that hangs fails the test instead of holding it
            b = bytearray(100_000)
            with hipfile.open(url) as f:
                code = 0 if f.read(b) == len(b) and bytes(b) == data.tobytes()[: len(b)] else 1
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, status


def test_a_buffer_too_small_or_a_bad_offset_is_refused_before_any_request(s3_store, data):
    k = key("small.bin")
    s3_store.put("hipfile", k, data.tobytes())
    with hipfile.open(f"s3://hipfile/{k}") as f:
        with pytest.raises(ValueError):
            f.read(bytearray(10), 100)  # 100 bytes into a buffer of 10
        with pytest.raises(ValueError):
            f.read(bytearray(10), 8, 0, 5)  # past its end from offset 5
        with pytest.raises(ValueError):
            f.read(bytearray(10), 4, -1)  # a negative file offset


FILL = """
import json, sys
from hipfile import _hipfile
path, how = _hipfile.remote_cached(sys.argv[1], sys.argv[2], None)
print(json.dumps({"how": how, "bytes": open(path, "rb").read() == open(sys.argv[3], "rb").read()}))
"""


def test_processes_filling_the_node_cache_at_once_fetch_once(s3_store, tmp_path, data):
    import json
    import subprocess
    import sys

    k = key("shared.bin")
    local = tmp_path / "shared.bin"
    local.write_bytes(data.tobytes() * 8)
    s3_store.put("hipfile", k, local.read_bytes())
    cache = tmp_path / "cache"
    procs = [subprocess.Popen([sys.executable, "-c", FILL, f"s3://hipfile/{k}", str(cache), str(local)],
                              stdout=subprocess.PIPE, text=True) for _ in range(3)]
    outs = [json.loads(p.communicate(timeout=120)[0].strip().splitlines()[-1]) for p in procs]
    assert sorted(o["how"] for o in outs) == ["fetched", "hit", "hit"], outs
    assert all(o["bytes"] for o in outs), outs
