//! `nbx`: sentence embeddings with nbxtensor (`nbx embed`) and a model's price before it
//! runs (`nbx price`). Errors go to stderr with a non-zero exit: 2 for a bad command line,
//! 1 for anything that fails after it.

mod args;
mod embed;
mod files;
mod price;

use args::{Command, Device, Options};
use nbxtensor_models::SentenceEmbedder;
use std::process::ExitCode;

/// Opens the model of `--model` on the device of `--device`, with the thread pool of
/// `--threads`.
fn open_model(o: &Options) -> Result<SentenceEmbedder, String> {
    if o.device == Device::Cuda {
        return Err("--device cuda: no CUDA backend in this build (use --device cpu)".into());
    }
    nbxtensor::settings::threads::set_threads(o.threads).map_err(|e| e.to_string())?;
    if !o.model.is_dir() {
        return Err(format!("no model directory {} (see --model)", o.model.display()));
    }
    SentenceEmbedder::open(&o.model).map_err(|e| e.to_string())
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let command = match args::parse(&args) {
        Ok(command) => command,
        Err(why) => {
            eprintln!("nbx: error: {why}\n{}", args::USAGE);
            return ExitCode::from(2);
        }
    };
    let result = match &command {
        Command::Help => {
            println!("{}", args::USAGE);
            Ok(())
        }
        Command::Embed(o) => embed::run(o),
        Command::Price(o) => price::run(o),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(why) => {
            eprintln!("nbx: error: {why}");
            ExitCode::FAILURE
        }
    }
}
