//! What a subcommand moved between files and GPU memory, in what time and where: its GB/s.

/// `bytes` moved in `seconds` on `platform`.
pub(crate) struct Moved {
    pub(crate) bytes: u64,
    pub(crate) seconds: f64,
    /// The platform's description.
    pub(crate) platform: String,
}

impl Moved {
    /// GB/s (1e9 bytes/s); 0 where no time passed.
    pub(crate) fn gbps(&self) -> f64 {
        if self.seconds > 0.0 { self.bytes as f64 / self.seconds / 1e9 } else { 0.0 }
    }
}
