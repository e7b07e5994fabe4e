//! NVIDIA GPUDirect Storage through cuFile (`libcufile.so.0`, loaded by `hipfile-runtime`).
//!
//! The engine turns cuFile's compatibility mode off before it opens cuFile's driver: cuFile
//! would otherwise serve I/O through its own bounce buffers and call it GPUDirect. Without it,
//! a file cuFile cannot reach directly fails `cuFileHandleRegister`, and the engine declines
//! that file with cuFile's answer and what the machine lacks (the `nvidia-fs` module, kernel
//! PCI P2PDMA). Files are registered with cuFile on first use and deregistered with the file;
//! buffers the application registers (`hipFileBufRegister`) are registered with cuFile too,
//! and kept until it deregisters them.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, Weak};

use hipfile_core::log::log_once;
use hipfile_core::sync::lock;
use hipfile_core::{Declined, Error, FileHandle, IoRequest, OpError, Result};

use crate::Engine;

pub use hipfile_runtime::nvidia_cufile::{CuFileApi, CuFileError, CuHandle, LibCuFile};

/// What the machine lacks for GPUDirect, as far as files in `/proc`, `/sys` and `/boot` say.
pub fn machine_hints() -> String {
    let nvfs = if std::path::Path::new("/proc/driver/nvidia-fs").exists() { "loaded" } else { "not loaded" };
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    let config = std::fs::read_to_string(format!("/boot/config-{}", release.trim())).ok();
    let p2pdma = match config {
        Some(c) if c.lines().any(|l| l == "CONFIG_PCI_P2PDMA=y") => "enabled",
        Some(_) => "disabled",
        None => "unknown (no kernel config in /boot)",
    };
    format!("nvidia-fs module: {nvfs}; kernel PCI P2PDMA: {p2pdma}")
}

/// Whether GPUDirect Storage can work here at all, as the machine says without loading cuFile:
/// the `nvidia-fs` module is loaded, or cuFile's P2PDMA mode is on (`"use_pci_p2pdma": true`
/// in its configuration: `CUFILE_ENV_PATH_JSON`, else `/etc/cufile.json`). With neither,
/// `cuFileDriverOpen` can only fail, and loading cuFile to hear it costs 0.2-0.3 s (measured on
/// an H200 machine), which every process's first driver open would pay.
pub fn possible() -> std::result::Result<(), String> {
    if std::path::Path::new("/proc/driver/nvidia-fs").exists() {
        return Ok(());
    }
    let path = std::env::var_os("CUFILE_ENV_PATH_JSON")
        .map_or_else(|| std::path::PathBuf::from("/etc/cufile.json"), std::path::PathBuf::from);
    let shown = path.display();
    match std::fs::read_to_string(&path) {
        Ok(text) if p2pdma_on(&text) => Ok(()),
        Ok(_) => Err(format!(
            "no nvidia-fs module, and cuFile's P2PDMA mode is off (\"use_pci_p2pdma\" in {shown}): GPUDirect Storage \
             cannot work here ({})",
            machine_hints()
        )),
        Err(e) => Err(format!(
            "no nvidia-fs module, and cuFile's configuration {shown} cannot be read ({e}), so its P2PDMA mode is off \
             ({})",
            machine_hints()
        )),
    }
}

/// Whether cuFile's configuration (JSON with `//` comments) turns `use_pci_p2pdma` on.
fn p2pdma_on(config: &str) -> bool {
    config.lines().any(|line| {
        let code = line.split("//").next().unwrap_or_default();
        let squeezed: String = code.chars().filter(|c| !c.is_whitespace()).collect();
        squeezed.contains("\"use_pci_p2pdma\":true")
    })
}

/// An open cuFile driver: opened with compatibility mode off, closed when the last engine and
/// file using it are gone. Engines of one process share it (cuFile has one driver per process).
pub struct Session<C: CuFileApi> {
    api: C,
}

impl<C: CuFileApi> Session<C> {
    /// Opens cuFile's driver through `api` with its compatibility mode off, or says why GDS
    /// cannot work.
    pub fn open(api: C) -> std::result::Result<Self, String> {
        api.disable_compat_mode().map_err(|e| format!("cuFile cannot turn its compatibility mode off: {e}"))?;
        api.driver_open().map_err(|e| format!("cuFileDriverOpen failed: {e} ({})", machine_hints()))?;
        Ok(Session { api })
    }

    /// The session in `slot` if one is alive, else a new one from `api()` (kept in `slot`).
    pub fn shared(
        slot: &Mutex<Weak<Session<C>>>,
        api: impl FnOnce() -> std::result::Result<C, String>,
    ) -> std::result::Result<Arc<Self>, String> {
        let mut slot = lock(slot);
        if let Some(session) = slot.upgrade() {
            return Ok(session);
        }
        let session = Arc::new(Session::open(api()?)?);
        *slot = Arc::downgrade(&session);
        Ok(session)
    }
}

impl<C: CuFileApi> Drop for Session<C> {
    fn drop(&mut self) {
        self.api.driver_close();
    }
}

/// The GDS engine over the cuFile functions `C`.
pub struct Gds<C: CuFileApi + 'static> {
    session: Arc<Session<C>>,
    /// Buffers registered with cuFile: base to length.
    buffers: Mutex<BTreeMap<usize, usize>>,
}

/// A file's registration with cuFile, or why it has none; kept with the file.
struct GdsFile<C: CuFileApi + 'static> {
    session: Arc<Session<C>>,
    handle: std::result::Result<CuHandle, String>,
}

impl<C: CuFileApi + 'static> Drop for GdsFile<C> {
    fn drop(&mut self) {
        if let Ok(handle) = self.handle {
            self.session.api.handle_deregister(handle);
        }
    }
}

impl<C: CuFileApi + 'static> Gds<C> {
    /// An engine on an open cuFile session.
    pub fn new(session: Arc<Session<C>>) -> Self {
        Gds { session, buffers: Mutex::new(BTreeMap::new()) }
    }

    /// An engine on a session of its own, opened through `api` (see [`Session::open`]).
    pub fn open(api: C) -> std::result::Result<Self, String> {
        Session::open(api).map(|s| Gds::new(Arc::new(s)))
    }

    /// The file's registration with cuFile (made on first use and kept with the file), or
    /// why it has none.
    fn registration(&self, file: &FileHandle) -> std::result::Result<CuHandle, Declined> {
        let state = file.backend_state(|| {
            let handle = match file.direct_fd() {
                Some(fd) => self.session.api.handle_register(fd).map_err(|e| {
                    format!("cuFileHandleRegister failed: {e}; GPUDirect cannot reach this file ({})", machine_hints())
                }),
                None => Err("the file has no O_DIRECT descriptor".to_owned()),
            };
            Box::new(GdsFile { session: Arc::clone(&self.session), handle })
        });
        match state.downcast_ref::<GdsFile<C>>() {
            Some(GdsFile { handle: Ok(handle), .. }) => Ok(*handle),
            Some(GdsFile { handle: Err(why), .. }) => Err(why.clone().into()),
            None => Err(Declined::fixed("the file is registered with another p2p backend")),
        }
    }

    /// The registered buffer holding `addr`: its base and `addr`'s offset in it.
    fn registered_buffer(&self, addr: usize, size: usize) -> Option<(usize, usize)> {
        let buffers = lock(&self.buffers);
        let (&base, &len) = buffers.range(..=addr).next_back()?;
        (addr + size <= base + len).then_some((base, addr - base))
    }
}

impl<C: CuFileApi + 'static> Engine for Gds<C> {
    fn name(&self) -> &'static str {
        "p2p (GDS)"
    }

    fn accepts_file(&self, file: &FileHandle) -> std::result::Result<(), Declined> {
        self.registration(file).map(|_| ())
    }

    fn transfer(&self, req: &IoRequest<'_>) -> Result<usize> {
        // Scored first, so registered; were it not, "no path" lets bounce serve.
        let handle = self.registration(req.file()).map_err(|_| Error::Os(libc::ENODEV))?;
        let (base, offset) = self.registered_buffer(req.device_addr(), req.size()).unwrap_or((req.device_addr(), 0));
        let file_offset = i64::try_from(req.file_offset()).map_err(|_| Error::Os(libc::EINVAL))?;
        // SAFETY: the request's device range lies in a device allocation valid for the call
        // (IoRequest's contract), and equals [base + offset, base + offset + size).
        let n = unsafe { self.session.api.io(req.direction(), handle, base, req.size(), file_offset, offset as i64) };
        match n {
            n if n >= 0 => Ok((n as usize).min(req.size())),
            -1 => Err(Error::last_os_error()),
            n => Err(OpError::from_code((-n) as i32).map_or(Error::Op(OpError::InternalError), Error::Op)),
        }
    }

    fn buffer_registered(&self, base: usize, len: usize) {
        match self.session.api.buf_register(base, len) {
            Ok(()) => {
                lock(&self.buffers).insert(base, len);
            }
            Err(e) => log_once(&format!("cuFileBufRegister failed ({e}): such buffers are used unregistered")),
        }
    }

    fn buffer_deregistered(&self, base: usize) {
        if lock(&self.buffers).remove(&base).is_some() {
            let _ = self.session.api.buf_deregister(base);
        }
    }
}

impl<C: CuFileApi + 'static> Drop for Gds<C> {
    fn drop(&mut self) {
        let buffers = std::mem::take(&mut *lock(&self.buffers));
        for base in buffers.into_keys() {
            let _ = self.session.api.buf_deregister(base);
        }
        // The session closes cuFile's driver once the files registered with it are gone too.
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::P2p;
    use crate::tests::file;
    use hipfile_core::{Backend, Direction, FileHandle};
    use hipfile_runtime::nvidia_cufile::MockCuFileApi;
    use mockall::Sequence;

    fn request(file: &FileHandle, addr: usize, size: usize, offset: u64) -> IoRequest<'_> {
        // SAFETY: the mocked API never touches the address.
        IoRequest::new(Direction::Read, file, unsafe { hipfile_core::DeviceSpan::new(addr, size) }, 0, offset)
    }

    /// A cuFile whose driver opens with compatibility mode off, in that order.
    fn opened() -> MockCuFileApi {
        let mut api = MockCuFileApi::new();
        let mut seq = Sequence::new();
        api.expect_disable_compat_mode().times(1).in_sequence(&mut seq).returning(|| Ok(()));
        api.expect_driver_open().times(1).in_sequence(&mut seq).returning(|| Ok(()));
        api.expect_driver_close().times(1).return_const(());
        api
    }

    /// [`opened`], registering any file as handle 1.
    fn opened_with_files() -> MockCuFileApi {
        let mut api = opened();
        api.expect_handle_register().returning(|_| Ok(CuHandle(1)));
        api.expect_handle_deregister().return_const(());
        api
    }

    #[test]
    fn a_driver_that_does_not_open_makes_gds_unavailable_with_the_reason() {
        let mut api = MockCuFileApi::new();
        api.expect_disable_compat_mode().returning(|| Ok(()));
        api.expect_driver_open().returning(|| Err(CuFileError { err: 5009, cu_err: 0 }));
        let why = Gds::open(api).err().expect("unavailable");
        assert!(
            why.starts_with("cuFileDriverOpen failed: cuFile error 5009") && why.contains("nvidia-fs module"),
            "{why}"
        );
    }

    #[test]
    fn p2pdma_mode_is_read_from_cufiles_configuration() {
        assert!(p2pdma_on("{\n  \"properties\": {\n    \"use_pci_p2pdma\" : true,\n  }\n}"));
        assert!(!p2pdma_on("{ \"use_pci_p2pdma\": false }"));
        assert!(!p2pdma_on("// \"use_pci_p2pdma\": true\n{}"), "a comment is not a setting");
        assert!(!p2pdma_on("{ \"properties\": { \"allow_compat_mode\": true } }"), "off by default");
    }

    #[test]
    fn engines_share_one_session_which_closes_with_the_last() {
        let slot = Mutex::new(Weak::new());
        let a = Gds::new(Session::shared(&slot, || Ok(opened())).unwrap());
        let b = Gds::new(Session::shared(&slot, || panic!("a live session is reused")).unwrap());
        drop(a);
        drop(b); // driver_close, once (`opened` expects exactly one)
        let mut again = MockCuFileApi::new();
        again.expect_disable_compat_mode().returning(|| Ok(()));
        again.expect_driver_open().times(1).returning(|| Ok(()));
        again.expect_driver_close().times(1).return_const(());
        drop(Session::shared(&slot, || Ok(again)).unwrap());
    }

    #[test]
    fn files_are_registered_once_and_deregistered_with_the_file() {
        let (_f, file) = file(1 << 20);
        let direct = file.direct_fd().unwrap();
        let mut api = opened();
        api.expect_handle_register().withf(move |fd| *fd == direct).times(1).returning(|_| Ok(CuHandle(0xabc)));
        api.expect_io()
            .withf(|d, h, base, size, off, boff| {
                *d == Direction::Read
                    && *h == CuHandle(0xabc)
                    && *base == 0x20_0000
                    && *size == 4096
                    && *off == 0
                    && *boff == 0
            })
            .times(3)
            .returning(|_, _, _, size, _, _| size as isize);
        api.expect_handle_deregister().withf(|h| *h == CuHandle(0xabc)).times(1).return_const(());
        let p2p = P2p::new(Gds::open(api).unwrap(), true);
        for _ in 0..3 {
            let req = request(&file, 0x20_0000, 4096, 0);
            assert_eq!(p2p.score(&req), Ok(100));
            assert_eq!(p2p.transfer(&req), Ok(4096));
        }
        drop(file); // deregisters the cuFile handle, before the driver closes (p2p dropped after)
    }

    #[test]
    fn a_file_cufile_cannot_register_is_declined_with_cufiles_answer_once() {
        let (_f, file) = file(1 << 20);
        let mut api = opened();
        api.expect_handle_register().times(1).returning(|_| Err(CuFileError { err: 5030, cu_err: 0 }));
        let p2p = P2p::new(Gds::open(api).unwrap(), true);
        for _ in 0..3 {
            let why = p2p.score(&request(&file, 0x20_0000, 4096, 0)).unwrap_err();
            assert!(why.0.starts_with("cuFileHandleRegister failed: cuFile error 5030"), "{why}");
        }
        assert!(p2p.accepts_file(&file).is_err());
    }

    #[test]
    fn registered_buffers_are_passed_as_base_and_offset_and_kept_until_deregistered() {
        let (_f, file) = file(1 << 20);
        let mut api = opened_with_files();
        api.expect_buf_register().withf(|b, l| *b == 0x40_0000 && *l == 1 << 20).times(1).returning(|_, _| Ok(()));
        api.expect_io()
            .withf(|_, _, base, _, _, boff| *base == 0x40_0000 && *boff == 8192)
            .times(1)
            .returning(|_, _, _, size, _, _| size as isize);
        // An address outside any registered buffer goes as its own base.
        api.expect_io()
            .withf(|_, _, base, _, _, boff| *base == 0x80_0000 && *boff == 0)
            .times(1)
            .returning(|_, _, _, size, _, _| size as isize);
        api.expect_buf_deregister().withf(|b| *b == 0x40_0000).times(1).returning(|_| Ok(()));
        let p2p = P2p::new(Gds::open(api).unwrap(), true);
        p2p.buffer_registered(0x40_0000, 1 << 20, 0);
        assert_eq!(p2p.transfer(&request(&file, 0x40_0000 + 8192, 4096, 0)), Ok(4096));
        assert_eq!(p2p.transfer(&request(&file, 0x80_0000, 4096, 0)), Ok(4096));
        p2p.buffer_deregistered(0x40_0000);
        p2p.buffer_deregistered(0x40_0000); // unknown now: nothing more reaches cuFile
    }

    #[test]
    fn errors_map_to_errno_or_hipfile_codes() {
        let (_f, file) = file(1 << 20);
        let mut api = opened_with_files();
        let mut seq = Sequence::new();
        api.expect_io().times(1).in_sequence(&mut seq).returning(|_, _, _, _, _, _| {
            // SAFETY: __errno_location has no preconditions.
            let errno = unsafe { libc::__errno_location() };
            // SAFETY: errno of this thread, a valid int.
            unsafe { *errno = libc::EIO };
            -1
        });
        api.expect_io().times(1).in_sequence(&mut seq).returning(|_, _, _, _, _, _| -5011);
        api.expect_io().times(1).in_sequence(&mut seq).returning(|_, _, _, _, _, _| -42);
        let p2p = P2p::new(Gds::open(api).unwrap(), true);
        let req = request(&file, 0x20_0000, 4096, 0);
        assert_eq!(p2p.transfer(&req), Err(Error::Os(libc::EIO)));
        assert_eq!(p2p.transfer(&req), Err(Error::Op(OpError::from_code(5011).unwrap())));
        assert_eq!(p2p.transfer(&req), Err(Error::Op(OpError::InternalError)));
        assert_eq!(p2p.counters()[2], ("errors", 3));
    }
}
