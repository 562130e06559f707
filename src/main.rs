//! The `opcat` binary: argument parsing and process exit codes only; everything else is in the
//! library.

use std::process::ExitCode;

fn main() -> ExitCode {
    opcat::cli::main()
}
