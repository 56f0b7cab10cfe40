//! `cargo xtask`: the command line of dist's own workspace. `run` and `trace` are the
//! installable launcher's code (`cargo_spmd`, what users run as `cargo spmd`); the
//! spawning itself is `dist_runtime::Launch`. `bench` and `chaos` are dist's own.

use clap::{Parser, Subcommand};
use std::process::{Command, ExitCode};
use std::time::Duration;

#[derive(Parser)]
#[command(name = "cargo xtask", about = "Build and run dist programs on N ranks")]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Build a binary or example and run it on N ranks.
    Run(Box<cargo_spmd::RunArgs>),
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
    /// into DIR/trace.json for Perfetto, one track per rank, print a summary, and line up
    /// the flight recorders of ranks that failed (where each one last was).
    Trace(cargo_spmd::TraceArgs),
    /// What the compile-time communication check proved for each #[spmd] entry
    /// (`cargo spmd check` inside dist's workspace).
    Check(cargo_spmd::check::CheckArgs),
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
    /// `kill`: SIGKILL a rank, which must be named, fast, with nothing left behind;
    /// `stop`: SIGSTOP a rank for 100 ms to 2 s, then SIGCONT it: the job must end well,
    /// with no deadlock or failure reported.
    #[arg(long, default_value = "kill", value_parser = ["kill", "stop"])]
    fault: String,
    /// The backend: `shm`, or `mpi` (mpirun starts the ranks; the example is built with
    /// the `mpi` feature).
    #[arg(long, default_value = "shm", value_parser = ["shm", "mpi"])]
    backend: String,
    /// Kill a rank of a fault-tolerant job (`examples/elastic.rs`, data-parallel
    /// training that shrinks and goes on): every run must end with each survivor's
    /// weights equal to serial training's, and the recovery time (kill to the first op on
    /// the shrunk communicator) is reported.
    #[arg(long = "continue")]
    keep_going: bool,
    /// With `--continue`: how many ranks to kill at once in each run.
    #[arg(long, default_value_t = 1)]
    victims: usize,
    /// Build the example in release. By default it is built as `cargo xtask run` builds
    /// (dev, with dist-runtime and dist-macros optimised), so a chaos run after a
    /// `run` compiles only the example; what is judged (the victim named, the job ended,
    /// nothing left behind) does not depend on the profile.
    #[arg(long)]
    release: bool,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.cmd {
        Cmd::Check(a) => match cargo_spmd::check::check(a) {
            Ok(code) => code,
            Err(e) => {
                eprintln!("xtask: {e}");
                ExitCode::from(2)
            }
        },
        Cmd::Run(a) => match cargo_spmd::run(*a, "xtask") {
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
        Cmd::Trace(cargo_spmd::TraceArgs { dir, out }) => match cargo_spmd::trace::merge(&dir, out) {
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

fn dev_shm_dist_entries() -> Vec<String> {
    std::fs::read_dir("/dev/shm")
        .map(|d| {
            d.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).filter(|n| n.contains("dist")).collect()
        })
        .unwrap_or_default()
}

fn chaos(a: ChaosArgs) -> Result<ExitCode, String> {
    if a.keep_going {
        return chaos_continue(&a);
    }
    let features = if a.backend == "mpi" { vec!["dist-runtime/mpi".to_string()] } else { vec![] };
    let build =
        cargo_spmd::BuildSpec { example: Some("chaos".into()), release: a.release, features, ..Default::default() };
    let exe = cargo_spmd::build(&build)?;
    if a.fault == "stop" {
        return chaos_stop(&a, &exe);
    }
    let mut rand = chooser(a.seed);
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
            .env("DIST_BACKEND", &a.backend)
            .timeout(Duration::from_secs(30))
            .kill_after(victim, at)
            .run()
            .map_err(|e| e.to_string())?;
        let lag = report.elapsed.saturating_sub(at);
        // (Under mpirun, the launcher's account of the kill comes from mpirun.)
        let named = report.first_failure == Some(victim) && report.ranks[victim].signal == Some(9);
        let fast = lag <= Duration::from_secs(5);
        let peers_named = report
            .ranks
            .iter()
            .filter(|r| r.rank != victim && !r.killed_by_launcher)
            .all(|r| r.output.contains(&format!("rank {victim} ")));
        let left: Vec<String> = dev_shm_dist_entries().into_iter().filter(|e| !shm_before.contains(e)).collect();
        // Under mpirun the ranks are its children's, and may take a moment to go after it.
        let alive = |r: &dist_runtime::launch::RankExit| {
            r.pid != 0 && std::path::Path::new(&format!("/proc/{}", r.pid)).exists()
        };
        let until = std::time::Instant::now() + Duration::from_secs(2);
        while report.ranks.iter().any(alive) && std::time::Instant::now() < until {
            std::thread::sleep(Duration::from_millis(10));
        }
        let alive = report.ranks.iter().filter(|r| alive(r)).count();
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

/// `chaos --continue`: each run kills one rank of `examples/elastic.rs` at a random
/// moment; the survivors must shrink and finish with serial training's weights. A kill
/// that lands before every rank made its world cannot be survived: the job must then end
/// at once naming the victim (counted apart).
fn chaos_continue(a: &ChaosArgs) -> Result<ExitCode, String> {
    if a.backend != "shm" {
        return Err("chaos --continue: surviving a death is built on the shm backend only so far".into());
    }
    let build = cargo_spmd::BuildSpec { example: Some("elastic".into()), release: a.release, ..Default::default() };
    let exe = cargo_spmd::build(&build)?;
    let mut rand = chooser(a.seed);
    println!(
        "chaos --continue: {} runs of {} ranks, seed {}",
        a.runs,
        a.n,
        a.seed.map_or("clock".into(), |s| s.to_string())
    );
    let (mut recovered, mut early, mut late, mut bad) = (0usize, 0usize, 0usize, 0usize);
    let mut times = Vec::new();
    if a.victims == 0 || a.victims >= a.n {
        return Err(format!("chaos --continue: --victims {} of {} ranks leaves no survivor to go on", a.victims, a.n));
    }
    for run in 0..a.runs {
        let mut victims: Vec<usize> = Vec::new();
        while victims.len() < a.victims {
            let v = rand(a.n as u64) as usize;
            if !victims.contains(&v) {
                victims.push(v);
            }
        }
        victims.sort_unstable();
        let at = Duration::from_millis(150 + rand(500));
        let t0 = std::time::SystemTime::now();
        let mut launch = dist_runtime::Launch::new(&exe, a.n)
            .capture(true)
            .args(["--step-ms", "10"])
            .env("DIST_TIMEOUT", "30")
            .timeout(Duration::from_secs(60))
            .fault_tolerant(true);
        for &v in &victims {
            launch = launch.kill_after(v, at);
        }
        let report = launch.run().map_err(|e| e.to_string())?;
        let survivors: Vec<&dist_runtime::launch::RankExit> =
            report.ranks.iter().filter(|r| !victims.contains(&r.rank)).collect();
        let all_ok = survivors.iter().all(|r| r.output.contains("OK, weights match serial training"));
        let lost_some = !report.lost.is_empty() && report.lost.iter().all(|r| victims.contains(r));
        if report.success() && lost_some && all_ok {
            recovered += 1;
            // Kill to the first op on the shrunk communicator: the earliest survivor.
            let killed = t0 + at;
            let first = survivors
                .iter()
                .filter_map(|r| {
                    r.output.lines().find_map(|l| {
                        l.split_once("recovered at unix_us=")?.1.split_whitespace().next()?.parse::<u64>().ok()
                    })
                })
                .min();
            if let Some(us) = first {
                let done = std::time::UNIX_EPOCH + Duration::from_micros(us);
                times.push(done.duration_since(killed).unwrap_or_default());
            }
        } else if report.success() && report.lost.is_empty() && all_ok {
            late += 1; // the job ended before the kill
        } else if !report.success()
            && report.lost.is_empty()
            && report.first_failure.is_some_and(|i| victims.contains(&report.ranks[i].rank))
            && report.elapsed < at + Duration::from_secs(5)
        {
            early += 1; // before the job formed: ended at once, naming the victim
        } else {
            bad += 1;
            println!("run {run}: victims {victims:?} at {at:?}: lost {:?}\n{}", report.lost, report.summary());
        }
    }
    times.sort();
    let pct =
        |p: f64| times.get(((times.len().max(1) - 1) as f64 * p) as usize).map_or(f64::NAN, |d| d.as_secs_f64() * 1e3);
    println!(
        "chaos --continue: {recovered} runs shrank and finished with serial training's weights; {early} killed before \
         the job formed (ended at once, naming the victim); {late} ended before the kill; {bad} wrong"
    );
    println!(
        "chaos --continue: recovery (kill to the first op on the shrunk communicator) median {:.0} ms, max {:.0} ms",
        pct(0.5),
        pct(1.0)
    );
    Ok(if bad == 0 && recovered > 0 { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

/// Chaos's choices of victims, moments and lengths: xorshift64* from `seed` (default:
/// the clock), plenty for that; `rand(m)` is in `0..m`.
fn chooser(seed: Option<u64>) -> impl FnMut(u64) -> u64 {
    let mut seed = seed.unwrap_or_else(|| {
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos() as u64).unwrap_or(1)
    }) | 1;
    move |m: u64| {
        seed ^= seed >> 12;
        seed ^= seed << 25;
        seed ^= seed >> 27;
        seed.wrapping_mul(0x2545_F491_4F6C_DD1D) % m
    }
}

/// `cargo xtask chaos --fault stop`: each run stops a random rank (SIGSTOP) at a random
/// moment for 100 ms to 2 s, then resumes it (SIGCONT). A stall is not a failure: the run
/// is clean when every rank ends well and nothing reported a deadlock or a failure.
fn chaos_stop(a: &ChaosArgs, exe: &std::path::Path) -> Result<ExitCode, String> {
    let mut rand = chooser(a.seed);
    println!(
        "chaos: {} runs of {} ranks on {}, a rank stopped for 100 ms to 2 s, seed {}",
        a.runs,
        a.n,
        a.backend,
        a.seed.map_or("clock".into(), |s| s.to_string())
    );
    let mut clean = 0;
    for run in 0..a.runs {
        let victim = rand(a.n as u64) as usize;
        let at = Duration::from_millis(300 + rand(1500));
        let stop = Duration::from_millis(100 + rand(1900));
        let report = dist_runtime::Launch::new(exe, a.n)
            .capture(true)
            .env("CHAOS_SECS", "3")
            .env("DIST_TIMEOUT", "30")
            .env("DIST_BACKEND", &a.backend)
            .timeout(Duration::from_secs(40))
            .stop_after(victim, at, stop)
            .run()
            .map_err(|e| e.to_string())?;
        let said = report.ranks.iter().any(|r| r.output.contains("deadlock detected") || r.output.contains("error"));
        if report.success() && !said {
            clean += 1;
        } else {
            println!(
                "run {run}: rank {victim} stopped at {at:?} for {stop:?}: {}\n{}",
                if report.success() { "ended well but reported an error" } else { "failed" },
                report.summary()
            );
        }
    }
    println!("chaos: {clean}/{} runs with a stopped rank ended well with nothing reported", a.runs);
    Ok(if clean == a.runs { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

/// Builds dist-bench in release mode and runs it with `args`.
fn bench(args: Vec<String>) -> Result<ExitCode, String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    // `--backend nccl` needs the bench built with the NCCL backend.
    let backend = |b: &str| {
        args.windows(2).any(|w| w[0] == "--backend" && w[1] == b) || args.iter().any(|a| *a == format!("--backend={b}"))
    };
    let mut build = vec!["build", "--release", "--quiet", "-p", "dist-bench"];
    if backend("nccl") {
        build.extend(["--features", "dist-bench/nccl"]);
    }
    // `--backend mpi` needs the MPI backend (and mpirun starts the ranks).
    if backend("mpi") {
        build.extend(["--features", "dist-bench/mpi"]);
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
