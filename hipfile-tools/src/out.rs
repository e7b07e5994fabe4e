//! The tool's standard output. A reader that goes away (`hipfile stats PID | head -3`) ends the
//! tool quietly with status 0, as Unix tools do, once the node cache's pending records are on
//! the disk: never a panic over a closed pipe.

use std::io::Write as _;

/// Writes `line` and a newline to stdout (see the module docs for a closed pipe; any other
/// error writing stdout ends the tool with status 1 and the reason on stderr).
pub(crate) fn line(line: std::fmt::Arguments<'_>) {
    let mut stdout = std::io::stdout().lock();
    if let Err(e) = stdout.write_fmt(format_args!("{line}\n")) {
        hipfile_remote::flush();
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(0);
        }
        eprintln!("hipfile: cannot write the output: {e}");
        std::process::exit(1);
    }
}

/// `println!` for the tool's output, through [`line`].
macro_rules! outln {
    () => {
        $crate::out::line(format_args!(""))
    };
    ($($arg:tt)*) => {
        $crate::out::line(format_args!($($arg)*))
    };
}
