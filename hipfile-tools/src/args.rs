//! The command line, declared with clap: `hipfile bench` and its options.

use std::path::{Path, PathBuf};

use clap::{Parser, Subcommand, ValueEnum};

/// The `hipfile` tool of hipfile-rs.
#[derive(Debug, Parser)]
#[command(name = "hipfile", version, about, propagate_version = true)]
pub(crate) struct Cli {
    #[command(subcommand)]
    pub(crate) command: Command,
}

/// What the tool can do.
#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Measure file <-> GPU throughput through hipfile (like NVIDIA's gdsio)
    Bench(BenchArgs),
    /// What this machine can do, and whether the p2p path would serve each PATH and why not
    /// (like AMD's ais-check and NVIDIA's gdscheck); exit status 0 when every PATH can be served
    /// by the backend asked for
    Check(CheckArgs),
    /// Copy a file through GPU memory, in pipelined chunks (like AMD's aiscp); or between a
    /// file and an object of a store (s3://, gs://, az://, http(s)://)
    Cp(CpArgs),
    /// The node cache of remote objects (HIPFILE_REMOTE_CACHE, or --dir): list or clear it
    Cache(CacheArgs),
    /// Load safetensors files (or checkpoint directories) into GPU memory and report GB/s
    Load(LoadArgs),
    /// Another process's hipfile statistics, live, or a command's at its exit
    Stats(StatsArgs),
}

/// `--backend`, as each subcommand that opens the library takes it: in place of
/// `HIPFILE_BACKEND`, whose names it takes (the library's table of them).
#[derive(Clone, Debug, clap::Args)]
pub(crate) struct BackendArg {
    /// The backend, in place of HIPFILE_BACKEND: auto, p2p, bounce or mock
    #[arg(long = "backend", value_name = "NAME", value_parser = backend_name)]
    pub(crate) name: Option<String>,
}

fn backend_name(text: &str) -> Result<String, String> {
    use hipfile::Words;
    let names = hipfile::BackendChoice::words();
    hipfile::BackendChoice::parse(text)
        .map(|b| b.word().to_owned())
        .ok_or_else(|| format!("not a backend: {text:?} (HIPFILE_BACKEND takes {names})"))
}

/// `hipfile check`.
#[derive(Clone, Debug, clap::Args)]
pub(crate) struct CheckArgs {
    /// Files (or directories) to check
    pub(crate) paths: Vec<PathBuf>,
    #[command(flatten)]
    pub(crate) backend: BackendArg,
    /// Also list the cuFile libraries process PID has loaded (a warning where there are two)
    #[arg(long)]
    pub(crate) pid: Option<u32>,
    /// Print JSON
    #[arg(long)]
    pub(crate) json: bool,
}

/// `hipfile cp`.
#[derive(Clone, Debug, clap::Args)]
pub(crate) struct CpArgs {
    /// The file (or URL) to copy
    pub(crate) src: PathBuf,
    /// Where to copy it (a file, or a URL)
    pub(crate) dst: PathBuf,
    #[command(flatten)]
    pub(crate) backend: BackendArg,
    /// Chunk size (K, M and G suffixes)
    #[arg(long, default_value = "64M", value_parser = parse_size)]
    pub(crate) chunk: u64,
    /// Read the copy back and compare it with the source
    #[arg(long)]
    pub(crate) verify: bool,
    /// Replace DST if it exists
    #[arg(long, short)]
    pub(crate) force: bool,
    /// Print the result as JSON
    #[arg(long)]
    pub(crate) json: bool,
}

/// `hipfile cache`.
#[derive(Clone, Debug, clap::Args)]
pub(crate) struct CacheArgs {
    /// What to do (default: list)
    #[arg(value_enum)]
    pub(crate) command: Option<CacheCommand>,
    /// The cache's directory (default: HIPFILE_REMOTE_CACHE)
    #[arg(long)]
    pub(crate) dir: Option<PathBuf>,
    /// Print JSON
    #[arg(long)]
    pub(crate) json: bool,
}

/// What `hipfile cache` does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum CacheCommand {
    /// Each entry: its URL, size, version and last use
    List,
    /// Remove every entry
    Clear,
}

/// `hipfile load`.
#[derive(Clone, Debug, clap::Args)]
pub(crate) struct LoadArgs {
    /// safetensors files, or directories of them (with or without model.safetensors.index.json),
    /// or URLs of objects (s3://bucket/model.safetensors) or of prefixes (s3://bucket/model/)
    #[arg(required = true)]
    pub(crate) paths: Vec<PathBuf>,
    /// The GPU to load into (default: the current one)
    #[arg(long)]
    pub(crate) device: Option<i32>,
    /// Compare every tensor in GPU memory with the file's bytes afterwards
    #[arg(long)]
    pub(crate) verify: bool,
    #[command(flatten)]
    pub(crate) backend: BackendArg,
    /// Print the result as JSON
    #[arg(long)]
    pub(crate) json: bool,
}

/// `hipfile stats`.
#[derive(Clone, Debug, clap::Args)]
pub(crate) struct StatsArgs {
    /// The process to watch
    #[arg(required_unless_present = "command", conflicts_with = "command")]
    pub(crate) pid: Option<u32>,
    /// Seconds between refreshes (0: print once and exit)
    #[arg(long, short, default_value_t = 1.0)]
    pub(crate) interval: f64,
    /// Print JSON (one object per refresh)
    #[arg(long)]
    pub(crate) json: bool,
    /// Run this command (after --) and print its statistics when it exits
    #[arg(last = true)]
    pub(crate) command: Vec<String>,
}

/// What one benchmark measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum Mode {
    /// Sequential file -> GPU
    Read,
    /// Sequential GPU -> file
    Write,
    /// Random reads of --io-size at --io-size-aligned offsets
    #[value(name = "randread")]
    RandRead,
    /// Random writes of --io-size at --io-size-aligned offsets
    #[value(name = "randwrite")]
    RandWrite,
}

impl Mode {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Mode::Read => "read",
            Mode::Write => "write",
            Mode::RandRead => "randread",
            Mode::RandWrite => "randwrite",
        }
    }

    pub(crate) fn is_read(self) -> bool {
        matches!(self, Mode::Read | Mode::RandRead)
    }

    pub(crate) fn is_random(self) -> bool {
        matches!(self, Mode::RandRead | Mode::RandWrite)
    }
}

/// The size of the data file `hipfile bench` makes when none is named or given a size.
const DEFAULT_SIZE: u64 = 256 << 20;

/// Moves data between a file and GPU memory through hipfile and reports GB/s (1e9 bytes/s),
/// best and mean of --runs. With no options: a short verified read and write benchmark on the
/// best backend this machine has (the mock GPU where there is no GPU).
#[derive(Clone, Debug, clap::Args)]
pub(crate) struct BenchArgs {
    /// Modes to run, comma-separated
    #[arg(long = "mode", value_enum, value_delimiter = ',', default_value = "read,write")]
    pub(crate) modes: Vec<Mode>,
    /// Data file: an existing one is read as it is (a --size that differs from its size is an
    /// error: the benchmark never rewrites it), a missing one created with --size bytes
    /// (default: a temporary file, removed afterwards); writes go to PATH.out. A URL
    /// (s3://, gs://, az://, http(s)://) benchmarks reads of that object from its store
    #[arg(long, value_name = "PATH")]
    pub(crate) file: Option<PathBuf>,
    /// Size of the file the benchmark creates, with K, M, G, T suffixes (powers of 1024, any
    /// case, with or without B or iB) [default: an existing file's size, else 256M]
    #[arg(long = "size", value_name = "SIZE", value_parser = parse_size)]
    pub(crate) size_given: Option<u64>,
    /// The data file's size: an existing file's, else --size (set by `check`).
    #[arg(skip = DEFAULT_SIZE)]
    pub(crate) size: u64,
    /// Bytes per call (default: the whole range for read and write, 1M for random modes)
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    pub(crate) io_size: Option<u64>,
    /// Application threads issuing calls (the library has its own workers for large calls)
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = positive)]
    pub(crate) threads: usize,
    /// GPUs to run on at once, comma-separated (default: the current one): each gets its own
    /// buffer and --threads threads, each thread makes its GPU current, and all are timed
    /// together
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    pub(crate) devices: Vec<i32>,
    /// Issue each thread's calls as batches of up to N entries (hipFileBatchIO*), each waited
    /// for before the next (0: one synchronous call at a time)
    #[arg(long, value_name = "N", default_value_t = 0, value_parser = batch_size)]
    pub(crate) batch: usize,
    /// Issue each thread's calls as stream-ordered operations (hipFileReadAsync/WriteAsync)
    /// on a stream of its own, synchronized at the end of each run; reports the time each
    /// call took to queue, and how long a host function on another stream waited meanwhile
    #[arg(long, conflicts_with = "batch")]
    pub(crate) stream: bool,
    /// Every millisecond of the runs, time a host function on a stream of its own from being
    /// queued to running (what the runs cost other streams; implied by --stream)
    #[arg(long)]
    pub(crate) probe: bool,
    /// Calls per random run
    #[arg(long, value_name = "N", default_value_t = 128, value_parser = positive)]
    pub(crate) count: usize,
    #[command(flatten)]
    pub(crate) backend: BackendArg,
    /// Drop the page cache before each read run (needs root)
    #[arg(long)]
    pub(crate) cold: bool,
    /// Open the data file with O_DIRECT
    #[arg(long)]
    pub(crate) direct: bool,
    /// Skip checking that GPU memory and the file agree after each mode
    #[arg(long = "no-verify", action = clap::ArgAction::SetFalse)]
    pub(crate) verify: bool,
    /// Runs per mode
    #[arg(long, value_name = "N", default_value_t = 3, value_parser = positive)]
    pub(crate) runs: usize,
    /// Print the results as JSON instead of a table
    #[arg(long)]
    pub(crate) json: bool,
    /// Also report each backend's counters per mode: chunks read from the page cache and with
    /// O_DIRECT, io_uring requests, and where its threads spent their time
    #[arg(long)]
    pub(crate) profile: bool,
}

impl BenchArgs {
    /// Checks what the options say together, and sets the data file's size.
    pub(crate) fn check(mut self) -> Result<Self, String> {
        if let Some(d) = self.devices.iter().find(|&&d| d < 0) {
            return Err(format!("--devices: {d} is not a device"));
        }
        if (1..self.devices.len()).any(|i| self.devices[..i].contains(&self.devices[i])) {
            return Err("--devices names a device twice".into());
        }
        // An empty file holds nothing to lose: it is made anew, like a missing one.
        let existing = self.file.as_deref().and_then(|p| std::fs::metadata(p).ok()).map(|m| m.len()).filter(|&n| n > 0);
        self.size = match (existing, self.size_given) {
            (Some(has), Some(given)) if has != given => {
                let path = self.file.as_deref().unwrap_or(Path::new("")).display();
                return Err(format!(
                    "{path} has {has} bytes, not the {given} of --size; the benchmark does not rewrite an existing \
                     file: leave --size out to read it as it is, or name another file"
                ));
            }
            (Some(has), _) => has,
            (None, given) => given.unwrap_or(DEFAULT_SIZE),
        };
        match self.io_size {
            Some(io) if io > self.size => Err(format!("--io-size ({io}) is larger than --size ({})", self.size)),
            _ => Ok(self),
        }
    }
}

#[cfg(test)]
impl Default for BenchArgs {
    /// The defaults declared on the options, as `hipfile bench` with none.
    fn default() -> Self {
        use clap::Parser;
        match Cli::parse_from(["hipfile", "bench"]).command {
            Command::Bench(b) => b,
            _ => unreachable!("parsed as bench"),
        }
    }
}

/// `4096`, `64K`, `256M`, `4G`, `1GiB`: bytes.
pub(crate) fn parse_size(text: &str) -> Result<u64, String> {
    // Suffixes in any case: 4m, 4M, 4MB, 4mb, 4MiB.
    let lower = text.trim().to_ascii_lowercase();
    let t = lower.strip_suffix("ib").or_else(|| lower.strip_suffix('b')).unwrap_or(&lower);
    let (digits, shift) = match t.chars().last() {
        Some('k') => (&t[..t.len() - 1], 10),
        Some('m') => (&t[..t.len() - 1], 20),
        Some('g') => (&t[..t.len() - 1], 30),
        Some('t') => (&t[..t.len() - 1], 40),
        _ => (t, 0),
    };
    digits
        .trim()
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(1 << shift))
        .filter(|&n| n > 0)
        .ok_or_else(|| format!("not a size: {text:?} (use e.g. 4096, 64K, 256M, 4G)"))
}

fn batch_size(text: &str) -> Result<usize, String> {
    text.parse().ok().filter(|&n| n <= hipfile::MAX_BATCH_ENTRIES).ok_or_else(|| format!("not 0 to 128: {text:?}"))
}

fn positive(text: &str) -> Result<usize, String> {
    text.parse().ok().filter(|&n| n > 0).ok_or_else(|| format!("not a positive number: {text:?}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(text: &str) -> Result<BenchArgs, String> {
        let words = ["hipfile", "bench"].into_iter().chain(text.split_whitespace());
        match Cli::try_parse_from(words).map_err(|e| e.to_string())?.command {
            Command::Bench(b) => b.check(),
            _ => unreachable!("parsed as bench"),
        }
    }

    #[test]
    fn sizes() {
        assert_eq!(parse_size("4096"), Ok(4096));
        assert_eq!(parse_size("64K"), Ok(64 << 10));
        assert_eq!(parse_size("256M"), Ok(256 << 20));
        assert_eq!(parse_size("4GiB"), Ok(4 << 30));
        for text in ["4m", "4M", "4MB", "4mb", "4MiB", "4mib", " 4 MiB "] {
            assert_eq!(parse_size(text), Ok(4 << 20), "{text}");
        }
        assert_eq!(parse_size("4096b"), Ok(4096));
        assert!(parse_size("0").is_err() && parse_size("lots").is_err() && parse_size("99999999999T").is_err());
    }

    #[test]
    fn flags() {
        let b = args("--mode read,randread --size 1G --io-size 1M --threads 16 --cold --json --no-verify").unwrap();
        assert_eq!(b.modes, [Mode::Read, Mode::RandRead]);
        assert_eq!((b.size, b.io_size, b.threads), (1 << 30, Some(1 << 20), 16));
        assert!(b.cold && b.json && !b.verify && !b.direct);
        let d = args("").unwrap();
        assert_eq!(
            (d.modes, d.size, d.threads, d.runs, d.count, d.verify),
            (vec![Mode::Read, Mode::Write], 256 << 20, 1, 3, 128, true)
        );
        assert_eq!(args("--mode=write --size=4K").unwrap().modes, [Mode::Write], "--flag=value works too");
        assert!(args("--mode sideways").unwrap_err().contains("sideways"));
        assert!(args("--threads 0").is_err());
        assert!(args("--size").unwrap_err().contains("a value is required"));
        assert!(args("--io-size 2G --size 1G").is_err());
        assert!(args("--frobnicate").unwrap_err().contains("--frobnicate"));
    }
}
