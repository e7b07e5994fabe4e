//! How remote reads and writes are cut and how many run at once (`HIPFILE_REMOTE_*`).

use std::sync::OnceLock;

/// How remote reads and writes are cut and how many run at once.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Settings {
    /// The bytes of one range request (`HIPFILE_REMOTE_PART_MIB`, default 8 MiB); uploads use
    /// parts of at least 16 MiB (S3 allows 10,000 parts: 160 GiB objects).
    pub part_size: usize,
    /// Requests in flight at once (`HIPFILE_REMOTE_CONNECTIONS`, default 16).
    pub connections: usize,
}

impl Default for Settings {
    fn default() -> Self {
        Settings { part_size: 8 << 20, connections: 16 }
    }
}

impl Settings {
    /// The settings of the environment (read once per process); a value out of range is
    /// ignored for the default, with a warning in the log.
    pub fn from_env() -> Settings {
        static READ: OnceLock<Settings> = OnceLock::new();
        *READ.get_or_init(|| {
            let var = |name: &str, range: std::ops::RangeInclusive<usize>, default: usize| {
                let Ok(text) = std::env::var(name) else { return default };
                match text.trim().parse::<usize>() {
                    Ok(v) if range.contains(&v) => v,
                    _ => {
                        tracing::warn!(
                            "{name}={text:?} is not a number from {} to {}: {default} is used",
                            range.start(),
                            range.end()
                        );
                        default
                    }
                }
            };
            let d = Settings::default();
            Settings {
                part_size: var("HIPFILE_REMOTE_PART_MIB", 1..=1024, d.part_size >> 20) << 20,
                connections: var("HIPFILE_REMOTE_CONNECTIONS", 1..=256, d.connections),
            }
        })
    }

    /// The part size of uploads.
    pub(crate) fn upload_part(&self) -> usize {
        self.part_size.max(16 << 20)
    }
}
