//! Configuration, read once when the driver opens: `HIPFILE_BACKEND` and hipFile's own
//! `HIPFILE_*` variables. Nothing reads the environment on an I/O path.

use crate::cache::{CachePolicy, PageCache};
use crate::error::{ConfigError, Error, Result};
use crate::words::Words;

pub mod params;

use params::{BoolParam, SizeParam};

/// The most entries a batch holds by default (upstream's `IBatchContext::MAX_SIZE`); the
/// batch-size parameter (`hipFileParamPropertiesIOBatchsize`) changes it.
pub const MAX_BATCH_ENTRIES: usize = 128;

/// How an operation learns that its stream has reached it (`HIPFILE_STREAM_SIGNAL`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum StreamSignal {
    /// A host function queued on the stream hands the operation to a library thread and
    /// returns at once; the gate holds the stream until the operation is done. The default:
    /// measured against the others on the H200 machine (docs/bench/history.md, "Stream-ordered I/O").
    #[default]
    HostFn,
    /// An event recorded on the stream, polled by a library thread; the same gate.
    Event,
    /// A host function that waits for the operation (no gate). It holds the runtime's callback
    /// thread, which every stream of the context shares, for the whole I/O: what the other
    /// two avoid. Used where the runtime has no stream memory operations.
    Inline,
}

/// As `HIPFILE_STREAM_SIGNAL` spells it.
impl Words for StreamSignal {
    const WORDS: &'static [(&'static str, StreamSignal)] =
        &[("hostfn", StreamSignal::HostFn), ("event", StreamSignal::Event), ("inline", StreamSignal::Inline)];
}

/// Which family of backends the driver uses (`HIPFILE_BACKEND`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum BackendChoice {
    /// The best the machine offers: the p2p path where it works, staging otherwise, the
    /// mock GPU where there is no GPU.
    #[default]
    Auto,
    /// Direct DMA between storage and GPU memory only.
    P2p,
    /// Staging through pinned host memory only.
    Bounce,
    /// The GPU emulated in host memory.
    Mock,
}

/// As `HIPFILE_BACKEND` spells it.
impl Words for BackendChoice {
    const WORDS: &'static [(&'static str, BackendChoice)] = &[
        ("auto", BackendChoice::Auto),
        ("p2p", BackendChoice::P2p),
        ("bounce", BackendChoice::Bounce),
        ("mock", BackendChoice::Mock),
    ];
}

/// The driver's configuration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    /// `HIPFILE_BACKEND` (default `auto`).
    pub backend: BackendChoice,
    /// `HIPFILE_ALLOW_COMPAT_MODE` (default true): the bounce path may serve I/O.
    pub allow_compat_mode: bool,
    /// `HIPFILE_FORCE_COMPAT_MODE` (default false): the p2p is never used.
    pub force_compat_mode: bool,
    /// `HIPFILE_UNSUPPORTED_FILE_SYSTEMS` (default false): the p2p may serve regular files
    /// on any file system, not only ext4 `data=ordered` and xfs.
    pub unsupported_file_systems: bool,
    /// The staged (bounce) path's settings.
    pub bounce: BounceSettings,
    /// `HIPFILE_STREAM_SIGNAL` (default `hostfn`): how a stream-ordered operation learns that
    /// its stream reached it (semantics §12).
    pub stream_signal: StreamSignal,
    /// `HIPFILE_ALLOW_SYSTEM_MEMORY` / `hipFileParamPropertiesAllowSystemMemory` (default
    /// false, cuFile's): host memory, pinned or pageable, may be a buffer (semantics §4).
    pub allow_system_memory: bool,
    /// The most entries a batch may hold (`hipFileParamPropertiesIOBatchsize`, default 128).
    pub batch_size: usize,
    /// `HIPFILE_PAGE_CACHE` / the `PageCache` parameter (default `auto`): whether transfers go
    /// through the page cache (semantics §16).
    pub page_cache: PageCache,
    /// `HIPFILE_PAGE_CACHE_LIMIT_MIB`, in bytes: the largest file `auto` keeps in the page
    /// cache (default 0: half of `MemAvailable` at the time of the transfer).
    pub page_cache_limit: u64,
    /// The statistics level, 0 to 3 (`HIPFILE_STATS_LEVEL`, `hipFileParamProfileStats`; default
    /// 1, as upstream's newest release).
    pub stats_level: usize,
    /// Parameters accepted and reported that steer nothing here (semantics §13).
    pub kept: KeptValues,
}

/// Values of the parameters that have no effect here, kept so that they read back as set.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeptValues {
    /// `hipFileParamExecutionMinIOThresholdSizeKB` (default 8192, as cuFile).
    pub min_io_threshold_kb: usize,
    /// `hipFileParamExecutionMaxRequestParallelism` (default 4).
    pub max_request_parallelism: usize,
    /// `hipFileParamPropertiesMaxDeviceCacheSizeKB` (default 131072).
    pub max_device_cache_kb: usize,
    /// `hipFileParamPropertiesPerBufferCacheSizeKB` (default 1024).
    pub per_buffer_cache_kb: usize,
    /// `hipFileParamPollthresholdSizeKB` (default 4).
    pub poll_threshold_kb: usize,
    /// `hipFileParamPropertiesBatchIOTimeoutMs` (default 0).
    pub batch_io_timeout_ms: usize,
    /// Boolean parameters by their C value (those without an effect; all default false).
    pub bools: [bool; 12],
    /// The string parameters.
    pub strings: StringValues,
}

/// The string parameters' values.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StringValues {
    /// `hipFileParamLoggingLevel` (default `ERROR`).
    pub logging_level: String,
    /// `hipFileParamEnvLogfilePath` (default empty).
    pub log_file: String,
    /// `hipFileParamLogDir` (default empty).
    pub log_dir: String,
}

impl Default for KeptValues {
    fn default() -> Self {
        KeptValues {
            min_io_threshold_kb: 8192,
            max_request_parallelism: 4,
            max_device_cache_kb: 131072,
            per_buffer_cache_kb: 1024,
            poll_threshold_kb: 4,
            batch_io_timeout_ms: 0,
            bools: [false; 12],
            strings: StringValues { logging_level: "ERROR".into(), log_file: String::new(), log_dir: String::new() },
        }
    }
}

/// How the bounce backend keeps a read's last bytes out of the reading cores' own caches
/// (`HIPFILE_BOUNCE_DEMOTE`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Demote {
    /// `true`: `cldemote` (the lines move to the shared cache) where the processor has it.
    Auto,
    /// `stream`: streaming stores on any x86-64 processor (the bytes go to memory around the
    /// caches).
    Stream,
    /// `false`: neither.
    Off,
}

/// As `HIPFILE_BOUNCE_DEMOTE` spells it; any boolean word the other switches take also serves
/// for `true` and `false`.
impl Words for Demote {
    const WORDS: &'static [(&'static str, Demote)] =
        &[("true", Demote::Auto), ("false", Demote::Off), ("stream", Demote::Stream)];

    fn parse(word: &str) -> Option<Self> {
        match parse_bool(word) {
            Some(on) => Some(if on { Demote::Auto } else { Demote::Off }),
            None => word.trim().eq_ignore_ascii_case("stream").then_some(Demote::Stream),
        }
    }
}

/// Settings of the bounce path. The defaults are meant to be right without tuning.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BounceSettings {
    /// `HIPFILE_BOUNCE_THREADS`: threads moving one large request, the caller's included
    /// (default 0: the number of CPUs, at most 16).
    pub threads: usize,
    /// `HIPFILE_BOUNCE_CHUNK_KIB`: bytes per staging buffer (default 4 MiB; at least 64 KiB, a
    /// multiple of 4 KiB).
    pub chunk: usize,
    /// `HIPFILE_BOUNCE_MEMORY_MIB`: most pinned host memory for staging, per device (default
    /// 256 MiB).
    pub memory_limit: usize,
    /// `HIPFILE_DURABLE_WRITES` (default true): a write is on stable storage when it returns
    /// (one `fdatasync` per call), as upstream's fallback (our bounce) promises.
    pub durable_writes: bool,
    /// `HIPFILE_BOUNCE_IO_URING` (default true): direct I/O goes through io_uring with the
    /// staging buffers registered, where the kernel and the memlock limit allow.
    pub io_uring: bool,
    /// `HIPFILE_BOUNCE_DEMOTE` (default true): the last bytes of a read from the page cache
    /// are kept out of the reading cores' own caches, so that their copies to the device do not
    /// fetch them from there ([`Demote`]).
    pub demote: Demote,
    /// `HIPFILE_BOUNCE_DIRECT_STREAMS`: direct reads in flight at once, over all requests
    /// (default 8; storage with deep queues, such as NVMe arrays, may want more).
    pub direct_streams: usize,
    /// `HIPFILE_BOUNCE_GATHER` (default true): small reads from several threads at once are
    /// copied to the device together, one operation for all of them, where the runtime can
    /// ([`crate::GpuRuntime::gathers`]).
    pub gather: bool,
}

impl Default for BounceSettings {
    fn default() -> Self {
        BounceSettings {
            threads: 0,
            chunk: 4 << 20,
            memory_limit: 256 << 20,
            durable_writes: true,
            io_uring: true,
            demote: Demote::Auto,
            direct_streams: 8,
            gather: true,
        }
    }
}

impl Default for Config {
    fn default() -> Self {
        Config {
            backend: BackendChoice::Auto,
            allow_compat_mode: true,
            force_compat_mode: false,
            unsupported_file_systems: false,
            bounce: BounceSettings::default(),
            stream_signal: StreamSignal::HostFn,
            allow_system_memory: false,
            batch_size: MAX_BATCH_ENTRIES,
            page_cache: PageCache::Auto,
            page_cache_limit: 0,
            stats_level: 1,
            kept: KeptValues::default(),
        }
    }
}

const BOOL_WORDS: &str = "true/false, 1/0, yes/no, on/off";

impl Config {
    /// Reads the configuration from the process environment.
    pub fn from_env() -> Result<Config> {
        Config::from_lookup(|name| std::env::var(name).ok())
    }

    /// Reads the configuration through `lookup` (a variable's value, `None` when unset), so
    /// tests can configure a driver without touching the process environment. An empty value
    /// counts as unset; an unknown value is an error naming the variable and what it accepts.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Config> {
        let get = |name: &str| lookup(name).filter(|v| !v.trim().is_empty());
        let mut config = Config::default();
        // A variable whose values are words: its type's table (`Words`) parses it.
        if let Some(v) = parse_word(&get, "HIPFILE_BACKEND")? {
            config.backend = v;
        }
        if let Some(v) = parse_word(&get, "HIPFILE_STREAM_SIGNAL")? {
            config.stream_signal = v;
        }
        if let Some(v) = parse_word(&get, "HIPFILE_PAGE_CACHE")? {
            config.page_cache = v;
        }
        params::read_variables(&mut config, &get)?;
        if let Some(v) = parse_word(&get, "HIPFILE_BOUNCE_DEMOTE")? {
            config.bounce.demote = v;
        }
        if let Some(value) = get("HIPFILE_STATS_LEVEL") {
            // As upstream: a number, larger ones meaning the highest level.
            let digits = value.trim();
            if !digits.bytes().all(|c| c.is_ascii_digit()) {
                return Err(invalid("HIPFILE_STATS_LEVEL", value, "0 (off) to 3; larger numbers mean 3"));
            }
            config.stats_level = digits.parse::<u64>().map_or(3, |n| n.min(3) as usize);
        }
        let (limit, accepted) = ("HIPFILE_PAGE_CACHE_LIMIT_MIB", "0 (half of MemAvailable) or more MiB");
        if let Some(mib) = parse_number(&get, limit, accepted, |m| m.checked_mul(1 << 20).is_some())? {
            config.page_cache_limit = (mib as u64) << 20;
        }
        Ok(config)
    }

    /// The page-cache policy this configuration sets (semantics §16).
    pub fn cache_policy(&self) -> CachePolicy {
        CachePolicy::new(self.page_cache, self.page_cache_limit)
    }

    /// Whether the p2p backends may serve I/O.
    pub fn p2p_enabled(&self) -> bool {
        !self.force_compat_mode
    }

    /// Whether the bounce backends may serve I/O. Forcing compat mode while
    /// forbidding it leaves bounce on, as upstream does: otherwise nothing could run.
    pub fn bounce_enabled(&self) -> bool {
        self.allow_compat_mode || self.force_compat_mode
    }
}

/// The value the word-valued variable `name` names (`None` where `get` finds it unset), or an
/// error listing its words.
fn parse_word<T: Words>(get: &impl Fn(&str) -> Option<String>, name: &'static str) -> Result<Option<T>> {
    get(name).map(|text| T::parse(&text).ok_or_else(|| invalid(name, text, T::words()))).transpose()
}

/// A variable whose value is a number `ok` accepts; anything else is an error saying what is
/// `accepted`.
fn parse_number(
    get: &impl Fn(&str) -> Option<String>,
    name: &'static str,
    accepted: &'static str,
    ok: fn(usize) -> bool,
) -> Result<Option<usize>> {
    get(name).map(|v| v.trim().parse().ok().filter(|&n| ok(n)).ok_or_else(|| invalid(name, v, accepted))).transpose()
}

fn invalid(var: &'static str, value: String, accepted: impl Into<String>) -> Error {
    Error::Config(ConfigError { var, value, accepted: accepted.into() })
}

/// Upstream accepts `true`/`false` (any case); we also take `1/0/yes/no/on/off`.
fn parse_bool(value: &str) -> Option<bool> {
    match value.trim().to_ascii_lowercase().as_str() {
        "true" | "1" | "yes" | "on" => Some(true),
        "false" | "0" | "no" | "off" => Some(false),
        _ => None,
    }
}

/// `hipFileDriverProps_t`, in Rust (sizes in KiB).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DriverProperties {
    /// `nvfs.major_version`, `nvfs.minor_version`: the library's version.
    pub version: (u32, u32),
    /// `nvfs.poll_thresh_size`.
    pub poll_threshold_kb: u64,
    /// `nvfs.max_direct_io_size`: the bounce chunk.
    pub max_direct_io_kb: u64,
    /// `nvfs.driver_status_flags`: bit 4 (`hipFileNVMeSupported`) where a p2p path is open.
    pub status_flags: u32,
    /// `nvfs.driver_control_flags`: bit 0 poll mode, bit 1 compat mode allowed.
    pub control_flags: u32,
    /// `feature_flags`: batches, streams and parallel I/O (bits 1-3).
    pub feature_flags: u32,
    /// `max_device_cache_size`.
    pub max_device_cache_kb: u64,
    /// `per_buffer_cache_size`.
    pub per_buffer_cache_kb: u64,
    /// `max_device_pinned_mem_size`.
    pub max_pinned_kb: u64,
    /// `max_batch_io_count`.
    pub max_batch_io_count: u32,
    /// `max_batch_io_timeout_msecs`.
    pub max_batch_io_timeout_ms: u32,
}

impl DriverProperties {
    /// The properties a driver with `config` has; `direct` says whether a p2p path is open.
    pub(crate) fn of(config: &Config, direct: bool) -> Self {
        let kb = |p| config.size_parameter(p) as u64;
        let clamp32 = |v: usize| u32::try_from(v).unwrap_or(u32::MAX);
        DriverProperties {
            version: (crate::version::API_VERSION.0, crate::version::API_VERSION.1),
            poll_threshold_kb: kb(SizeParam::PollThresholdSizeKb),
            max_direct_io_kb: kb(SizeParam::MaxDirectIoSizeKb),
            status_flags: if direct { 1 << 4 } else { 0 },
            control_flags: u32::from(config.bool_parameter(BoolParam::UsePollMode))
                | u32::from(config.allow_compat_mode) << 1,
            feature_flags: 1 << 1 | 1 << 2 | 1 << 3,
            max_device_cache_kb: kb(SizeParam::MaxDeviceCacheSizeKb),
            per_buffer_cache_kb: kb(SizeParam::PerBufferCacheSizeKb),
            max_pinned_kb: kb(SizeParam::MaxDevicePinnedMemSizeKb),
            max_batch_io_count: clamp32(config.batch_size),
            max_batch_io_timeout_ms: clamp32(config.size_parameter(SizeParam::BatchIoTimeoutMs)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(vars: &[(&str, &str)]) -> Result<Config> {
        Config::from_lookup(|name| vars.iter().find(|(k, _)| *k == name).map(|(_, v)| v.to_string()))
    }

    #[test]
    fn defaults_when_unset_or_empty() {
        assert_eq!(config(&[]).unwrap(), Config::default());
        assert_eq!(config(&[("HIPFILE_BACKEND", ""), ("HIPFILE_ALLOW_COMPAT_MODE", " ")]).unwrap(), Config::default());
    }

    #[test]
    fn backend_names() {
        for (word, choice) in [
            ("auto", BackendChoice::Auto),
            ("P2P", BackendChoice::P2p),
            ("bounce", BackendChoice::Bounce),
            (" mock ", BackendChoice::Mock),
        ] {
            assert_eq!(config(&[("HIPFILE_BACKEND", word)]).unwrap().backend, choice);
        }
    }

    #[test]
    fn booleans_in_every_spelling() {
        for (word, value) in [("true", true), ("TRUE", true), ("1", true), ("yes", true), ("On", true)]
            .into_iter()
            .chain([("false", false), ("0", false), ("no", false), ("off", false)])
        {
            let c = config(&[("HIPFILE_FORCE_COMPAT_MODE", word), ("HIPFILE_ALLOW_COMPAT_MODE", word)]).unwrap();
            assert_eq!((c.force_compat_mode, c.allow_compat_mode), (value, value), "{word}");
        }
    }

    #[test]
    fn unknown_values_name_the_variable_and_the_choices() {
        let err = config(&[("HIPFILE_BACKEND", "gpu")]).unwrap_err();
        let text = err.to_string();
        assert!(
            text.contains("HIPFILE_BACKEND") && text.contains("\"gpu\"") && text.contains("auto, p2p, bounce, mock"),
            "{text}"
        );
        assert_eq!(err.to_c_pair().0, 5002);
        let err = config(&[("HIPFILE_ALLOW_COMPAT_MODE", "maybe")]).unwrap_err();
        assert!(err.to_string().contains("HIPFILE_ALLOW_COMPAT_MODE"), "{err}");
    }

    #[test]
    fn the_async_buffer_size_is_a_floor_for_the_staging_pool() {
        let pool = |vars: &[(&str, &str)]| config(vars).unwrap().bounce.memory_limit;
        let default = pool(&[]);
        assert_eq!(pool(&[("HIPFILE_ASYNC_BUFFER_SIZE", "0")]), default);
        assert_eq!(pool(&[("HIPFILE_ASYNC_BUFFER_SIZE", "16777216")]), default); // below the default
        assert_eq!(pool(&[("HIPFILE_ASYNC_BUFFER_SIZE", "1073741825")]), 1025 << 20); // rounded up to MiB
        let both = [("HIPFILE_ASYNC_BUFFER_SIZE", "1073741824"), ("HIPFILE_BOUNCE_MEMORY_MIB", "64")];
        assert_eq!(pool(&both), 64 << 20); // the pool's own setting wins
        let err = config(&[("HIPFILE_ASYNC_BUFFER_SIZE", "16M")]).unwrap_err().to_string();
        assert!(err.contains("HIPFILE_ASYNC_BUFFER_SIZE"), "{err}");
    }

    #[test]
    fn bounce_settings() {
        let c = config(&[
            ("HIPFILE_BOUNCE_THREADS", "8"),
            ("HIPFILE_BOUNCE_CHUNK_KIB", "1024"),
            ("HIPFILE_BOUNCE_MEMORY_MIB", "64"),
            ("HIPFILE_DURABLE_WRITES", "off"),
            ("HIPFILE_BOUNCE_IO_URING", "no"),
            ("HIPFILE_BOUNCE_DEMOTE", "false"),
            ("HIPFILE_BOUNCE_DIRECT_STREAMS", "16"),
            ("HIPFILE_BOUNCE_GATHER", "no"),
        ])
        .unwrap();
        let expected = BounceSettings {
            threads: 8,
            chunk: 1 << 20,
            memory_limit: 64 << 20,
            durable_writes: false,
            io_uring: false,
            demote: Demote::Off,
            direct_streams: 16,
            gather: false,
        };
        assert_eq!(c.bounce, expected);
        for (word, demote) in [("on", Demote::Auto), (" Stream", Demote::Stream)] {
            assert_eq!(config(&[("HIPFILE_BOUNCE_DEMOTE", word)]).unwrap().bounce.demote, demote, "{word}");
        }
        assert_eq!(config(&[]).unwrap().bounce.demote, Demote::Auto);
        for (var, bad) in [
            ("HIPFILE_BOUNCE_THREADS", "many"),
            ("HIPFILE_BOUNCE_THREADS", "1000"),
            ("HIPFILE_BOUNCE_CHUNK_KIB", "6"),
            ("HIPFILE_BOUNCE_CHUNK_KIB", "1026"),
            ("HIPFILE_BOUNCE_MEMORY_MIB", "0"),
            ("HIPFILE_BOUNCE_DEMOTE", "sometimes"),
            ("HIPFILE_BOUNCE_DIRECT_STREAMS", "0"),
        ] {
            let err = config(&[(var, bad)]).unwrap_err().to_string();
            assert!(err.contains(var) && err.contains(bad), "{err}");
        }
    }

    #[test]
    fn page_cache_settings() {
        assert_eq!((config(&[]).unwrap().page_cache, config(&[]).unwrap().page_cache_limit), (PageCache::Auto, 0));
        let c = config(&[("HIPFILE_PAGE_CACHE", " Bypass"), ("HIPFILE_PAGE_CACHE_LIMIT_MIB", "64")]).unwrap();
        assert_eq!((c.page_cache, c.page_cache_limit), (PageCache::Bypass, 64 << 20));
        assert_eq!(config(&[("HIPFILE_PAGE_CACHE", "keep")]).unwrap().page_cache, PageCache::Keep);
        for (var, bad) in [("HIPFILE_PAGE_CACHE", "direct"), ("HIPFILE_PAGE_CACHE_LIMIT_MIB", "-1")] {
            let err = config(&[(var, bad)]).unwrap_err().to_string();
            assert!(err.contains(var) && err.contains(bad), "{err}");
        }
    }

    #[test]
    fn compat_mode_combinations() {
        let modes = |allow: &str, force: &str| {
            let c = config(&[("HIPFILE_ALLOW_COMPAT_MODE", allow), ("HIPFILE_FORCE_COMPAT_MODE", force)]).unwrap();
            (c.p2p_enabled(), c.bounce_enabled())
        };
        assert_eq!(modes("true", "false"), (true, true));
        assert_eq!(modes("false", "false"), (true, false));
        assert_eq!(modes("true", "true"), (false, true));
        assert_eq!(modes("false", "true"), (false, true));
    }
}
