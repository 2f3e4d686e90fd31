//! The `epimine` binary: parse, run ([`epimine::commands`]), print the outcome. Errors become a
//! message and exit code 1; a run that skipped some key events, or whose LLM trials fell back to
//! no-LLM episodes, exits with 3.

use clap::Parser;
use epimine::cli::Cli;
use epimine::commands;

/// Colour in the log only on a terminal, and never with `NO_COLOR` set (https://no-color.org).
fn colour() -> bool {
    use std::io::IsTerminal;
    std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

fn init_logging(verbose: u8) {
    let default = match verbose {
        0 => "info",
        1 => "debug",
        _ => "trace",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(colour())
        .with_target(false)
        .init();
}

/// SIGTERM, SIGHUP and SIGINT, caught on a thread of their own: one log line (which signal,
/// what is kept, how to resume), then exit with 128 + the signal's number, as a shell reports a
/// process the signal ended.
fn catch_signals(created: Vec<std::path::PathBuf>) {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    let Ok(mut signals) = signal_hook::iterator::Signals::new([SIGTERM, SIGHUP, SIGINT]) else {
        return;
    };
    std::thread::spawn(move || {
        if let Some(signal) = signals.forever().next() {
            let name = match signal {
                SIGTERM => "SIGTERM",
                SIGHUP => "SIGHUP",
                _ => "SIGINT",
            };
            tracing::warn!("{name} received: stopping; {}", commands::on_signal());
            epimine::storage::remove_empty_folders(&created);
            std::process::exit(128 + signal);
        }
    });
}

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    init_logging(cli.verbose);
    epimine::encoder::tune_allocator();
    let runtime = match epimine::runtime::multi_thread() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    // The output folders this command would create: a command that fails leaves none of them
    // behind (those it wrote into stay, with what it wrote).
    let created = commands::new_folders(&cli.command);
    catch_signals(created.clone());
    match runtime.block_on(commands::dispatch(cli.command)) {
        Ok(finished) => {
            print!("{}", epimine::error_line::printable(&finished.to_string()));
            if finished.partial() {
                std::process::ExitCode::from(3)
            } else {
                std::process::ExitCode::SUCCESS
            }
        }
        Err(e) => {
            epimine::storage::remove_empty_folders(&created);
            eprintln!(
                "error: {}",
                epimine::error_line::printable(&epimine::error_line::one_line(&e))
            );
            std::process::ExitCode::FAILURE
        }
    }
}
