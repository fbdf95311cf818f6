//! The `benchctl` command line: parses arguments and hands each subcommand to the library that
//! does the work. Exit status: 0 success, 1 failure or regression, 2 bad input, 130 interrupted.

mod load;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

#[derive(Parser)]
#[command(name = "benchctl", version, about = "Reproducible web-server benchmarks with ab's tables")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Drive one URL with load, like ab (and at least as fast as wrk).
    Load(load::LoadArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Load(args) => load::main(args),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("benchctl: error: {e:#}");
            ExitCode::from(e.exit_code())
        }
    }
}

/// An error with the exit status it deserves.
#[derive(Debug)]
pub struct Failure {
    pub code: u8,
    pub error: anyhow::Error,
}

impl Failure {
    pub fn usage(e: impl Into<anyhow::Error>) -> Self {
        Failure {
            code: 2,
            error: e.into(),
        }
    }
    fn exit_code(&self) -> u8 {
        self.code
    }
}

impl<E: Into<anyhow::Error>> From<E> for Failure {
    fn from(e: E) -> Self {
        Failure {
            code: 1,
            error: e.into(),
        }
    }
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if f.alternate() {
            write!(f, "{:#}", self.error)
        } else {
            write!(f, "{}", self.error)
        }
    }
}
