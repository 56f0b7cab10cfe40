//! Spawning ranks: the library behind `cargo spmd run` (and `cargo xtask run`), `dist_runtime::launch` and the
//! test macro. It hosts the rendezvous store, starts N processes with the environment
//! contract, prefixes their output with `[rank k]`, and on the first failure stops the
//! rest and reports which rank failed first and why.

mod mpirun;
mod nodes;

pub use nodes::Nodes;

use crate::error::{Error, Result};
use crate::store::StoreServer;
use std::ffi::{OsStr, OsString};
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long the launcher lets the other ranks report after the first failure before it
/// kills them.
const GRACE: Duration = Duration::from_millis(500);

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
    pub(crate) fault: Option<Fault>,
    pub(crate) prefix: bool,
    rank_envs: Vec<(usize, OsString, OsString)>,
    nodes: Option<Nodes>,
    pub(crate) mpirun_args: Vec<OsString>,
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
            .field("fault", &self.fault)
            .field("prefix", &self.prefix)
            .field("rank_envs", &rank_envs)
            .field("nodes", &self.nodes)
            .field("mpirun_args", &self.mpirun_args)
            .finish()
    }
}

/// How one rank ended.
#[derive(Clone, Debug)]
pub struct RankExit {
    /// The rank (in the whole job: on node k of a multi-node job, k × ranks per node + the
    /// local rank).
    pub rank: usize,
    /// Its process id.
    pub pid: u32,
    /// Exit code, if it exited.
    pub code: Option<i32>,
    /// Signal, if a signal ended it.
    pub signal: Option<i32>,
    /// Whether the launcher killed it (after another rank failed, or at the timeout).
    pub killed_by_launcher: bool,
    /// Its output (stdout and stderr, interleaved by line) when captured, else its last lines.
    pub output: String,
}

impl RankExit {
    /// Whether the rank exited with status 0.
    pub fn success(&self) -> bool {
        self.code == Some(0)
    }

    /// "exit code 1", "killed by signal 9 (SIGKILL)".
    pub fn status(&self) -> String {
        match (self.code, self.signal) {
            (Some(101), _) => "panicked (exit code 101)".into(),
            (Some(3), _) => "stopped because a peer failed (exit code 3)".into(),
            (Some(c), _) => format!("exit code {c}"),
            (None, Some(s)) => format!("killed by signal {s}{}", if s == 9 { " (SIGKILL)" } else { "" }),
            (None, None) => "unknown status".into(),
        }
    }
}

/// The result of a job.
#[derive(Clone, Debug)]
pub struct Report {
    /// Every rank's exit, by rank.
    pub ranks: Vec<RankExit>,
    /// Where in `ranks` the rank that failed first is (the cause, not the peers that
    /// stopped because of it); its job-wide rank is `ranks[i].rank`.
    pub first_failure: Option<usize>,
    /// In a multi-node job: a failure another node reported first (which rank, how),
    /// after which this node's ranks were stopped.
    pub remote_failure: Option<String>,
    /// When the cause is a rank that returned from its entry (exit 0) while its peers
    /// still waited on it: what a peer saw. `first_failure` then points at that rank.
    pub left_early: Option<String>,
    /// When every failing rank stopped because of a peer and a peer's detector named the
    /// cause (a deadlock's culprit, a stopped process): what it said. `first_failure`
    /// then points at that rank.
    pub cause: Option<String>,
    /// When the job failed: the failing ranks' flight recorders lined up per
    /// communicator (where each rank last was, ranks that agree grouped).
    pub flight: Option<String>,
    /// Whether the launcher's timeout ended the job.
    pub timed_out: bool,
    /// Wall time of the job.
    pub elapsed: Duration,
    /// Each rank's serialised result, when the ranks published one (`DIST_RESULTS=1`).
    pub(crate) results: Vec<Option<Vec<u8>>>,
    /// How many ranks joined the job (see [`Report::ranks_joined`]).
    pub(crate) joined: Option<usize>,
}

impl Report {
    /// How many ranks joined the job (reached the job's store from `dist_runtime::init`,
    /// which an `#[spmd]` entry calls first), where this launcher hosts the store and the
    /// job has more than one rank; `None` where it cannot tell (one rank, a multi-node
    /// job, mpirun). `Some(0)` after a successful job: its processes ran a plain `main`
    /// and never used dist.
    pub fn ranks_joined(&self) -> Option<usize> {
        self.joined
    }

    /// Whether every rank succeeded.
    pub fn success(&self) -> bool {
        !self.timed_out && self.ranks.iter().all(RankExit::success)
    }

    /// A human summary of what went wrong (empty on success).
    pub fn summary(&self) -> String {
        if self.success() {
            return String::new();
        }
        let mut s = String::new();
        if self.timed_out {
            s.push_str(&format!(
                "job timed out after {:.1}s; ranks still running were killed\n",
                self.elapsed.as_secs_f64()
            ));
        }
        if let Some(msg) = &self.remote_failure {
            s.push_str(&format!("a rank on another node failed first ({msg}); this node's ranks were stopped\n"));
        } else if let (Some(i), Some(what)) = (self.first_failure, &self.left_early) {
            s.push_str(&format!(
                "rank {} returned from its entry while its peers still waited on it: {what}\n",
                self.ranks[i].rank
            ));
        } else if let (Some(i), Some(what)) = (self.first_failure, &self.cause) {
            s.push_str(&format!("rank {} is the cause, as its peers found: {what}\n", self.ranks[i].rank));
        } else if let Some(i) = self.first_failure {
            s.push_str(&format!("rank {} failed first: {}\n", self.ranks[i].rank, self.ranks[i].status()));
        }
        if let Some(f) = &self.flight {
            s.push_str(&format!("flight recorder, where each failing rank last was:\n{f}\n"));
        }
        for r in &self.ranks {
            if !r.success() {
                let how = if r.killed_by_launcher { "killed by the launcher".to_string() } else { r.status() };
                s.push_str(&format!("--- rank {} ({how}) ---\n{}", r.rank, r.output));
                if !r.output.ends_with('\n') {
                    s.push('\n');
                }
            }
        }
        s
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
            fault: None,
            prefix: true,
            rank_envs: Vec::new(),
            nodes: None,
            mpirun_args: Vec::new(),
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

    /// Fault injection: SIGKILL rank `rank` once `after` has passed since the start. Under
    /// mpirun (the MPI backend) the rank is found by the pid it reports, on this host only.
    pub fn kill_after(mut self, rank: usize, after: Duration) -> Launch {
        self.fault = Some(Fault { rank, at: after, stop_for: None });
        self
    }

    /// Fault injection: SIGSTOP rank `rank` once `after` has passed since the start, and
    /// SIGCONT it `stop_for` later (a preempted VM, an operator's `kill -STOP`): a stall the
    /// job must ride out. Under mpirun, on this host only, as [`Launch::kill_after`].
    pub fn stop_after(mut self, rank: usize, after: Duration, stop_for: Duration) -> Launch {
        self.fault = Some(Fault { rank, at: after, stop_for: Some(stop_for) });
        self
    }

    /// Starts the ranks and waits for the job to end.
    pub fn run(self) -> Result<Report> {
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
        let base = node * self.n;
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
        let start = Instant::now();
        // The job's store: this launcher's, on loopback; in a multi-node job, node 0's at
        // the master address, joined by every node's launcher before any rank starts.
        let (server, mut link, master_addr, port, job_id) = match &self.nodes {
            Some(nd) => {
                let patience = self.timeout.unwrap_or(Duration::from_secs(300));
                let link = nodes::NodeLink::join(nd, self.n, &token, patience)?;
                (None, Some(link), nd.master_addr.clone(), nd.master_port.to_string(), nd.job_id(&token))
            }
            None => {
                let server = StoreServer::bind("127.0.0.1:0", &token)?;
                let port = server.addr().port().to_string();
                // Unique per launch without revealing any of the token.
                let job_id = format!("j{}x{:08x}", std::process::id(), nodes::fnv(token.as_bytes(), 11) as u32);
                (Some(server), None, "127.0.0.1".to_string(), port, job_id)
            }
        };
        let user_timeout =
            self.envs.iter().any(|(k, _)| k == "DIST_TIMEOUT") || std::env::var_os("DIST_TIMEOUT").is_some();
        ensure_fds(self.n)?;
        let mut children: Vec<Child> = Vec::with_capacity(self.n);
        let outputs: Vec<Arc<Mutex<Vec<u8>>>> = (0..self.n).map(|_| Arc::new(Mutex::new(Vec::new()))).collect();
        let mut pumps = Vec::new();
        for (local, sink) in outputs.iter().enumerate() {
            let rank = base + local;
            let mut cmd = Command::new(&self.program);
            cmd.args(&self.args)
                .env("RANK", rank.to_string())
                .env("WORLD_SIZE", world.to_string())
                .env("LOCAL_RANK", local.to_string())
                .env("LOCAL_WORLD_SIZE", self.n.to_string())
                .env("GROUP_RANK", node.to_string())
                .env("GROUP_WORLD_SIZE", nnodes.to_string())
                .env("MASTER_ADDR", &master_addr)
                .env("MASTER_PORT", &port)
                .env("DIST_JOB_ID", &job_id)
                .env("DIST_JOB_TOKEN", &token)
                .env("DIST_STORE_EXTERNAL", "1")
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped());
            if let (Some(t), false) = (self.timeout, user_timeout) {
                cmd.env("DIST_TIMEOUT", format!("{:.3}", (t.as_secs_f64() * 0.8).max(0.5)));
            }
            for k in &self.removed {
                cmd.env_remove(k);
            }
            for (k, v) in &self.envs {
                cmd.env(k, v);
            }
            for (_, k, v) in self.rank_envs.iter().filter(|(r, _, _)| *r == rank) {
                cmd.env(k, v);
            }
            // SAFETY: prctl is async-signal-safe; it makes the rank die with the launcher
            // (the spawning thread), so no rank outlives a killed test or xtask.
            unsafe {
                cmd.pre_exec(|| {
                    libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                    Ok(())
                });
            }
            let mut child = match cmd.spawn() {
                Ok(c) => c,
                Err(e) => {
                    for c in children.iter_mut() {
                        let _ = c.kill();
                        let _ = c.wait();
                    }
                    return Err(Error::Backend {
                        backend: "launch",
                        msg: format!("cannot start {}: {e}", self.program.display()),
                        source: Some(Box::new(e)),
                    });
                }
            };
            let out = child.stdout.take().expect("piped");
            let err = child.stderr.take().expect("piped");
            children.push(child);
            for (stream, is_err) in [(Box::new(out) as Box<dyn Read + Send>, false), (Box::new(err), true)] {
                match pump(stream, rank, is_err, self.capture, self.prefix, sink.clone()) {
                    Ok(p) => pumps.push(p),
                    Err(e) => {
                        for c in children.iter_mut() {
                            let _ = c.kill();
                            let _ = c.wait();
                        }
                        return Err(e);
                    }
                }
            }
        }
        let mut status: Vec<Option<ExitStatus>> = vec![None; self.n];
        let mut order: Vec<usize> = Vec::new();
        let mut killed = vec![false; self.n];
        let mut failed_at: Option<Instant> = None;
        let mut timed_out = false;
        let mut fault = Injector::new(self.fault.filter(|f| f.rank >= base && f.rank < base + self.n));
        let mut remote_failure: Option<String> = None;
        let mut reported = false;
        loop {
            fault.tick(start.elapsed(), |r| status[r - base].is_none().then(|| children[r - base].id()));
            for (i, c) in children.iter_mut().enumerate() {
                if status[i].is_none() {
                    if let Ok(Some(s)) = c.try_wait() {
                        status[i] = Some(s);
                        order.push(i);
                        if !s.success() && failed_at.is_none() {
                            failed_at = Some(Instant::now());
                        }
                        // The other nodes learn of a cause here (not of a rank that
                        // stopped because a peer failed, nor one this launcher killed).
                        if !s.success() && !reported && s.code() != Some(3) && !killed[i] {
                            if let Some(l) = &link {
                                let how = match (s.code(), s.signal()) {
                                    (Some(c), _) => format!("exit code {c}"),
                                    (None, Some(sig)) => format!("killed by signal {sig}"),
                                    _ => "failed".into(),
                                };
                                l.report_failure(&format!("rank {} ({how})", base + i));
                                reported = true;
                            }
                        }
                    }
                }
            }
            if status.iter().all(Option::is_some) {
                break;
            }
            if remote_failure.is_none() && !reported {
                if let Some(msg) = link.as_mut().and_then(|l| l.remote_failure()) {
                    remote_failure = Some(msg);
                    failed_at.get_or_insert_with(Instant::now);
                }
            }
            let expired = self.timeout.is_some_and(|t| start.elapsed() >= t);
            if expired {
                timed_out = true;
            }
            if expired || failed_at.is_some_and(|t| t.elapsed() >= GRACE) {
                for (i, c) in children.iter_mut().enumerate() {
                    if status[i].is_none() {
                        let _ = c.kill();
                        killed[i] = true;
                    }
                }
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        for p in pumps {
            let _ = p.join();
        }
        let ranks: Vec<RankExit> = (0..self.n)
            .map(|i| {
                let s = status[i].expect("all exited");
                RankExit {
                    rank: base + i,
                    pid: children[i].id(),
                    code: s.code(),
                    signal: s.signal(),
                    killed_by_launcher: killed[i],
                    output: String::from_utf8_lossy(&outputs[i].lock().unwrap_or_else(|p| p.into_inner())).into_owned(),
                }
            })
            .collect();
        // The cause: the first failure in exit order that is not "a peer failed" nor our kill.
        let failing: Vec<usize> = order.iter().copied().filter(|&i| !ranks[i].success() && !killed[i]).collect();
        let mut first_failure =
            failing.iter().copied().find(|&i| ranks[i].code != Some(3)).or(failing.first().copied());
        // Only victims failed: a peer may have told the store which rank caused it — one
        // that returned early while they waited on it (`left/`, it exited 0), or one a
        // deadlock detector named (`cause/`: a culprit that heard of a victim first, a
        // stopped process the launcher killed).
        let named_by_peers = |key: &str, ranks: &[RankExit], exited_ok: bool| {
            (0..self.n).filter(|&i| !exited_ok || ranks[i].success()).find_map(|i| {
                let what = stored(&server, &link, &format!("{key}/{}", base + i))?;
                Some((i, String::from_utf8_lossy(&what).into_owned()))
            })
        };
        let only_victims = |f: Option<usize>| f.is_some_and(|i| ranks[i].code == Some(3));
        let mut left_early = None;
        if only_victims(first_failure) {
            if let Some((i, what)) = named_by_peers("left", &ranks, true) {
                left_early = Some(what);
                first_failure = Some(i);
            }
        }
        let mut cause = None;
        if only_victims(first_failure) {
            if let Some((i, what)) = named_by_peers("cause", &ranks, false) {
                cause = Some(what);
                first_failure = Some(i);
            }
        }
        // This node's ranks only stopped because a peer failed: the cause may be on another
        // node, whose launcher says so shortly.
        if let (Some(l), None, false) = (link.as_mut(), &remote_failure, reported) {
            if first_failure.is_some_and(|i| ranks[i].code == Some(3)) || (timed_out && first_failure.is_none()) {
                let until = Instant::now() + Duration::from_secs(2);
                while remote_failure.is_none() && Instant::now() < until {
                    remote_failure = l.remote_failure();
                    std::thread::sleep(Duration::from_millis(20));
                }
            }
        }
        let results = (base..base + self.n).map(|r| stored(&server, &link, &format!("result/{r}"))).collect();
        if let Some(l) = &link {
            l.finish();
        }
        let dumps: Vec<(usize, String)> = (0..self.n)
            .filter(|&i| !ranks[i].success())
            .filter_map(|i| {
                let d = stored(&server, &link, &format!("flight/{}", base + i))?;
                Some((base + i, String::from_utf8_lossy(&d).into_owned()))
            })
            .collect();
        let flight = Some(crate::verify::recorder::line_up(&dumps)).filter(|s| !s.is_empty());
        // Every rank that joins publishes its host (`init`'s check that the job is on one host).
        let joined = (server.is_some() && self.n > 1)
            .then(|| (0..self.n).filter(|&r| stored(&server, &link, &crate::init::host_key(r)).is_some()).count());
        Ok(Report {
            ranks,
            first_failure,
            remote_failure,
            left_early,
            cause,
            flight,
            timed_out,
            elapsed: start.elapsed(),
            results,
            joined,
        })
    }
}

/// A fault to inject ([`Launch::kill_after`], [`Launch::stop_after`]).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Fault {
    rank: usize,
    at: Duration,
    /// `None`: SIGKILL; else SIGSTOP, then SIGCONT this much later.
    stop_for: Option<Duration>,
}

/// Delivers a [`Fault`] from a launcher's supervision loop.
pub(crate) struct Injector {
    fault: Option<Fault>,
    /// The pid stopped, to resume, and when it was stopped.
    stopped: Option<(u32, Duration)>,
}

impl Injector {
    pub(crate) fn new(fault: Option<Fault>) -> Injector {
        Injector { fault, stopped: None }
    }

    /// Called every turn of the loop with the time since the start; `pid(rank)` is the
    /// rank's process while it runs (and where this launcher can signal it).
    pub(crate) fn tick(&mut self, elapsed: Duration, pid: impl Fn(usize) -> Option<u32>) {
        let Some(f) = self.fault else { return };
        if elapsed < f.at {
            return;
        }
        let signal = |p: u32, sig: i32| {
            // SAFETY: kill has no memory preconditions; `p` is one of the job's ranks.
            unsafe { libc::kill(p as i32, sig) };
        };
        match (f.stop_for, self.stopped) {
            // (Under mpirun the rank's pid may not be known yet: tried again, up to 5 s.)
            (None, _) => match pid(f.rank) {
                Some(p) => {
                    signal(p, libc::SIGKILL);
                    self.fault = None;
                }
                None if elapsed >= f.at + Duration::from_secs(5) => {
                    eprintln!("launch: rank {}'s process was not found to kill; no fault injected", f.rank);
                    self.fault = None;
                }
                None => {}
            },
            (Some(_), None) => match pid(f.rank) {
                Some(p) => {
                    signal(p, libc::SIGSTOP);
                    self.stopped = Some((p, elapsed));
                }
                // Not there (yet, under mpirun; or gone): nothing to stop.
                None if elapsed >= f.at + Duration::from_secs(5) => {
                    eprintln!("launch: rank {}'s process was not found to stop; no fault injected", f.rank);
                    self.fault = None;
                }
                None => {}
            },
            (Some(d), Some((p, since))) => {
                if elapsed >= since + d {
                    signal(p, libc::SIGCONT);
                    self.fault = None;
                }
            }
        }
    }
}

/// A key of the job's store, as the launcher sees it: its own server's table, or node 0's
/// store in a multi-node job.
fn stored(server: &Option<StoreServer>, link: &Option<nodes::NodeLink>, key: &str) -> Option<Vec<u8>> {
    match (server, link) {
        (Some(s), _) => s.get_local(key),
        (None, Some(l)) => l.get_now(key),
        (None, None) => None,
    }
}

/// Forwards one output stream of a rank, line by line: prefixed to ours, or captured.
/// When not capturing, keeps the last lines for the failure summary.
fn pump(
    stream: impl Read + Send + 'static,
    rank: usize,
    is_err: bool,
    capture: bool,
    prefixed: bool,
    sink: Arc<Mutex<Vec<u8>>>,
) -> Result<std::thread::JoinHandle<()>> {
    spawn_thread(&format!("rank {rank}'s output"), move || {
        let mut r = BufReader::new(stream);
        let mut line = Vec::new();
        let prefix = format!("[rank {rank}] ");
        while let Ok(n) = r.read_until(b'\n', &mut line) {
            if n == 0 {
                break;
            }
            if !line.ends_with(b"\n") {
                line.push(b'\n');
            }
            let already = !prefixed || line.starts_with(prefix.as_bytes());
            {
                let mut s = sink.lock().unwrap_or_else(|p| p.into_inner());
                s.extend_from_slice(&line);
                if !capture && s.len() > 64 << 10 {
                    let cut = s.len() - (32 << 10);
                    s.drain(..cut);
                }
            }
            if !capture {
                let mut out: Box<dyn Write> =
                    if is_err { Box::new(std::io::stderr().lock()) } else { Box::new(std::io::stdout().lock()) };
                if !already {
                    let _ = out.write_all(prefix.as_bytes());
                }
                let _ = out.write_all(&line);
                let _ = out.flush();
            }
            line.clear();
        }
    })
}

/// A thread of the launcher, or an error saying why it cannot have one (a process out of
/// memory or threads, `ulimit -v`/`ulimit -u`), instead of a panic.
pub(crate) fn spawn_thread<F: FnOnce() + Send + 'static>(what: &str, f: F) -> Result<std::thread::JoinHandle<()>> {
    // Small stacks: a pump reads lines into a buffer (a 2 MiB default stack per thread,
    // two threads per rank, is what a `ulimit -v` runs out of).
    std::thread::Builder::new().stack_size(256 << 10).spawn(f).map_err(|e| Error::Backend {
        backend: "launch",
        msg: format!(
            "cannot start a thread for {what}: {e}; the launcher needs two threads per rank it starts (raise the \
             memory or thread limit, `ulimit -v` / `ulimit -u`, or start fewer ranks)"
        ),
        source: Some(Box::new(e)),
    })
}

/// Makes sure this process may open the file descriptors `n` ranks need (two pipes each,
/// a store connection each, and some to spare): raises the soft limit up to the hard
/// one where it is lower, and says so clearly where even the hard limit is too low,
/// instead of ranks failing to reach the store and waiting for the deadline.
pub(crate) fn ensure_fds(n: usize) -> Result<()> {
    let need = (6 * n + 64) as libc::rlim_t;
    let mut lim = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit writes the struct we own.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 || lim.rlim_cur >= need {
        return Ok(());
    }
    if lim.rlim_max >= need {
        let raised = libc::rlimit { rlim_cur: need.max(lim.rlim_cur), rlim_max: lim.rlim_max };
        // SAFETY: setrlimit reads the struct we own; raising the soft limit up to the hard
        // one needs no privilege.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } == 0 {
            return Ok(());
        }
    }
    Err(Error::invalid(
        "launch",
        format!(
            "starting {n} ranks needs about {need} file descriptors in the launcher (pipes and store connections), \
             and this process may open only {} (`ulimit -n`, hard limit {}): raise it (`ulimit -n {need}`) or start \
             fewer ranks",
            lim.rlim_cur, lim.rlim_max
        ),
    ))
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
            bincode::deserialize(v).map_err(|e| Error::Serde { op: "launch", msg: e.to_string() })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    /// More ranks than even the hard fd limit allows are refused at once, naming
    /// `ulimit -n`; a launch within the limit goes ahead.
    #[test]
    fn a_launch_past_the_fd_limit_is_refused_at_once() {
        assert!(super::ensure_fds(4).is_ok());
        let mut lim = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
        // SAFETY: getrlimit writes the struct we own.
        assert_eq!(unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) }, 0);
        if lim.rlim_max == libc::RLIM_INFINITY || lim.rlim_max > (usize::MAX / 8) as libc::rlim_t {
            eprintln!("no finite hard fd limit here; the refusal is not exercised");
            return;
        }
        let n = lim.rlim_max as usize / 6 + 1;
        let e = super::ensure_fds(n).unwrap_err().to_string();
        assert!(e.contains("ulimit -n") && e.contains(&format!("starting {n} ranks")), "{e}");
    }
}
