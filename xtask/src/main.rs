//! `cargo xtask`: the command line of dist. The launcher itself lives in dist-runtime
//! (`dist_runtime::Launch`); this file only builds the target and calls it.

mod trace;

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
    /// Benchmark the collectives (nccl-tests style); arguments go to `dist-bench`
    /// (`cargo xtask bench -- --help` lists them).
    Bench {
        /// Arguments for dist-bench, e.g. `-n 4 --ops all_reduce --max-bytes 16M --plot busbw.svg`.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// Fault injection: SIGKILL a random rank at a random moment of a mixed workload,
    /// many times, and check every run ends fast, names the dead rank, leaves nothing.
    Chaos(ChaosArgs),
    /// Merge the per-rank traces written under DIST_TRACE=DIR (or `run --trace DIR`)
    /// into DIR/trace.json for Perfetto, one track per rank, and print a summary.
    Trace {
        /// The directory the ranks wrote to.
        dir: PathBuf,
        /// Where to write the merged trace (default DIR/trace.json).
        #[arg(short, long)]
        out: Option<PathBuf>,
    },
}

#[derive(clap::Args)]
struct ChaosArgs {
    /// Number of runs.
    #[arg(long, default_value_t = 100)]
    runs: usize,
    /// Ranks per run.
    #[arg(short = 'n', long = "nranks", default_value_t = 8)]
    n: usize,
    /// Seed of the victim/moment choices (default: from the clock).
    #[arg(long)]
    seed: Option<u64>,
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
    /// Trace every op of every rank into this directory (DIST_TRACE), then merge the
    /// ranks into DIR/trace.json.
    #[arg(long)]
    trace: Option<PathBuf>,
    /// GPUs for the ranks, one per local rank (NCCL backend), e.g. `--gpus 0,2,4,6`.
    #[arg(long, conflicts_with = "rank_table")]
    gpus: Option<String>,
    /// A rank table (JSON: version, node_list[].device_list[] with device_id and rank)
    /// placing each rank on a device (NCCL backend).
    #[arg(long)]
    rank_table: Option<PathBuf>,
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
        Cmd::Bench { args } => match bench(args) {
            Ok(code) => code,
            Err(e) => {
                eprintln!("xtask: {e}");
                ExitCode::from(2)
            }
        },
        Cmd::Trace { dir, out } => match trace::merge(&dir, out) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("xtask: {e}");
                ExitCode::from(2)
            }
        },
        Cmd::Chaos(a) => match chaos(a) {
            Ok(code) => code,
            Err(e) => {
                eprintln!("xtask: {e}");
                ExitCode::from(2)
            }
        },
    }
}

/// Builds the target with cargo and returns its executable.
fn build_target(a: &RunArgs) -> Result<PathBuf, String> {
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
    let exe = build_target(&a)?;
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
    if let Some(g) = &a.gpus {
        let list = dist_runtime::placement::parse_gpus(g).map_err(|e| e.to_string())?;
        if list.len() < a.n {
            return Err(format!("--gpus {g} lists {} device(s) for {} ranks: give one per rank", list.len(), a.n));
        }
        launch = launch.env("DIST_GPUS", g);
    }
    if let Some(t) = &a.rank_table {
        // Validate before starting anything, so a bad table is one clear error.
        dist_runtime::placement::RankTable::load(t, a.n).map_err(|e| e.to_string())?;
        let abs = std::fs::canonicalize(t).map_err(|e| format!("{}: {e}", t.display()))?;
        launch = launch.env("DIST_RANK_TABLE", abs.to_string_lossy().as_ref());
    }
    if let Some(dir) = &a.trace {
        // Old rank files would mix with this run's.
        for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if name.starts_with("rank-") && name.ends_with(".jsonl") {
                let _ = std::fs::remove_file(e.path());
            }
        }
        launch = launch.env("DIST_TRACE", dir.to_string_lossy().as_ref());
    }
    let report = launch.run().map_err(|e| e.to_string())?;
    if let Some(dir) = &a.trace {
        trace::merge(dir, None)?;
    }
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

fn dev_shm_dist_entries() -> Vec<String> {
    std::fs::read_dir("/dev/shm")
        .map(|d| {
            d.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).filter(|n| n.contains("dist")).collect()
        })
        .unwrap_or_default()
}

fn chaos(a: ChaosArgs) -> Result<ExitCode, String> {
    use std::time::Duration;
    let build = RunArgs {
        n: a.n,
        example: Some("chaos".into()),
        bin: None,
        package: None,
        release: true,
        backend: "shm".into(),
        entry: None,
        list: false,
        timeout: None,
        trace: None,
        gpus: None,
        rank_table: None,
        args: Vec::new(),
    };
    let exe = build_target(&build)?;
    let mut seed = a.seed.unwrap_or_else(|| {
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos() as u64).unwrap_or(1)
    }) | 1;
    let mut rand = move |m: u64| {
        // xorshift64*: plenty for choosing victims and moments
        seed ^= seed >> 12;
        seed ^= seed << 25;
        seed ^= seed >> 27;
        seed.wrapping_mul(0x2545_F491_4F6C_DD1D) % m
    };
    println!("chaos: {} runs of {} ranks, seed {}", a.runs, a.n, a.seed.map_or("clock".into(), |s| s.to_string()));
    let shm_before = dev_shm_dist_entries();
    let (mut clean, mut named_by_peers, mut leftovers, mut survivors) = (0usize, 0usize, 0usize, 0usize);
    let mut lags = Vec::new();
    for run in 0..a.runs {
        let victim = rand(a.n as u64) as usize;
        let at = Duration::from_millis(100 + rand(1400));
        let report = dist_runtime::Launch::new(&exe, a.n)
            .capture(true)
            .env("CHAOS_SECS", "4")
            .env("DIST_TIMEOUT", "30")
            .timeout(Duration::from_secs(30))
            .kill_after(victim, at)
            .run()
            .map_err(|e| e.to_string())?;
        let lag = report.elapsed.saturating_sub(at);
        let named = report.first_failure == Some(victim) && report.ranks[victim].signal == Some(9);
        let fast = lag <= Duration::from_secs(5);
        let peers_named = report
            .ranks
            .iter()
            .filter(|r| r.rank != victim && !r.killed_by_launcher)
            .all(|r| r.output.contains(&format!("rank {victim} ")));
        let left: Vec<String> = dev_shm_dist_entries().into_iter().filter(|e| !shm_before.contains(e)).collect();
        let alive = report.ranks.iter().filter(|r| std::path::Path::new(&format!("/proc/{}", r.pid)).exists()).count();
        leftovers += left.len();
        survivors += alive;
        if named && fast && left.is_empty() && alive == 0 {
            clean += 1;
        } else {
            println!(
                "run {run}: victim {victim} at {at:?}: first failure {:?}, ended {:?} after the kill, {} leftovers, {alive} survivors\n{}",
                report.first_failure,
                lag,
                left.len(),
                report.summary()
            );
        }
        if peers_named {
            named_by_peers += 1;
        }
        lags.push(lag);
    }
    lags.sort();
    let pct = |p: f64| lags[((lags.len() - 1) as f64 * p) as usize];
    println!(
        "chaos: {clean}/{} runs ended cleanly within 5 s of the kill with the dead rank named; \
         in {named_by_peers} every surviving rank's own error named it too",
        a.runs
    );
    println!(
        "chaos: kill-to-end median {:.0} ms, p90 {:.0} ms, max {:.0} ms; leftovers in /dev/shm: {leftovers}; surviving rank processes: {survivors}",
        pct(0.5).as_secs_f64() * 1e3,
        pct(0.9).as_secs_f64() * 1e3,
        pct(1.0).as_secs_f64() * 1e3
    );
    Ok(if clean == a.runs && leftovers == 0 && survivors == 0 { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

/// Builds dist-bench in release mode and runs it with `args`.
fn bench(args: Vec<String>) -> Result<ExitCode, String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    // `--backend nccl` needs the bench built with the NCCL backend.
    let nccl =
        args.windows(2).any(|w| w[0] == "--backend" && w[1] == "nccl") || args.iter().any(|a| a == "--backend=nccl");
    let mut build = vec!["build", "--release", "--quiet", "-p", "dist-bench"];
    if nccl {
        build.extend(["--features", "dist-bench/nccl"]);
    }
    let st = Command::new(&cargo).args(&build).status().map_err(|e| format!("cannot run cargo: {e}"))?;
    if !st.success() {
        return Err("building dist-bench failed".into());
    }
    let target = std::env::var("CARGO_TARGET_DIR").unwrap_or_else(|_| {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("workspace root").to_path_buf();
        root.join("target").to_string_lossy().into_owned()
    });
    let exe = std::path::Path::new(&target).join("release").join("dist-bench");
    let st = Command::new(&exe).args(&args).status().map_err(|e| format!("cannot run {}: {e}", exe.display()))?;
    Ok(if st.success() { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}
