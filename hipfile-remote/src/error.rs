//! Errors of remote sources: each names the object's URL (as shown, never with credentials) and
//! what went wrong, and maps to the errno a local file's failure of the same kind would give.

use std::fmt;
use std::sync::Mutex;

/// What went wrong, coarsely: what a caller branches on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    /// Not a URL this library reads (`s3://`, `gs://`, `az://`, `http(s)://`), or one missing
    /// its bucket or key.
    BadUrl,
    /// No such bucket or object (HTTP 404).
    NotFound,
    /// Access denied or not authenticated (HTTP 401/403).
    Denied,
    /// The object changed while it was being read (its ETag no longer matched).
    Changed,
    /// The store sent fewer bytes than asked for, after the retries.
    ShortBody,
    /// The store could not be reached, or failed (connection refused or reset, HTTP 5xx).
    Store,
    /// The node-local cache could not be used (its directory, its files, a full disk).
    Cache,
    /// The request does not fit the object or the buffer (a range past the end, a write out of
    /// order), or the GPU runtime refused a copy.
    Invalid,
}

/// An error of a remote source.
#[derive(Debug)]
pub struct Error {
    kind: ErrorKind,
    url: String,
    detail: String,
    errno: Option<i32>,
}

impl Error {
    pub(crate) fn new(kind: ErrorKind, url: &str, detail: impl Into<String>) -> Self {
        Error { kind, url: url.to_owned(), detail: scrub(detail.into()), errno: None }
    }

    /// An error of the cache's files (`errno` from the system call).
    pub(crate) fn cache(url: &str, what: impl fmt::Display, e: &std::io::Error) -> Self {
        Error { errno: e.raw_os_error(), ..Error::new(ErrorKind::Cache, url, format!("{what}: {e}")) }
    }

    /// object_store's error, classified.
    pub(crate) fn store(url: &str, e: object_store::Error) -> Self {
        use object_store::Error as E;
        let kind = match &e {
            E::NotFound { .. } => ErrorKind::NotFound,
            E::PermissionDenied { .. } | E::Unauthenticated { .. } => ErrorKind::Denied,
            E::Precondition { .. } | E::NotModified { .. } => ErrorKind::Changed,
            _ => ErrorKind::Store,
        };
        let detail = match kind {
            ErrorKind::NotFound => format!("no such object or bucket ({e})"),
            ErrorKind::Denied => format!("access denied ({e})"),
            ErrorKind::Changed => format!("the object changed while it was read ({e})"),
            _ => format!("the store failed ({e})"),
        };
        Error::new(kind, url, detail)
    }

    /// What went wrong.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// The URL it concerns, as shown (no credentials, no query).
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The errno a local file's failure of the same kind would give (`ENOENT` for a missing
    /// object, `EACCES` for a denied one, `ESTALE` for a changed one, `EIO` for a failed store).
    pub fn errno(&self) -> i32 {
        if let Some(errno) = self.errno {
            return errno;
        }
        match self.kind {
            ErrorKind::BadUrl | ErrorKind::Invalid => libc_errno::EINVAL,
            ErrorKind::NotFound => libc_errno::ENOENT,
            ErrorKind::Denied => libc_errno::EACCES,
            ErrorKind::Changed => libc_errno::ESTALE,
            ErrorKind::ShortBody | ErrorKind::Store | ErrorKind::Cache => libc_errno::EIO,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.url, self.detail)
    }
}

impl std::error::Error for Error {}

/// As an I/O error of the kind its errno names, with its message (the URL and what went wrong).
impl From<Error> for std::io::Error {
    fn from(e: Error) -> Self {
        std::io::Error::new(std::io::Error::from_raw_os_error(e.errno()).kind(), e.to_string())
    }
}

/// The numbers, from rustix (no libc dependency for five constants).
mod libc_errno {
    pub(super) const EINVAL: i32 = rustix::io::Errno::INVAL.raw_os_error();
    pub(super) const ENOENT: i32 = rustix::io::Errno::NOENT.raw_os_error();
    pub(super) const EACCES: i32 = rustix::io::Errno::ACCESS.raw_os_error();
    pub(super) const ESTALE: i32 = rustix::io::Errno::STALE.raw_os_error();
    pub(super) const EIO: i32 = rustix::io::Errno::IO.raw_os_error();
}

/// A result of this crate.
pub type Result<T> = std::result::Result<T, Error>;

/// `text` with every credential the process was given (the AWS, GCS and Azure secrets in the
/// environment, and those of the profile in use) replaced by `***`: the stores' messages may
/// quote a request, and no message of ours may carry a secret.
pub(crate) fn scrub(mut text: String) -> String {
    for secret in secrets() {
        if secret.len() >= 8 && text.contains(secret.as_str()) {
            text = text.replace(secret.as_str(), "***");
        }
    }
    text
}

/// Secrets read from profiles so far (the environment's are read when asked).
static SECRETS: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// Keeps `secret` (a profile's) out of every message from now on.
pub(crate) fn remember_secret(secret: &str) {
    let mut known = SECRETS.lock().unwrap_or_else(|p| p.into_inner());
    if !known.iter().any(|k| k == secret) {
        known.push(secret.to_owned());
    }
}

/// Every credential this process knows of, to be kept out of messages.
fn secrets() -> Vec<String> {
    let mut out: Vec<String> = [
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
        "GOOGLE_SERVICE_ACCOUNT_KEY",
        "AZURE_STORAGE_ACCOUNT_KEY",
        "AZURE_STORAGE_ACCESS_KEY",
        "AZURE_STORAGE_SAS_KEY",
        "AZURE_STORAGE_TOKEN",
        "AZURE_CLIENT_SECRET",
    ]
    .iter()
    .filter_map(|k| std::env::var(k).ok())
    .collect();
    out.extend(SECRETS.lock().unwrap_or_else(|p| p.into_inner()).iter().cloned());
    out
}
