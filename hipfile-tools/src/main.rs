//! `hipfile`: the command-line tool of hipfile-rs.
//!
//! - `hipfile bench`: reads and writes between a file and GPU memory through hipfile, like
//!   NVIDIA's gdsio, on the best backend the machine has (the mock GPU where there is none),
//!   verified, as a table or JSON.

mod args;
mod bench;

use std::process::ExitCode;

use args::{BENCH_USAGE, BenchArgs};
use bench::Report;

const USAGE: &str = "usage: hipfile <command> [options]

commands:
  bench    measure file <-> GPU throughput (hipfile bench --help)";

fn main() -> ExitCode {
    // A tool run by a person says why it is slow or cannot do something; the library alone
    // stays quiet unless HIPFILE_LOG asks.
    hipfile_core::log::init(|| hipfile_core::log::Sink::Stderr);
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("bench") if args.get(1).is_some_and(|a| a == "--help" || a == "-h") => {
            println!("{BENCH_USAGE}");
            return ExitCode::SUCCESS;
        }
        Some("bench") => BenchArgs::parse(&args[1..]).and_then(|a| bench::run(&a).map(|r| print(&r, a.json))),
        Some("--help" | "-h" | "help") => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        _ => Err(USAGE.to_owned()),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("hipfile: {e}");
            ExitCode::FAILURE
        }
    }
}

fn print(report: &Report, json: bool) {
    if json {
        println!("{}", to_json(report));
        return;
    }
    println!(
        "hipfile bench: {} MiB file {}\nplatform: {}\nbackends: {}",
        report.size >> 20,
        report.file.display(),
        report.platform,
        report.backends.join(", ")
    );
    for c in &report.capabilities {
        match &c.available {
            Ok(()) => println!("  {}: available", c.backend),
            Err(why) => println!("  {}: unavailable: {why}", c.backend),
        }
    }
    if report.direct_for_file.is_empty() {
        println!("  direct path for this file: none open (see above)");
    }
    for (backend, verdict) in &report.direct_for_file {
        match verdict {
            Ok(()) => println!("  {backend} for this file: yes (aligned requests)"),
            Err(why) => println!("  {backend} for this file: no: {why}"),
        }
    }
    println!();
    println!(
        "{:<10} {:>7} {:>9} {:>5} {:>5} {:>10} {:>10}  verified",
        "mode", "threads", "io size", "cold", "runs", "best GB/s", "mean GB/s"
    );
    for o in &report.outcomes {
        println!(
            "{:<10} {:>7} {:>9} {:>5} {:>5} {:>10.2} {:>10.2}  {}",
            o.mode.name(),
            o.threads,
            human(o.io_size),
            if o.cold { "yes" } else { "no" },
            o.runs,
            o.best_gbps,
            o.mean_gbps,
            match o.verified {
                Some(true) => "yes",
                Some(false) => "NO: GPU memory and file differ",
                None => "skipped",
            }
        );
    }
    if report.outcomes.iter().any(|o| !o.profile.is_empty()) {
        println!("\nprofile (summed over all runs of a mode and over threads):");
        report.outcomes.iter().for_each(print_profile);
    }
}

/// The `--profile` lines of one mode: counters, and times in ms with their share of the
/// backend threads' measured time.
fn print_profile(o: &bench::Outcome) {
    for (backend, counters) in &o.profile {
        let total_ns: u64 = counters.iter().filter(|(k, _)| k.ends_with("_ns")).map(|(_, v)| v).sum();
        let parts: Vec<String> = counters
            .iter()
            .map(|(key, value)| match key.strip_suffix("_ns") {
                Some(what) => format!(
                    "{what} {:.1} ms ({:.0}%)",
                    *value as f64 / 1e6,
                    100.0 * *value as f64 / total_ns.max(1) as f64
                ),
                None => format!("{key} {value}"),
            })
            .collect();
        println!("  {} {}: {}", o.mode.name(), backend, parts.join(", "));
    }
}

fn human(bytes: u64) -> String {
    match bytes {
        b if b >= 1 << 30 && b % (1 << 30) == 0 => format!("{} GiB", b >> 30),
        b if b >= 1 << 20 && b % (1 << 20) == 0 => format!("{} MiB", b >> 20),
        b if b >= 1 << 10 && b % (1 << 10) == 0 => format!("{} KiB", b >> 10),
        b => format!("{b} B"),
    }
}

fn quote(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out + "\""
}

fn to_json(r: &Report) -> String {
    let results: Vec<String> = r
        .outcomes
        .iter()
        .map(|o| {
            let profile: Vec<String> = o
                .profile
                .iter()
                .map(|(backend, counters)| {
                    let fields: Vec<String> = counters.iter().map(|(k, v)| format!("{}: {v}", quote(k))).collect();
                    format!("{}: {{{}}}", quote(backend), fields.join(", "))
                })
                .collect();
            format!(
                "{{\"mode\": {}, \"threads\": {}, \"io_size\": {}, \"bytes_per_run\": {}, \"cold\": {}, \"runs\": {}, \"best_gbps\": {:.3}, \"mean_gbps\": {:.3}, \"verified\": {}, \"profile\": {{{}}}}}",
                quote(o.mode.name()),
                o.threads,
                o.io_size,
                o.bytes_per_run,
                o.cold,
                o.runs,
                o.best_gbps,
                o.mean_gbps,
                o.verified.map_or("null".into(), |v| v.to_string()),
                profile.join(", ")
            )
        })
        .collect();
    let capabilities: Vec<String> = r
        .capabilities
        .iter()
        .map(|c| match &c.available {
            Ok(()) => format!("{{\"backend\": {}, \"available\": true}}", quote(&c.backend)),
            Err(why) => {
                format!("{{\"backend\": {}, \"available\": false, \"reason\": {}}}", quote(&c.backend), quote(why))
            }
        })
        .collect();
    let direct: Vec<String> = r
        .direct_for_file
        .iter()
        .map(|(b, v)| match v {
            Ok(()) => format!("{{\"backend\": {}, \"serves\": true}}", quote(b)),
            Err(why) => format!("{{\"backend\": {}, \"serves\": false, \"reason\": {}}}", quote(b), quote(&why.0)),
        })
        .collect();
    format!(
        "{{\"platform\": {}, \"backends\": [{}], \"capabilities\": [{}], \"direct_for_file\": [{}], \"file\": {}, \"size_bytes\": {}, \"results\": [\n  {}\n]}}",
        quote(&r.platform),
        r.backends.iter().map(|b| quote(b)).collect::<Vec<_>>().join(", "),
        capabilities.join(", "),
        direct.join(", "),
        quote(&r.file.display().to_string()),
        r.size,
        results.join(",\n  ")
    )
}
