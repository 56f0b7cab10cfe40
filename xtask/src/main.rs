//! `cargo xtask`: the command line of dist. The launcher itself lives in dist-runtime
//! (`dist_runtime::Launch`); this file only builds the target and calls it.

use clap::{Parser, Subcommand};
use std::path::PathBuf;
use std::process::{Command, ExitCode};

#[derive(Parser)]
#[command(name = "cargo xtask", about = "Build and run dist programs on N ranks")]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Build a binary or example and run it on N ranks.
    Run(RunArgs),
}

#[derive(clap::Args)]
struct RunArgs {
    /// Number of ranks.
    #[arg(short = 'n', long = "nranks", default_value_t = 1)]
    n: usize,
    /// Run this example.
    #[arg(long, conflicts_with = "bin")]
    example: Option<String>,
    /// Run this binary.
    #[arg(long)]
    bin: Option<String>,
    /// Package that holds the target.
    #[arg(short = 'p', long)]
    package: Option<String>,
    /// Build with optimisations.
    #[arg(long)]
    release: bool,
    /// Backend: shm (default), nccl, mpi, auto.
    #[arg(long, default_value = "shm")]
    backend: String,
    /// Run this #[spmd] entry instead of main.
    #[arg(long)]
    entry: Option<String>,
    /// List the #[spmd] entries of the target and exit.
    #[arg(long)]
    list: bool,
    /// Kill the job after this many seconds.
    #[arg(long)]
    timeout: Option<f64>,
    /// Arguments passed to every rank.
    #[arg(last = true)]
    args: Vec<String>,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.cmd {
        Cmd::Run(a) => match run(a) {
            Ok(code) => code,
            Err(e) => {
                eprintln!("xtask: {e}");
                ExitCode::from(2)
            }
        },
    }
}

/// Builds the target with cargo and returns its executable.
fn build(a: &RunArgs) -> Result<PathBuf, String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.args(["build", "--message-format=json-render-diagnostics"]);
    if a.release {
        cmd.arg("--release");
    }
    if let Some(p) = &a.package {
        cmd.args(["-p", p]);
    }
    match (&a.example, &a.bin) {
        (Some(e), _) => cmd.args(["--example", e]),
        (None, Some(b)) => cmd.args(["--bin", b]),
        (None, None) => return Err("name a target: --example NAME or --bin NAME".into()),
    };
    if a.backend == "nccl" {
        cmd.args(["--features", "dist-runtime/nccl"]);
    }
    let out = cmd.stderr(std::process::Stdio::inherit()).output().map_err(|e| format!("cannot run cargo: {e}"))?;
    if !out.status.success() {
        return Err("build failed".into());
    }
    // The last compiler-artifact line with an executable is our target.
    let stdout = String::from_utf8_lossy(&out.stdout);
    let exe = stdout
        .lines()
        .rev()
        .filter(|l| l.contains("\"reason\":\"compiler-artifact\""))
        .filter_map(|l| {
            let i = l.find("\"executable\":\"")? + "\"executable\":\"".len();
            let rest = &l[i..];
            Some(rest[..rest.find('"')?].replace("\\\\", "\\"))
        })
        .next()
        .ok_or("cargo built no executable for that target")?;
    Ok(PathBuf::from(exe))
}

fn run(a: RunArgs) -> Result<ExitCode, String> {
    let exe = build(&a)?;
    if a.list {
        let st = Command::new(&exe).env("DIST_LIST_ENTRIES", "1").status().map_err(|e| e.to_string())?;
        return Ok(if st.success() { ExitCode::SUCCESS } else { ExitCode::FAILURE });
    }
    if a.n == 0 {
        return Err("-n must be at least 1".into());
    }
    let mut launch = dist_runtime::Launch::new(&exe, a.n).args(&a.args).env("DIST_BACKEND", &a.backend);
    if let Some(e) = &a.entry {
        launch = launch.env("DIST_ENTRY", e);
    }
    if let Some(t) = a.timeout {
        launch = launch.timeout(std::time::Duration::from_secs_f64(t));
    }
    let report = launch.run().map_err(|e| e.to_string())?;
    if report.success() {
        return Ok(ExitCode::SUCCESS);
    }
    if report.timed_out {
        eprintln!("xtask: the job timed out after {:.1}s", report.elapsed.as_secs_f64());
    }
    match report.first_failure {
        Some(r) => {
            eprintln!("xtask: rank {r} failed first ({}); the other ranks were stopped", report.ranks[r].status())
        }
        None => eprintln!("xtask: the job failed"),
    }
    Ok(ExitCode::FAILURE)
}
