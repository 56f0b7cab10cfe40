//! What a job's end comes to: each rank's exit ([`RankExit`]), the job's [`Report`], and
//! the two steps both launchers take to make it: which rank is the cause
//! ([`blame`]: the first that failed on its own, or the one its peers named) and what
//! the ranks left in the job's store ([`leftovers`]: results, flight recorders).

use std::time::Duration;

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
    /// In a fault-tolerant job ([`Launch::fault_tolerant`](crate::launch::Launch::fault_tolerant)):
    /// the ranks that died by a signal and that the job went on without.
    pub lost: Vec<usize>,
    /// How many failed attempts came before this one ([`Launch::max_restarts`](crate::launch::Launch::max_restarts)).
    pub restarts: usize,
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

    /// Whether every rank succeeded; in a fault-tolerant job, every rank but the
    /// [`lost`](Report::lost) ones, and at least one.
    pub fn success(&self) -> bool {
        !self.timed_out
            && self.ranks.iter().all(|r| r.success() || self.lost.contains(&r.rank))
            && self.ranks.iter().any(RankExit::success)
    }

    /// One line: which rank failed and its own words (its panic's message and line, or
    /// its error), e.g. `rank 1 of 3 panicked at tests/sums.rs:12: assertion failed`;
    /// empty on success.
    pub fn headline(&self) -> String {
        if self.success() {
            return String::new();
        }
        let n = self.ranks.len();
        let Some(i) = self.first_failure.or_else(|| self.ranks.iter().position(|r| !r.success())) else {
            return if self.timed_out { format!("the job of {n} ranks timed out") } else { String::new() };
        };
        let r = &self.ranks[i];
        match key_line(&r.output) {
            Some(k) => format!("rank {} of {n}: {k}", r.rank),
            None => format!("rank {} of {n} failed: {}", r.rank, r.status()),
        }
    }

    /// A human summary of what went wrong (empty on success): the cause first, then each
    /// failed rank's output, the cause's whole, the others' (ranks stopped because of it)
    /// folded to their first lines.
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
        // The cause's section first.
        let order =
            self.first_failure.into_iter().chain((0..self.ranks.len()).filter(|&i| Some(i) != self.first_failure));
        for i in order {
            let r = &self.ranks[i];
            if r.success() {
                continue;
            }
            let how = if r.killed_by_launcher { "killed by the launcher".to_string() } else { r.status() };
            // A rank that only stopped because of the cause says little of its own.
            let victim = Some(i) != self.first_failure && (r.killed_by_launcher || r.code == Some(3));
            let lines: Vec<&str> = r.output.lines().collect();
            if victim && lines.len() > FOLDED {
                s.push_str(&format!("--- rank {} ({how}; first {FOLDED} of {} lines) ---\n", r.rank, lines.len()));
                for l in &lines[..FOLDED] {
                    s.push_str(l);
                    s.push('\n');
                }
            } else {
                s.push_str(&format!("--- rank {} ({how}) ---\n{}", r.rank, r.output));
                if !r.output.ends_with('\n') {
                    s.push('\n');
                }
            }
        }
        s
    }
}

/// Lines of a rank stopped because of another's failure shown in a summary.
const FOLDED: usize = 4;

/// A rank's own account of its failure in its output: dist's `[rank k] panicked at
/// FILE:LINE: message` or `[rank k] error: …` line, else the standard panic message
/// (`panicked at FILE:LINE:COL:` and the line after it).
fn key_line(output: &str) -> Option<String> {
    let lines: Vec<&str> = output.lines().collect();
    let strip = |l: &str| match l.strip_prefix("[rank ") {
        Some(rest) => rest.split_once("] ").map(|(_, t)| t.to_string()).unwrap_or_else(|| l.to_string()),
        None => l.to_string(),
    };
    if let Some(l) =
        lines.iter().find(|l| l.starts_with("[rank ") && (l.contains("] panicked at ") || l.contains("] error: ")))
    {
        return Some(strip(l));
    }
    let at = lines.iter().position(|l| l.contains(" panicked at "))?;
    let head = lines[at].split_once(" panicked at ").map(|(_, w)| w.trim_end_matches(':')).unwrap_or(lines[at]);
    Some(match lines.get(at + 1) {
        Some(msg) if !msg.trim_start().starts_with(|c: char| c.is_ascii_digit()) => {
            format!("panicked at {head}: {msg}")
        }
        _ => format!("panicked at {head}"),
    })
}

/// Who caused a failed job, and what the peers said of it.
pub(crate) struct Blame {
    /// Where in the ranks the cause is.
    pub(crate) first_failure: Option<usize>,
    /// What a peer saw of a rank that returned while it waited on it (`left/{rank}`).
    pub(crate) left_early: Option<String>,
    /// What a peer's detector said of the cause (`cause/{rank}`: a deadlock's culprit, a
    /// stopped process).
    pub(crate) cause: Option<String>,
}

/// The cause among `ranks`: `first` where the launcher saw it directly (a rank that ended
/// without a report under mpirun), else the first rank in `order` (the order the launcher
/// saw the ranks end) that failed on its own and was not killed by the launcher — exit
/// code 3 means "stopped because a peer failed", a victim — else the first victim. Where
/// only victims failed, a peer may have told the store which rank caused it: one that
/// returned early while they waited on it (`left/`, it exited 0), or one a deadlock
/// detector named (`cause/`). `stored(key)` reads the job's store; ranks' keys are
/// job-wide ranks, `base` + the index.
pub(crate) fn blame(
    ranks: &[RankExit],
    order: impl IntoIterator<Item = usize>,
    first: Option<usize>,
    base: usize,
    stored: &dyn Fn(&str) -> Option<Vec<u8>>,
) -> Blame {
    let failing: Vec<usize> =
        order.into_iter().filter(|&i| !ranks[i].success() && !ranks[i].killed_by_launcher).collect();
    let mut first_failure =
        first.or_else(|| failing.iter().copied().find(|&i| ranks[i].code != Some(3))).or(failing.first().copied());
    let named_by_peers = |key: &str, exited_ok: bool| {
        (0..ranks.len()).filter(|&i| !exited_ok || ranks[i].success()).find_map(|i| {
            let what = stored(&format!("{key}/{}", base + i))?;
            Some((i, String::from_utf8_lossy(&what).into_owned()))
        })
    };
    let only_victims = |f: Option<usize>| f.is_some_and(|i| ranks[i].code == Some(3));
    let (mut left_early, mut cause) = (None, None);
    if only_victims(first_failure) {
        if let Some((i, what)) = named_by_peers("left", true) {
            left_early = Some(what);
            first_failure = Some(i);
        } else if let Some((i, what)) = named_by_peers("cause", false) {
            cause = Some(what);
            first_failure = Some(i);
        }
    }
    Blame { first_failure, left_early, cause }
}

/// What the ranks left in the job's store: each rank's serialised result (`result/`), and
/// the failing ranks' flight recorders (`flight/`) lined up per communicator.
pub(crate) fn leftovers(
    ranks: &[RankExit],
    base: usize,
    stored: &dyn Fn(&str) -> Option<Vec<u8>>,
) -> (Vec<Option<Vec<u8>>>, Option<String>) {
    let results = (0..ranks.len()).map(|i| stored(&format!("result/{}", base + i))).collect();
    let dumps: Vec<(usize, String)> = (0..ranks.len())
        .filter(|&i| !ranks[i].success())
        .filter_map(|i| {
            let d = stored(&format!("flight/{}", base + i))?;
            Some((base + i, String::from_utf8_lossy(&d).into_owned()))
        })
        .collect();
    (results, Some(crate::verify::recorder::line_up(&dumps)).filter(|s| !s.is_empty()))
}

#[cfg(test)]
mod tests {
    use super::key_line;

    #[test]
    fn a_ranks_own_account_is_found_in_its_output() {
        let dist = "thread '<unnamed>' (7) panicked at tests/a.rs:9:5:\nboom\n   2: frame\n[rank 1] panicked at tests/a.rs:9: boom\n";
        assert_eq!(key_line(dist).as_deref(), Some("panicked at tests/a.rs:9: boom"));
        let err = "some output\n[rank 2] error: deadlock detected in recv at src/main.rs:4\n";
        assert_eq!(key_line(err).as_deref(), Some("error: deadlock detected in recv at src/main.rs:4"));
        let plain = "thread 'main' panicked at src/lib.rs:3:1:\nassertion failed: x\nnote: run with RUST_BACKTRACE=1\n";
        assert_eq!(key_line(plain).as_deref(), Some("panicked at src/lib.rs:3:1: assertion failed: x"));
        assert_eq!(key_line("nothing to see\n"), None);
    }
}
