//! Remote sources against a real S3 server (SeaweedFS on loopback): round trips into host and
//! (mock) device memory, the node cache, uploads, and the store's refusals.

mod common;

use std::sync::{Arc, Mutex};

use common::{Weed, pattern};
use hipfile_core::{DeviceCopy, DeviceSpan, GpuRuntime};
use hipfile_remote::{Cache, Dest, ErrorKind, RemoteObject, RemoteWriter, Served, Settings, Staging};

/// The store's settings live in the environment: one test at a time sets them.
static ENV: Mutex<()> = Mutex::new(());

fn point_at(endpoint: &str, keys: Option<(&str, &str)>) {
    // SAFETY: the tests of this binary change the environment only under `ENV`, and nothing
    // else of the process reads it meanwhile.
    let set = |k: &str, v: &str| unsafe { std::env::set_var(k, v) };
    // SAFETY: as above.
    let unset = |k: &str| unsafe { std::env::remove_var(k) };
    set("AWS_ENDPOINT_URL", endpoint);
    set("AWS_REGION", "us-east-1");
    set("AWS_CONFIG_FILE", "/nonexistent");
    set("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent");
    match keys {
        Some((id, secret)) => {
            set("AWS_ACCESS_KEY_ID", id);
            set("AWS_SECRET_ACCESS_KEY", secret);
        }
        None => {
            unset("AWS_ACCESS_KEY_ID");
            unset("AWS_SECRET_ACCESS_KEY");
        }
    }
}

/// A fresh SeaweedFS server, anonymous, that the store's settings point at, with the bucket
/// `bucket` made; `None` where there is no `weed` to run. The caller holds [`ENV`].
fn store_with_bucket(bucket: &str) -> Option<Weed> {
    let weed = Weed::start(None)?;
    point_at(&weed.endpoint, None);
    weed.bucket(bucket);
    Some(weed)
}

fn small_parts(o: RemoteObject) -> RemoteObject {
    o.with_settings(Settings { part_size: 1 << 20, connections: 4 })
}

fn upload(url: &str, data: &[u8]) {
    let mut w = RemoteWriter::create(url).unwrap();
    // In pieces of odd sizes, as a saver writes a header and then tensors.
    let mut at = 0;
    for piece in data.chunks(7_000_001) {
        w.write(at, piece).unwrap();
        at += piece.len() as u64;
    }
    w.finish().unwrap();
}

#[test]
fn objects_round_trip_through_host_and_device_memory_and_the_cache() {
    let _env = ENV.lock().unwrap_or_else(|p| p.into_inner());
    let Some(_weed) = store_with_bucket("models") else { return };

    // An upload in three parts (16 MiB each at least), read back whole and by ranges.
    let data = pattern(40 << 20, 1);
    let url = "s3://models/dir/model.bin";
    upload(url, &data);
    let object = small_parts(RemoteObject::open(url).unwrap());
    assert_eq!(object.size(), data.len() as u64);
    let mut all = vec![0u8; data.len()];
    assert_eq!(object.read(0, &mut all).unwrap(), data.len());
    assert!(all == data, "a whole read is bitwise the object");
    let (mut a, mut b, mut tail) = (vec![0u8; 3_333_333], vec![0u8; 1], vec![0u8; 4096]);
    let got = object
        .read_into(
            None,
            vec![
                (12_345, Dest::Host(&mut a)),
                (7, Dest::Host(&mut b)),
                (data.len() as u64 - 100, Dest::Host(&mut tail)),
            ],
        )
        .unwrap();
    assert_eq!(got, [3_333_333, 1, 100], "a read past the end stops at it");
    assert!(a == data[12_345..12_345 + 3_333_333] && b[0] == data[7] && tail[..100] == data[data.len() - 100..]);

    // Into device memory (the mock GPU), through pinned staging.
    let gpu: Arc<dyn GpuRuntime> = hipfile_backend_mock::MockGpu::new(1);
    let staging = Staging::new(Arc::clone(&gpu), Settings { part_size: 1 << 20, connections: 4 });
    let len = 5 << 20;
    let addr = gpu.device_alloc(len + 10).unwrap();
    // SAFETY: `addr` is an allocation of `len + 10` bytes, freed at the end of the test.
    let span = unsafe { DeviceSpan::new(addr, len + 10) };
    assert_eq!(object.read_into(Some(&staging), vec![(999, Dest::Device(span.part(10, len)))]).unwrap(), [len]);
    let mut back = vec![0u8; len];
    gpu.copy_from_device(&mut back, span.part(10, len)).unwrap();
    assert!(back == data[999..999 + len], "a device read is bitwise the object");

    // A key with odd characters.
    let odd = "s3://models/odd%20name+%C3%BC%25.bin";
    upload(odd, b"odd bytes");
    let mut small = [0u8; 9];
    RemoteObject::open(odd).unwrap().read(0, &mut small).unwrap();
    assert_eq!(&small, b"odd bytes");

    // Listing a prefix.
    let listed = hipfile_remote::list("s3://models/dir/").unwrap();
    assert_eq!(listed, [("s3://models/dir/model.bin".to_owned(), data.len() as u64)]);

    // The node cache: fetched once, then served locally; a replaced object is fetched again.
    let dir = tempfile::tempdir().unwrap();
    let cache = Cache::new(dir.path());
    let (path, served) = cache.get(&object).unwrap();
    assert_eq!(served, Served::Fetched);
    assert!(std::fs::read(&path).unwrap() == data);
    assert_eq!(cache.get(&RemoteObject::open(url).unwrap()).unwrap().1, Served::Hit);
    let replaced = pattern(2 << 20, 2);
    upload(url, &replaced);
    let newer = RemoteObject::open(url).unwrap();
    let (path, served) = cache.get(&newer).unwrap();
    assert_eq!(served, Served::Fetched, "a changed object is fetched again");
    assert!(std::fs::read(&path).unwrap() == replaced);
    // A read of the version opened before the change fails, never mixing the two.
    let e = object.read(0, &mut vec![0u8; 1024]).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Changed, "{e}");
    // A truncated copy is fetched again.
    std::fs::OpenOptions::new().write(true).open(&path).unwrap().set_len(100).unwrap();
    assert_eq!(cache.get(&newer).unwrap().1, Served::Fetched);
    hipfile_remote::flush();
    assert_eq!(cache.entries().len(), 1);

    // Four threads asking at once: one fill, three hits.
    let cache2 = Cache::new(dir.path().join("shared"));
    let served: Vec<Served> = std::thread::scope(|s| {
        let handles: Vec<_> =
            (0..4).map(|_| s.spawn(|| cache2.get(&RemoteObject::open(url).unwrap()).unwrap().1)).collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert_eq!(served.iter().filter(|s| **s == Served::Fetched).count(), 1, "{served:?}");

    // An upload dropped unfinished leaves no object.
    let mut w = RemoteWriter::create("s3://models/partial.bin").unwrap();
    w.write(0, &data[..20 << 20]).unwrap();
    assert_eq!(w.write(5, b"x").unwrap_err().kind(), ErrorKind::Invalid, "writes go in order");
    drop(w);
    assert_eq!(RemoteObject::open("s3://models/partial.bin").unwrap_err().kind(), ErrorKind::NotFound);

    // Missing objects and buckets.
    let e = RemoteObject::open("s3://models/nothing-here").unwrap_err();
    assert_eq!((e.kind(), e.errno()), (ErrorKind::NotFound, 2));
    assert!(e.to_string().starts_with("s3://models/nothing-here: "), "{e}");
    assert_eq!(RemoteObject::open("s3://no-such-bucket/k").unwrap_err().kind(), ErrorKind::NotFound);
    // SAFETY: devices of the mock GPU, allocated above.
    unsafe { gpu.device_free(addr).unwrap() };
}

#[test]
fn a_store_that_is_not_there_or_refuses_gives_errors_naming_the_url_not_the_secret() {
    let _env = ENV.lock().unwrap_or_else(|p| p.into_inner());
    // Nothing listens there: an error in seconds.
    point_at(&format!("http://127.0.0.1:{}", common::free_port()), None);
    let started = std::time::Instant::now();
    let e = RemoteObject::open("s3://b/k").unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Store, "{e}");
    assert!(started.elapsed().as_secs() < 60, "{:?}", started.elapsed());

    let config = r#"{"identities":[{"name":"admin","credentials":[{"accessKey":"HIPFILETESTKEY","secretKey":"hipfile-very-secret-value"}],"actions":["Admin","Read","Write","List"]}]}"#;
    let Some(weed) = Weed::start_with(config) else { return };
    point_at(&weed.endpoint, Some(("HIPFILETESTKEY", "hipfile-wrong-secret-value")));
    let e = RemoteObject::open("s3://locked/k").unwrap_err();
    assert_eq!((e.kind(), e.errno()), (ErrorKind::Denied, 13), "{e}");
    assert!(
        e.to_string().starts_with("s3://locked/k: ") && !e.to_string().contains("hipfile-wrong-secret-value"),
        "{e}"
    );
    point_at(&weed.endpoint, None);
    assert_eq!(RemoteObject::open("s3://locked/k").unwrap_err().kind(), ErrorKind::Denied, "anonymous");
    point_at(&weed.endpoint, Some(("HIPFILETESTKEY", "hipfile-very-secret-value")));
    assert_eq!(RemoteObject::open("s3://locked/k").unwrap_err().kind(), ErrorKind::NotFound, "signed: only missing");
}

#[test]
fn a_store_killed_after_the_open_gives_an_error_and_leaves_nothing() {
    let _env = ENV.lock().unwrap_or_else(|p| p.into_inner());
    let Some(weed) = store_with_bucket("gone") else { return };
    let url = "s3://gone/object.bin";
    upload(url, &pattern(3 << 20, 5));
    let object = small_parts(RemoteObject::open(url).unwrap());
    drop(weed); // the server is killed
    let e = object.read(0, &mut vec![0u8; 3 << 20]).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Store, "{e}");
    assert!(e.to_string().starts_with(url), "{e}");
    let dir = tempfile::tempdir().unwrap();
    assert!(Cache::new(dir.path()).get(&object).is_err());
    hipfile_remote::flush();
    let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().flatten().map(|e| e.file_name()).collect();
    assert!(left.iter().all(|n| n.to_string_lossy().ends_with(".lock")), "{left:?}");
}
