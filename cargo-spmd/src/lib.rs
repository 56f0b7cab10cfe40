//! The launcher of dist for any crate: build a binary or example of the current package
//! with cargo, then run it on N ranks (`[rank k]` prefixes, every rank stopped on the
//! first failure, the failing rank named).
//!
//! Installed as a cargo subcommand:
//!
//! ```text
//! cargo install --path cargo-spmd          # from a checkout of dist
//! cargo spmd run -n 8                      # the package's binary on 8 ranks
//! cargo spmd run -n 4 --example train -- --lr 0.1
//! cargo spmd run -n 2 --entry comms::smoke # one #[spmd] entry of the binary
//! cargo spmd run --list                    # the #[spmd] entries of the binary
//! cargo spmd trace DIR                     # merge a --trace DIR run for Perfetto
//! ```
//!
//! Inside dist's own workspace `cargo xtask run` is the same code ([`run`]). The rank
//! spawning itself is `dist_runtime::Launch`; this crate adds the cargo build, the
//! environment (`DIST_*` variables already set are honoured unless a flag overrides
//! them) and the command line.

pub mod check;
pub mod trace;

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};

/// `run`'s flags: the same for `cargo spmd run` and `cargo xtask run`.
#[derive(clap::Args, Clone, Debug, Default)]
pub struct RunArgs {
    /// Number of ranks (on this node, in a multi-node job).
    #[arg(short = 'n', long = "nranks", visible_alias = "nproc-per-node", default_value_t = 1)]
    pub n: usize,
    /// Multi-node job, torchrun style: how many nodes, each running this launcher with its
    /// own --node-rank and the same --master-addr/--master-port (node 0 hosts the job's
    /// store). Ranks of node k are k × n ..; every node's ranks stop when one fails.
    #[arg(long, default_value_t = 1)]
    pub nnodes: usize,
    /// This node's place in a multi-node job (0..nnodes).
    #[arg(long, default_value_t = 0, requires = "master_addr")]
    pub node_rank: usize,
    /// Node 0's address, as every node reaches it (multi-node jobs).
    #[arg(long, requires = "master_port")]
    pub master_addr: Option<String>,
    /// The port of the job's store on node 0 (multi-node jobs).
    #[arg(long, requires = "master_addr")]
    pub master_port: Option<u16>,
    /// MPI backend: the hosts to start ranks on (passed to mpirun as --hostfile).
    #[arg(long)]
    pub hostfile: Option<PathBuf>,
    /// Run this example.
    #[arg(long, conflicts_with = "bin")]
    pub example: Option<String>,
    /// Run this binary (default: the package's only binary).
    #[arg(long)]
    pub bin: Option<String>,
    /// Package that holds the target.
    #[arg(short = 'p', long)]
    pub package: Option<String>,
    /// Path to the Cargo.toml of the package or workspace.
    #[arg(long)]
    pub manifest_path: Option<PathBuf>,
    /// Build with optimisations.
    #[arg(long)]
    pub release: bool,
    /// Cargo features to enable (as `cargo build --features`).
    #[arg(short = 'F', long)]
    pub features: Vec<String>,
    /// Build exactly with the package's profile. By default dev builds compile
    /// dist-runtime with opt-level 2 and dist-macros with 3 (your own code stays
    /// unoptimised), which makes collectives ~25x faster than an unoptimised runtime, and
    /// release builds keep line tables (`debug = "line-tables-only"`), so that run-time
    /// errors name the lines that called the failing op.
    #[arg(long)]
    pub exact_profile: bool,
    /// Backend: shm, nccl, mpi, auto (default: $DIST_BACKEND, else shm). nccl and auto
    /// build with the `dist-runtime/nccl` feature; mpi builds with `dist-runtime/mpi` and
    /// starts the ranks with mpirun (extra mpirun arguments: $DIST_MPIRUN_ARGS, e.g.
    /// `--hostfile hosts`).
    #[arg(long)]
    pub backend: Option<String>,
    /// Run this `#[spmd]` entry instead of main (full path, or a unique path suffix).
    #[arg(long)]
    pub entry: Option<String>,
    /// List the `#[spmd]` entries of the target and exit.
    #[arg(long)]
    pub list: bool,
    /// Kill the job after this many seconds.
    #[arg(long)]
    pub timeout: Option<f64>,
    /// Survive a rank's death (shm backend): a rank killed by a signal does not stop
    /// the others, which get `PeerFailed` and can `shrink()` the communicator and go on.
    #[arg(long)]
    pub fault_tolerant: bool,
    /// Start the job again after a failure, up to K times (torchrun's --max-restarts):
    /// ranks read which attempt this is from DIST_RESTART_COUNT
    /// (`dist_runtime::launch::restart_count()`) and resume from their last checkpoint
    /// (`dist_runtime::checkpoint::Checkpoint`).
    #[arg(long, value_name = "K", default_value_t = 0)]
    pub max_restarts: usize,
    /// Trace every op of every rank into this directory (default: $DIST_TRACE), then
    /// merge the ranks into DIR/trace.json.
    #[arg(long)]
    pub trace: Option<PathBuf>,
    /// GPUs for the ranks, one per local rank (NCCL backend), e.g. `--gpus 0,2,4,6`
    /// (default: $DIST_GPUS).
    #[arg(long, conflicts_with = "rank_table")]
    pub gpus: Option<String>,
    /// A rank table (JSON: version, node_list[].device_list[] with device_id and rank)
    /// placing each rank on a device (NCCL backend; default: $DIST_RANK_TABLE).
    #[arg(long)]
    pub rank_table: Option<PathBuf>,
    /// Let ranks share GPUs (NCCL backend; `DIST_SHARE_GPU=1`): local ranks take the
    /// visible devices round robin and NCCL talks over loopback sockets. For testing
    /// multi-rank device code on one GPU: correct, not fast
    #[arg(long)]
    pub share_gpu: bool,
    /// Print the ranks' output as they write it, without `[rank k]` prefixes (for
    /// scripts reading an `OK` line; lines of different ranks may interleave).
    #[arg(long)]
    pub no_prefix: bool,
    /// Arguments passed to every rank.
    #[arg(last = true)]
    pub args: Vec<String>,
}

/// `trace`'s flags: the same for `cargo spmd trace` and `cargo xtask trace`.
#[derive(clap::Args, Clone, Debug)]
pub struct TraceArgs {
    /// The directory the ranks wrote to.
    pub dir: PathBuf,
    /// Where to write the merged trace (default DIR/trace.json).
    #[arg(short, long)]
    pub out: Option<PathBuf>,
}

/// What to build: the cargo side of [`RunArgs`].
#[derive(Clone, Debug, Default)]
pub struct BuildSpec {
    /// `--example NAME`.
    pub example: Option<String>,
    /// `--bin NAME`.
    pub bin: Option<String>,
    /// `-p NAME`.
    pub package: Option<String>,
    /// `--manifest-path PATH`.
    pub manifest_path: Option<PathBuf>,
    /// `--release`.
    pub release: bool,
    /// `--features ..`.
    pub features: Vec<String>,
    /// Do not optimise dist-runtime and dist-macros in dev builds.
    pub exact_profile: bool,
}

impl RunArgs {
    /// The build half of the flags.
    pub fn build_spec(&self) -> BuildSpec {
        BuildSpec {
            example: self.example.clone(),
            bin: self.bin.clone(),
            package: self.package.clone(),
            manifest_path: self.manifest_path.clone(),
            release: self.release,
            features: self.features.clone(),
            exact_profile: self.exact_profile,
        }
    }
}

/// The profile overrides a dev build gets unless `--exact-profile`: the values dist's
/// own workspace uses, so that the same artifacts are reused when a user's Cargo.toml
/// already has them.
pub const DEV_OVERRIDES: [&str; 2] =
    ["profile.dev.package.dist-runtime.opt-level=2", "profile.dev.package.dist-macros.opt-level=3"];

/// What a release build gets unless `--exact-profile`: line tables, so that run-time
/// errors keep their "called from" chain (read from a backtrace) as in debug builds.
pub const RELEASE_OVERRIDES: [&str; 1] = ["profile.release.debug=\"line-tables-only\""];

/// The binary targets of the package to build, by name (from `cargo metadata`), where
/// it can say: so that a package of several binaries is asked for `--bin` before
/// anything is built.
fn bin_names(spec: &BuildSpec, cargo: &str) -> Option<Vec<String>> {
    let mut cmd = Command::new(cargo);
    cmd.args(["metadata", "--no-deps", "--format-version", "1", "--offline"]);
    if let Some(m) = &spec.manifest_path {
        cmd.arg("--manifest-path").arg(m);
    }
    let out = cmd.stderr(Stdio::null()).output().ok().filter(|o| o.status.success())?;
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout).ok()?;
    let packages = meta["packages"].as_array()?;
    let here = std::env::current_dir().ok()?;
    let dir = |p: &serde_json::Value| {
        p["manifest_path"].as_str().and_then(|m| std::path::Path::new(m).parent()).map(|d| d.to_path_buf())
    };
    let pkg = match &spec.package {
        Some(name) => packages.iter().find(|p| p["name"].as_str() == Some(name))?,
        // (The package cargo builds from here: the innermost whose directory holds the
        // current one; none in a virtual workspace's root.)
        None => packages
            .iter()
            .filter(|p| dir(p).is_some_and(|d| here.starts_with(d)))
            .max_by_key(|p| dir(p).map(|d| d.components().count()))?,
    };
    Some(
        pkg["targets"]
            .as_array()?
            .iter()
            .filter(|t| t["kind"].as_array().is_some_and(|k| k.iter().any(|k| k == "bin")))
            .filter_map(|t| t["name"].as_str().map(String::from))
            .collect(),
    )
}

/// Builds the target with cargo and returns its executable.
pub fn build(spec: &BuildSpec) -> Result<PathBuf, String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    if spec.example.is_none() && spec.bin.is_none() {
        if let Some(names) = bin_names(spec, &cargo).filter(|n| n.len() > 1) {
            return Err(format!("the package has several binaries ({}): choose one with --bin NAME", names.join(", ")));
        }
    }
    let mut cmd = Command::new(cargo);
    cmd.args(["build", "--message-format=json-render-diagnostics"]);
    if let Some(m) = &spec.manifest_path {
        cmd.arg("--manifest-path").arg(m);
    }
    if spec.release {
        cmd.arg("--release");
        if !spec.exact_profile {
            for o in RELEASE_OVERRIDES {
                cmd.args(["--config", o]);
            }
        }
    } else if !spec.exact_profile {
        for o in DEV_OVERRIDES {
            cmd.args(["--config", o]);
        }
    }
    if let Some(p) = &spec.package {
        cmd.args(["-p", p]);
    }
    match (&spec.example, &spec.bin) {
        (Some(e), _) => cmd.args(["--example", e]),
        (None, Some(b)) => cmd.args(["--bin", b]),
        (None, None) => cmd.arg("--bins"),
    };
    if !spec.features.is_empty() {
        cmd.args(["--features", &spec.features.join(",")]);
    }
    let out = cmd.stderr(Stdio::inherit()).output().map_err(|e| format!("cannot run cargo: {e}"))?;
    if !out.status.success() {
        return Err("build failed".into());
    }
    let exes = executables(&String::from_utf8_lossy(&out.stdout));
    let wanted = |kind: &str, name: &str| exes.iter().find(|x| x.kind == kind && x.name == name);
    let pick = match (&spec.example, &spec.bin) {
        (Some(e), _) => wanted("example", e),
        (None, Some(b)) => wanted("bin", b),
        (None, None) => match exes.as_slice() {
            [one] => Some(one),
            [] => return Err("the package has no binary: name one with --bin NAME or --example NAME".into()),
            many => {
                let names: Vec<&str> = many.iter().map(|x| x.name.as_str()).collect();
                return Err(format!(
                    "the package has several binaries ({}): choose one with --bin NAME",
                    names.join(", ")
                ));
            }
        },
    };
    pick.map(|x| x.path.clone()).ok_or_else(|| "cargo built no executable for that target".into())
}

/// One executable cargo reported building.
struct Executable {
    kind: String,
    name: String,
    path: PathBuf,
}

/// The executables in cargo's `--message-format=json` output.
fn executables(stdout: &str) -> Vec<Executable> {
    let mut v: Vec<Executable> = Vec::new();
    for line in stdout.lines() {
        let Ok(msg) = serde_json::from_str::<serde_json::Value>(line) else { continue };
        if msg["reason"] != "compiler-artifact" {
            continue;
        }
        let Some(path) = msg["executable"].as_str() else { continue };
        let name = msg["target"]["name"].as_str().unwrap_or_default().to_string();
        let kinds = msg["target"]["kind"].as_array().cloned().unwrap_or_default();
        let kind = if kinds.iter().any(|k| k == "example") { "example" } else { "bin" };
        if !v.iter().any(|x| x.path == Path::new(path)) {
            v.push(Executable { kind: kind.into(), name, path: PathBuf::from(path) });
        }
    }
    v
}

/// A value from the flag, else from the environment variable (set and not empty).
fn flag_or_env(flag: Option<String>, var: &str) -> Option<String> {
    flag.or_else(|| std::env::var(var).ok().filter(|v| !v.trim().is_empty()))
}

/// Asks `exe` a question through the environment (`DIST_LIST_ENTRIES`,
/// `DIST_RESOLVE_ENTRY`); the lines after [`dist_runtime::ENTRIES_MARKER`] on success,
/// its stderr on failure. A binary without `#[spmd]` items does not answer (it has no
/// constructor to): that is an error, not its output taken for an answer.
fn ask(exe: &Path, var: &str, value: &str) -> Result<Vec<String>, String> {
    let out = Command::new(exe)
        .env(var, value)
        .env_remove(if var == "DIST_LIST_ENTRIES" { "DIST_RESOLVE_ENTRY" } else { "DIST_LIST_ENTRIES" })
        .env_remove("DIST_ENTRY")
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run {}: {e}", exe.display()))?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let mut lines = stdout.lines();
    if lines.next() != Some(dist_runtime::ENTRIES_MARKER) {
        return Err(format!(
            "{} has no #[spmd] entry (it did not answer as a dist program): annotate a function with #[spmd]",
            exe.display()
        ));
    }
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).trim().to_string());
    }
    Ok(lines.map(str::to_string).collect())
}

/// Resolves `--entry NAME` against the entries of `exe` (full path, or a unique path
/// suffix), so a typo is one clear error before any rank starts.
pub fn resolve_entry(exe: &Path, name: &str) -> Result<String, String> {
    let lines = ask(exe, "DIST_RESOLVE_ENTRY", name)?;
    lines.into_iter().next().filter(|l| !l.is_empty()).ok_or_else(|| format!("no entry matches {name:?}"))
}

/// The `#[spmd]` entries of `exe`, by full path.
pub fn list_entries(exe: &Path) -> Result<Vec<String>, String> {
    ask(exe, "DIST_LIST_ENTRIES", "1")
}

/// What to tell a user whose job succeeded without any rank joining it (no `--entry`,
/// more than one rank): every process ran a `main` that is not `#[spmd]` and never
/// called `dist_runtime::init`, so no entry ran. Known from the job's store (each rank
/// that joins publishes its host there), without running the program again: a binary
/// without `#[spmd]` items would run its whole `main` to answer a question.
fn plain_main_note(exe: &Path) -> String {
    let name = exe.file_name().map_or_else(|| exe.display().to_string(), |f| f.to_string_lossy().into_owned());
    format!(
        "note: no rank joined the job: the main of {name} is not #[spmd] (nor calls dist_runtime::init), so every \
         rank ran it as a plain program; run one of its #[spmd] entries with --entry NAME (--list shows them)"
    )
}

/// Builds the target and runs it on `a.n` ranks; `tool` names the command in messages
/// (`cargo spmd`, `xtask`). Returns the exit code for the launcher's own process: success
/// when every rank succeeded.
pub fn run(a: RunArgs, tool: &str) -> Result<ExitCode, String> {
    if a.n == 0 && !a.list {
        return Err("-n must be at least 1".into());
    }
    let choice = match (&a.backend, flag_or_env(None, "DIST_BACKEND")) {
        (Some(flag), _) => dist_runtime::BackendChoice::parse(flag).map_err(|e| format!("--backend {e}"))?,
        (None, Some(env)) => dist_runtime::BackendChoice::parse(&env).map_err(|e| format!("DIST_BACKEND={e}"))?,
        (None, None) => dist_runtime::BackendChoice::Shm,
    };
    let mut spec = a.build_spec();
    if matches!(choice, dist_runtime::BackendChoice::Nccl | dist_runtime::BackendChoice::Auto)
        && !spec.features.iter().any(|f| f.contains("nccl"))
    {
        spec.features.push("dist-runtime/nccl".into());
    }
    if choice == dist_runtime::BackendChoice::Mpi && !spec.features.iter().any(|f| f.contains("mpi")) {
        spec.features.push("dist-runtime/mpi".into());
    }
    let exe = build(&spec)?;
    if a.list {
        for e in list_entries(&exe)? {
            println!("{e}");
        }
        return Ok(ExitCode::SUCCESS);
    }
    let mut launch = dist_runtime::Launch::new(&exe, a.n).args(&a.args).env("DIST_BACKEND", choice.name());
    launch = with_hosts(launch, &a, choice)?;
    let entry = flag_or_env(a.entry.clone(), "DIST_ENTRY");
    if let Some(e) = &entry {
        launch = launch.env("DIST_ENTRY", resolve_entry(&exe, e)?);
    }
    if let Some(t) = a.timeout {
        let d = std::time::Duration::try_from_secs_f64(t)
            .ok()
            .filter(|d| !d.is_zero())
            .ok_or_else(|| format!("--timeout {t}: give a positive number of seconds"))?;
        launch = launch.timeout(d);
    }
    launch = with_placement(launch, &a)?
        .fault_tolerant(a.fault_tolerant)
        .max_restarts(a.max_restarts)
        .prefix_output(!a.no_prefix);
    let (launch, trace_dir) = with_trace(launch, &a)?;
    let report = launch.run().map_err(|e| e.to_string())?;
    if let Some(dir) = &trace_dir {
        // A job that failed early may have left no trace: say so, keep the job's verdict.
        if let Err(e) = trace::merge(dir, None) {
            eprintln!("{tool}: no merged trace: {e}");
        }
    }
    Ok(verdict(&report, &exe, entry.is_none(), tool))
}

/// The nodes of a multi-node job (`--nnodes`, `--master-addr`, `--master-port`) and
/// mpirun's `--hostfile`.
fn with_hosts(
    mut launch: dist_runtime::Launch,
    a: &RunArgs,
    choice: dist_runtime::BackendChoice,
) -> Result<dist_runtime::Launch, String> {
    match (&a.master_addr, a.master_port) {
        (Some(addr), Some(port)) => {
            let nodes = dist_runtime::Nodes {
                nnodes: a.nnodes,
                node_rank: a.node_rank,
                master_addr: addr.clone(),
                master_port: port,
            };
            launch = launch.nodes(nodes);
        }
        _ if a.nnodes > 1 => {
            return Err(format!(
                "--nnodes {}: a multi-node job needs --master-addr and --master-port (node 0's address and a \
                 port), the same on every node",
                a.nnodes
            ))
        }
        _ => {}
    }
    if let Some(h) = &a.hostfile {
        if choice != dist_runtime::BackendChoice::Mpi {
            return Err(
                "--hostfile is for the MPI backend (--backend mpi), whose ranks mpirun starts on those hosts".into()
            );
        }
        let abs = std::fs::canonicalize(h).map_err(|e| format!("--hostfile {}: {e}", h.display()))?;
        launch = launch.mpirun_arg("--hostfile").mpirun_arg(abs);
    }
    Ok(launch)
}

/// The ranks' devices: `--gpus` / `DIST_GPUS`, or a rank table, each checked before
/// anything starts.
fn with_placement(mut launch: dist_runtime::Launch, a: &RunArgs) -> Result<dist_runtime::Launch, String> {
    let (gpus, table) = match (&a.gpus, &a.rank_table) {
        (None, None) => (flag_or_env(None, "DIST_GPUS"), flag_or_env(None, "DIST_RANK_TABLE").map(PathBuf::from)),
        (g, t) => (g.clone(), t.clone()),
    };
    if gpus.is_some() && table.is_some() {
        return Err("DIST_GPUS and DIST_RANK_TABLE are both set: give one placement".into());
    }
    let share = a.share_gpu || flag_or_env(None, "DIST_SHARE_GPU").as_deref() == Some("1");
    if a.share_gpu {
        launch = launch.env("DIST_SHARE_GPU", "1");
    }
    if let Some(g) = &gpus {
        let list = dist_runtime::placement::parse_gpus(g, share).map_err(|e| e.to_string())?;
        if list.len() < a.n {
            return Err(format!("--gpus {g} lists {} device(s) for {} ranks: give one per rank", list.len(), a.n));
        }
        launch = launch.env("DIST_GPUS", g).env_remove("DIST_RANK_TABLE");
    }
    if let Some(t) = &table {
        // Validate before starting anything, so a bad table is one clear error.
        dist_runtime::placement::RankTable::load(t, a.n).map_err(|e| e.to_string())?;
        let abs = std::fs::canonicalize(t).map_err(|e| format!("{}: {e}", t.display()))?;
        launch = launch.env("DIST_RANK_TABLE", abs.to_string_lossy().as_ref()).env_remove("DIST_GPUS");
    }
    Ok(launch)
}

/// `--trace DIR` / `DIST_TRACE`: the directory, emptied of an earlier run's rank files.
fn with_trace(
    mut launch: dist_runtime::Launch,
    a: &RunArgs,
) -> Result<(dist_runtime::Launch, Option<PathBuf>), String> {
    let trace_dir = a.trace.clone().or_else(|| flag_or_env(None, "DIST_TRACE").map(PathBuf::from));
    if let Some(dir) = &trace_dir {
        std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        // Old rank files would mix with this run's.
        for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if name.starts_with("rank-") && name.ends_with(".jsonl") {
                let _ = std::fs::remove_file(e.path());
            }
        }
        launch = launch.env("DIST_TRACE", dir.to_string_lossy().as_ref());
    }
    Ok((launch, trace_dir))
}

/// The job's exit status, with a line saying which rank failed first and how.
fn verdict(report: &dist_runtime::Report, exe: &std::path::Path, no_entry: bool, tool: &str) -> ExitCode {
    if report.restarts > 0 {
        eprintln!("{tool}: the job was started {} times", report.restarts + 1);
    }
    for r in report.ranks.iter().filter(|r| report.lost.contains(&r.rank)) {
        let after = if report.success() { "the job went on without it" } else { "the survivors went on without it" };
        eprintln!("{tool}: rank {} died ({}); {after}", r.rank, r.status());
    }
    if report.success() {
        if no_entry && report.ranks_joined() == Some(0) {
            eprintln!("{tool}: {}", plain_main_note(exe));
        }
        return ExitCode::SUCCESS;
    }
    if report.timed_out {
        eprintln!("{tool}: the job timed out after {:.1}s", report.elapsed.as_secs_f64());
    }
    match (&report.remote_failure, report.first_failure) {
        (Some(msg), _) => {
            eprintln!("{tool}: a rank on another node failed first ({msg}); this node's ranks were stopped")
        }
        (None, Some(i)) if report.left_early.is_some() => eprintln!(
            "{tool}: rank {} returned from its entry while its peers still waited on it; they were stopped",
            report.ranks[i].rank
        ),
        (None, Some(i)) => eprintln!(
            "{tool}: rank {} failed first ({}); the other ranks were stopped",
            report.ranks[i].rank,
            report.ranks[i].status()
        ),
        (None, None) => eprintln!("{tool}: the job failed"),
    }
    ExitCode::FAILURE
}

#[cfg(test)]
mod tests {
    use super::executables;

    /// Cargo's artifact messages: only executables count, examples are told from bins,
    /// and a library or build script (no `executable`) is never picked.
    #[test]
    fn executables_come_from_artifact_messages() {
        let json = [
            r#"{"reason":"compiler-artifact","target":{"kind":["lib"],"name":"trainer"},"executable":null}"#,
            r#"{"reason":"compiler-artifact","target":{"kind":["custom-build"],"name":"build-script-build"},"executable":null}"#,
            r#"{"reason":"compiler-message","message":{"rendered":"warning"}}"#,
            r#"{"reason":"compiler-artifact","target":{"kind":["bin"],"name":"trainer"},"executable":"/t/debug/trainer"}"#,
            r#"{"reason":"compiler-artifact","target":{"kind":["example"],"name":"demo"},"executable":"/t/debug/examples/demo"}"#,
            "not json at all",
            r#"{"reason":"build-finished","success":true}"#,
        ]
        .join("\n");
        let found: Vec<(String, String, String)> =
            executables(&json).into_iter().map(|x| (x.kind, x.name, x.path.to_string_lossy().into_owned())).collect();
        assert_eq!(
            found,
            [
                ("bin".into(), "trainer".into(), "/t/debug/trainer".into()),
                ("example".into(), "demo".into(), "/t/debug/examples/demo".into())
            ]
        );
    }
}
