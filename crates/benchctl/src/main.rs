//! The `benchctl` command line: parses arguments, hands each subcommand to the library that
//! does the work, prints what comes back. Exit status: 0 success, 1 failure or regression, 2 bad
//! input, 130 interrupted (143 for SIGTERM).

mod args;
mod cmds;
mod failure;
mod history;
mod hosts;
mod load;
mod output;
mod progress;
mod run;
mod signals;
mod system;

use failure::Failure;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "benchctl",
    version = env!("BENCHCTL_VERSION_LINE"),
    about = "Reproducible web-server benchmarks with ApacheBench's tables"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run a scenario: build and start its servers, verify them, measure them, report.
    Run(run::RunArgs),
    /// Drive one URL with load, like ab (and at least as fast as wrk).
    Load(Box<load::LoadArgs>),
    /// Check scenario files without starting anything.
    Validate(cmds::ValidateArgs),
    /// Build the servers' images, or make their base images locally.
    Images(cmds::ImagesArgs),
    /// Re-render a stored results record: text, markdown, html or Bencher JSON.
    Report(cmds::ReportArgs),
    /// Compare a run with a baseline; exit 1 on a regression.
    Compare(cmds::CompareArgs),
    /// The records under a folder night by night, as one page (Markdown or HTML): each figure's
    /// trend, the A/B verdicts, the commit of each night and the change points.
    History(history::HistoryArgs),
    /// The seed posts' published figures beside the records measuring them again (Markdown).
    Reproductions(cmds::ReproductionsArgs),
    /// Remove the containers, temporary folders and unfinished results records of benchctl runs
    /// that are no longer running.
    Gc(cmds::GcArgs),
    /// List the server kinds: where each comes from, its options, what its container may do.
    Servers(cmds::ServersArgs),
    /// Check the Docker engines a scenario names: reachable, versions, CPUs, memory, clock.
    Hosts(hosts::HostsArgs),
    /// What this machine does to the figures measured on it, and the settings that remove it.
    System(system::SystemArgs),
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return usage_error(e),
    };
    let result = match cli.command {
        Command::Load(args) => load::main(*args, on_signals),
        Command::Validate(args) => cmds::validate(args),
        Command::Report(args) => cmds::report(args),
        Command::Compare(args) => cmds::compare(args),
        Command::Reproductions(args) => cmds::reproductions(args),
        Command::History(args) => history::main(args),
        Command::Servers(args) => cmds::servers(args),
        Command::Run(args) => block_on(run::main(args, on_signals)),
        Command::Images(args) => block_on(cmds::images(args)),
        Command::Gc(args) => block_on(cmds::gc(args)),
        Command::Hosts(args) => block_on(hosts::main(args)),
        Command::System(args) => system::main(args),
    };
    // Engines reached over ssh: their tunnels end with the process anyway; this also removes
    // their sockets' folders.
    orchestrator::ssh::close_all();
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("benchctl: error: {}", printable(&format!("{e:#}")));
            ExitCode::from(e.code)
        }
    }
}

/// Installs the signal handlers of `run` and `load`: the first signal calls `stop`; a second
/// one runs `cleanup` and ends the process with the first signal's status, at once. This is the
/// only place the process exits other than by returning from `main`.
fn on_signals(
    stop: Box<dyn FnOnce(signals::Signal) + Send>,
    cleanup: Box<dyn FnOnce() + Send>,
) -> std::io::Result<()> {
    signals::install(stop, move |sig| {
        cleanup();
        std::process::exit(i32::from(sig.exit_code()))
    })
}

/// Prints clap's verdict as one line (help and version as they are) and exits 2 for bad input.
fn usage_error(e: clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    if matches!(
        e.kind(),
        ErrorKind::DisplayHelp
            | ErrorKind::DisplayVersion
            | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
    ) {
        let _ = e.print();
        return if e.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand {
            ExitCode::from(2)
        } else {
            ExitCode::SUCCESS
        };
    }
    let text = e.render().to_string();
    // clap's first paragraph is the verdict (a missing argument's name is on the next line).
    let first: Vec<&str> = text
        .lines()
        .skip_while(|l| l.trim().is_empty())
        .take_while(|l| !l.trim().is_empty())
        .map(str::trim)
        .collect();
    let first = first.join(" ");
    let first = first.trim_start_matches("error: ");
    eprintln!("benchctl: error: {first} (see benchctl --help)");
    ExitCode::from(2)
}

fn block_on<F: std::future::Future<Output = Result<ExitCode, Failure>>>(
    f: F,
) -> Result<ExitCode, Failure> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    rt.block_on(f)
}

/// `text` with its control characters but line breaks escaped (`\u{1b}`, `\t`): an error
/// quoting a user's text (a file name, a value) must not restyle or clear the terminal.
fn printable(text: &str) -> String {
    text.split('\n')
        .map(|line| scenario::escape_controls(line).into_owned())
        .collect::<Vec<_>>()
        .join("\n")
}
