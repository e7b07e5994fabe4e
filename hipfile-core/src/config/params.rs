//! The parameters in one place (semantics §13): hipFile's parameters, their C values and the
//! values each takes (the table), the variables that set them (`read_variables`), and their
//! get and set on a [`Config`] (what each steers); the staged setting applied at the next open.
//! The driver's calls that lock its state around these are `driver/params.rs`. cuFile's
//! semantics (upstream's system tests, `test/system/config.cpp`).
//!
//! A value set while the driver is closed is *staged*; the next open applies it over the
//! `HIPFILE_*` settings, and it is then the value in use until the driver closes, when the
//! defaults (and the environment) are back. Setting a value while the driver is open is
//! `hipFileDriverAlreadyOpen`. Every value is checked when it is set.
//!
//! Each parameter that names something the library has steers it (see [`Config`]'s fields);
//! the others are kept and reported, and `docs/compat.md` says why they have no effect here.

use super::{BOOL_WORDS, Config, StreamSignal, StringValues, invalid, parse_bool, parse_number};
use crate::cache::PageCache;
use crate::error::{OpError, Result};
use crate::words::Words;

macro_rules! parameters {
    ($(#[$doc:meta])* $name:ident { $($(#[$vdoc:meta])* $variant:ident,)+ }) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum $name { $($(#[$vdoc])* $variant,)+ }

        impl $name {
            /// Every parameter, in the C enum's order.
            pub const ALL: &'static [$name] = &[$($name::$variant,)+];

            /// The parameter with the C enum's value `raw`, if any.
            pub fn from_raw(raw: i32) -> Option<$name> {
                usize::try_from(raw).ok().and_then(|i| Self::ALL.get(i).copied())
            }
        }
    };
}

parameters! {
    /// `hipFileSizeTConfigParameter_t`.
    SizeParam {
        /// `hipFileParamProfileStats`: the statistics level, 0 to 3.
        ProfileStats,
        /// `hipFileParamExecutionMaxIOQueueDepth`: direct reads in flight at once.
        MaxIoQueueDepth,
        /// `hipFileParamExecutionMaxIOThreads`: threads per large bounce request (0: automatic).
        MaxIoThreads,
        /// `hipFileParamExecutionMinIOThresholdSizeKB` (no effect here).
        MinIoThresholdSizeKb,
        /// `hipFileParamExecutionMaxRequestParallelism` (no effect here).
        MaxRequestParallelism,
        /// `hipFileParamPropertiesMaxDirectIOSizeKB`: the bounce chunk, KiB.
        MaxDirectIoSizeKb,
        /// `hipFileParamPropertiesMaxDeviceCacheSizeKB` (no effect here).
        MaxDeviceCacheSizeKb,
        /// `hipFileParamPropertiesPerBufferCacheSizeKB` (no effect here).
        PerBufferCacheSizeKb,
        /// `hipFileParamPropertiesMaxDevicePinnedMemSizeKB`: pinned staging per device, KiB.
        MaxDevicePinnedMemSizeKb,
        /// `hipFileParamPropertiesIOBatchsize`: the most entries a batch may hold.
        IoBatchsize,
        /// `hipFileParamPollthresholdSizeKB` (no effect here).
        PollThresholdSizeKb,
        /// `hipFileParamPropertiesBatchIOTimeoutMs` (no effect here).
        BatchIoTimeoutMs,
    }
}

parameters! {
    /// `hipFileBoolConfigParameter_t`.
    BoolParam {
        /// `hipFileParamPropertiesUsePollMode` (no effect here).
        UsePollMode,
        /// `hipFileParamPropertiesAllowCompatMode`: the bounce path may serve I/O.
        AllowCompatMode,
        /// `hipFileParamForceCompatMode`: the p2p path is never used.
        ForceCompatMode,
        /// `hipFileParamFsMiscApiCheckAggressive` (no effect here).
        FsMiscApiCheckAggressive,
        /// `hipFileParamExecutionParallelIO`: false keeps each bounce request on its caller's
        /// thread.
        ExecutionParallelIo,
        /// `hipFileParamProfileNvtx` (no effect here).
        ProfileNvtx,
        /// `hipFileParamPropertiesAllowSystemMemory`: host memory may be a buffer.
        AllowSystemMemory,
        /// `hipFileParamUsePcip2pdma` (no effect here).
        UsePcip2pdma,
        /// `hipFileParamPreferIOUring`: io_uring for the bounce path's direct I/O.
        PreferIoUring,
        /// `hipFileParamForceOdirectMode`: true is the page-cache policy `bypass` (semantics
        /// §16); false leaves another policy as it is, and turns `bypass` into `auto`.
        ForceOdirectMode,
        /// `hipFileParamSkipTopologyDetection` (no effect here).
        SkipTopologyDetection,
        /// `hipFileParamStreamMemopsBypass`: stream-ordered I/O without stream memory
        /// operations (`HIPFILE_STREAM_SIGNAL=inline`).
        StreamMemopsBypass,
    }
}

/// `hipFileStringConfigParameter_t`: upstream's three values, then ours from
/// [`StringParam::EXTENSIONS`] on (so that one past upstream's last stays invalid, as its tests
/// expect).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum StringParam {
    /// `hipFileParamLoggingLevel`: `ERROR`, `WARN`, `INFO`, `DEBUG`, `TRACE`.
    LoggingLevel,
    /// `hipFileParamEnvLogfilePath`: the log file.
    EnvLogfilePath,
    /// `hipFileParamLogDir`: an existing directory (else not applied at open) for
    /// `hipfile_<pid>.log`.
    LogDir,
    /// `hipFileParamPageCache` (ours, [`StringParam::EXTENSIONS`]): the page-cache policy,
    /// `auto`, `keep` or `bypass` (semantics §16).
    PageCache,
}

impl StringParam {
    /// Every parameter: upstream's in the C enum's order, then ours.
    pub const ALL: &'static [StringParam] =
        &[StringParam::LoggingLevel, StringParam::EnvLogfilePath, StringParam::LogDir, StringParam::PageCache];

    /// The C value of the first of our own parameters (`hipFileParamPageCache`).
    pub const EXTENSIONS: i32 = 1000;

    /// The parameter with the C enum's value `raw`, if any.
    pub fn from_raw(raw: i32) -> Option<StringParam> {
        match raw {
            0 => Some(StringParam::LoggingLevel),
            1 => Some(StringParam::EnvLogfilePath),
            2 => Some(StringParam::LogDir),
            Self::EXTENSIONS => Some(StringParam::PageCache),
            _ => None,
        }
    }
}

/// One staged setting.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Setting {
    Size(SizeParam, usize),
    Bool(BoolParam, bool),
    String(StringParam, String),
}

impl Setting {
    /// Whether both set the same parameter.
    pub(crate) fn same_parameter(&self, other: &Setting) -> bool {
        match (self, other) {
            (Setting::Size(a, _), Setting::Size(b, _)) => a == b,
            (Setting::Bool(a, _), Setting::Bool(b, _)) => a == b,
            (Setting::String(a, _), Setting::String(b, _)) => a == b,
            _ => false,
        }
    }
}

/// The most entries a batch may be given by `hipFileParamPropertiesIOBatchsize`.
pub const MAX_BATCH_SIZE_PARAMETER: usize = 1024;

/// The values a size parameter takes (semantics §13); the parameters that steer nothing here
/// take any.
pub fn size_range(p: SizeParam) -> std::ops::RangeInclusive<usize> {
    use SizeParam::*;
    match p {
        ProfileStats => 0..=3,
        MaxIoQueueDepth => 1..=1024,
        MaxIoThreads => 0..=256,
        MaxDirectIoSizeKb => 64..=256 << 10,
        MaxDevicePinnedMemSizeKb => 1024..=1 << 30,
        IoBatchsize => 1..=MAX_BATCH_SIZE_PARAMETER,
        MinIoThresholdSizeKb
        | MaxRequestParallelism
        | MaxDeviceCacheSizeKb
        | PerBufferCacheSizeKb
        | PollThresholdSizeKb
        | BatchIoTimeoutMs => 0..=usize::MAX,
    }
}

/// A `HIPFILE_*` variable that sets a size parameter, in a unit of its own: the parameter's
/// value is the variable's times `scale` (semantics §9, §13). Its range is the parameter's, its
/// default the configuration's; [`SIZE_VARIABLES`] is the one list of them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SizeVariable {
    /// The variable's name.
    pub name: &'static str,
    /// The parameter it sets.
    pub param: SizeParam,
    /// The parameter's units in one of the variable's (1024: the variable counts MiB where the
    /// parameter counts KiB).
    pub scale: usize,
    /// What a special value means, where one has a meaning of its own.
    pub special: Option<(usize, &'static str)>,
}

/// The size parameters' variables.
pub const SIZE_VARIABLES: [SizeVariable; 4] = [
    SizeVariable {
        name: "HIPFILE_BOUNCE_THREADS",
        param: SizeParam::MaxIoThreads,
        scale: 1,
        special: Some((0, "automatic")),
    },
    SizeVariable { name: "HIPFILE_BOUNCE_CHUNK_KIB", param: SizeParam::MaxDirectIoSizeKb, scale: 1, special: None },
    SizeVariable {
        name: "HIPFILE_BOUNCE_MEMORY_MIB",
        param: SizeParam::MaxDevicePinnedMemSizeKb,
        scale: 1024,
        special: None,
    },
    SizeVariable { name: "HIPFILE_BOUNCE_DIRECT_STREAMS", param: SizeParam::MaxIoQueueDepth, scale: 1, special: None },
];

impl SizeVariable {
    /// The values the variable takes, in words, from the parameter's range (`a multiple of 4
    /// from 64 to 262144`).
    pub fn accepted(&self) -> String {
        let range = size_range(self.param);
        let (low, high) = (range.start().div_ceil(self.scale), range.end() / self.scale);
        let low = match self.special {
            Some((value, meaning)) if value == low => format!("{low} ({meaning})"),
            _ => low.to_string(),
        };
        let multiple = if self.param == SizeParam::MaxDirectIoSizeKb { "a multiple of 4 from " } else { "" };
        format!("{multiple}{low} to {high}")
    }

    /// The parameter's value for the variable's `text`, if the parameter takes it.
    pub fn parse(&self, text: &str) -> Option<usize> {
        let value = text.trim().parse::<usize>().ok()?.checked_mul(self.scale)?;
        size_accepted(self.param, value).then_some(value)
    }
}

/// What a boolean `HIPFILE_*` variable sets: a parameter, or a setting of ours that no parameter
/// names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BoolTarget {
    /// The parameter (the variable and the parameter set the same thing).
    Param(BoolParam),
    /// `HIPFILE_UNSUPPORTED_FILE_SYSTEMS`: the p2p path may serve regular files on any file
    /// system.
    UnsupportedFileSystems,
    /// `HIPFILE_DURABLE_WRITES`: writes are durable when they return (semantics §5).
    DurableWrites,
    /// `HIPFILE_BOUNCE_GATHER`: small reads from several threads at once are copied to the
    /// device together where the runtime can.
    Gather,
}

/// The boolean `HIPFILE_*` variables and what each sets (its default is the configuration's):
/// one list, read by the configuration and held to docs/configuration.md by a test.
pub const BOOL_VARIABLES: [(&str, BoolTarget); 7] = [
    ("HIPFILE_ALLOW_COMPAT_MODE", BoolTarget::Param(BoolParam::AllowCompatMode)),
    ("HIPFILE_FORCE_COMPAT_MODE", BoolTarget::Param(BoolParam::ForceCompatMode)),
    ("HIPFILE_UNSUPPORTED_FILE_SYSTEMS", BoolTarget::UnsupportedFileSystems),
    ("HIPFILE_ALLOW_SYSTEM_MEMORY", BoolTarget::Param(BoolParam::AllowSystemMemory)),
    ("HIPFILE_DURABLE_WRITES", BoolTarget::DurableWrites),
    ("HIPFILE_BOUNCE_IO_URING", BoolTarget::Param(BoolParam::PreferIoUring)),
    ("HIPFILE_BOUNCE_GATHER", BoolTarget::Gather),
];

/// Whether size parameter `p` takes `v`: inside its [`size_range`], and for
/// `MaxDirectIOSizeKB` a multiple of 4 (the bounce chunk is whole pages). The `HIPFILE_*`
/// variables that set the same things take the same values.
pub(crate) fn size_accepted(p: SizeParam, v: usize) -> bool {
    size_range(p).contains(&v) && (p != SizeParam::MaxDirectIoSizeKb || v.is_multiple_of(4))
}

/// Sets what the parameters' own variables (`BOOL_VARIABLES`, `SIZE_VARIABLES`, and hipFile
/// 0.5's `HIPFILE_ASYNC_BUFFER_SIZE`) say in the environment `get` reads (empty: unset).
pub(super) fn read_variables(config: &mut Config, get: &impl Fn(&str) -> Option<String>) -> Result<()> {
    for (name, target) in BOOL_VARIABLES {
        if let Some(text) = get(name) {
            let value = parse_bool(&text).ok_or_else(|| invalid(name, text, BOOL_WORDS))?;
            config.set_bool_variable(target, value);
        }
    }
    for v in SIZE_VARIABLES {
        if let Some(text) = get(v.name) {
            let value = v.parse(&text).ok_or_else(|| invalid(v.name, text, v.accepted()))?;
            config.set_size_parameter(v.param, value)?;
        }
    }
    // hipFile 0.5's `HIPFILE_ASYNC_BUFFER_SIZE` (bytes; upstream: each stream's pinned staging
    // buffer, 0 its default): stream-ordered I/O here stages through the bounce path's pool,
    // which it makes at least that large where `HIPFILE_BOUNCE_MEMORY_MIB` does not size the
    // pool (up to the pool's largest).
    let async_buffer = parse_number(get, "HIPFILE_ASYNC_BUFFER_SIZE", "0 (the default) or more bytes", |_| true)?;
    if let Some(bytes) = async_buffer.filter(|&b| b > 0 && get("HIPFILE_BOUNCE_MEMORY_MIB").is_none()) {
        let pool = SizeParam::MaxDevicePinnedMemSizeKb;
        let kib = bytes.div_ceil(1 << 20).saturating_mul(1024).min(*size_range(pool).end());
        if kib > config.size_parameter(pool) {
            config.set_size_parameter(pool, kib)?;
        }
    }
    Ok(())
}

fn invalid_value<T>() -> Result<T> {
    Err(OpError::InvalidValue.into())
}

impl Config {
    /// The value of a size parameter in this configuration.
    pub fn size_parameter(&self, p: SizeParam) -> usize {
        use SizeParam::*;
        match p {
            ProfileStats => self.stats_level,
            MaxIoQueueDepth => self.bounce.direct_streams,
            MaxIoThreads => self.bounce.threads,
            MaxDirectIoSizeKb => self.bounce.chunk >> 10,
            MaxDevicePinnedMemSizeKb => self.bounce.memory_limit >> 10,
            IoBatchsize => self.batch_size,
            MinIoThresholdSizeKb => self.kept.min_io_threshold_kb,
            MaxRequestParallelism => self.kept.max_request_parallelism,
            MaxDeviceCacheSizeKb => self.kept.max_device_cache_kb,
            PerBufferCacheSizeKb => self.kept.per_buffer_cache_kb,
            PollThresholdSizeKb => self.kept.poll_threshold_kb,
            BatchIoTimeoutMs => self.kept.batch_io_timeout_ms,
        }
    }

    /// Sets a size parameter; a value it does not take (`size_accepted`) is
    /// `hipFileInvalidValue` (and changes nothing).
    pub fn set_size_parameter(&mut self, p: SizeParam, v: usize) -> Result<()> {
        use SizeParam::*;
        if !size_accepted(p, v) {
            return invalid_value();
        }
        match p {
            ProfileStats => self.stats_level = v,
            MaxIoQueueDepth => self.bounce.direct_streams = v,
            MaxIoThreads => self.bounce.threads = v,
            MaxDirectIoSizeKb => self.bounce.chunk = v << 10,
            MaxDevicePinnedMemSizeKb => self.bounce.memory_limit = v << 10,
            IoBatchsize => self.batch_size = v,
            MinIoThresholdSizeKb => self.kept.min_io_threshold_kb = v,
            MaxRequestParallelism => self.kept.max_request_parallelism = v,
            MaxDeviceCacheSizeKb => self.kept.max_device_cache_kb = v,
            PerBufferCacheSizeKb => self.kept.per_buffer_cache_kb = v,
            PollThresholdSizeKb => self.kept.poll_threshold_kb = v,
            BatchIoTimeoutMs => self.kept.batch_io_timeout_ms = v,
        }
        Ok(())
    }

    /// The value of a boolean parameter in this configuration.
    pub fn bool_parameter(&self, p: BoolParam) -> bool {
        use BoolParam::*;
        match p {
            AllowCompatMode => self.allow_compat_mode,
            ForceCompatMode => self.force_compat_mode,
            PreferIoUring => self.bounce.io_uring,
            AllowSystemMemory => self.allow_system_memory,
            ExecutionParallelIo => self.bounce.threads != 1,
            StreamMemopsBypass => self.stream_signal == StreamSignal::Inline,
            ForceOdirectMode => self.page_cache == PageCache::Bypass,
            other => self.kept.bools[other as usize],
        }
    }

    /// The value of what a boolean variable sets.
    pub fn bool_variable(&self, target: BoolTarget) -> bool {
        match target {
            BoolTarget::Param(p) => self.bool_parameter(p),
            BoolTarget::UnsupportedFileSystems => self.unsupported_file_systems,
            BoolTarget::DurableWrites => self.bounce.durable_writes,
            BoolTarget::Gather => self.bounce.gather,
        }
    }

    /// Sets what a boolean variable sets.
    pub fn set_bool_variable(&mut self, target: BoolTarget, v: bool) {
        match target {
            BoolTarget::Param(p) => self.set_bool_parameter(p, v),
            BoolTarget::UnsupportedFileSystems => self.unsupported_file_systems = v,
            BoolTarget::DurableWrites => self.bounce.durable_writes = v,
            BoolTarget::Gather => self.bounce.gather = v,
        }
    }

    /// Sets a boolean parameter.
    pub fn set_bool_parameter(&mut self, p: BoolParam, v: bool) {
        use BoolParam::*;
        match p {
            AllowCompatMode => self.allow_compat_mode = v,
            ForceCompatMode => self.force_compat_mode = v,
            PreferIoUring => self.bounce.io_uring = v,
            AllowSystemMemory => self.allow_system_memory = v,
            ExecutionParallelIo => match (v, self.bounce.threads) {
                (false, _) => self.bounce.threads = 1,
                (true, 1) => self.bounce.threads = 0,
                (true, _) => {}
            },
            StreamMemopsBypass => match (v, self.stream_signal) {
                (true, _) => self.stream_signal = StreamSignal::Inline,
                (false, StreamSignal::Inline) => self.stream_signal = StreamSignal::HostFn,
                (false, _) => {}
            },
            ForceOdirectMode => match (v, self.page_cache) {
                (true, _) => self.page_cache = PageCache::Bypass,
                (false, PageCache::Bypass) => self.page_cache = PageCache::Auto,
                (false, _) => {}
            },
            other => self.kept.bools[other as usize] = v,
        }
    }

    /// The value of a string parameter in this configuration.
    pub fn string_parameter(&self, p: StringParam) -> &str {
        let StringValues { logging_level, log_file, log_dir } = &self.kept.strings;
        match p {
            StringParam::LoggingLevel => logging_level,
            StringParam::EnvLogfilePath => log_file,
            StringParam::LogDir => log_dir,
            StringParam::PageCache => self.page_cache.word(),
        }
    }

    /// Sets a string parameter: a logging level must be one of `ERROR`, `WARN`, `INFO`,
    /// `DEBUG`, `TRACE` (any case); paths must be absolute; the page-cache policy is `auto`,
    /// `keep` or `bypass` (any case).
    pub fn set_string_parameter(&mut self, p: StringParam, v: &str) -> Result<()> {
        if p == StringParam::PageCache {
            self.page_cache = PageCache::parse(v).ok_or(OpError::InvalidValue)?;
            return Ok(());
        }
        let s = &mut self.kept.strings;
        match p {
            StringParam::PageCache => unreachable!("set above"),
            StringParam::LoggingLevel => {
                let level = v.trim().to_ascii_uppercase();
                if !["ERROR", "WARN", "INFO", "DEBUG", "TRACE"].contains(&level.as_str()) {
                    return invalid_value();
                }
                s.logging_level = level;
            }
            StringParam::EnvLogfilePath | StringParam::LogDir if !v.starts_with('/') || v.contains('\0') => {
                return invalid_value();
            }
            StringParam::EnvLogfilePath => s.log_file = v.to_owned(),
            StringParam::LogDir => s.log_dir = v.to_owned(),
        }
        Ok(())
    }

    /// Applies a staged setting (checked when it was staged). A log directory that is not an
    /// existing directory is not applied (cuFile's rule).
    pub(crate) fn apply(&mut self, setting: &Setting) {
        match setting {
            Setting::Size(p, v) => drop(self.set_size_parameter(*p, *v)),
            Setting::Bool(p, v) => self.set_bool_parameter(*p, *v),
            Setting::String(StringParam::LogDir, dir) if !std::path::Path::new(dir).is_dir() => {}
            Setting::String(p, v) => drop(self.set_string_parameter(*p, v)),
        }
    }

    /// Checks a setting against a scratch configuration: what staging it requires.
    pub(crate) fn check(setting: &Setting) -> Result<()> {
        let mut scratch = Config::default();
        match setting {
            Setting::Size(p, v) => scratch.set_size_parameter(*p, *v),
            Setting::Bool(..) => Ok(()),
            Setting::String(p, v) => scratch.set_string_parameter(*p, v),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cache::PageCache;
    use crate::config::Config;
    use crate::config::StreamSignal;

    #[test]
    fn raw_values_follow_the_c_enums() {
        assert_eq!(SizeParam::from_raw(2), Some(SizeParam::MaxIoThreads));
        assert_eq!(SizeParam::from_raw(11), Some(SizeParam::BatchIoTimeoutMs));
        assert_eq!(SizeParam::from_raw(12), None);
        assert_eq!(BoolParam::from_raw(7), Some(BoolParam::UsePcip2pdma));
        assert_eq!(BoolParam::from_raw(-1), None);
        assert_eq!(StringParam::from_raw(2), Some(StringParam::LogDir));
        assert_eq!(StringParam::from_raw(3), None, "one past upstream's last");
        assert_eq!(StringParam::from_raw(1000), Some(StringParam::PageCache));
        assert_eq!(StringParam::from_raw(1001), None);
    }

    #[test]
    fn mapped_parameters_steer_the_configuration_and_read_back() {
        let mut c = Config::default();
        c.set_size_parameter(SizeParam::MaxDirectIoSizeKb, 1024).unwrap();
        assert_eq!((c.bounce.chunk, c.size_parameter(SizeParam::MaxDirectIoSizeKb)), (1 << 20, 1024));
        c.set_size_parameter(SizeParam::MaxDevicePinnedMemSizeKb, 32 << 10).unwrap();
        assert_eq!(c.bounce.memory_limit, 32 << 20);
        c.set_size_parameter(SizeParam::IoBatchsize, 512).unwrap();
        assert_eq!(c.batch_size, 512);
        c.set_bool_parameter(BoolParam::ExecutionParallelIo, false);
        assert_eq!(c.bounce.threads, 1);
        c.set_bool_parameter(BoolParam::StreamMemopsBypass, true);
        assert_eq!(c.stream_signal, StreamSignal::Inline);
        c.set_bool_parameter(BoolParam::UsePcip2pdma, true);
        assert!(c.bool_parameter(BoolParam::UsePcip2pdma));
    }

    #[test]
    fn the_page_cache_policy_is_a_string_and_force_odirect_is_bypass() {
        let mut c = Config::default();
        assert_eq!(c.string_parameter(StringParam::PageCache), "auto");
        assert!(!c.bool_parameter(BoolParam::ForceOdirectMode));
        c.set_string_parameter(StringParam::PageCache, " KEEP").unwrap();
        assert_eq!((c.page_cache, c.string_parameter(StringParam::PageCache)), (PageCache::Keep, "keep"));
        c.set_bool_parameter(BoolParam::ForceOdirectMode, false);
        assert_eq!(c.page_cache, PageCache::Keep, "false leaves keep as it is");
        c.set_bool_parameter(BoolParam::ForceOdirectMode, true);
        assert_eq!(c.page_cache, PageCache::Bypass);
        assert!(c.bool_parameter(BoolParam::ForceOdirectMode));
        c.set_bool_parameter(BoolParam::ForceOdirectMode, false);
        assert_eq!(c.page_cache, PageCache::Auto);
        assert!(c.set_string_parameter(StringParam::PageCache, "direct").is_err());
        assert_eq!(c.page_cache, PageCache::Auto);
    }

    #[test]
    fn out_of_range_values_change_nothing() {
        let mut c = Config::default();
        for (p, v) in [
            (SizeParam::MaxDirectIoSizeKb, 63),
            (SizeParam::MaxDirectIoSizeKb, 66),
            (SizeParam::MaxDevicePinnedMemSizeKb, 512),
            (SizeParam::IoBatchsize, 0),
            (SizeParam::IoBatchsize, MAX_BATCH_SIZE_PARAMETER + 1),
            (SizeParam::ProfileStats, 4),
            (SizeParam::MaxIoThreads, 257),
        ] {
            assert!(c.set_size_parameter(p, v).is_err(), "{p:?} {v}");
        }
        assert!(c.set_string_parameter(StringParam::LoggingLevel, "LOUD").is_err());
        assert!(c.set_string_parameter(StringParam::LogDir, "relative").is_err());
        assert_eq!(c, Config::default());
    }
}
