//! `hipfile stats PID` and `hipfile stats -- CMD ARGS`: another process's statistics (semantics
//! §14), read while it runs without stopping it, refreshed every `--interval` seconds, and once
//! more when it exits.

use std::time::{Duration, Instant};

use hipfile::Direction::{Read, Write};
use hipfile::stats::{Counter, Path, Remote, Snapshot};
use serde_json::{Value, json};

use crate::args::StatsArgs;

pub(crate) fn run(args: &StatsArgs) -> Result<(), String> {
    if !args.interval.is_finite() || args.interval < 0.0 {
        return Err("--interval: a number of seconds, 0 or more".into());
    }
    let interval = Duration::from_secs_f64(args.interval);
    if let Some(pid) = args.pid {
        let remote = Remote::connect(pid).map_err(|e| e.to_string())?;
        return watch(&remote, interval, args.json, None);
    }
    let (program, rest) = args.command.split_first().ok_or("give a PID, or a command after --")?;
    let mut child = std::process::Command::new(program).args(rest).spawn().map_err(|e| format!("{program}: {e}"))?;
    let pid = child.id();
    // The program publishes once its driver opens: try until then, or until it ends.
    let start = Instant::now();
    let remote = loop {
        match Remote::connect(pid) {
            Ok(remote) => break Some(remote),
            Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => return Err(e.to_string()),
            Err(_) => {}
        }
        if child.try_wait().map_err(|e| e.to_string())?.is_some() {
            break None;
        }
        std::thread::sleep(Duration::from_millis(if start.elapsed() < Duration::from_secs(1) { 2 } else { 50 }));
    };
    let Some(remote) = remote else {
        let status = child.wait().map_err(|e| e.to_string())?;
        return Err(format!("{program} ({status}) published no hipfile statistics before it ended"));
    };
    // Refreshes only when asked (--interval > 0 and a terminal or --json): at exit in any case.
    let live = !args.interval.eq(&0.0) && (args.json || std::io::IsTerminal::is_terminal(&std::io::stdout()));
    watch(&remote, if live { interval } else { Duration::ZERO }, args.json, Some(&mut child))
}

/// Prints snapshots until the process ends (each `interval`; with 0, once now, or for a child
/// we started, once at its end), each saying whether the process has ended.
fn watch(
    remote: &Remote,
    interval: Duration,
    json: bool,
    mut child: Option<&mut std::process::Child>,
) -> Result<(), String> {
    loop {
        // Whether the process has ended, and whether this is the last snapshot.
        let (ended, last) = match child.as_deref_mut() {
            Some(c) if interval.is_zero() => {
                c.wait().map_err(|e| e.to_string())?;
                (true, true)
            }
            // Once, now: the process may well run on.
            _ if interval.is_zero() => (remote.wait_exit(Some(Duration::ZERO)), true),
            _ => {
                let ended = remote.wait_exit(Some(interval));
                (ended, ended)
            }
        };
        let snapshot = remote.snapshot().map_err(|e| e.to_string())?;
        show(&snapshot, json, ended);
        if last {
            if let Some(c) = child {
                let status = c.wait().map_err(|e| e.to_string())?;
                if !status.success() {
                    return Err(format!("the command ended with {status}"));
                }
            }
            return Ok(());
        }
    }
}

fn show(s: &Snapshot, json: bool, ended: bool) {
    if json {
        outln!("{}", to_json(s, ended));
        return;
    }
    outln!("pid {} (statistics level {}){}", s.pid, s.level, if ended { ", ended" } else { "" });
    for (name, dir) in [("read", Read), ("write", Write)] {
        let t = s.totals(dir, None, None);
        let path = |p| {
            let t = s.totals(dir, Some(p), None);
            format!("{} ok / {} failed", t.ok, t.err)
        };
        outln!(
            "  {name:<5} {} ok, {} failed, {} bytes, {:.2} GB/s, {} µs average; p2p {}, bounce {}, host memory {}; \
             {} unaligned",
            t.ok,
            t.err,
            t.bytes,
            t.bandwidth() as f64 / 1e9,
            t.latency_avg_us(),
            path(Path::P2p),
            path(Path::Bounce),
            path(Path::Host),
            t.unaligned
        );
    }
    let e = |c| s.get(c);
    outln!(
        "  files registered {} (refused {}), buffers registered {} (refused {}); batches: {} submitted, {} entries, \
         {} done, {} failed; to bounce: {} no path, {} declined",
        e(Counter::HandleRegisterOk),
        e(Counter::HandleRegisterErr),
        e(Counter::BufRegisterOk),
        e(Counter::BufRegisterErr),
        e(Counter::BatchSubmitOk),
        e(Counter::BatchEntries),
        e(Counter::BatchCompleteOk),
        e(Counter::BatchCompleteErr),
        e(Counter::BouncedNoPath),
        e(Counter::BouncedDeclined),
    );
    for g in s.gpus_used() {
        let (r, w) = (s.totals(Read, None, Some(g)), s.totals(Write, None, Some(g)));
        outln!(
            "  GPU {g}: read {} bytes in {} requests, wrote {} bytes in {}, {} bytes registered",
            r.bytes,
            r.ok,
            w.bytes,
            w.ok,
            s.registered_bytes(g)
        );
    }
}

fn to_json(s: &Snapshot, ended: bool) -> Value {
    let totals = |t: hipfile::stats::Totals| {
        json!({
            "ok": t.ok, "failed": t.err, "bytes": t.bytes, "micros": t.micros, "unaligned": t.unaligned,
            "bytes_per_second": t.bandwidth(), "latency_avg_us": t.latency_avg_us(),
        })
    };
    let direction = |d| {
        json!({
            "all": totals(s.totals(d, None, None)),
            "p2p": totals(s.totals(d, Some(Path::P2p), None)),
            "bounce": totals(s.totals(d, Some(Path::Bounce), None)),
            "host": totals(s.totals(d, Some(Path::Host), None)),
            "size_classes": s.size_histogram(d).to_vec(),
        })
    };
    let gpus: Vec<Value> = s
        .gpus_used()
        .into_iter()
        .map(|g| {
            json!({"gpu": g, "read": totals(s.totals(Read, None, Some(g))), "write": totals(s.totals(Write, None, Some(g))),
                   "registered_bytes": s.registered_bytes(g)})
        })
        .collect();
    let e = |c| s.get(c);
    json!({
        "pid": s.pid,
        "level": s.level,
        "ended": ended,
        "read": direction(Read),
        "write": direction(Write),
        "files_registered": e(Counter::HandleRegisterOk),
        "buffers_registered": e(Counter::BufRegisterOk),
        "batches_submitted": e(Counter::BatchSubmitOk),
        "batch_entries": e(Counter::BatchEntries),
        "bounced_no_path": e(Counter::BouncedNoPath),
        "bounced_declined": e(Counter::BouncedDeclined),
        "gpus": gpus,
    })
}
