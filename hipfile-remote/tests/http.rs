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

#[test]
fn bodies_cut_short_or_reset_are_asked_for_again_and_never_used_short() {
    let server = TestServer::start();
    let data = pattern(6 << 20, 3);
    server.put("w.bin", data.clone(), "v1");
    let url = format!("{}/w.bin", server.url);
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
    let server = TestServer::start();
    server.put("m.bin", pattern(3 << 20, 4), "v1");
    let url = format!("{}/m.bin", server.url);
    let object = open(&url);
    server.put("m.bin", pattern(3 << 20, 5), "v2");
    let e = object.read(0, &mut vec![0u8; 3 << 20]).unwrap_err();
    assert_eq!((e.kind(), e.errno()), (ErrorKind::Changed, 116), "{e}");
    let e = RemoteObject::open(&format!("{}/missing.bin", server.url)).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotFound, "{e}");
}

#[test]
fn the_node_cache_fetches_each_object_once_however_many_ask() {
    let server = TestServer::start();
    let data = pattern(8 << 20, 6);
    server.put("c.bin", data.clone(), "v1");
    let url = format!("{}/c.bin", server.url);
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
    let server = TestServer::start();
    let data = pattern(3 << 20, 9);
    server.put("t.bin", data.clone(), "v1");
    let url = format!("{}/t.bin", server.url);
    let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    let mut out = vec![0u8; data.len()];
    let n = rt.block_on(async { open(&url).read(0, &mut out) }).unwrap();
    assert!(n == data.len() && out == data);
}
