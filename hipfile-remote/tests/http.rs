//! Remote sources over plain HTTP (the tests' own range server): faults on the way (bodies cut
//! short, reset connections, an object replaced mid-read), and the node cache's fills counted
//! in the bytes the server sent.

mod common;

use std::sync::atomic::Ordering;

use common::{Fault, TestServer, pattern};
use hipfile_remote::{Cache, ErrorKind, RemoteObject, Served, Settings};

fn open(url: &str) -> RemoteObject {
    RemoteObject::open(url).unwrap().with_settings(Settings { part_size: 1 << 20, connections: 4 })
}

/// A fresh test server holding `name`: `len` bytes of [`pattern`] `seed`, ETag `v1`; with those
/// bytes and the object's URL.
fn serving(name: &str, len: usize, seed: u8) -> (TestServer, Vec<u8>, String) {
    let server = TestServer::start();
    let data = pattern(len, seed);
    server.put(name, data.clone(), "v1");
    let url = format!("{}/{name}", server.url);
    (server, data, url)
}

#[test]
fn bodies_cut_short_or_reset_are_asked_for_again_and_never_used_short() {
    let (server, data, url) = serving("w.bin", 6 << 20, 3);
    for fault in [Fault::Short, Fault::Reset] {
        server.fault(fault, 2);
        let mut out = vec![0u8; data.len()];
        assert_eq!(open(&url).read(0, &mut out).unwrap(), data.len(), "{fault:?}");
        assert!(out == data, "{fault:?}: the result is whole and bitwise right");
    }
    // A server that always cuts the body short: an error, after the tries.
    server.fault(Fault::Short, 1000);
    let e = open(&url).read(0, &mut vec![0u8; 1 << 20]).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::ShortBody, "{e}");
    assert!(e.to_string().starts_with(&url), "{e}");
    server.fault(Fault::None, 0);
    // The same through the cache: no entry is left.
    let dir = tempfile::tempdir().unwrap();
    server.fault(Fault::Short, 1000);
    assert!(Cache::new(dir.path()).get(&open(&url)).is_err());
    assert!(Cache::new(dir.path()).entries().is_empty());
    assert_eq!(
        std::fs::read_dir(dir.path())
            .unwrap()
            .flatten()
            .filter(|e| e.path().extension().is_some_and(|x| x == "data" || x == "tmp"))
            .count(),
        0
    );
}

#[test]
fn an_object_replaced_while_it_is_read_is_an_error_not_a_mix() {
    let (server, _, url) = serving("m.bin", 3 << 20, 4);
    let object = open(&url);
    server.put("m.bin", pattern(3 << 20, 5), "v2");
    let e = object.read(0, &mut vec![0u8; 3 << 20]).unwrap_err();
    assert_eq!((e.kind(), e.errno()), (ErrorKind::Changed, 116), "{e}");
    let e = RemoteObject::open(&format!("{}/missing.bin", server.url)).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotFound, "{e}");
}

#[test]
fn the_node_cache_fetches_each_object_once_however_many_ask() {
    let (server, data, url) = serving("c.bin", 8 << 20, 6);
    let dir = tempfile::tempdir().unwrap();
    let served: Vec<Served> = std::thread::scope(|s| {
        let asks: Vec<_> = (0..4).map(|_| s.spawn(|| Cache::new(dir.path()).get(&open(&url)).unwrap())).collect();
        asks.into_iter().map(|h| h.join().unwrap().1).collect()
    });
    assert_eq!(served.iter().filter(|s| **s == Served::Fetched).count(), 1, "{served:?}");
    assert_eq!(server.state.served.load(Ordering::SeqCst), data.len() as u64, "the store sent each byte once");
    // Read again at once: this process's copy serves, whether or not its sync is done.
    let (path, served) = Cache::new(dir.path()).get(&open(&url)).unwrap();
    assert!(served == Served::Hit && std::fs::read(path).unwrap() == data);

    // A limit: the least recently used copy goes; an object over the limit is refused.
    let limited = Cache::new(dir.path()).with_limit(Some(10 << 20));
    server.put("d.bin", pattern(4 << 20, 7), "v1");
    let (_, served) = limited.get(&open(&format!("{}/d.bin", server.url))).unwrap();
    assert_eq!(served, Served::Fetched);
    hipfile_remote::flush(); // its record is written once the copy is on the disk
    let urls: Vec<String> = limited.entries().into_iter().map(|e| e.url).collect();
    assert_eq!(urls, [format!("{}/d.bin", server.url)], "c.bin (8 MiB) made room for d.bin");
    server.put("big.bin", pattern(11 << 20, 8), "v1");
    let e = limited.get(&open(&format!("{}/big.bin", server.url))).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Cache, "{e}");

    // A cache that cannot be written: an error naming it (callers read the store instead).
    let locked = tempfile::tempdir().unwrap();
    let ro = locked.path().join("ro");
    std::fs::create_dir(&ro).unwrap();
    std::fs::set_permissions(&ro, std::os::unix::fs::PermissionsExt::from_mode(0o555)).unwrap();
    let writable = std::fs::File::create(ro.join("probe")).is_ok(); // root writes anyway
    if !writable {
        let e = Cache::new(&ro).get(&open(&url)).unwrap_err();
        assert_eq!((e.kind(), e.errno()), (ErrorKind::Cache, 13), "{e}");
    }
}

#[test]
fn a_caller_that_is_a_task_of_a_runtime_is_served() {
    let (_server, data, url) = serving("t.bin", 3 << 20, 9);
    let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    let mut out = vec![0u8; data.len()];
    let n = rt.block_on(async { open(&url).read(0, &mut out) }).unwrap();
    assert!(n == data.len() && out == data);
}

/// A tmpfs of `mib` MiB mounted on a scratch directory, unmounted when dropped; `None` where this
/// process may not mount (not root, or no mount namespace of its own to use).
struct SmallDisk {
    dir: tempfile::TempDir,
}

impl SmallDisk {
    fn mount(mib: u32) -> Option<SmallDisk> {
        let dir = tempfile::tempdir().ok()?;
        let status = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={mib}m"), "tmpfs"])
            .arg(dir.path())
            .stderr(std::process::Stdio::null())
            .status()
            .ok()?;
        status.success().then_some(SmallDisk { dir })
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount").arg(self.dir.path()).status();
    }
}

#[test]
fn a_full_cache_disk_makes_room_by_eviction_or_refuses_leaving_nothing_partial() {
    let Some(disk) = SmallDisk::mount(12) else {
        eprintln!("skipped: cannot mount a small file system here (needs root)");
        return;
    };
    let server = TestServer::start();
    for (name, mib, seed) in [("a.bin", 7, 1), ("b.bin", 7, 2), ("huge.bin", 20, 3)] {
        server.put(name, pattern(mib << 20, seed), "v1");
    }
    let cache = Cache::new(disk.dir.path().join("cache")); // no limit: the disk is the bound
    let url = |n: &str| format!("{}/{n}", server.url);
    assert_eq!(cache.get(&open(&url("a.bin"))).unwrap().1, Served::Fetched);
    hipfile_remote::flush();
    // No room for b beside a on 12 MiB: a, the least recently used, goes.
    let (path, served) = cache.get(&open(&url("b.bin"))).unwrap();
    assert!(served == Served::Fetched && std::fs::read(path).unwrap() == pattern(7 << 20, 2));
    hipfile_remote::flush();
    let urls: Vec<String> = cache.entries().into_iter().map(|e| e.url).collect();
    assert_eq!(urls, [url("b.bin")]);
    // Larger than the disk: an error naming the URL; b stays, and no partial copy is left.
    let e = cache.get(&open(&url("huge.bin"))).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Cache, "{e}");
    assert!(e.to_string().starts_with(&url("huge.bin")), "{e}");
    let urls: Vec<String> = cache.entries().into_iter().map(|e| e.url).collect();
    assert_eq!(urls, [url("b.bin")]);
    let names: Vec<String> = std::fs::read_dir(cache.dir())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names.iter().filter(|n| n.ends_with(".data")).count(), 1, "{names:?}");
    assert!(!names.iter().any(|n| n.ends_with(".tmp")), "{names:?}");
}
