//! `hipfile`: the command-line tool of hipfile-rs.
//!
//! - `hipfile bench`: reads and writes between a file and GPU memory through hipfile, like
//!   NVIDIA's gdsio, on the best backend the machine has (the mock GPU where there is none),
//!   verified, as a table or JSON.
//! - `hipfile check [PATH...]`: what the machine can do and why not, per path (`check.rs`).
//! - `hipfile cp SRC DST`: a copy through GPU memory (`cp.rs`), or between a file and a URL
//!   (`remote.rs`).
//! - `hipfile cache [list|clear]`: the node cache of remote objects (`remote.rs`).
//! - `hipfile stats PID | -- CMD`: another process's statistics (`stats.rs`).

#[macro_use]
mod out;

mod args;
mod bench;
mod check;
mod cp;
mod load;
mod moved;
mod open;
mod progress;
mod remote;
mod sched;
mod stats;

use std::process::ExitCode;

use args::{Cli, Command};
use bench::Report;
use clap::Parser;
use serde_json::{Value, json};

fn main() -> ExitCode {
    // A tool run by a person says why it is slow or cannot do something; the library alone
    // stays quiet unless HIPFILE_LOG asks.
    hipfile::boundary::install(|| hipfile::boundary::Sink::Stderr(hipfile::boundary::Level::WARN));
    if std::env::var_os("CUFILE_LOGFILE_PATH").is_none() {
        // cuFile, probed for the p2p path on NVIDIA machines, writes `cufile.log` into the
        // working directory unless told where: the tool writes no file it was not asked for.
        // SAFETY: the process has one thread yet; nothing reads the environment concurrently.
        unsafe { std::env::set_var("CUFILE_LOGFILE_PATH", "/dev/null") };
    }
    let result = match Cli::parse().command {
        Command::Bench(args) if args.file.as_deref().is_some_and(remote::is_url) => {
            remote::bench(&args).map(|r| remote::print_bench(&r, args.json))
        }
        Command::Bench(args) => args.check().and_then(|a| bench_locally(&a)),
        Command::Check(args) => match check::run(&args) {
            Ok((report, served)) => {
                if args.json {
                    outln!("{report}");
                } else {
                    check::print(&report);
                }
                return if served { ExitCode::SUCCESS } else { ExitCode::FAILURE };
            }
            Err(e) => Err(e),
        },
        Command::Cp(args) => remote::cp_or(&args, cp::run).map(|c| {
            if args.json {
                outln!("{}", c.json());
            } else {
                let verified = match c.verified {
                    Some(true) => ", verified",
                    _ => "",
                };
                outln!(
                    "copied {} bytes ({} of data) in {:.3} s: {:.2} GB/s through {} ({}){verified}",
                    c.size,
                    c.moved.bytes,
                    c.moved.seconds,
                    c.moved.gbps(),
                    c.moved.platform,
                    if c.backends.is_empty() { "no request".into() } else { c.backends.join(", ") }
                );
            }
        }),
        Command::Cache(args) => remote::cache(&args).map(|report| remote::print_cache(&report, args.json)),
        Command::Load(args) => load::run(&args).map(|l| {
            if args.json {
                outln!("{}", l.json());
            } else {
                let verified = l.verified.map_or(String::new(), |n| format!(", {n} tensors verified"));
                outln!(
                    "loaded {} tensors of {} file{} ({} bytes) into GPU {} in {:.3} s: {:.2} GB/s through {}{verified}",
                    l.tensors,
                    l.files,
                    if l.files == 1 { "" } else { "s" },
                    l.moved.bytes,
                    l.device,
                    l.moved.seconds,
                    l.moved.gbps(),
                    l.moved.platform
                );
            }
        }),
        Command::Stats(args) => stats::run(&args),
    };
    // The node cache's copies fetched by this run, on the disk with their records before exit.
    hipfile_remote::flush();
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("hipfile: {e}");
            ExitCode::FAILURE
        }
    }
}

/// `hipfile bench` on a file: a table says what it runs on first (the report before any mode),
/// then each mode as it ends (the report's newest outcome); JSON comes whole at the end.
fn bench_locally(args: &args::BenchArgs) -> Result<(), String> {
    let mut as_it_goes = |r: &Report| match (args.json, r.outcomes.last()) {
        (true, _) => {}
        (false, None) => print_preamble(r),
        (false, Some(o)) => print_row(o),
    };
    bench::run(args, &mut as_it_goes).map(|r| print(&r, args.json))
}

fn print_preamble(report: &Report) {
    outln!(
        "hipfile bench: {} file {}\nplatform: {}\nbackends: {}",
        human(report.size),
        report.file.display(),
        report.platform,
        report.backends.join(", ")
    );
    for c in &report.capabilities {
        match &c.available {
            Ok(()) => outln!("  {}: available", c.backend),
            Err(why) => outln!("  {}: unavailable: {why}", c.backend),
        }
    }
    if report.p2p_for_file.is_empty() {
        outln!("  p2p path for this file: none open (see above)");
    }
    for (backend, verdict) in &report.p2p_for_file {
        match verdict {
            Ok(()) => outln!("  {backend} for this file: yes (aligned requests)"),
            Err(why) => outln!("  {backend} for this file: no: {why}"),
        }
    }
    outln!();
    outln!(
        "{:<10} {:>7} {:>7} {:>11} {:>5} {:>5} {:>10} {:>10} {:>9}  verified",
        "mode",
        "GPUs",
        "threads",
        "io size",
        "cold",
        "runs",
        "best GB/s",
        "mean GB/s",
        "CPU s/GB"
    );
}

fn print_row(o: &bench::Outcome) {
    // How many GPUs, and which: "1 (#0)", "2 (#0,#1)".
    let which: Vec<String> = o.devices.iter().map(|d| format!("#{d}")).collect();
    outln!(
        "{:<10} {:>7} {:>7} {:>11} {:>5} {:>5} {:>10.2} {:>10.2} {:>9.2}  {}",
        o.mode.name(),
        format!("{} ({})", o.devices.len(), which.join(",")),
        o.threads,
        human(o.io_size),
        if o.cold { "yes" } else { "no" },
        o.runs,
        o.best_gbps,
        o.mean_gbps,
        o.cpu_s_per_gb,
        match o.verified {
            Some(true) => "yes",
            Some(false) => "NO: GPU memory and file differ",
            None => "skipped",
        }
    );
}

/// What a table run prints after its rows (the rows themselves went out as each mode ended);
/// JSON: the whole report.
fn print(report: &Report, json: bool) {
    if json {
        outln!("{}", to_json(report));
        return;
    }
    for o in &report.outcomes {
        if let Some(t) = &o.stream {
            if t.queued_calls > 0 {
                outln!(
                    "{}: queueing a call took {:.1} µs (median), {:.1} µs (worst), the first of a run at most {:.1} µs, over {} calls",
                    o.mode.name(),
                    t.enqueue_median_us,
                    t.enqueue_worst_us,
                    t.enqueue_first_worst_us,
                    t.queued_calls
                );
            }
            outln!(
                "{}: a host function on another stream waited {:.1} µs (median), {:.1} µs (worst) over {} probes",
                o.mode.name(),
                t.other_stream_median_us,
                t.other_stream_worst_us,
                t.other_stream_probes
            );
        }
    }
    if report.outcomes.iter().any(|o| !o.profile.is_empty()) {
        outln!("\nprofile (summed over all runs of a mode and over threads):");
        report.outcomes.iter().for_each(print_profile);
    }
}

/// The `--profile` lines of one mode: counters, times in ms with their share of the backend
/// threads' measured time, and wall times (`_wall_ns`, summed over calls) in ms.
fn print_profile(o: &bench::Outcome) {
    for (backend, counters) in &o.profile {
        let thread_time = |k: &str| k.ends_with("_ns") && !k.ends_with("_wall_ns");
        let total_ns: u64 = counters.iter().filter(|(k, _)| thread_time(k)).map(|(_, v)| v).sum();
        let ms = |v: u64| v as f64 / 1e6;
        let parts: Vec<String> = counters
            .iter()
            .map(|(key, value)| match (key.strip_suffix("_wall_ns"), key.strip_suffix("_ns")) {
                (Some(what), _) => format!("{what} {:.1} ms (wall)", ms(*value)),
                (None, Some(what)) => {
                    format!("{what} {:.1} ms ({:.0}%)", ms(*value), 100.0 * *value as f64 / total_ns.max(1) as f64)
                }
                (None, None) => format!("{key} {value}"),
            })
            .collect();
        outln!("  {} {}: {}", o.mode.name(), backend, parts.join(", "));
    }
}

fn human(bytes: u64) -> String {
    match bytes {
        // The most one call moves (Linux's MAX_RW_COUNT), what a whole-range call of 2 GiB or
        // more is cut to.
        b if b == hipfile::max_rw_count() as u64 => "2 GiB-4 KiB".to_owned(),
        b if b >= 1 << 30 && b % (1 << 30) == 0 => format!("{} GiB", b >> 30),
        b if b >= 1 << 20 && b % (1 << 20) == 0 => format!("{} MiB", b >> 20),
        b if b >= 1 << 10 && b % (1 << 10) == 0 => format!("{} KiB", b >> 10),
        b => format!("{b} B"),
    }
}

/// The report as JSON: a number that is not finite (a run too short to time) is `null`.
fn to_json(r: &Report) -> String {
    let results: Vec<Value> = r
        .outcomes
        .iter()
        .map(|o| {
            let profile: serde_json::Map<String, Value> = o
                .profile
                .iter()
                .map(|(backend, counters)| {
                    let counters: serde_json::Map<String, Value> =
                        counters.iter().map(|(k, v)| (k.to_string(), json!(v))).collect();
                    (backend.to_string(), Value::Object(counters))
                })
                .collect();
            json!({
                "mode": o.mode.name(),
                "devices": o.devices,
                "threads": o.threads,
                "io_size": o.io_size,
                "bytes_per_run": o.bytes_per_run,
                "cold": o.cold,
                "runs": o.runs,
                "best_gbps": rounded(o.best_gbps),
                "mean_gbps": rounded(o.mean_gbps),
                "run_gbps": o.run_gbps.iter().map(|&g| rounded(g)).collect::<Vec<_>>(),
                "cpu_s_per_gb": rounded(o.cpu_s_per_gb),
                "run_cpu_wait_ms": o.run_cpu_wait_ms.iter().map(|&g| rounded(g)).collect::<Vec<_>>(),
                "run_preempted": o.run_preempted,
                "verified": o.verified,
                "profile": profile,
                "stream": o.stream.as_ref().map(|t| json!({
                    "queued_calls": t.queued_calls,
                    "enqueue_first_worst_us": t.enqueue_first_worst_us,
                    "enqueue_median_us": t.enqueue_median_us,
                    "enqueue_worst_us": t.enqueue_worst_us,
                    "other_stream_median_us": t.other_stream_median_us,
                    "other_stream_worst_us": t.other_stream_worst_us,
                    "other_stream_probes": t.other_stream_probes,
                })),
            })
        })
        .collect();
    let capabilities: Vec<Value> = r
        .capabilities
        .iter()
        .map(|c| match &c.available {
            Ok(()) => json!({ "backend": c.backend, "available": true }),
            Err(why) => json!({ "backend": c.backend, "available": false, "reason": why }),
        })
        .collect();
    let direct: Vec<Value> = r
        .p2p_for_file
        .iter()
        .map(|(b, v)| match v {
            Ok(()) => json!({ "backend": b, "serves": true }),
            Err(why) => json!({ "backend": b, "serves": false, "reason": why.0 }),
        })
        .collect();
    let report = json!({
        "platform": r.platform,
        "backends": r.backends,
        "capabilities": capabilities,
        "p2p_for_file": direct,
        "file": r.file.display().to_string(),
        "size_bytes": r.size,
        "results": results,
    });
    serde_json::to_string_pretty(&report).expect("a JSON value always serializes")
}

/// GB/s to three decimals; `None` (JSON `null`) when not finite.
fn rounded(gbps: f64) -> Option<f64> {
    gbps.is_finite().then(|| (gbps * 1000.0).round() / 1000.0)
}
