//! The launcher of the shared-memory backend (and of NCCL's): it hosts the job's store
//! (or joins node 0's in a multi-node job), starts this node's ranks as its own children
//! with the environment contract, pumps their output, supervises them
//! ([`supervise`](super::supervise::supervise)): on the first failure it lets the others
//! report for [`GRACE`], then kills them; a failure is told to the other nodes, and theirs
//! stop this node's ranks.

use super::report::{blame, leftovers, RankExit, Report};
use super::supervise::{pump_lines, supervise, Injector, Seen, Supervised};
use super::{nodes, Launch};
use crate::error::{Error, Result};
use crate::store::StoreServer;
use std::io::Read;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long the launcher lets the other ranks report after the first failure before it
/// kills them.
const GRACE: Duration = Duration::from_millis(500);

/// This node's ranks, as their parent sees them.
struct Procs<'s> {
    children: Vec<Child>,
    /// Job-wide rank of the first child.
    base: usize,
    status: Vec<Option<ExitStatus>>,
    /// Children in the order they ended.
    order: Vec<usize>,
    killed: Vec<bool>,
    failed_at: Option<Instant>,
    link: Option<nodes::NodeLink>,
    /// Whether this node told the others of a failure of its own.
    reported: bool,
    /// A failure another node reported first.
    remote_failure: Option<String>,
    /// A rank's death by a signal is survived (`Launch::fault_tolerant`) once this says
    /// the job is formed (every rank made its world: before, nobody can go on).
    tolerant: Option<Box<dyn Fn() -> bool + 's>>,
    /// The ranks whose death the job went on without (job-wide numbers).
    survived: Vec<usize>,
    /// Deaths by a signal in a fault-tolerant job not judged yet (child, when seen): the
    /// survivors may still be finishing `init` (a rank that dies as its entry starts).
    dying: Vec<(usize, Instant)>,
}

impl Procs<'_> {
    /// A death is survived once the job is formed (every rank made its world: the
    /// others count themselves in the store a moment after the one that died may have);
    /// one the job is still not formed `GRACE` after is the job's failure, as without
    /// fault tolerance.
    fn judge_deaths(&mut self) {
        if self.dying.is_empty() {
            return;
        }
        if self.tolerant.as_ref().is_some_and(|formed| formed()) {
            let base = self.base;
            self.survived.extend(self.dying.drain(..).map(|(i, _)| base + i));
            return;
        }
        let ended = self.status.iter().all(Option::is_some);
        if let Some(&(_, t)) = self.dying.first() {
            if ended || t.elapsed() >= GRACE {
                self.failed_at.get_or_insert(t);
                self.dying.clear();
            }
        }
    }
}

impl Supervised for Procs<'_> {
    fn look(&mut self) -> Result<Seen> {
        for (i, c) in self.children.iter_mut().enumerate() {
            if self.status[i].is_some() {
                continue;
            }
            let Ok(Some(s)) = c.try_wait() else { continue };
            self.status[i] = Some(s);
            self.order.push(i);
            // In a fault-tolerant job a rank that died by a signal is the survivors' to
            // handle (they learn it from its process), not a reason to stop them: once
            // the job is formed (below).
            if s.signal().is_some() && !self.killed[i] && self.tolerant.is_some() {
                self.dying.push((i, Instant::now()));
                continue;
            }
            if !s.success() && self.failed_at.is_none() {
                self.failed_at = Some(Instant::now());
            }
            // The other nodes learn of a cause here (not of a rank that stopped because a
            // peer failed, nor one this launcher killed).
            if !s.success() && !self.reported && s.code() != Some(3) && !self.killed[i] {
                if let Some(l) = &self.link {
                    let how = match (s.code(), s.signal()) {
                        (Some(c), _) => format!("exit code {c}"),
                        (None, Some(sig)) => format!("killed by signal {sig}"),
                        _ => "failed".into(),
                    };
                    l.report_failure(&format!("rank {} ({how})", self.base + i));
                    self.reported = true;
                }
            }
        }
        self.judge_deaths();
        if self.status.iter().all(Option::is_some) {
            return Ok(Seen::Ended);
        }
        if self.remote_failure.is_none() && !self.reported {
            if let Some(msg) = self.link.as_mut().and_then(|l| l.remote_failure()) {
                self.remote_failure = Some(msg);
                self.failed_at.get_or_insert_with(Instant::now);
            }
        }
        Ok(if self.failed_at.is_some_and(|t| t.elapsed() >= GRACE) { Seen::StopNow } else { Seen::Running })
    }

    fn pid(&self, rank: usize) -> Option<u32> {
        let i = rank.checked_sub(self.base).filter(|&i| i < self.children.len())?;
        self.status[i].is_none().then(|| self.children[i].id())
    }

    fn stop(&mut self) {
        self.kill();
    }

    fn kill(&mut self) {
        for (i, c) in self.children.iter_mut().enumerate() {
            if self.status[i].is_none() {
                let _ = c.kill();
                self.killed[i] = true;
            }
        }
    }
}

/// Starts this node's `l.n` ranks (node `node` of `nnodes`) and supervises them to the end.
pub(super) fn run(l: &Launch, token: &str, nnodes: usize, node: usize) -> Result<Report> {
    let (world, base) = (l.n * nnodes, node * l.n);
    let start = Instant::now();
    // The job's store: this launcher's, on loopback; in a multi-node job, node 0's at
    // the master address, joined by every node's launcher before any rank starts.
    let (server, link, master_addr, port, job_id) = match &l.nodes {
        Some(nd) => {
            let patience = l.timeout.unwrap_or(Duration::from_secs(300));
            let link = nodes::NodeLink::join(nd, l.n, token, patience)?;
            (None, Some(link), nd.master_addr.clone(), nd.master_port.to_string(), nd.job_id(token))
        }
        None => {
            let server = StoreServer::bind("127.0.0.1:0", token)?;
            let port = server.addr().port().to_string();
            // Unique per launch without revealing any of the token.
            let job_id = format!("j{}x{:08x}", std::process::id(), nodes::fnv(token.as_bytes(), 11) as u32);
            (Some(server), None, "127.0.0.1".to_string(), port, job_id)
        }
    };
    ensure_fds(l.n)?;
    let rendezvous = Rendezvous { world, node, nnodes, master_addr: &master_addr, port: &port, job_id: &job_id, token };
    let outputs: Vec<Arc<Mutex<Vec<u8>>>> = (0..l.n).map(|_| Arc::new(Mutex::new(Vec::new()))).collect();
    let (children, pumps) = spawn_ranks(l, base, &rendezvous, &outputs)?;
    let n = children.len();
    let mut job = Procs {
        children,
        base,
        status: vec![None; n],
        order: Vec::new(),
        killed: vec![false; n],
        failed_at: None,
        link,
        reported: false,
        remote_failure: None,
        survived: Vec::new(),
        dying: Vec::new(),
        tolerant: l.tolerant.then(|| {
            let server = &server;
            let formed = move || {
                let ready = stored(server, &None, crate::init::READY);
                ready.and_then(|v| v.try_into().ok()).map(i64::from_le_bytes).is_some_and(|k| k >= world as i64)
            };
            Box::new(move || world == 1 || formed()) as Box<dyn Fn() -> bool>
        }),
    };
    let mut faults: Vec<Injector> =
        l.faults.iter().filter(|f| f.rank >= base && f.rank < base + n).map(|f| Injector::new(Some(*f))).collect();
    let timed_out = supervise(&mut job, start, l.timeout, &mut faults)?;
    for p in pumps {
        let _ = p.join();
    }
    let ranks: Vec<RankExit> = (0..n)
        .map(|i| {
            let s = job.status[i].expect("all exited");
            RankExit {
                rank: base + i,
                pid: job.children[i].id(),
                code: s.code(),
                signal: s.signal(),
                killed_by_launcher: job.killed[i],
                output: String::from_utf8_lossy(&outputs[i].lock().unwrap_or_else(|p| p.into_inner())).into_owned(),
            }
        })
        .collect();
    let stored = |key: &str| stored(&server, &job.link, key);
    let blamed = blame(&ranks, job.order.iter().copied(), None, base, &stored);
    let mut remote_failure = job.remote_failure.take();
    // This node's ranks only stopped because a peer failed: the cause may be on another
    // node, whose launcher says so shortly.
    if let (Some(l), None, false) = (job.link.as_mut(), &remote_failure, job.reported) {
        let victims_only = blamed.first_failure.is_some_and(|i| ranks[i].code == Some(3));
        if victims_only || (timed_out && blamed.first_failure.is_none()) {
            let until = Instant::now() + Duration::from_secs(2);
            while remote_failure.is_none() && Instant::now() < until {
                remote_failure = l.remote_failure();
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    }
    let stored = |key: &str| self::stored(&server, &job.link, key);
    let (results, flight) = leftovers(&ranks, base, &stored);
    if let Some(l) = &job.link {
        l.finish();
    }
    // Every rank that joins publishes its host (`init`'s check that the job is on one host).
    let joined =
        (server.is_some() && n > 1).then(|| (0..n).filter(|&r| stored(&crate::init::host_key(r)).is_some()).count());
    // The ranks whose death the job survived: killed by a signal, not by this launcher.
    let mut lost = std::mem::take(&mut job.survived);
    lost.sort_unstable();
    Ok(Report {
        restarts: 0,
        lost,
        ranks,
        first_failure: blamed.first_failure,
        remote_failure,
        left_early: blamed.left_early,
        cause: blamed.cause,
        flight,
        timed_out,
        elapsed: start.elapsed(),
        results,
        joined,
    })
}

/// Where the ranks of a job meet, and who they are in it (their environment contract).
struct Rendezvous<'a> {
    world: usize,
    node: usize,
    nnodes: usize,
    master_addr: &'a str,
    port: &'a str,
    job_id: &'a str,
    token: &'a str,
}

/// Starts this node's ranks (job-wide ranks from `base`), their output pumped into
/// `outputs`; on any failure to start one, the ones started are killed.
fn spawn_ranks(
    l: &Launch,
    base: usize,
    rv: &Rendezvous<'_>,
    outputs: &[Arc<Mutex<Vec<u8>>>],
) -> Result<(Vec<Child>, Vec<std::thread::JoinHandle<()>>)> {
    let rank_timeout = l.rank_timeout();
    let mut children: Vec<Child> = Vec::with_capacity(l.n);
    let mut pumps = Vec::new();
    let started = (|| -> Result<()> {
        for (local, sink) in outputs.iter().enumerate() {
            let rank = base + local;
            let mut cmd = Command::new(&l.program);
            cmd.args(&l.args)
                .env("RANK", rank.to_string())
                .env("WORLD_SIZE", rv.world.to_string())
                .env("LOCAL_RANK", local.to_string())
                .env("LOCAL_WORLD_SIZE", l.n.to_string())
                .env("GROUP_RANK", rv.node.to_string())
                .env("GROUP_WORLD_SIZE", rv.nnodes.to_string())
                .env("MASTER_ADDR", rv.master_addr)
                .env("MASTER_PORT", rv.port)
                .env("DIST_JOB_ID", rv.job_id)
                .env("DIST_JOB_TOKEN", rv.token)
                .env("DIST_STORE_EXTERNAL", "1")
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped());
            if let Some(t) = &rank_timeout {
                cmd.env("DIST_TIMEOUT", t);
            }
            for k in &l.removed {
                cmd.env_remove(k);
            }
            for (k, v) in &l.envs {
                cmd.env(k, v);
            }
            for (_, k, v) in l.rank_envs.iter().filter(|(r, _, _)| *r == rank) {
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
            let mut child = cmd.spawn().map_err(|e| Error::Backend {
                backend: "launch",
                msg: format!("cannot start {}: {e}", l.program.display()),
                source: Some(Box::new(e)),
            })?;
            let out = child.stdout.take().expect("piped");
            let err = child.stderr.take().expect("piped");
            children.push(child);
            for (stream, is_err) in [(Box::new(out) as Box<dyn Read + Send>, false), (Box::new(err), true)] {
                pumps.push(pump(stream, rank, is_err, l.capture, l.prefix, sink.clone())?);
            }
        }
        Ok(())
    })();
    if let Err(e) = started {
        for c in children.iter_mut() {
            let _ = c.kill();
            let _ = c.wait();
        }
        return Err(e);
    }
    Ok((children, pumps))
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
    let prefix = format!("[rank {rank}] ");
    pump_lines(&format!("rank {rank}'s output"), stream, is_err, capture, move |line| {
        {
            let mut s = sink.lock().unwrap_or_else(|p| p.into_inner());
            s.extend_from_slice(line);
            if !capture && s.len() > 64 << 10 {
                let cut = s.len() - (32 << 10);
                s.drain(..cut);
            }
        }
        if capture {
            return None;
        }
        let already = !prefixed || line.starts_with(prefix.as_bytes());
        Some(if already { line.to_vec() } else { [prefix.as_bytes(), line].concat() })
    })
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
