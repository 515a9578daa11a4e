//! The `nbx` binary: the command line of the library [`nbx_cli::run`] (see its docs).

use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    ExitCode::from(nbx_cli::run(&args))
}
