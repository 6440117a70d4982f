//! The `covenant` binary. Exit codes: 0 success or compatible, 1 incompatible or invalid
//! documents, 2 invalid input or usage.

mod serve;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "covenant",
    version,
    about = "Covenant: a schema registry that keeps the promises a data shape makes to its consumers"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Start the registry (Confluent-compatible REST API).
    Serve(serve::ServeArgs),
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() {
                ExitCode::from(2)
            } else {
                ExitCode::SUCCESS
            };
        }
    };
    let result = match cli.command {
        Command::Serve(args) => serve::run(args),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("covenant: {e:#}");
            ExitCode::from(2)
        }
    }
}
