//! What the tool shows while it works, on stderr where that is a terminal (nothing elsewhere):
//! a line for each slow step before a transfer, and a progress line during it that moves even
//! while one large call is in flight.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use hipfile::Direction;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// The bytes this process has read and written through system calls so far (`/proc/self/io`'s
/// `rchar` and `wchar`: every thread's, the library's workers' included), where it can be read.
fn io_chars() -> Option<(u64, u64)> {
    let text = std::fs::read_to_string("/proc/self/io").ok()?;
    let field =
        |name: &str| text.lines().find_map(|l| l.strip_prefix(name)?.strip_prefix(':')?.trim().parse::<u64>().ok());
    Some((field("rchar")?, field("wchar")?))
}

/// The file side of a transfer so far: the bytes moved in `direction` since `start` (`io_chars`
/// then), or 0 where unknown.
fn file_side(direction: Direction, start: Option<(u64, u64)>) -> u64 {
    match (start, io_chars()) {
        (Some((r0, w0)), Some((r, w))) => match direction {
            Direction::Read => r.saturating_sub(r0),
            Direction::Write => w.saturating_sub(w0),
        },
        _ => 0,
    }
}

/// Where the line stands: the bytes of finished calls (`done`), or, while a call is in flight,
/// what the file side has moved (a read's file side runs ahead of its copies by a few chunks at
/// most), never past `total` nor back from `shown`.
fn position(done: u64, file: u64, total: u64, shown: u64) -> u64 {
    // Under a MiB, the file side is the process's other I/O (this line's own writes among it).
    let file = if file < 1 << 20 { 0 } else { file.min(total) };
    done.max(file).max(shown)
}

/// A progress line on stderr, where it is a terminal, from a fifth of a second into a transfer
/// of `total` bytes until `stop`: `done` counts the bytes of finished calls; `direction` (the
/// file side: read for a read into GPU memory) moves it within a call.
pub(crate) fn progress_line(done: &AtomicU64, stop: &AtomicBool, total: u64, label: &str, direction: Direction) {
    // Only for a person watching: a run into a pipe or a file reads nothing more meanwhile.
    if !std::io::IsTerminal::is_terminal(&std::io::stderr()) {
        return;
    }
    let (start, chars) = (Instant::now(), io_chars());
    let mut bar: Option<ProgressBar> = None;
    let mut shown = 0;
    while !stop.load(Ordering::Relaxed) {
        std::thread::sleep(Duration::from_millis(100));
        if start.elapsed() < Duration::from_millis(200) {
            continue;
        }
        let bar = bar.get_or_insert_with(|| {
            let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
            let template =
                "{msg} [{bar:30}] {decimal_bytes}/{decimal_total_bytes} ({decimal_bytes_per_sec}, {elapsed_precise})";
            let style = ProgressStyle::with_template(template).unwrap_or_else(|_| ProgressStyle::default_bar());
            bar.set_style(style.progress_chars("#>."));
            bar.set_message(label.to_owned());
            bar
        });
        shown = position(done.load(Ordering::Relaxed), file_side(direction, chars), total, shown);
        bar.set_position(shown);
    }
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
}

/// A step before the measurement (making the data file, filling GPU memory, checking), said on
/// stderr where it is a terminal while it lasts.
pub(crate) struct Step(ProgressBar);

impl Step {
    pub(crate) fn new(what: String) -> Step {
        // As the progress line: nothing (no ticking thread) where nobody watches.
        if !std::io::IsTerminal::is_terminal(&std::io::stderr()) {
            return Step(ProgressBar::hidden());
        }
        let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
        let style = ProgressStyle::with_template("{spinner} {msg} ({elapsed})")
            .unwrap_or_else(|_| ProgressStyle::default_spinner());
        bar.set_style(style);
        bar.set_message(what);
        bar.enable_steady_tick(Duration::from_millis(100));
        Step(bar)
    }
}

impl Drop for Step {
    fn drop(&mut self) {
        self.0.finish_and_clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_file_side_counts_this_processs_reads_and_writes() {
        let path = std::env::temp_dir().join(format!("hipfile-progress-{}", std::process::id()));
        let start = io_chars();
        assert!(start.is_some(), "/proc/self/io is readable on Linux");
        std::fs::write(&path, vec![7u8; 3 << 20]).unwrap();
        assert!(file_side(Direction::Write, start) >= 3 << 20);
        let start = io_chars();
        assert_eq!(std::fs::read(&path).unwrap().len(), 3 << 20);
        assert!(file_side(Direction::Read, start) >= 3 << 20);
        std::fs::remove_file(path).unwrap();
    }

    #[test]
    fn the_line_moves_with_the_file_side_within_a_call_and_never_back() {
        assert_eq!(position(0, 0, 100, 0), 0);
        const M: u64 = 1 << 20;
        assert_eq!(position(0, 40 * M, 100 * M, 0), 40 * M, "one call in flight: the file side moves the line");
        assert_eq!(position(0, 30 * M, 100 * M, 40 * M), 40 * M, "never back");
        assert_eq!(position(0, 500 * M, 100 * M, 40 * M), 100 * M, "never past the total (other I/O of the process)");
        assert_eq!(position(100 * M, 0, 100 * M, 40 * M), 100 * M, "finished calls count whatever the file side says");
        assert_eq!(position(0, 4000, 100 * M, 0), 0, "the process's own few writes (this line's) are not progress");
    }
}
