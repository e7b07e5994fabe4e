//! Command-line parsing for `hipfile bench` (a handful of flags: no parser dependency).

use std::path::PathBuf;

/// What one benchmark measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mode {
    /// Sequential file -> GPU.
    Read,
    /// Sequential GPU -> file.
    Write,
    /// Random `io-size` reads at `io-size`-aligned offsets.
    RandRead,
    /// Random `io-size` writes at `io-size`-aligned offsets.
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

/// `hipfile bench` options.
#[derive(Clone, Debug)]
pub(crate) struct BenchArgs {
    pub(crate) modes: Vec<Mode>,
    pub(crate) file: Option<PathBuf>,
    pub(crate) size: u64,
    pub(crate) io_size: Option<u64>,
    pub(crate) threads: usize,
    pub(crate) backend: Option<String>,
    pub(crate) cold: bool,
    pub(crate) direct: bool,
    pub(crate) verify: bool,
    pub(crate) runs: usize,
    pub(crate) count: usize,
    pub(crate) json: bool,
    pub(crate) profile: bool,
}

impl Default for BenchArgs {
    fn default() -> Self {
        BenchArgs {
            modes: vec![Mode::Read, Mode::Write],
            file: None,
            size: 256 << 20,
            io_size: None,
            threads: 1,
            backend: None,
            cold: false,
            direct: false,
            verify: true,
            runs: 3,
            count: 128,
            json: false,
            profile: false,
        }
    }
}

pub(crate) const BENCH_USAGE: &str = "\
usage: hipfile bench [options]

Moves data between a file and GPU memory through hipfile and reports GB/s (1e9 bytes/s),
best and mean of --runs. With no options: a short verified read and write benchmark on the
best backend this machine has (the mock GPU where there is no GPU).

  --mode LIST       read, write, randread, randwrite (comma-separated; default read,write)
  --file PATH       data file (created with --size bytes if missing or of another size;
                    default: a temporary file, removed afterwards). Writes go to PATH.out
  --size SIZE       file size (default 256M); SIZE takes K, M, G suffixes (powers of 1024)
  --io-size SIZE    bytes per call (default: the whole range for read/write, 1M for random)
  --threads N       application threads issuing calls (default 1; the library uses its own
                    worker threads for large calls)
  --count N         calls per random run (default 128)
  --backend NAME    auto, p2p, bounce or mock (default: HIPFILE_BACKEND, else auto)
  --cold            drop the page cache before each read run (needs root)
  --direct          open the data file with O_DIRECT
  --no-verify       skip checking that GPU memory and the file agree after each mode
  --runs N          runs per mode (default 3)
  --json            print the results as JSON instead of a table
  --profile         also report, per mode, each backend's counters: chunks read from the page
                    cache and with O_DIRECT, io_uring requests, and where its threads spent
                    their time (file I/O, waiting for copies, for a lane, for a direct-read slot)";

/// `4096`, `64K`, `256M`, `4G`, `1GiB`: bytes.
pub(crate) fn parse_size(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let t = t.strip_suffix("iB").or_else(|| t.strip_suffix('B')).unwrap_or(t);
    let (digits, shift) = match t.chars().last() {
        Some('K' | 'k') => (&t[..t.len() - 1], 10),
        Some('M' | 'm') => (&t[..t.len() - 1], 20),
        Some('G' | 'g') => (&t[..t.len() - 1], 30),
        Some('T' | 't') => (&t[..t.len() - 1], 40),
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

fn parse_count(flag: &str, text: &str) -> Result<usize, String> {
    text.parse().ok().filter(|&n| n > 0).ok_or_else(|| format!("{flag}: not a positive number: {text:?}"))
}

impl BenchArgs {
    pub(crate) fn parse(args: &[String]) -> Result<BenchArgs, String> {
        let mut b = BenchArgs::default();
        let mut it = args.iter();
        while let Some(flag) = it.next() {
            let mut value = || it.next().ok_or_else(|| format!("{flag} needs a value"));
            match flag.as_str() {
                "--mode" => {
                    b.modes = value()?
                        .split(',')
                        .map(|m| match m.trim() {
                            "read" => Ok(Mode::Read),
                            "write" => Ok(Mode::Write),
                            "randread" => Ok(Mode::RandRead),
                            "randwrite" => Ok(Mode::RandWrite),
                            other => Err(format!("unknown mode {other:?} (read, write, randread, randwrite)")),
                        })
                        .collect::<Result<_, _>>()?
                }
                "--file" => b.file = Some(PathBuf::from(value()?)),
                "--size" => b.size = parse_size(value()?)?,
                "--io-size" => b.io_size = Some(parse_size(value()?)?),
                "--threads" => b.threads = parse_count(flag, value()?)?,
                "--count" => b.count = parse_count(flag, value()?)?,
                "--runs" => b.runs = parse_count(flag, value()?)?,
                "--backend" => b.backend = Some(value()?.clone()),
                "--cold" => b.cold = true,
                "--direct" => b.direct = true,
                "--no-verify" => b.verify = false,
                "--json" => b.json = true,
                "--profile" => b.profile = true,
                other => return Err(format!("unknown option {other:?}\n\n{BENCH_USAGE}")),
            }
        }
        if let Some(io) = b.io_size
            && io > b.size
        {
            return Err(format!("--io-size ({io}) is larger than --size ({})", b.size));
        }
        Ok(b)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(text: &str) -> Result<BenchArgs, String> {
        BenchArgs::parse(&text.split_whitespace().map(String::from).collect::<Vec<_>>())
    }

    #[test]
    fn sizes() {
        assert_eq!(parse_size("4096"), Ok(4096));
        assert_eq!(parse_size("64K"), Ok(64 << 10));
        assert_eq!(parse_size("256M"), Ok(256 << 20));
        assert_eq!(parse_size("4GiB"), Ok(4 << 30));
        assert!(parse_size("0").is_err() && parse_size("lots").is_err() && parse_size("99999999999T").is_err());
    }

    #[test]
    fn flags() {
        let b = args("--mode read,randread --size 1G --io-size 1M --threads 16 --cold --json --no-verify").unwrap();
        assert_eq!(b.modes, [Mode::Read, Mode::RandRead]);
        assert_eq!((b.size, b.io_size, b.threads), (1 << 30, Some(1 << 20), 16));
        assert!(b.cold && b.json && !b.verify && !b.direct);
        assert!(args("--mode sideways").unwrap_err().contains("sideways"));
        assert!(args("--threads 0").is_err());
        assert!(args("--size").unwrap_err().contains("needs a value"));
        assert!(args("--io-size 2G --size 1G").is_err());
        assert!(args("--frobnicate").unwrap_err().contains("usage"));
    }
}
