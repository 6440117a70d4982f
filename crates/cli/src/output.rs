//! Standard output for every command.
//!
//! `println!` panics when the reader of a pipe has gone away (`covenant rules | head`). A
//! command whose reader left has no one left to tell, so writing ends the process quietly
//! with status 0, as `head`'s other writers do; any other write error is reported once, with
//! the exit code for invalid usage. `print!` and `println!` are not used in this crate.

use std::io::{ErrorKind, Write};

/// Writes `args` to standard output, ending the process as described above on failure.
pub fn write(args: std::fmt::Arguments<'_>) {
    let mut out = std::io::stdout().lock();
    if let Err(e) = out.write_fmt(args) {
        quit(&e);
    }
}

/// What a failed write to standard output ends with: quietly on a closed pipe, else exit 2.
pub fn quit(e: &std::io::Error) -> ! {
    if e.kind() == ErrorKind::BrokenPipe {
        std::process::exit(0);
    }
    eprintln!("covenant: cannot write to standard output: {e}");
    std::process::exit(i32::from(crate::check::EXIT_INVALID));
}

/// `print!` that ends quietly when the reader has gone away.
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::output::write(format_args!($($arg)*))
    };
}

/// `println!` that ends quietly when the reader has gone away.
macro_rules! outln {
    () => {
        $crate::output::write(format_args!("\n"))
    };
    ($($arg:tt)*) => {
        $crate::output::write(format_args!("{}\n", format_args!($($arg)*)))
    };
}

pub(crate) use {out, outln};
