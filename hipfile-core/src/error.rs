//! Errors: one type for every failure hipFile can report, and the one place that maps it onto
//! hipFile's C return conventions (`hipFileError_t` pairs and `ssize_t` results).

use std::fmt;

pub use hipfile_abi::{OpError, op_error_cstr};

/// A HIP runtime error code (`hipError_t`), kept as the raw number: runtimes add codes, and
/// an unknown one must travel through unchanged.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct HipError(pub i32);

#[allow(missing_docs)]
impl HipError {
    pub const INVALID_VALUE: HipError = HipError(1);
    pub const OUT_OF_MEMORY: HipError = HipError(2);
    pub const NOT_INITIALIZED: HipError = HipError(3);
    pub const INVALID_DEVICE_POINTER: HipError = HipError(17);
    pub const NO_DEVICE: HipError = HipError(100);
    pub const INVALID_DEVICE: HipError = HipError(101);
    pub const INVALID_HANDLE: HipError = HipError(400);
    pub const NOT_FOUND: HipError = HipError(500);
    pub const NOT_READY: HipError = HipError(600);
    pub const LAUNCH_FAILURE: HipError = HipError(719);
    pub const NOT_SUPPORTED: HipError = HipError(801);
    pub const UNKNOWN: HipError = HipError(999);

    /// The HIP name of the code, where it is one this crate knows.
    pub fn name(self) -> Option<&'static str> {
        Some(match self.0 {
            1 => "hipErrorInvalidValue",
            2 => "hipErrorOutOfMemory",
            3 => "hipErrorNotInitialized",
            17 => "hipErrorInvalidDevicePointer",
            100 => "hipErrorNoDevice",
            101 => "hipErrorInvalidDevice",
            400 => "hipErrorInvalidHandle",
            500 => "hipErrorNotFound",
            600 => "hipErrorNotReady",
            719 => "hipErrorLaunchFailure",
            801 => "hipErrorNotSupported",
            999 => "hipErrorUnknown",
            _ => return None,
        })
    }
}

impl fmt::Display for HipError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(name) => write!(f, "{name} ({})", self.0),
            None => write!(f, "HIP error {}", self.0),
        }
    }
}

impl std::error::Error for HipError {}

/// Why a `HIPFILE_*` environment variable was refused when the driver opened.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigError {
    /// The variable's name.
    pub var: &'static str,
    /// The value it had.
    pub value: String,
    /// The values it accepts, in words.
    pub accepted: String,
}

/// Every way a hipFile operation can fail.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Error {
    /// A hipFile error code.
    Op(OpError),
    /// An operating-system error (`errno`).
    Os(i32),
    /// The GPU runtime failed; hipFile reports it as `hipFileHipDriverError` with this code.
    Hip(HipError),
    /// The configuration read at driver open is invalid (`hipFileDriverInvalidProps`).
    Config(ConfigError),
}

/// Shorthand for results of hipFile operations.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// The `errno` of an OS error, if this is one.
    pub fn errno(&self) -> Option<i32> {
        match self {
            Error::Os(e) => Some(*e),
            _ => None,
        }
    }

    /// The error of the calling thread's last failed system call.
    pub fn last_os_error() -> Error {
        Error::Os(std::io::Error::last_os_error().raw_os_error().unwrap_or(libc::EIO))
    }

    /// This error as a `hipFileError_t {err, hip_drv_err}` pair.
    ///
    /// OS errors have no code of their own in that convention; they are mapped to the nearest
    /// hipFile code (`EINVAL` and `EBADF` are invalid arguments, out of descriptors is
    /// `hipFileGetNewFDFailed`, `EACCES`/`EPERM` are `hipFilePermissionDenied`) and anything
    /// else is `hipFileInternalError`, as upstream does for unexpected exceptions.
    pub fn to_c_pair(&self) -> (i32, i32) {
        match self {
            Error::Op(op) => (op.code(), 0),
            Error::Hip(hip) => (OpError::HipDriverError.code(), hip.0),
            Error::Config(_) => (OpError::DriverInvalidProps.code(), 0),
            Error::Os(errno) => {
                let op = match *errno {
                    // A negative offset, or one past the largest file offset, is `EINVAL` in the
                    // `ssize_t` convention and hipFileInvalidValue in this one (semantics §1).
                    libc::EINVAL | libc::EBADF => OpError::InvalidValue,
                    libc::EMFILE | libc::ENFILE => OpError::GetNewFdFailed,
                    libc::EACCES | libc::EPERM => OpError::PermissionDenied,
                    _ => OpError::InternalError,
                };
                (op.code(), 0)
            }
        }
    }
}

/// What `hipFileRead`/`hipFileWrite` return for a result, and the `errno` to set with it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SsizeResult {
    /// The `ssize_t` return value.
    pub value: isize,
    /// The value to store in `errno` before returning, when the convention needs one.
    pub errno: Option<i32>,
}

/// Maps the result of a read or write onto hipFile's `ssize_t` convention (semantics §1):
/// bytes moved; `-1` with `errno` for OS errors; `-code` for hipFile errors; `-(hipError_t)`
/// for HIP runtime errors (upstream's convention, although it can collide with `-1`).
///
/// I/O while the driver is closed returns `-1` with `errno = EINVAL`, as upstream does to
/// match cuFile.
pub fn ssize_result(result: &Result<usize>) -> SsizeResult {
    let fail = |value: isize, errno| SsizeResult { value, errno };
    match result {
        // A transfer is capped at 0x7ffff000 bytes, so it always fits.
        Ok(n) => fail(isize::try_from(*n).unwrap_or(isize::MAX), None),
        Err(Error::Os(errno)) => fail(-1, Some(*errno)),
        Err(Error::Op(OpError::DriverNotInitialized)) => fail(-1, Some(libc::EINVAL)),
        Err(Error::Op(op)) => fail(-(op.code() as isize), None),
        Err(Error::Hip(hip)) => fail(-(hip.0 as isize), None),
        Err(Error::Config(_)) => fail(-(OpError::DriverInvalidProps.code() as isize), None),
    }
}

/// A result as a batch event's `ret` or a stream-ordered operation's `*bytes_*_p` carries it:
/// the bytes, or a negative `errno` (`-EFBIG`), hipFile code (`-5022`) or HIP error. This is
/// [`ssize_result`]'s convention with the `errno` itself in place of `-1` (another thread reads
/// it, so `errno` cannot carry it).
pub fn negative_ret(result: &Result<usize>) -> i64 {
    match result {
        Err(Error::Os(errno)) => -i64::from(*errno),
        _ => ssize_result(result).value as i64,
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Op(op) => write!(f, "{} (hipFile error {})", op.message(), op.code()),
            Error::Os(errno) => write!(f, "{}", std::io::Error::from_raw_os_error(*errno)),
            Error::Hip(hip) => write!(f, "GPU runtime error: {hip}"),
            Error::Config(c) => {
                write!(f, "invalid value {:?} for {}: accepted values are {}", c.value, c.var, c.accepted)
            }
        }
    }
}

impl std::error::Error for Error {}

impl From<OpError> for Error {
    fn from(op: OpError) -> Self {
        Error::Op(op)
    }
}

impl From<HipError> for Error {
    fn from(hip: HipError) -> Self {
        Error::Hip(hip)
    }
}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Self {
        Error::Os(e.raw_os_error().unwrap_or(libc::EIO))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_upstreams_numbers_with_the_two_gaps() {
        let codes: Vec<i32> = OpError::ALL.iter().map(|e| e.code()).collect();
        let expected: Vec<i32> = (5001..=5039).filter(|c| *c != 5021 && *c != 5032).collect();
        assert_eq!(codes, expected);
        for c in 5001..=5039 {
            assert_eq!(OpError::from_code(c).map(OpError::code), expected.contains(&c).then_some(c));
        }
        assert_eq!(OpError::from_code(0), None);
    }

    #[test]
    fn every_code_has_its_own_message() {
        let mut seen = std::collections::HashSet::new();
        for e in OpError::ALL {
            assert_ne!(e.message(), "Unknown hipFile error", "{e:?}");
            assert!(seen.insert(e.message()), "duplicate message for {e:?}");
        }
        assert_eq!(op_error_cstr(0), c"hipFile success");
        assert_eq!(op_error_cstr(5021), c"Unknown hipFile error");
        assert_eq!(op_error_cstr(-1), c"Unknown hipFile error");
        assert_eq!(OpError::InvalidValue.message(), "One or more arguments have an invalid value");
    }

    #[test]
    fn c_pairs() {
        assert_eq!(Error::Op(OpError::HandleNotRegistered).to_c_pair(), (5027, 0));
        assert_eq!(Error::Hip(HipError(719)).to_c_pair(), (5011, 719));
        assert_eq!(Error::Os(libc::EBADF).to_c_pair(), (5022, 0));
        assert_eq!(Error::Os(libc::EINVAL).to_c_pair(), (5022, 0));
        assert_eq!(Error::Os(libc::EMFILE).to_c_pair(), (5031, 0));
        assert_eq!(Error::Os(libc::EIO).to_c_pair(), (5030, 0));
    }

    #[test]
    fn ssize_conventions() {
        let r = |res: Result<usize>| ssize_result(&res);
        assert_eq!(r(Ok(4096)), SsizeResult { value: 4096, errno: None });
        assert_eq!(r(Err(Error::Os(libc::EIO))), SsizeResult { value: -1, errno: Some(libc::EIO) });
        assert_eq!(r(Err(OpError::InvalidValue.into())).value, -5022);
        assert_eq!(r(Err(OpError::HandleNotRegistered.into())).value, -5027);
        assert_eq!(r(Err(HipError::UNKNOWN.into())).value, -999);
        assert_eq!(r(Err(OpError::DriverNotInitialized.into())), SsizeResult { value: -1, errno: Some(libc::EINVAL) });
    }
}
