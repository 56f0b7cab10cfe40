//! `cargo spmd`: build a package's binary or example and run it on N ranks.
//! `cargo spmd run --help` lists the flags; the library half is `cargo_spmd::run`.

use clap::{Parser, Subcommand};
use std::process::ExitCode;

#[derive(Parser)]
#[command(name = "cargo spmd", bin_name = "cargo spmd", version, about = "Build and run dist programs on N ranks")]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Build a binary or example of this package and run it on N ranks.
    Run(Box<cargo_spmd::RunArgs>),
    /// Merge the per-rank traces written under DIST_TRACE=DIR (or `run --trace DIR`)
    /// into DIR/trace.json for Perfetto, one track per rank, print a summary, and line up
    /// the flight recorders of ranks that failed (where each one last was).
    Trace(cargo_spmd::TraceArgs),
    /// Report what the compile-time communication check proved: for every #[spmd] entry
    /// of the package, the world sizes checked, and each construct it could not follow
    /// with its file, line and why.
    Check(cargo_spmd::check::CheckArgs),
}

fn main() -> ExitCode {
    // As a cargo subcommand, cargo calls us as `cargo-spmd spmd run ...`; called
    // directly it is `cargo-spmd run ...`.
    let mut args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if args.get(1).is_some_and(|a| a == "spmd") {
        args.remove(1);
    }
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(e) => {
            use clap::error::ErrorKind;
            if !matches!(e.kind(), ErrorKind::UnknownArgument | ErrorKind::InvalidSubcommand) {
                e.exit();
            }
            // The usual cause of a flag the docs name but this binary refuses: a `cargo
            // spmd` installed before the dist version the package now uses.
            let _ = e.print();
            eprintln!(
                "note: this `cargo spmd` (version {}, built from {}) does not know it; if the dist your package \
                 uses documents it, the installed launcher is older than that dist: reinstall it from that \
                 checkout with `cargo install --path <dist checkout>/cargo-spmd --force`",
                env!("CARGO_PKG_VERSION"),
                env!("CARGO_MANIFEST_DIR"),
            );
            return ExitCode::from(2);
        }
    };
    let result = match cli.cmd {
        Cmd::Run(a) => cargo_spmd::run(*a, "cargo spmd"),
        Cmd::Check(a) => cargo_spmd::check::check(a),
        Cmd::Trace(cargo_spmd::TraceArgs { dir, out }) => {
            cargo_spmd::trace::merge(&dir, out).map(|()| ExitCode::SUCCESS)
        }
    };
    result.unwrap_or_else(|e| {
        eprintln!("cargo spmd: {e}");
        ExitCode::from(2)
    })
}
