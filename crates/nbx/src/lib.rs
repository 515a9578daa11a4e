//! `nbx`: sentence embeddings with nbxtensor (`nbx embed`), a model's price before it runs
//! (`nbx price`) and greedy text generation with a Llama-family model (`nbx generate`). Errors go to stderr with a non-zero exit: 2 for a bad command line,
//! 1 for anything that fails after it.
//!
//! The command is this library's [`run`]: the `nbx` binary calls it, and so does the Python
//! package's `nbx` command (`pip install` puts one on the PATH that runs it inside the
//! extension `nbxtensor._core`), so both are the same program.

mod args;
mod embed;
mod files;
mod generate;
mod price;

use args::{Command, Options};
use nbxtensor_models::SentenceEmbedder;
use std::io::Write;

/// Opens the model of `--model` on the device of `--device`, with the thread pool of
/// `--threads`.
fn open_model(o: &Options) -> Result<SentenceEmbedder, String> {
    nbxtensor::settings::threads::set_threads(o.threads).map_err(|e| e.to_string())?;
    if !o.model.is_dir() {
        return Err(format!("no model directory {} (see --model)", o.model.display()));
    }
    let mut model = SentenceEmbedder::open_on(&o.model, o.device).map_err(|e| e.to_string())?;
    if o.quantize == Some(args::Quantize::Int8) {
        model.quantize_int8().map_err(|e| e.to_string())?;
    }
    Ok(model)
}

/// Runs the command line `args` (without the program's name) and returns the exit status:
/// 0, 2 for a bad command line, 1 for a failure after it. Standard output is flushed before
/// it returns (a caller inside another process, such as Python, may not flush Rust's).
pub fn run(args: &[String]) -> u8 {
    let status = run_unflushed(args);
    let _ = std::io::stdout().flush();
    status
}

fn run_unflushed(args: &[String]) -> u8 {
    let command = match args::parse(args) {
        Ok(command) => command,
        Err(why) => {
            eprintln!("nbx: error: {why}\n{}", args::USAGE);
            return 2;
        }
    };
    let result = match &command {
        Command::Help => {
            println!("{}", args::USAGE);
            Ok(())
        }
        Command::Embed(o) => embed::run(o),
        Command::Price(o) => price::run(o),
        Command::Generate(o) => generate::run(o),
    };
    match result {
        Ok(()) => 0,
        Err(why) => {
            eprintln!("nbx: error: {why}");
            1
        }
    }
}
