//! Deadlock detection by state, not by clock: each blocked rank publishes what it waits
//! on (a job-wide board, in world ranks); a blocked rank that finds a cycle of blocked
//! ranks it depends on, and sees every rank of that cycle stay in the same wait, poll
//! again and move nothing, knows none of them can ever move. It names the cycle, the
//! ranks stuck behind it, their ops and call sites, and one culprit (the rank whose wait
//! differs from the most others), in about a second instead of at the deadline.
//!
//! Transport-free: a backend publishes [`Waiter`]s where its peers can read them and
//! hands a snapshot to [`Detector::step`] from each health check of a blocked wait.

pub(crate) use super::watchdog::ANY_PEER;
use super::watchdog::{find_cycle, WAIT_COLL, WAIT_RECV, WAIT_SEND};
use std::time::{Duration, Instant};

/// A cycle must hold at least this long (and every member must have polled twice since
/// it was first seen) before it is reported.
pub(crate) const CONFIRM: Duration = Duration::from_millis(200);

/// A rank whose process is stopped (SIGSTOP) this long while others wait on it is named
/// on stderr, once, by the lowest rank waiting on it: a stall, not a deadlock (a
/// preempted VM, a job control stop, `kill -STOP` by an operator all resume), so the
/// waits go on until the deadline (`DIST_TIMEOUT`), whose error names the stopped rank
/// as the cause. A rank held by a debugger (traced) is never named: a person at work.
pub(crate) const STOPPED_FOR: Duration = Duration::from_secs(1);

/// How long a rank the detector does not name as the culprit waits for the culprit to
/// fail before it stops on its own.
pub(crate) const VICTIM_GRACE: std::time::Duration = std::time::Duration::from_millis(300);

/// What a wait that ended in a deadlock verdict tells the rest of the job, once the wait
/// has really failed (`wait_on` looks once more before it gives up): every peer, on every
/// communicator, hears of it now (this rank's communicators may be dropped on the way out
/// before its entry's error reaches the runner, and a peer must not read that as
/// "returned from its entry"); a victim tells the launcher which rank caused it.
pub(crate) fn settle(r: crate::error::Result<()>) -> crate::error::Result<()> {
    if let Err(e @ crate::error::Error::Deadlock { culprit, victim, story, .. }) = &r {
        if *victim {
            crate::verify::failure::deadlock_victim(*culprit, story);
        }
        crate::verify::failure::mark_failed(&e.to_string());
    }
    r
}

/// What rank `me`, blocked in `op` at `site` on `comm`, makes of the detector's verdict
/// `v` at `now`: the culprit stops at once; any other rank gives the culprit
/// [`VICTIM_GRACE`] to fail first (`since` remembers when this rank first heard the
/// verdict), so it hears the culprit's reason as a peer's failure and the launcher names
/// the culprit by its exit. `None` while the grace runs.
pub(crate) fn verdict_error(
    v: Verdict,
    me: usize,
    op: &'static str,
    comm: &str,
    site: crate::error::Site,
    since: &std::cell::Cell<Option<Instant>>,
    now: Instant,
) -> Option<crate::error::Error> {
    let victim = v.culprit != me;
    if victim {
        let first = since.get().unwrap_or(now);
        since.set(Some(first));
        if now.duration_since(first) < VICTIM_GRACE {
            return None;
        }
    }
    Some(crate::error::Error::Deadlock { op, comm: comm.to_string(), site, story: v.text, culprit: v.culprit, victim })
}

/// What a wait that reached its deadline in a stall ([`Detector::stall`]) adds to its
/// `Error::Timeout`: the stopped rank is the cause (this rank exits as its victim, and
/// the launcher is told which rank it was), and the words for the error.
pub(crate) fn stall_at_deadline(stall: Option<&(usize, String)>) -> String {
    match stall {
        Some((r, text)) => {
            crate::verify::failure::deadlock_victim(*r, text);
            format!("; {text}")
        }
        None => String::new(),
    }
}

/// One rank's published wait, as read from the board.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Waiter {
    /// `WAIT_RECV`, `WAIT_SEND`, `WAIT_COLL`; 0 when not blocked (or when more than one
    /// of its threads is: then nothing can be said about it).
    pub kind: u32,
    /// Changes with every new wait of the rank.
    pub wait_id: u32,
    /// Counts the rank's health checks in this wait (each follows a poll that failed).
    pub beat: u32,
    /// Counts the rank's progress inside the wait (bytes moved by its own engine).
    pub moved: u32,
    /// World rank of the peer (p2p).
    pub peer: u32,
    pub pid: u32,
    /// World ranks it waits on.
    pub on: Vec<usize>,
    pub comm: String,
    pub op: String,
    pub file: String,
    pub line: u32,
    /// The collective's number on its communicator as this rank counts them (the flight
    /// recorder's "#5"); 0 for point-to-point waits or when unknown.
    pub seq: u64,
    /// The message's tag (point-to-point waits), where the backend publishes it.
    pub tag: Option<u32>,
    /// What identifies the wait across ranks where a backend cannot see its peers'
    /// progress (MPI): equal on two ranks in the same collective call, or in a send and
    /// the receive it matches (communicator and tag); 0 where unused.
    pub inst: u64,
}

impl Waiter {
    fn blocked(&self) -> bool {
        matches!(self.kind, WAIT_RECV | WAIT_SEND | WAIT_COLL)
    }

    /// A receive from any source: released by any one of the ranks it waits on, where
    /// every other wait needs all of them.
    fn any(&self) -> bool {
        self.kind == WAIT_RECV && self.peer == ANY_PEER
    }

    /// "waits in recv from rank 3 on World (src/x.rs:12)"
    fn doing(&self, plural: bool) -> String {
        let s = if plural { "" } else { "s" };
        let at = if self.kind == WAIT_COLL && self.seq > 0 {
            format!("{}:{}, collective #{}", self.file, self.line, self.seq)
        } else {
            format!("{}:{}", self.file, self.line)
        };
        let tag = self.tag.map(|t| format!(" with tag {t}")).unwrap_or_default();
        match self.kind {
            WAIT_RECV if self.any() => format!("wait{s} in {} from any rank{tag} on {} ({at})", self.op, self.comm),
            WAIT_RECV => format!("wait{s} in {} from rank {}{tag} on {} ({at})", self.op, self.peer, self.comm),
            WAIT_SEND => format!("wait{s} in {} to rank {}{tag} on {} ({at})", self.op, self.peer, self.comm),
            _ => format!("wait{s} in {} on {} ({at})", self.op, self.comm),
        }
    }

    /// What makes two ranks' waits "the same" for grouping and for the culprit.
    fn key(&self) -> (u32, u32, &str, &str, &str, u32, u64) {
        let peer = if self.kind == WAIT_COLL { 0 } else { self.peer };
        (self.kind, peer, &self.comm, &self.op, &self.file, self.line, self.seq)
    }
}

/// Whether `a` and `b` wait in different collectives (by number) of one communicator.
fn apart(a: &Waiter, b: &Waiter) -> bool {
    a.kind == WAIT_COLL && b.kind == WAIT_COLL && a.comm == b.comm && a.seq > 0 && b.seq > 0 && a.seq != b.seq
}

/// What the detector concluded.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Verdict {
    /// World rank named as the cause.
    pub culprit: usize,
    /// The whole story, for every rank's error.
    pub text: String,
}

/// The state of a process, from its `/proc` entry: 'T' stopped by a signal, 't' stopped
/// by a tracer, anything else running or sleeping.
pub(crate) type ProcState<'a> = &'a dyn Fn(u32) -> Option<char>;

/// A cycle member as first seen: (world rank, wait id, beat, moved).
type Seen = (usize, u32, u32, u32);

/// One blocked wait's detector (it remembers what it saw at its earlier checks).
#[derive(Default)]
pub(crate) struct Detector {
    /// When the current cycle was first seen, and each member's (rank, wait id, beat, moved).
    sighted: Option<(Instant, Vec<Seen>)>,
    /// A stopped rank this one depends on, and since when.
    stopped: Option<(usize, Instant)>,
    /// A stall named ([`STOPPED_FOR`]): the stopped rank and the words, kept for the
    /// deadline's error while the rank stays stopped.
    stall: Option<(usize, String)>,
}

impl Detector {
    /// Looks at the board `snap` (indexed by world rank) as rank `me`; a verdict once a
    /// deadlock involving `me` is certain.
    pub(crate) fn step(&mut self, me: usize, snap: &[Waiter], now: Instant, proc_state: ProcState) -> Option<Verdict> {
        if !snap.get(me).is_some_and(Waiter::blocked) {
            *self = Detector::default();
            return None;
        }
        let n = snap.len();
        // Edges only between blocked ranks: a running rank may still release its waiters.
        // Nor between two ranks in different collectives of one communicator: one of
        // them is past the other's, which it could only leave once the other had entered
        // it, so the wait behind is on data in flight or its record is stale (MPI's
        // board under load: "rank 0 waits in #12" read while rank 4 waits in #14).
        let all: Vec<Vec<usize>> = snap
            .iter()
            .map(|w| {
                if w.blocked() {
                    w.on.iter().copied().filter(|&q| q < n && snap[q].blocked() && !apart(w, &snap[q])).collect()
                } else {
                    vec![]
                }
            })
            .collect();
        let stuck = stuck(snap, &all);
        let edges: Vec<Vec<usize>> = all
            .iter()
            .enumerate()
            .map(|(r, e)| if stuck[r] { e.iter().copied().filter(|&q| stuck[q]).collect() } else { vec![] })
            .collect();
        let mine = reachable(&edges, me);
        let sub: Vec<Vec<usize>> = (0..n)
            .map(|r| if mine[r] { edges[r].iter().copied().filter(|&q| mine[q]).collect() } else { vec![] })
            .collect();
        let Some(mut cycle) = find_cycle(&sub) else {
            self.sighted = None;
            return self.stopped_peer(me, snap, now, proc_state);
        };
        self.stopped = None;
        self.stall = None;
        cycle.pop(); // the first rank, repeated at the end
        let seen: Vec<Seen> = cycle.iter().map(|&r| (r, snap[r].wait_id, snap[r].beat, snap[r].moved)).collect();
        let confirmed = match &self.sighted {
            Some((since, before)) => {
                let same = seen.iter().all(|&(r, id, _, moved)| {
                    before.iter().any(|&(br, bid, _, bmoved)| br == r && bid == id && bmoved == moved)
                });
                if !same {
                    self.sighted = Some((now, seen));
                    return None;
                }
                let polled = seen.iter().all(|&(r, _, beat, _)| {
                    before.iter().any(|&(br, _, bbeat, _)| br == r && beat.wrapping_sub(bbeat) >= 2)
                });
                polled && now.duration_since(*since) >= CONFIRM
            }
            None => {
                self.sighted = Some((now, seen));
                return None;
            }
        };
        if !confirmed {
            return None;
        }
        // Everyone stuck behind the cycle too (they wait, directly or not, on its ranks).
        let behind: Vec<usize> = (0..n).filter(|&r| stuck[r] && reaches(&edges, r, &cycle)).collect();
        Some(describe(snap, &behind, &cycle))
    }

    /// The stall this wait is in, if a rank it depends on has been stopped for
    /// [`STOPPED_FOR`] and still is: (world rank, words). The deadline's error names it
    /// ([`stall_at_deadline`]).
    pub(crate) fn stall(&self) -> Option<&(usize, String)> {
        self.stall.as_ref()
    }

    /// A rank `me` depends on (through blocked ranks) whose process is stopped by a
    /// signal: never a verdict (the process may resume), but named once on stderr after
    /// [`STOPPED_FOR`] by the lowest rank waiting on it, and kept for the deadline.
    fn stopped_peer(&mut self, me: usize, snap: &[Waiter], now: Instant, proc_state: ProcState) -> Option<Verdict> {
        let n = snap.len();
        let all: Vec<Vec<usize>> = snap
            .iter()
            .map(|w| if w.blocked() { w.on.iter().copied().filter(|&q| q < n).collect() } else { vec![] })
            .collect();
        let deps = reachable(&all, me);
        let stopped =
            (0..n).find(|&r| r != me && deps[r] && !snap[r].blocked() && proc_state(snap[r].pid) == Some('T'));
        let Some(r) = stopped else {
            self.stopped = None;
            self.stall = None;
            return None;
        };
        let since = match self.stopped {
            Some((s, since)) if s == r => since,
            _ => {
                self.stopped = Some((r, now));
                self.stall = None;
                return None;
            }
        };
        if now.duration_since(since) < STOPPED_FOR || self.stall.is_some() {
            return None;
        }
        let waiting: Vec<usize> = (0..n).filter(|&q| q != r && snap[q].blocked() && deps[q]).collect();
        let mut parts = vec![format!(
            "rank {r}'s process (pid {}) is stopped (SIGSTOP): a stall, not a deadlock; `kill -CONT {}` resumes it",
            snap[r].pid, snap[r].pid
        )];
        parts.extend(groups(snap, &waiting));
        let text = parts.join("; ");
        if waiting.first() == Some(&me) {
            crate::sys::say(format!(
                "[rank {me}] warning: {text}; the ranks wait on it until their deadline (DIST_TIMEOUT)"
            ));
        }
        self.stall = Some((r, text));
        None
    }
}

/// Which ranks no rank that can still move will release: the blocked ranks, less (until
/// nothing changes) each that a rank outside the set may still release. A wait on all of
/// its ranks (a collective, a receive from one peer) stays while one of them stays
/// (`edges`: the blocked ranks it waits on); a receive from any source goes once any
/// rank it waits on can move.
fn stuck(snap: &[Waiter], edges: &[Vec<usize>]) -> Vec<bool> {
    let n = snap.len();
    let mut stuck: Vec<bool> = snap.iter().map(Waiter::blocked).collect();
    loop {
        let freed: Vec<usize> = (0..n)
            .filter(|&r| {
                stuck[r]
                    && if snap[r].any() {
                        snap[r].on.is_empty() || snap[r].on.iter().any(|&q| q >= n || !stuck[q])
                    } else {
                        !edges[r].iter().any(|&q| stuck[q])
                    }
            })
            .collect();
        if freed.is_empty() {
            return stuck;
        }
        for r in freed {
            stuck[r] = false;
        }
    }
}

/// The ranks reachable from `from` along `edges` (itself included).
fn reachable(edges: &[Vec<usize>], from: usize) -> Vec<bool> {
    let mut seen = vec![false; edges.len()];
    let mut stack = vec![from];
    while let Some(u) = stack.pop() {
        if u < seen.len() && !seen[u] {
            seen[u] = true;
            stack.extend(edges[u].iter().copied());
        }
    }
    seen
}

fn reaches(edges: &[Vec<usize>], from: usize, targets: &[usize]) -> bool {
    let r = reachable(edges, from);
    targets.iter().any(|&t| r[t])
}

/// "rank 0", "ranks 1–3, 5"
pub(crate) fn rank_list(ranks: &[usize]) -> String {
    let mut runs: Vec<String> = Vec::new();
    let mut i = 0;
    while i < ranks.len() {
        let mut j = i;
        while j + 1 < ranks.len() && ranks[j + 1] == ranks[j] + 1 {
            j += 1;
        }
        runs.push(match j - i {
            0 => ranks[i].to_string(),
            1 => format!("{}, {}", ranks[i], ranks[j]),
            _ => format!("{}–{}", ranks[i], ranks[j]),
        });
        i = j + 1;
    }
    format!("{} {}", if ranks.len() == 1 { "rank" } else { "ranks" }, runs.join(", "))
}

/// The ranks of `ranks` grouped by what they wait in, smallest group first: "rank 0
/// waits in all_reduce on World (x.rs:20) for ranks 1–7".
fn grouped(snap: &[Waiter], ranks: &[usize]) -> Vec<Vec<usize>> {
    let mut groups: Vec<Vec<usize>> = Vec::new();
    for &r in ranks {
        match groups.iter_mut().find(|g| snap[g[0]].key() == snap[r].key()) {
            Some(g) => g.push(r),
            None => groups.push(vec![r]),
        }
    }
    // Smallest first; among equals, the one with the lowest rank.
    groups.sort_by_key(|g| (g.len(), g[0]));
    groups
}

fn groups(snap: &[Waiter], ranks: &[usize]) -> Vec<String> {
    grouped(snap, ranks)
        .iter()
        .map(|g| {
            let w = &snap[g[0]];
            let mut s = format!("{} {}", rank_list(g), w.doing(g.len() > 1));
            if w.kind == WAIT_COLL {
                let mut on: Vec<usize> = g.iter().flat_map(|&r| snap[r].on.iter().copied()).collect();
                on.sort_unstable();
                on.dedup();
                if !on.is_empty() {
                    s.push_str(&format!(" for {}", rank_list(&on)));
                }
            }
            s
        })
        .collect()
}

fn describe(snap: &[Waiter], stuck: &[usize], cycle: &[usize]) -> Verdict {
    // The culprit: the lowest rank of the smallest group of like waits (the rank that
    // went another way than the rest), looked for among the cycle's ranks.
    let in_cycle: Vec<usize> = stuck.iter().copied().filter(|r| cycle.contains(r)).collect();
    let culprit =
        grouped(snap, stuck).iter().find_map(|g| g.iter().copied().find(|r| in_cycle.contains(r))).unwrap_or(cycle[0]);
    let mut path: Vec<String> = cycle.iter().map(|r| r.to_string()).collect();
    path.push(cycle[0].to_string());
    let text = format!(
        "deadlock: {}; none of them can move (wait-for cycle {}; ranks are world ranks){}",
        groups(snap, stuck).join("; "),
        path.join(" → "),
        tags_differ(snap, stuck)
    );
    Verdict { culprit, text }
}

/// A send and a receive between the same two ranks, on one communicator, waiting on each
/// other with different tags: ": the tags differ: rank 0 sends rank 1 tag 3 (..), and
/// rank 1 receives from rank 0 with tag 4 (..), which that send does not match".
fn tags_differ(snap: &[Waiter], stuck: &[usize]) -> String {
    for &s in stuck {
        let w = &snap[s];
        let (WAIT_SEND, Some(ts)) = (w.kind, w.tag) else { continue };
        let Some(r) = snap.get(w.peer as usize) else { continue };
        if r.kind == WAIT_RECV && r.peer as usize == s && r.comm == w.comm && r.tag.is_some_and(|t| t != ts) {
            return format!(
                ": the tags differ: rank {s} sends rank {} tag {ts} ({}:{}), and rank {} receives from rank {s} with \
                 tag {} ({}:{}), which that send does not match",
                w.peer,
                w.file,
                w.line,
                w.peer,
                r.tag.unwrap_or_default(),
                r.file,
                r.line
            );
        }
    }
    String::new()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn coll(op: &str, line: u32, on: &[usize]) -> Waiter {
        Waiter {
            kind: WAIT_COLL,
            wait_id: 1,
            comm: "World".into(),
            op: op.into(),
            file: "src/main.rs".into(),
            line,
            on: on.to_vec(),
            ..Default::default()
        }
    }
    fn recv(from: usize, line: u32) -> Waiter {
        Waiter {
            kind: WAIT_RECV,
            wait_id: 1,
            peer: from as u32,
            comm: "World".into(),
            op: "recv".into(),
            file: "src/main.rs".into(),
            line,
            on: vec![from],
            ..Default::default()
        }
    }
    fn beat(snap: &mut [Waiter]) {
        for w in snap.iter_mut() {
            w.beat += 1;
        }
    }
    fn no_proc(_: u32) -> Option<char> {
        None
    }

    /// Runs the detector of `me` over `snap` until it decides or `limit` passes.
    fn run(me: usize, snap: &mut [Waiter], limit: Duration) -> Option<Verdict> {
        let mut d = Detector::default();
        let t0 = Instant::now();
        let mut t = t0;
        while t - t0 < limit {
            if let Some(v) = d.step(me, snap, t, &no_proc) {
                return Some(v);
            }
            beat(snap);
            t += Duration::from_millis(50);
        }
        None
    }

    fn recv_any(on: &[usize], line: u32) -> Waiter {
        Waiter { peer: ANY_PEER, op: "recv_any".into(), on: on.to_vec(), ..recv(0, line) }
    }

    /// A receive from any source waits on any one of its ranks: a deadlock once every
    /// one of them is stuck (a master in `recv_any` while every worker waits in a
    /// collective for it), never while one of them can still move and send.
    #[test]
    fn a_receive_from_any_source_is_stuck_only_when_every_sender_is() {
        // Master 0 in recv_any; workers 1 and 2 in a barrier that waits for rank 0.
        let mut snap = vec![recv_any(&[1, 2], 55), coll("barrier", 53, &[0]), coll("barrier", 53, &[0])];
        for me in 0..3 {
            let v = run(me, &mut snap, Duration::from_secs(2)).expect("a deadlock");
            assert!(v.text.contains("rank 0 waits in recv_any from any rank on World (src/main.rs:55)"), "{}", v.text);
        }
        // Worker 2 is still computing (not blocked): it may send to rank 0 yet.
        let mut snap = vec![recv_any(&[1, 2], 55), coll("barrier", 53, &[0]), Waiter::default()];
        assert_eq!(run(0, &mut snap, Duration::from_secs(2)), None);
        assert_eq!(run(1, &mut snap, Duration::from_secs(2)), None);
        // Worker 2 waits in a receive from worker 1... which waits in the barrier for
        // rank 0: all stuck, a deadlock through the any-source wait.
        let mut snap = vec![recv_any(&[1, 2], 55), coll("barrier", 53, &[0]), recv(1, 60)];
        assert!(run(2, &mut snap, Duration::from_secs(2)).is_some());
        // ... but a worker waiting on a rank that still computes frees it all.
        let mut snap = vec![recv_any(&[1, 2], 55), coll("barrier", 53, &[0]), recv(3, 60), Waiter::default()];
        assert_eq!(run(0, &mut snap, Duration::from_secs(2)), None);
    }

    #[test]
    fn a_collective_in_a_branch_is_named_with_both_lines_and_the_odd_rank() {
        // rank 0 in all_reduce waits for 1..3, which wait in recv from 0.
        let mut snap = vec![coll("all_reduce", 20, &[1, 2, 3]), recv(0, 24), recv(0, 24), recv(0, 24)];
        for me in 0..4 {
            let v = run(me, &mut snap, Duration::from_secs(2)).expect("a deadlock");
            assert_eq!(v.culprit, 0);
            assert!(
                v.text.contains("rank 0 waits in all_reduce on World (src/main.rs:20) for ranks 1–3"),
                "{}",
                v.text
            );
            assert!(v.text.contains("ranks 1–3 wait in recv from rank 0 on World (src/main.rs:24)"), "{}", v.text);
        }
    }

    /// Ranks in different collectives of one communicator are never a deadlock between
    /// them (seen on MPI across hosts under load: ranks 0–3's board records still said
    /// collective #12 while ranks 4–7 waited in #14 for them); in the same collective
    /// they are not either, and a cycle through other waits is still found.
    #[test]
    fn different_collectives_of_one_communicator_are_no_cycle() {
        let at = |seq: u64, on: &[usize]| Waiter { seq, ..coll("all_reduce", 415, on) };
        let mut snap = vec![at(12, &[2, 3]), at(12, &[2, 3]), at(14, &[0, 1]), at(14, &[0, 1])];
        for me in 0..4 {
            assert_eq!(run(me, &mut snap, Duration::from_secs(3)), None, "rank {me}");
        }
        // One collective number behind (data of #13 in flight to ranks 0 and 1).
        let mut snap = vec![at(13, &[2]), at(13, &[2]), at(14, &[0, 1]), Waiter::default()];
        assert_eq!(run(2, &mut snap, Duration::from_secs(3)), None);
        // Another communicator's collective, or a receive, still closes a cycle.
        let mut other = at(3, &[0]);
        other.comm = "Tp{0,1}".into();
        let mut snap = vec![at(12, &[1]), other];
        assert!(run(0, &mut snap, Duration::from_secs(2)).is_some());
        let mut snap = vec![at(12, &[1]), recv(0, 24)];
        assert!(run(0, &mut snap, Duration::from_secs(2)).is_some());
    }

    #[test]
    fn it_waits_for_the_cycle_to_hold_and_every_member_to_poll() {
        let mut snap = vec![recv(1, 5), recv(0, 9)];
        let mut d = Detector::default();
        let t0 = Instant::now();
        assert_eq!(d.step(0, &snap, t0, &no_proc), None, "first sight");
        // Time passes but rank 1 never polls again (descheduled): no verdict.
        snap[0].beat += 5;
        assert_eq!(d.step(0, &snap, t0 + Duration::from_secs(3), &no_proc), None);
        // Rank 1 moved bytes: a new sighting.
        snap[1].beat += 3;
        snap[1].moved += 1;
        assert_eq!(d.step(0, &snap, t0 + Duration::from_secs(4), &no_proc), None);
        snap[0].beat += 2;
        snap[1].beat += 2;
        let v = d.step(0, &snap, t0 + Duration::from_secs(5), &no_proc).expect("held and polled");
        assert_eq!(v.culprit, 0);
        assert!(v.text.contains("wait-for cycle 0 → 1 → 0"), "{}", v.text);
    }

    #[test]
    fn a_new_wait_is_a_new_sighting() {
        let mut snap = vec![recv(1, 5), recv(0, 9)];
        let mut d = Detector::default();
        let t0 = Instant::now();
        assert_eq!(d.step(0, &snap, t0, &no_proc), None);
        beat(&mut snap);
        beat(&mut snap);
        snap[1].wait_id = 2; // rank 1 finished its recv and blocked in another
        assert_eq!(d.step(0, &snap, t0 + Duration::from_secs(1), &no_proc), None);
    }

    #[test]
    fn no_verdict_while_a_rank_on_the_path_runs() {
        // 0 waits on 1, 1 waits on 2, 2 is computing: no deadlock yet.
        let mut snap = vec![recv(1, 5), recv(2, 9), Waiter::default()];
        assert_eq!(run(0, &mut snap, Duration::from_secs(3)), None);
        // A collective waiting on a running rank and on a deadlocked pair is stuck too.
        let mut snap = vec![coll("barrier", 3, &[1, 3]), recv(2, 5), recv(1, 6), Waiter::default()];
        let v = run(0, &mut snap, Duration::from_secs(2)).expect("stuck behind the pair");
        assert!(v.text.contains("rank 0 waits in barrier"), "{}", v.text);
        assert!(v.text.contains("wait-for cycle 1 → 2 → 1"), "{}", v.text);
        // A rank not blocked at all has nothing to report.
        assert_eq!(run(3, &mut snap, Duration::from_secs(2)), None);
    }

    #[test]
    fn a_stopped_rank_is_a_stall_named_after_a_second_a_traced_one_never() {
        let mut snap = vec![recv(1, 5), Waiter { pid: 42, ..Default::default() }];
        for (state, named) in [('T', true), ('t', false)] {
            let st = move |pid: u32| (pid == 42).then_some(state);
            let mut d = Detector::default();
            let t0 = Instant::now();
            let mut first = None;
            for i in 0..60 {
                beat(&mut snap);
                // Never a verdict: the process may resume.
                assert_eq!(d.step(0, &snap, t0 + Duration::from_millis(50 * i), &st), None);
                if d.stall().is_some() && first.is_none() {
                    first = Some(i);
                }
            }
            assert_eq!(first.is_some(), named, "{state}");
            if let Some(i) = first {
                assert!(i >= 20, "not before a second");
                let (r, text) = d.stall().expect("kept while stopped");
                assert_eq!(*r, 1);
                assert!(text.contains("rank 1's process (pid 42) is stopped (SIGSTOP): a stall"), "{text}");
                assert!(text.contains("rank 0 waits in recv from rank 1"), "{text}");
                // Resumed: the stall is over.
                let running = |_: u32| Some('S');
                d.step(0, &snap, t0 + Duration::from_secs(4), &running);
                assert!(d.stall().is_none());
            }
        }
    }

    #[test]
    fn rank_lists_read_as_ranges() {
        assert_eq!(rank_list(&[0]), "rank 0");
        assert_eq!(rank_list(&[1, 2]), "ranks 1, 2");
        assert_eq!(rank_list(&[1, 2, 3, 5, 7, 8, 9]), "ranks 1–3, 5, 7–9");
    }
}
