//! Writing an object: a multipart upload fed in order, its parts sent `connections` at once.
//! The object appears only when [`RemoteWriter::finish`] completes the upload; an error, or a
//! writer dropped unfinished, aborts it, so no partial object is ever seen.

use std::io::Read;

use hipfile_core::{DeviceCopy, DeviceSpan, GpuRuntime};
use object_store::{ObjectStoreExt, WriteMultipart};

use crate::error::{Error, ErrorKind, Result};
use crate::location::Location;
use crate::object::{block_on, runtime};
use crate::settings::Settings;

/// An object being written, in order, from host or device memory.
///
/// # Example
/// ```no_run
/// let mut w = hipfile_remote::RemoteWriter::create("s3://bucket/out.bin")?;
/// w.write(0, b"hello ")?;
/// w.write(6, b"world")?;
/// w.finish()?; // the object appears now, whole
/// # Ok::<(), hipfile_remote::Error>(())
/// ```
pub struct RemoteWriter {
    shown: String,
    upload: Option<WriteMultipart>,
    written: u64,
    settings: Settings,
}

impl std::fmt::Debug for RemoteWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteWriter").field("url", &self.shown).field("written", &self.written).finish()
    }
}

impl RemoteWriter {
    /// Starts writing the object at `url` (replacing it once finished).
    pub fn create(url: &str) -> Result<RemoteWriter> {
        let loc = Location::parse(url)?;
        let Location { shown, store, key } = loc;
        let upload = block_on(store.put_multipart(&key)).map_err(|e| Error::store(&shown, e))?;
        let settings = Settings::from_env();
        let upload = WriteMultipart::new_with_chunk_size(upload, settings.upload_part());
        Ok(RemoteWriter { shown, upload: Some(upload), written: 0, settings })
    }

    /// The URL as shown.
    pub fn url(&self) -> &str {
        &self.shown
    }

    /// The bytes written so far (the offset the next write must start at).
    pub fn position(&self) -> u64 {
        self.written
    }

    fn upload(&mut self, offset: u64, len: usize) -> Result<&mut WriteMultipart> {
        if offset != self.written {
            let why = format!("writes to an object go in order: {len} bytes at {offset}, after {} bytes", self.written);
            return Err(Error::new(ErrorKind::Invalid, &self.shown, why));
        }
        let shown = &self.shown;
        self.upload.as_mut().ok_or_else(|| Error::new(ErrorKind::Invalid, shown, "the upload has ended".to_owned()))
    }

    /// Appends `data`, which must start at `offset` (the bytes written so far); waits while
    /// `connections` parts are in flight.
    pub fn write(&mut self, offset: u64, data: &[u8]) -> Result<()> {
        let connections = self.settings.connections;
        let upload = self.upload(offset, data.len())?;
        let sent = {
            let _in_runtime = runtime().enter();
            upload.write(data);
            block_on(upload.wait_for_capacity(connections))
        };
        if let Err(e) = sent {
            self.abort();
            return Err(Error::store(&self.shown, e));
        }
        self.written += data.len() as u64;
        Ok(())
    }

    /// Appends the device memory `src` at `offset`, through a host buffer of one part.
    pub fn write_from_device(&mut self, gpu: &dyn GpuRuntime, offset: u64, src: DeviceSpan) -> Result<()> {
        let part = self.settings.upload_part();
        let mut buf = vec![0u8; part.min(src.len())];
        for from in (0..src.len()).step_by(part.max(1)) {
            let len = part.min(src.len() - from);
            gpu.copy_from_device(&mut buf[..len], src.part(from, len)).map_err(|e| {
                Error::new(ErrorKind::Invalid, &self.shown, format!("the copy from device memory failed ({e})"))
            })?;
            self.write(offset + from as u64, &buf[..len])?;
        }
        Ok(())
    }

    /// Appends everything `reader` gives, from the current position.
    pub fn write_from(&mut self, reader: &mut dyn Read) -> Result<u64> {
        let mut buf = vec![0u8; self.settings.upload_part()];
        let start = self.written;
        loop {
            let n = match reader.read(&mut buf) {
                Ok(0) => return Ok(self.written - start),
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    return Err(Error::new(ErrorKind::Invalid, &self.shown, format!("reading what to upload: {e}")));
                }
            };
            self.write(self.written, &buf[..n])?;
        }
    }

    /// Completes the upload: the object appears, whole.
    pub fn finish(mut self) -> Result<()> {
        let upload = self
            .upload
            .take()
            .ok_or_else(|| Error::new(ErrorKind::Invalid, &self.shown, "the upload has ended".to_owned()))?;
        block_on(upload.finish()).map(drop).map_err(|e| Error::store(&self.shown, e))
    }

    /// Abandons the upload: nothing appears (and the parts sent are let go).
    pub fn abort(&mut self) {
        if let Some(upload) = self.upload.take()
            && let Err(e) = block_on(upload.abort())
        {
            tracing::debug!("{}: aborting the upload: {e}", self.shown);
        }
    }
}

impl Drop for RemoteWriter {
    fn drop(&mut self) {
        self.abort();
    }
}
