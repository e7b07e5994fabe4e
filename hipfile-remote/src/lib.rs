//! hipfile-rs's remote sources (docs/remote.md): objects in S3 and the stores that speak its
//! API, Google Cloud Storage, Azure Blob Storage and on HTTP servers, opened by URL and read by
//! ranges in parallel straight into host or GPU memory (through pinned staging buffers, no full
//! host copy of the object); a node-local cache that keeps what was read once; multipart
//! uploads that make an object appear only when it is whole.
//!
//! The stores' clients are `object_store`'s (request signing, credentials, retries); this crate
//! adds what loading weights and checkpoints needs on top: parallel range reads into device
//! memory, a read that insists on the version it opened (a changed object is an error, never a
//! mix of two versions), a body cut short asked for again from where it stopped, the cache, and
//! errors that name the URL and never a credential.
//!
//! # Example
//! ```no_run
//! use hipfile_remote::{Cache, RemoteObject};
//!
//! let object = RemoteObject::open("s3://bucket/model.safetensors")?;
//! let mut bytes = vec![0u8; object.size() as usize];
//! object.read(0, &mut bytes)?;                        // straight from the store
//! let cache = Cache::new("/var/cache/hipfile");
//! let (path, _served) = cache.get(&object)?;          // or a local copy, fetched once per node
//! # Ok::<(), hipfile_remote::Error>(())
//! ```

mod cache;
mod error;
mod location;
mod object;
mod settings;
mod sink;
mod upload;

use std::path::Path;

use futures::TryStreamExt;
use object_store::ObjectStoreExt;

pub use cache::{Cache, Entry, Served, flush};
pub use error::{Error, ErrorKind, Result};
pub use location::{is_url, shown};
pub use object::{Dest, RemoteObject, Version};
pub use settings::Settings;
pub use sink::Staging;
pub use upload::RemoteWriter;

/// Copies the object at `url` to the file `dest` (written under a temporary name beside it and
/// renamed once whole): its size.
pub fn download(url: &str, dest: &Path) -> Result<u64> {
    let object = RemoteObject::open(url)?;
    let dir = dest.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let name = dest.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let tmp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
    let copied = (|| {
        let file = std::fs::File::create(&tmp).map_err(|e| Error::cache(object.url(), tmp.display(), &e))?;
        file.set_len(object.size()).map_err(|e| Error::cache(object.url(), tmp.display(), &e))?;
        object.read_to_file(&file)?;
        std::fs::rename(&tmp, dest).map_err(|e| Error::cache(object.url(), dest.display(), &e))
    })();
    if copied.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    copied.map(|()| object.size())
}

/// Uploads the file `src` to `url` (the object appears once whole): its size.
pub fn upload(src: &Path, url: &str) -> Result<u64> {
    let mut file = std::fs::File::open(src).map_err(|e| Error::cache(&shown(url), src.display(), &e))?;
    let mut writer = RemoteWriter::create(url)?;
    let n = writer.write_from(&mut file)?;
    writer.finish()?;
    Ok(n)
}

/// Deletes the object at `url` (one that is not there is fine, as the stores answer).
pub fn delete(url: &str) -> Result<()> {
    let loc = location::Location::parse(url)?;
    object::block_on(loc.store.delete(&loc.key)).map_err(|e| Error::store(&loc.shown, e))
}

/// The objects under the prefix `url` (`s3://bucket/dir/`): each one's URL and size, sorted.
pub fn list(url: &str) -> Result<Vec<(String, u64)>> {
    let loc = location::Location::parse(url)?;
    let base = url.split(['?', '#']).next().unwrap_or(url).trim_end_matches('/');
    let prefix = loc.key.clone();
    let listed: Vec<object_store::ObjectMeta> =
        object::block_on(loc.store.list(Some(&prefix)).try_collect()).map_err(|e| Error::store(&loc.shown, e))?;
    let root = prefix.as_ref().len();
    let mut out: Vec<(String, u64)> = listed
        .into_iter()
        .map(|m| {
            let rest = m.location.as_ref()[root..].trim_start_matches('/').to_owned();
            let encoded: Vec<String> = rest
                .split('/')
                .map(|s| url::form_urlencoded::byte_serialize(s.as_bytes()).collect::<String>().replace('+', "%20"))
                .collect();
            (format!("{base}/{}", encoded.join("/")), m.size)
        })
        .collect();
    out.sort();
    Ok(out)
}
