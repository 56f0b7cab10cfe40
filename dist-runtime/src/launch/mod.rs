//! Spawning ranks: the library behind `cargo spmd run` (and `cargo xtask run`), `dist_runtime::launch` and the
//! test macro. It hosts the rendezvous store, starts N processes with the environment
//! contract, prefixes their output with `[rank k]`, and on the first failure stops the
//! rest and reports which rank failed first and why.

mod mpirun;
mod nodes;
mod procs;
mod report;
mod supervise;

pub use nodes::Nodes;
pub use report::{RankExit, Report};
pub(crate) use supervise::Fault;

use crate::error::{Error, Result};
use std::ffi::{OsStr, OsString};
use std::io::{Read, Write};
use std::path::PathBuf;
use std::time::Duration;

/// A job to start: one program, N ranks.
#[derive(Clone)]
pub struct Launch {
    pub(crate) program: PathBuf,
    pub(crate) args: Vec<OsString>,
    pub(crate) n: usize,
    pub(crate) envs: Vec<(OsString, OsString)>,
    pub(crate) removed: Vec<OsString>,
    pub(crate) capture: bool,
    pub(crate) timeout: Option<Duration>,
    pub(crate) faults: Vec<Fault>,
    pub(crate) prefix: bool,
    rank_envs: Vec<(usize, OsString, OsString)>,
    nodes: Option<Nodes>,
    pub(crate) mpirun_args: Vec<OsString>,
    /// A rank's death by a signal does not stop the others (`fault_tolerant`).
    pub(crate) tolerant: bool,
    /// How often a failed job is started again (`max_restarts`).
    pub(crate) restarts: usize,
}

/// Every setting, with the values of secrets (`DIST_JOB_TOKEN`) hidden.
impl std::fmt::Debug for Launch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let hide = |k: &OsString, v: &OsString| {
            if k == "DIST_JOB_TOKEN" {
                "(set, not shown)".to_string()
            } else {
                v.to_string_lossy().into_owned()
            }
        };
        let envs: Vec<(String, String)> =
            self.envs.iter().map(|(k, v)| (k.to_string_lossy().into_owned(), hide(k, v))).collect();
        let rank_envs: Vec<(usize, String, String)> =
            self.rank_envs.iter().map(|(r, k, v)| (*r, k.to_string_lossy().into_owned(), hide(k, v))).collect();
        f.debug_struct("Launch")
            .field("program", &self.program)
            .field("args", &self.args)
            .field("n", &self.n)
            .field("envs", &envs)
            .field("removed", &self.removed)
            .field("capture", &self.capture)
            .field("timeout", &self.timeout)
            .field("faults", &self.faults)
            .field("prefix", &self.prefix)
            .field("rank_envs", &rank_envs)
            .field("nodes", &self.nodes)
            .field("mpirun_args", &self.mpirun_args)
            .field("tolerant", &self.tolerant)
            .field("restarts", &self.restarts)
            .finish()
    }
}

impl Launch {
    /// `n` ranks of `program`.
    pub fn new(program: impl Into<PathBuf>, n: usize) -> Launch {
        Launch {
            program: program.into(),
            args: Vec::new(),
            n,
            envs: Vec::new(),
            // Launcher-to-binary queries: inherited, they would make every rank answer
            // them and exit 0 without running.
            removed: vec!["DIST_LIST_ENTRIES".into(), "DIST_RESOLVE_ENTRY".into()],
            capture: false,
            timeout: None,
            faults: Vec::new(),
            prefix: true,
            rank_envs: Vec::new(),
            nodes: None,
            mpirun_args: Vec::new(),
            tolerant: false,
            restarts: 0,
        }
    }

    /// Re-executes the current binary as `n` ranks running the `#[spmd]` entry `entry`.
    pub fn entry(entry: &str, n: usize) -> Result<Launch> {
        warn_if_unoptimised();
        let exe = std::env::current_exe().map_err(|e| Error::Backend {
            backend: "launch",
            msg: "cannot find the current executable".into(),
            source: Some(Box::new(e)),
        })?;
        Ok(Launch::new(exe, n).env("DIST_ENTRY", entry))
    }

    /// Arguments for every rank.
    pub fn args<I: IntoIterator<Item = S>, S: AsRef<OsStr>>(mut self, args: I) -> Launch {
        self.args.extend(args.into_iter().map(|a| a.as_ref().to_owned()));
        self
    }

    /// An environment variable for every rank.
    pub fn env(mut self, k: impl AsRef<OsStr>, v: impl AsRef<OsStr>) -> Launch {
        self.removed.retain(|key| key != k.as_ref());
        self.envs.push((k.as_ref().to_owned(), v.as_ref().to_owned()));
        self
    }

    /// An environment variable for rank `rank` only (after those of [`env`](Launch::env));
    /// e.g. a host identity per rank, to test what happens when ranks sit on different
    /// hosts. Not available under mpirun (the MPI backend), which starts the ranks itself.
    pub fn env_for(mut self, rank: usize, k: impl AsRef<OsStr>, v: impl AsRef<OsStr>) -> Launch {
        self.rank_envs.push((rank, k.as_ref().to_owned(), v.as_ref().to_owned()));
        self
    }

    /// Removes an environment variable the ranks would otherwise inherit from this
    /// process (or that an earlier [`env`](Launch::env) set).
    pub fn env_remove(mut self, k: impl AsRef<OsStr>) -> Launch {
        self.envs.retain(|(key, _)| key != k.as_ref());
        self.removed.push(k.as_ref().to_owned());
        self
    }

    /// Capture output into the report instead of printing it with `[rank k]` prefixes.
    pub fn capture(mut self, yes: bool) -> Launch {
        self.capture = yes;
        self
    }

    /// Kill the job after `d` (ranks get `DIST_TIMEOUT` a little shorter, unless set, so
    /// they report what they wait for first).
    pub fn timeout(mut self, d: Duration) -> Launch {
        self.timeout = Some(d);
        self
    }

    /// Whether printed output lines get a `[rank k]` prefix (default true).
    pub fn prefix_output(mut self, yes: bool) -> Launch {
        self.prefix = yes;
        self
    }

    /// One node of a torchrun-style multi-node job: this launcher starts its `n` ranks
    /// (`--nproc-per-node`) as ranks `node_rank × n ..` of `nnodes × n`; node 0's launcher
    /// hosts the job's store at `master_addr:master_port`. Start one launcher per node
    /// with the same `Nodes` but its own `node_rank`. A failure on one node stops the
    /// ranks of every node. Ranks on several hosts need a backend that spans hosts (the
    /// shared-memory backend stops at init naming the hosts); several nodes on one host
    /// form one shared-memory job.
    pub fn nodes(mut self, nodes: Nodes) -> Launch {
        self.nodes = Some(nodes);
        self
    }

    /// An argument for `mpirun` (the MPI backend), after those of `DIST_MPIRUN_ARGS`;
    /// e.g. `--hostfile` and its file.
    pub fn mpirun_arg(mut self, a: impl AsRef<OsStr>) -> Launch {
        self.mpirun_args.push(a.as_ref().to_owned());
        self
    }

    /// Lets the job survive a rank's death (ULFM's `--with-ft`): a rank killed by a signal
    /// (SIGKILL, a crash) does not stop the others, whose ops on communicators with the
    /// dead rank fail with [`PeerFailed`](crate::Error::PeerFailed) so they can
    /// [`shrink`](crate::Comm::shrink) and go on. The job succeeds when every rank that
    /// ended by itself exited 0 and at least one did; [`Report::lost`] names the dead.
    /// A rank that exits with an error still stops the job. Shared memory only so far.
    pub fn fault_tolerant(mut self, yes: bool) -> Launch {
        self.tolerant = yes;
        self
    }

    /// Starts a failed job again, up to `k` times (torchrun's `--max-restarts`): every rank
    /// is started anew, with `DIST_RESTART_COUNT` (and torchrun's
    /// `TORCHELASTIC_RESTART_COUNT`) telling it which attempt this is
    /// ([`restart_count`]), so it can resume from its last
    /// checkpoint ([`Checkpoint`](crate::checkpoint::Checkpoint)). The report is the last
    /// attempt's; [`Report::restarts`] says how many came before it. A job that timed out
    /// is not restarted. Fault injection (`kill_after`, `stop_after`) applies to the
    /// first attempt only. Not with `nodes` (every node's launcher would restart alone).
    pub fn max_restarts(mut self, k: usize) -> Launch {
        self.restarts = k;
        self
    }

    /// Fault injection: SIGKILL rank `rank` once `after` has passed since the start (each
    /// call adds a fault: two calls kill two ranks). Under
    /// mpirun (the MPI backend) the rank is found by the pid it reports, on this host only.
    pub fn kill_after(mut self, rank: usize, after: Duration) -> Launch {
        self.faults.push(Fault { rank, at: after, stop_for: None });
        self
    }

    /// Fault injection: SIGSTOP rank `rank` once `after` has passed since the start, and
    /// SIGCONT it `stop_for` later (a preempted VM, an operator's `kill -STOP`): a stall the
    /// job must ride out. Under mpirun, on this host only, as [`Launch::kill_after`].
    pub fn stop_after(mut self, rank: usize, after: Duration, stop_for: Duration) -> Launch {
        self.faults.push(Fault { rank, at: after, stop_for: Some(stop_for) });
        self
    }

    /// Starts the ranks and waits for the job to end (and starts it again after a
    /// failure, up to [`max_restarts`](Launch::max_restarts) times).
    pub fn run(self) -> Result<Report> {
        if self.restarts > 0 && self.nodes.is_some() {
            return Err(Error::invalid(
                "launch",
                "--max-restarts restarts a job on one host; across nodes, restart the whole job from outside",
            ));
        }
        let mut attempt = 0;
        loop {
            let mut l = self.clone().env("DIST_RESTART_COUNT", attempt.to_string());
            l = l.env("TORCHELASTIC_RESTART_COUNT", attempt.to_string());
            if attempt > 0 {
                l.faults.clear();
            }
            let mut report = l.run_once()?;
            report.restarts = attempt;
            if report.success() || report.timed_out || attempt >= self.restarts {
                return Ok(report);
            }
            eprintln!(
                "dist launch: attempt {} of {} failed ({}); starting the job again",
                attempt + 1,
                self.restarts + 1,
                report.headline()
            );
            attempt += 1;
        }
    }

    fn run_once(self) -> Result<Report> {
        if self.n == 0 {
            return Err(Error::invalid("launch", "cannot launch 0 ranks"));
        }
        let (nnodes, node) = self.nodes.as_ref().map_or((1, 0), |nd| (nd.nnodes, nd.node_rank));
        if let Some(nd) = &self.nodes {
            nd.validate()?;
        }
        let world = self.n.saturating_mul(nnodes);
        if world > crate::env::MAX_WORLD {
            return Err(Error::invalid(
                "launch",
                format!("{world} ranks is more than the limit of {}", crate::env::MAX_WORLD),
            ));
        }
        let user_token = self
            .envs
            .iter()
            .rev()
            .find(|(k, _)| k == "DIST_JOB_TOKEN")
            .map(|(_, v)| v.to_string_lossy().into_owned())
            .or_else(|| std::env::var("DIST_JOB_TOKEN").ok())
            .filter(|t| !t.is_empty());
        let token = match &self.nodes {
            Some(nd) => nd.token(user_token),
            None => random_token(),
        };
        // DIST_BACKEND=mpi (for the ranks, or inherited): mpirun starts them.
        let backend = self.envs.iter().rev().find(|(k, _)| k == "DIST_BACKEND").map(|(_, v)| v.clone());
        let backend = backend
            .or_else(|| std::env::var_os("DIST_BACKEND").filter(|_| !self.removed.iter().any(|k| k == "DIST_BACKEND")));
        if backend.is_some_and(|b| b.eq_ignore_ascii_case("mpi")) {
            if self.tolerant {
                return Err(Error::invalid(
                    "launch",
                    "surviving a rank's death (--fault-tolerant) is built on the shared-memory backend only so far: \
                     on MPI it needs ULFM, which dist does not use yet",
                ));
            }
            if nnodes > 1 {
                return Err(Error::invalid(
                    "launch",
                    "the MPI backend's ranks are started by mpirun on every host: give it the hosts (e.g. \
                     DIST_MPIRUN_ARGS=\"--hostfile hosts\", or `--hostfile`) and one -n for the whole job, not \
                     --nnodes/--node-rank",
                ));
            }
            return mpirun::run(&self, &token);
        }
        procs::run(&self, &token, nnodes, node)
    }
}

impl Launch {
    /// The `DIST_TIMEOUT` the ranks get (a little under the launcher's own timeout, so a
    /// rank names what it waits for before the launcher kills it), unless the user set
    /// one for the ranks or this process.
    pub(crate) fn rank_timeout(&self) -> Option<String> {
        let user = self.envs.iter().any(|(k, _)| k == "DIST_TIMEOUT") || std::env::var_os("DIST_TIMEOUT").is_some();
        let t = self.timeout.filter(|_| !user)?;
        Some(format!("{:.3}", (t.as_secs_f64() * 0.8).max(0.5)))
    }
}

/// The opt-level dist-runtime was compiled at (from its build script).
pub const RUNTIME_OPT_LEVEL: &str = env!("DIST_RUNTIME_OPT_LEVEL");

/// The lines that make a dev build fast, for messages and docs.
pub const PROFILE_LINES: &str =
    "[profile.dev.package.dist-runtime]\nopt-level = 2\n[profile.dev.package.dist-macros]\nopt-level = 3";

/// Says once per process, on stderr (not captured by the test harness), that the ranks
/// re-executed from this binary run an unoptimised dist-runtime, and the lines to add.
/// `DIST_NO_BUILD_WARNING=1` silences it.
fn warn_if_unoptimised() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    if RUNTIME_OPT_LEVEL != "0" || std::env::var_os("DIST_NO_BUILD_WARNING").is_some() {
        return;
    }
    ONCE.call_once(|| {
        let msg = format!(
            "warning: dist-runtime is compiled without optimisation (this package's dev profile), \
             so its collectives run ~25x slower than they should. Add to your Cargo.toml:\n{PROFILE_LINES}\n\
             (`cargo spmd run` does this by itself; DIST_NO_BUILD_WARNING=1 hides this message)\n"
        );
        let _ = std::io::stderr().write_all(msg.as_bytes());
    });
}

/// Which attempt of a job restarted by its launcher this rank belongs to
/// ([`Launch::max_restarts`], `cargo spmd run --max-restarts K`): 0 for the first run.
/// Read from `DIST_RESTART_COUNT`, else torchrun's `TORCHELASTIC_RESTART_COUNT`.
pub fn restart_count() -> usize {
    ["DIST_RESTART_COUNT", "TORCHELASTIC_RESTART_COUNT"]
        .iter()
        .find_map(|k| std::env::var(k).ok()?.trim().parse().ok())
        .unwrap_or(0)
}

fn random_token() -> String {
    let mut b = [0u8; 16];
    let ok = std::fs::File::open("/dev/urandom").and_then(|mut f| f.read_exact(&mut b)).is_ok();
    if !ok {
        // Fall back to time and pid: unguessable enough for a loopback job of one user.
        let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_nanos();
        b[..16].copy_from_slice(&(t ^ ((std::process::id() as u128) << 64)).to_le_bytes());
    }
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// Runs the `#[spmd]` entry named `entry` of the current binary on `n` ranks and waits.
/// Output is printed with `[rank k]` prefixes. Returns the report; check
/// [`Report::success`].
pub fn launch_by_name(n: usize, entry: &str) -> Result<Report> {
    Launch::entry(entry, n)?.run()
}

/// Runs the `#[spmd]` function `f` on `n` ranks, re-executing the current binary (the
/// `mp.spawn` of dist), and returns each rank's value, by rank. Output is printed with
/// `[rank k]` prefixes. If a rank fails, the others are stopped and the error names the
/// rank that failed first, its status and its last lines.
///
/// ```no_run
/// use dist_runtime::prelude::*;
///
/// #[spmd]
/// fn square(world: Comm<World>) -> dist_runtime::Result<u64> {
///     let mut x = [world.rank() as u64];
///     world.all_reduce(&mut x, ReduceOp::Sum)?;
///     Ok(x[0] * x[0])
/// }
///
/// fn main() -> dist_runtime::Result<()> {
///     let squares = dist_runtime::launch(4, square)?;
///     assert_eq!(squares, vec![36; 4]);
///     Ok(())
/// }
/// ```
pub fn launch<R: crate::entry::EntryReturn>(
    n: usize,
    f: fn(crate::comm::Comm<crate::group::World>) -> R,
) -> Result<Vec<R::Value>> {
    let entry = crate::entry::find_by_addr(f as *const ())
        .ok_or_else(|| Error::invalid("launch", "this function is not an entry point: annotate it with #[spmd]"))?;
    let report = Launch::entry(entry.name, n)?.env("DIST_RESULTS", "1").run()?;
    if !report.success() {
        let r = &report.ranks[report.first_failure.unwrap_or(0)];
        let rank = r.rank;
        let tail: Vec<&str> = r.output.lines().rev().take(6).collect::<Vec<_>>().into_iter().rev().collect();
        return Err(Error::RankFailed {
            rank,
            n,
            status: if report.timed_out {
                "timed out".into()
            } else if report.left_early.is_some() {
                "returned from its entry while its peers still waited on it".into()
            } else if let Some(what) = &report.cause {
                format!("named as the cause by its peers: {what}")
            } else {
                r.status()
            },
            message: tail.join("\n"),
        });
    }
    report
        .results
        .iter()
        .enumerate()
        .map(|(rank, v)| {
            let v = v.as_ref().ok_or_else(|| Error::backend("launch", format!("rank {rank} returned no result")))?;
            postcard::from_bytes(v).map_err(|e| Error::Serde { op: "launch", msg: e.to_string() })
        })
        .collect()
}
