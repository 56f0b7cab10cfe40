//! Starting a job under `mpirun`: the path of [`Launch`](crate::Launch) for the MPI
//! backend (`DIST_BACKEND=mpi`), used by `cargo spmd run --backend mpi`, the test
//! harness and `dist_runtime::launch`. MPI's launcher starts the ranks (on this host, or
//! on the hosts of `--hostfile`); this side keeps what the shared-memory launcher gives:
//! each rank's output (from mpirun's `--tag-output` lines) prefixed or captured, each
//! rank's exit code (reported by the rank through the launcher's store, which also
//! carries results), the first failing rank, and the timeout.

use super::report::{blame, leftovers, RankExit, Report};
use super::Launch;
use crate::error::{Error, Result};
use crate::store::StoreServer;
use std::ffi::OsString;
use std::io::Read;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The mpirun program: `DIST_MPIRUN`, else `mpirun` on the PATH.
fn mpirun() -> OsString {
    std::env::var_os("DIST_MPIRUN").unwrap_or_else(|| "mpirun".into())
}

pub(crate) fn run(l: &Launch, token: &str) -> Result<Report> {
    // Ranks on other hosts reach the launcher's store (exit codes, results) at
    // DIST_LAUNCHER_ADDR, this host's address on the network they share.
    let addr = std::env::var("DIST_LAUNCHER_ADDR").unwrap_or_else(|_| "127.0.0.1".into());
    let store = StoreServer::bind(format!("{addr}:0").as_str(), token)?;
    let port = store.addr().port().to_string();
    let start = Instant::now();
    let mut cmd = command(l, &addr, &port, token);
    let mut child = cmd.spawn().map_err(|e| Error::Backend {
        backend: "launch",
        msg: format!(
            "cannot start {} for the MPI backend: {e} (install an MPI, e.g. apt install openmpi-bin, or set \
             DIST_MPIRUN)",
            mpirun().to_string_lossy()
        ),
        source: Some(Box::new(e)),
    })?;
    let outputs: Arc<Vec<Mutex<Vec<u8>>>> = Arc::new((0..l.n).map(|_| Mutex::new(Vec::new())).collect());
    let launcher_out = Arc::new(Mutex::new(Vec::new()));
    let pumps = match (
        pump(child.stdout.take().expect("piped"), false, l, outputs.clone(), launcher_out.clone()),
        pump(child.stderr.take().expect("piped"), true, l, outputs.clone(), launcher_out.clone()),
    ) {
        (Ok(a), Ok(b)) => [a, b],
        (Err(e), _) | (_, Err(e)) => {
            let _ = child.kill();
            let _ = child.wait();
            return Err(e);
        }
    };
    let mut job = Mpirun {
        store: &store,
        child,
        seen: Watched::new(l.n),
        status: None,
        all_reported: None,
        stopping: false,
        stuck_teardown: false,
    };
    let mut faults: Vec<super::supervise::Injector> =
        l.faults.iter().filter(|f| f.rank < l.n).map(|f| super::supervise::Injector::new(Some(*f))).collect();
    let timed_out = super::supervise::supervise(&mut job, start, l.timeout, &mut faults)?;
    let (status, stuck_teardown, ranks_seen) =
        (job.status.expect("supervised to the end"), job.stuck_teardown, job.seen);
    for p in pumps {
        let _ = p.join();
    }
    let launcher_text = String::from_utf8_lossy(&launcher_out.lock().unwrap_or_else(|p| p.into_inner())).into_owned();
    let told = mpirun_told(&launcher_text);
    // A rank that ended without reporting before any rank reported a failure of its own
    // (killed, `exit()` or an abort mid-job): the cause, whatever came after it.
    // (mpirun's own account of a rank that ended first, on any host, outranks a local
    // process seen gone: that one may have been stopped by mpirun's teardown after it.)
    let told_first = told.iter().map(|t| t.0).find(|&r| ranks_seen.reported[r].is_none());
    let ended_first = ranks_seen.first_unreported_end().filter(|&r| told_first.is_none_or(|t| t == r)).or(told_first);
    let stopped = timed_out || !status.success();
    let mut ranks: Vec<RankExit> = (0..l.n)
        .map(|r| {
            let output = String::from_utf8_lossy(&outputs[r].lock().unwrap_or_else(|p| p.into_inner())).into_owned();
            exit_of(r, &ranks_seen, &told, ended_first, output, &launcher_text, stopped)
        })
        .collect();
    if stuck_teardown {
        ranks[0].output.push_str(&format!(
            "mpirun did not exit {}s after every rank had reported its exit; stopped (Open MPI's teardown hung):\n{launcher_text}",
            TEARDOWN_GRACE.as_secs()
        ));
    } else if !status.success() && !timed_out && ranks.iter().all(RankExit::success) {
        // Every rank reported success, then something failed in teardown (MPI_Finalize,
        // an abort): the job did not succeed; rank 0 carries mpirun's account of it.
        ranks[0].code = Some(status.code().unwrap_or(1));
        ranks[0].output.push_str(&format!(
            "mpirun exited with {status} after every rank reported success (a failure in teardown):\n{launcher_text}"
        ));
    }
    // In the order the launcher saw them: reports of failures, and ranks that ended
    // without one (their own end: what mpirun said of them counts when no pid was seen).
    let order =
        ranks_seen.order.iter().copied().chain(told.iter().map(|t| t.0)).chain(0..l.n).fold(Vec::new(), |mut v, r| {
            if !v.contains(&r) {
                v.push(r);
            }
            v
        });
    let stored = |key: &str| store.get_local(key);
    let blamed = blame(&ranks, order, ended_first, 0, &stored);
    let first_failure =
        blamed.first_failure.or_else(|| (!status.success()).then(|| ranks.iter().position(|r| !r.success())).flatten());
    let (results, flight) = leftovers(&ranks, 0, &stored);
    Ok(Report {
        restarts: 0,
        lost: Vec::new(),
        ranks,
        first_failure,
        remote_failure: None,
        left_early: blamed.left_early,
        cause: blamed.cause,
        flight,
        timed_out,
        elapsed: start.elapsed(),
        results,
        joined: None,
    })
}

/// The mpirun command for `l`'s ranks: its options, then the variables the ranks need
/// (the store at `addr:port`, the job's token, the launcher's own `DIST_*`/`RUST_*`),
/// set on mpirun and exported to the ranks with `-x`.
fn command(l: &Launch, addr: &str, port: &str, token: &str) -> Command {
    let mut cmd = Command::new(mpirun());
    // Variables for the ranks: set on mpirun and exported with -x.
    let mut vars: Vec<(OsString, OsString)> = vec![
        ("DIST_BACKEND".into(), "mpi".into()),
        ("MASTER_ADDR".into(), addr.into()),
        ("MASTER_PORT".into(), port.into()),
        ("DIST_JOB_TOKEN".into(), token.into()),
        ("DIST_EXIT_REPORT".into(), "1".into()),
    ];
    if let Some(t) = l.rank_timeout() {
        vars.push(("DIST_TIMEOUT".into(), t.into()));
    }
    vars.extend(l.envs.iter().cloned());
    // Variables of this process the ranks read (DIST_*, RUST_*): exported as well.
    for (k, _) in std::env::vars_os() {
        let s = k.to_string_lossy();
        if (s.starts_with("DIST_") || s.starts_with("RUST_"))
            && !vars.iter().any(|(v, _)| *v == k)
            && !l.removed.contains(&k)
        {
            vars.push((k.clone(), std::env::var_os(&k).unwrap_or_default()));
        }
    }
    cmd.arg("-np").arg(l.n.to_string()).arg("--tag-output");
    if std::env::var_os("DIST_MPIRUN_ARGS").is_none() {
        cmd.arg("--oversubscribe");
        // More ranks than cores: Open MPI's progress loop must yield, or a waiting rank
        // takes the core its peer needs (a ping-pong gets far slower: docs/performance.md,
        // "Figures behind code choices").
        if l.n > std::thread::available_parallelism().map_or(1, |c| c.get()) {
            cmd.args(["--mca", "mpi_yield_when_idle", "1"]);
        }
    }
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        cmd.arg("--allow-run-as-root");
    }
    if let Some(extra) = std::env::var_os("DIST_MPIRUN_ARGS") {
        cmd.args(extra.to_string_lossy().split_whitespace());
    }
    cmd.args(&l.mpirun_args);
    for k in &l.removed {
        cmd.env_remove(k);
    }
    for (k, v) in &vars {
        cmd.env(k, v).arg("-x").arg(k);
    }
    cmd.arg(&l.program).args(&l.args).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    cmd
}

/// How rank `r` ended, as the launcher can tell under mpirun: its own report, else what
/// mpirun said of it (`told`), else its end seen on this host (`ended_first`: it ended on
/// its own), else killed in mpirun's teardown (`stopped`: the launcher or mpirun ended
/// the job). A rank without a report gets mpirun's own words in its output.
fn exit_of(
    r: usize,
    seen: &Watched,
    told: &[(usize, Ended)],
    ended_first: Option<usize>,
    mut output: String,
    launcher_text: &str,
    stopped: bool,
) -> RankExit {
    let code = seen.reported[r];
    if code.is_none() && !launcher_text.is_empty() {
        output.push_str(launcher_text);
    }
    // Ended on its own without a report: what mpirun said of it, if anything.
    // (Processes that ended after it were stopped by mpirun's teardown.)
    let own_end = code.is_none() && (ended_first == Some(r) || told.iter().any(|t| t.0 == r));
    let (code, signal) = match told.iter().find(|t| t.0 == r) {
        Some(&(_, Ended::Signal(s))) if code.is_none() => (None, Some(s)),
        Some(&(_, Ended::Code(c))) if code.is_none() => (Some(c), None),
        _ if code.is_none() && !own_end => (None, Some(libc::SIGKILL)),
        _ => (code, None),
    };
    let pid = seen.pid[r].map_or(0, |p| p.0);
    if own_end && code.is_none() && signal.is_none() {
        output.push_str(&format!(
            "[launcher] rank {r}'s process (pid {pid}) ended without reporting how: an exit() or an abort inside \
             the job, before its entry returned\n"
        ));
    }
    RankExit { rank: r, pid, code, signal, killed_by_launcher: code.is_none() && !own_end && stopped, output }
}

/// When every rank has reported its exit and mpirun still runs long after, mpirun is stuck
/// in its own teardown (Open MPI 4.1's mpirun can deadlock when one rank aborts while
/// another finalizes, its ranks all gone): stop it rather than wait for the timeout. The
/// grace covers a rank's own end after its report (its linger and abort).
const TEARDOWN_GRACE: Duration = Duration::from_secs(4);

/// The job as the launcher supervises it: mpirun, its child, and the ranks as seen.
struct Mpirun<'a> {
    store: &'a StoreServer,
    child: std::process::Child,
    seen: Watched,
    /// mpirun's exit, once it has ended.
    status: Option<std::process::ExitStatus>,
    all_reported: Option<Instant>,
    /// Whether the launcher asked mpirun to stop (ends after that are its teardown).
    stopping: bool,
    stuck_teardown: bool,
}

impl super::supervise::Supervised for Mpirun<'_> {
    fn look(&mut self) -> Result<super::supervise::Seen> {
        use super::supervise::Seen;
        let ended = self.child.try_wait().map_err(|e| Error::backend("launch", format!("waiting for mpirun: {e}")))?;
        if ended.is_some() {
            // The last look reads every report, however soon after the one before (a
            // look is every 20 ms): a rank that reported its exit just before mpirun
            // ended is never taken for one it killed.
            self.seen.last = None;
        }
        self.seen.look(self.store, self.stopping);
        if let Some(s) = ended {
            self.status = Some(s);
            return Ok(Seen::Ended);
        }
        if self.all_reported.is_none() && self.seen.reported.iter().all(Option::is_some) {
            self.all_reported = Some(Instant::now());
        }
        if self.all_reported.is_some_and(|t| t.elapsed() >= TEARDOWN_GRACE) && !self.stopping {
            self.stuck_teardown = true;
            return Ok(Seen::StopNow);
        }
        Ok(Seen::Running)
    }

    fn pid(&self, rank: usize) -> Option<u32> {
        self.seen.running_here(rank)
    }

    fn stop(&mut self) {
        // mpirun passes SIGTERM on to the ranks.
        self.stopping = true;
        // SAFETY: signalling our own child.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
    }

    fn kill(&mut self) {
        let _ = self.child.kill();
    }
}

/// What the launcher sees of the ranks under mpirun, whose children they are not: each
/// rank's reported exit code and pid (from the launcher's store), and, for the ranks on
/// this host, when a process ended without reporting.
struct Watched {
    reported: Vec<Option<i32>>,
    /// (pid, whether on this host).
    pid: Vec<Option<(u32, bool)>>,
    /// When a rank's process was found gone with no exit report.
    ended: Vec<Option<Instant>>,
    /// Ranks in the order their report or their end was seen.
    order: Vec<usize>,
    /// Whether the first event was an end without a report.
    first_end: Option<usize>,
    here: String,
    last: Option<Instant>,
}

impl Watched {
    fn new(n: usize) -> Watched {
        Watched {
            reported: vec![None; n],
            pid: vec![None; n],
            ended: vec![None; n],
            order: Vec::new(),
            first_end: None,
            here: format!("{:x}", crate::sys::host_id()),
            last: None,
        }
    }

    /// Reads new reports and pids, and looks for processes of this host that ended
    /// without a report (every 20 ms; only ranks still unreported are looked at).
    /// Once the launcher itself stopped the job (`stopping`), ends are mpirun's teardown,
    /// not causes.
    fn look(&mut self, store: &StoreServer, stopping: bool) {
        if self.last.is_some_and(|t| t.elapsed() < Duration::from_millis(20)) {
            return;
        }
        self.last = Some(Instant::now());
        for r in 0..self.reported.len() {
            if self.pid[r].is_none() {
                if let Some(v) = store.get_local(&format!("pid/{r}")) {
                    let v = String::from_utf8_lossy(&v).into_owned();
                    if let Some((p, host)) = v.split_once(' ') {
                        if let Ok(p) = p.parse::<u32>() {
                            self.pid[r] = Some((p, host == self.here));
                        }
                    }
                }
            }
            if self.reported[r].is_none() {
                if let Some(v) = store.get_local(&format!("exit/{r}")) {
                    self.reported[r] = String::from_utf8_lossy(&v).parse::<i32>().ok().or(Some(1));
                    if self.ended[r].is_none() {
                        self.order.push(r);
                    }
                    continue;
                }
                if self.ended[r].is_none() && !stopping {
                    if let Some((p, true)) = self.pid[r] {
                        if !crate::sys::pid_alive(p) {
                            self.ended[r] = Some(Instant::now());
                            self.order.push(r);
                            // Ended before any rank reported a failure: the cause.
                            let failed_before = self.order.iter().any(|&q| self.reported[q].is_some_and(|c| c != 0));
                            if self.first_end.is_none() && !failed_before {
                                self.first_end = Some(r);
                            }
                        }
                    }
                }
            }
        }
    }

    /// The rank of this host, while its process runs, for fault injection.
    fn running_here(&self, r: usize) -> Option<u32> {
        match self.pid.get(r).copied().flatten() {
            Some((p, true)) if self.ended[r].is_none() && self.reported[r].is_none() => Some(p),
            _ => None,
        }
    }

    /// The rank whose process ended without a report before any rank reported a failure.
    fn first_unreported_end(&self) -> Option<usize> {
        // A report that arrived after the end was seen (a rank's last words racing its
        // death) does not make it unreported.
        self.first_end.filter(|&r| self.reported[r].is_none())
    }
}

/// How mpirun says a rank ended.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Ended {
    Signal(i32),
    Code(i32),
}

/// The ranks mpirun's own messages say ended on their own, in the order it says so:
/// Open MPI's "process rank 3 with PID 123 on node h exited on signal 9 (Killed)",
/// "… process rank 2 with PID 123 on node h exiting improperly", and "The first process
/// to do so was: Process name: [[1234,1],2] Exit code: 7" (Open MPI 4 and 5's prterun
/// word them alike). Where it names no way of ending, exit code 1.
fn mpirun_told(text: &str) -> Vec<(usize, Ended)> {
    let mut out: Vec<(usize, Ended)> = Vec::new();
    let mut push = |r: usize, e: Ended| {
        if !out.iter().any(|x| x.0 == r) {
            out.push((r, e));
        }
    };
    // mpirun wraps its sentences: read them as one line.
    let flat = text.replace('\n', " ");
    for rest in flat.split("process rank ").skip(1) {
        let Some(r) = rest.split_whitespace().next().and_then(|w| w.parse::<usize>().ok()) else { continue };
        // Up to the sentence's end (a host name may hold dots, never ". ").
        let sentence = rest.split(". ").next().unwrap_or(rest);
        let sentence = sentence.split('(').next().unwrap_or(sentence);
        if let Some(sig) = sentence.split("on signal ").nth(1) {
            if let Some(s) = sig.split_whitespace().next().and_then(|w| w.parse::<i32>().ok()) {
                push(r, Ended::Signal(s));
            }
        } else if sentence.contains("improperly") {
            push(r, Ended::Code(1));
        }
    }
    let lines: Vec<&str> = text.lines().collect();
    for (i, line) in lines.iter().enumerate() {
        if let Some(name) = line.trim().strip_prefix("Process name:") {
            // "[[1234,1],2]": the rank is the last number.
            let r = name.trim().trim_end_matches(']').rsplit(',').next().and_then(|w| w.trim().parse::<usize>().ok());
            let code = lines[i + 1..]
                .iter()
                .take(3)
                .find_map(|l| l.trim().strip_prefix("Exit code:").and_then(|c| c.trim().parse::<i32>().ok()));
            if let (Some(r), Some(c)) = (r, code) {
                push(r, Ended::Code(c));
            }
        }
    }
    out
}

/// Routes mpirun's `--tag-output` lines (`[1,R]<stdout>:text`) to rank R: prefixed
/// with `[rank R]` on our output, or captured. Untagged lines are mpirun's own.
fn pump(
    stream: impl Read + Send + 'static,
    is_err: bool,
    l: &Launch,
    outputs: Arc<Vec<Mutex<Vec<u8>>>>,
    launcher: Arc<Mutex<Vec<u8>>>,
) -> Result<std::thread::JoinHandle<()>> {
    let prefixed = l.prefix;
    super::supervise::pump_lines("mpirun's output", stream, is_err, l.capture, move |line| {
        let text = String::from_utf8_lossy(line).into_owned();
        let tagged = parse_tag(&text).filter(|(rank, _)| *rank < outputs.len());
        match &tagged {
            Some((rank, body)) => {
                let mut s = outputs[*rank].lock().unwrap_or_else(|p| p.into_inner());
                s.extend_from_slice(body.as_bytes());
                let pre = format!("[rank {rank}] ");
                Some(
                    if prefixed && !body.starts_with(&pre) { format!("{pre}{body}") } else { body.to_string() }
                        .into_bytes(),
                )
            }
            None => {
                launcher.lock().unwrap_or_else(|p| p.into_inner()).extend_from_slice(line);
                // (Open MPI's internal log lines after a rank's abort say nothing the
                // report does not: kept with mpirun's output, not shown.)
                (!orte_noise(&text)).then(|| text.into_bytes())
            }
        }
    })
}

/// Whether an untagged line of mpirun's is Open MPI's internal error log
/// (`[host:123] [[4567,0],0] ORTE_ERROR_LOG: Data unpack would read past end of buffer in
/// file util/show_help.c at line 501`), which it prints as the job ends after an abort.
fn orte_noise(line: &str) -> bool {
    line.contains("ORTE_ERROR_LOG:") || line.contains("PMIX_ERROR_LOG:") || line.contains("PRTE_ERROR_LOG:")
}

/// `[1,3]<stdout>:text` → (3, "text"). mpirun tags each write, so a line written in
/// pieces carries the tag again inside; those are removed.
fn parse_tag(line: &str) -> Option<(usize, String)> {
    let rest = line.strip_prefix('[')?;
    let (ids, rest) = rest.split_once(']')?;
    let rank = ids.split(',').nth(1)?.parse().ok()?;
    let (stream, body) = ["<stdout>:", "<stderr>:"].into_iter().find_map(|t| rest.strip_prefix(t).map(|b| (t, b)))?;
    let tag = format!("[{ids}]{stream}");
    Some((rank, body.replace(&tag, "")))
}

#[cfg(test)]
mod tests {
    #[test]
    fn open_mpis_internal_error_log_is_not_shown() {
        let l = "[hostA:4821] [[61233,0],0] ORTE_ERROR_LOG: Data unpack would read past end of buffer in file util/show_help.c at line 501\n";
        assert!(super::orte_noise(l));
        assert!(!super::orte_noise("mpirun noticed that process rank 1 with PID 0 on node hostA exited on signal 9\n"));
    }

    #[test]
    fn tags_are_parsed() {
        assert_eq!(super::parse_tag("[1,3]<stdout>:hello\n"), Some((3, "hello\n".into())));
        assert_eq!(super::parse_tag("[1,0]<stderr>:[rank 0] error\n"), Some((0, "[rank 0] error\n".into())));
        // One line written in pieces: tagged per piece.
        let pieces = "[1,1]<stderr>:[rank [1,1]<stderr>:1[1,1]<stderr>:] panicked\n";
        assert_eq!(super::parse_tag(pieces), Some((1, "[rank 1] panicked\n".into())));
        assert_eq!(super::parse_tag("mpirun noticed that\n"), None);
    }

    #[test]
    fn mpiruns_words_name_the_rank_that_ended() {
        use super::Ended::*;
        let killed = "mpirun noticed that process rank 3 with PID 4242 on node h.lan exited on signal 9 (Killed).\n";
        assert_eq!(super::mpirun_told(killed), vec![(3, Signal(9))]);
        let improper = "mpirun has exited due to process rank 2 with PID 0 on\nnode h exiting improperly. There are \
                        three reasons this could occur:\n";
        assert_eq!(super::mpirun_told(improper), vec![(2, Code(1))]);
        let code = "The first process to do so was:\n\n  Process name: [[4807,1],1]\n  Exit code:    7\n";
        assert_eq!(super::mpirun_told(code), vec![(1, Code(7))]);
        assert_eq!(super::mpirun_told("[1,0]<stdout>:hello\n"), vec![]);
    }
}
