//! Deadlock detection on MPI, by state as on shm (`verify::deadlock`), with MPI itself as
//! the board: MPI shows no peer's state, so a rank blocked in a wait for more than
//! [`FIRST`] sends what it waits in (op, communicator, call site, the world ranks it
//! waits on, and what identifies the call across ranks) to every other rank, on a
//! duplicate of the world communicator kept for this alone, and again at every
//! [`EVERY`] it stays blocked; leaving such a wait it sends "not blocked". Each blocked
//! rank reads what has arrived into its copy of the board and runs the same detector
//! over it, so the same cycle is found on every rank, across hosts too (the records go
//! wherever MPI goes).
//!
//! MPI's collectives and large sends show no progress the way shm's rings do, so the
//! edges of the wait-for graph are pruned where the peer is already in the matching
//! call: two ranks in the same collective (same communicator, same collective number)
//! and a send with the receive it matches (same communicator and tag) are progress, not
//! a cycle. What is left is a wait on a rank that is in some other wait, which no MPI
//! progress can release.
//!
//! Cost: nothing until a wait has lasted [`FIRST`]; then one small message to each peer
//! per [`EVERY`] (fewer past 64 ranks), and a look at what arrived.

use super::{call, MpiComm};
use crate::error::{Result, Site};
use crate::verify::deadlock::{Detector, Waiter};
use crate::verify::watchdog::{WAIT_COLL, WAIT_RECV, WAIT_SEND};
use mpi::ffi;
use std::cell::Cell;
use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicU32, Ordering::SeqCst};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

/// A wait publishes once it has lasted this long (a wait that ends sooner costs nothing).
pub(super) const FIRST: Duration = Duration::from_millis(50);
/// Then it republishes (a beat) and looks at the board this often.
const EVERY: Duration = Duration::from_millis(50);
/// The tag of wait records on the health communicator.
const TAG: c_int = 7;

/// What a wait waits for, in its communicator's numbering.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Wait {
    /// A collective (or the agreement all-gather before it).
    Coll,
    /// A send to `dst` with `tag`.
    Send { dst: usize, tag: u32 },
    /// A receive from `src` (`None`: any source) with `tag`.
    Recv { src: Option<usize>, tag: u32 },
}

/// The process's board on MPI.
struct Health {
    comm: ffi::MPI_Comm,
    me: usize,
    n: usize,
    /// Identifies this rank's host (and PID namespace): a pid means something only there.
    host: u64,
    /// Every world rank's host, as exchanged at init.
    hosts: Vec<u64>,
    st: Mutex<State>,
}

/// A rank's posted receives as its record carries them: (world rank of the source, or
/// `u32::MAX` for any; the instance word of communicator and tag).
type Posted = Vec<(u32, u64)>;

/// What a record carries beside its [`Waiter`].
#[derive(Clone, Debug, Default, PartialEq)]
struct Extra {
    /// The receives a rank blocked in a send had posted (its wait takes them in).
    posted: Posted,
    /// How far the rank is on each of its communicators: (uid, collectives entered on
    /// it), as [`MpiComm`]'s count. A rank waiting in collective #k of a communicator
    /// does not wait on a peer that has entered #k, wherever that peer waits now: what
    /// is left of its part is MPI's to deliver.
    progress: Vec<(u64, u64)>,
    /// For a collective wait: its communicator's uid and its number in that count.
    coll: (u64, u64),
}

/// Every live communicator of this process, with its collective count, for the records.
static COMMS: Mutex<Vec<(u64, std::sync::Weak<std::sync::atomic::AtomicU64>)>> = Mutex::new(Vec::new());

/// Keeps `c`'s collective count (`uid`, `colls`) in this rank's records from now on.
pub(super) fn track(uid: u64, colls: &std::sync::Arc<std::sync::atomic::AtomicU64>) {
    let mut all = COMMS.lock().unwrap_or_else(|p| p.into_inner());
    all.retain(|(_, w)| w.strong_count() > 0);
    all.push((uid, std::sync::Arc::downgrade(colls)));
}

/// This rank's progress on its live communicators (at most the 64 made last).
fn progress() -> Vec<(u64, u64)> {
    let all = COMMS.lock().unwrap_or_else(|p| p.into_inner());
    let live: Vec<(u64, u64)> = all.iter().filter_map(|(uid, w)| Some((*uid, w.upgrade()?.load(SeqCst)))).collect();
    live[live.len().saturating_sub(64)..].to_vec()
}

#[derive(Default)]
struct State {
    /// Each rank's last record, by world rank.
    board: Vec<Waiter>,
    /// What each rank's last record carried beside its wait.
    extra: Vec<Extra>,
    /// Records on their way out (a request and the bytes it reads).
    pending: Vec<(ffi::MPI_Request, Vec<u8>)>,
    /// Whether this rank's peers were last told it is blocked.
    published: bool,
    /// Each rank's last collective wait (its instance word), kept when the rank stops
    /// waiting: a rank that timed out in a call still reached it.
    coll_seen: Vec<u64>,
    /// The ranks that said they have reported their failure ([`announce_reported`]).
    reported: Vec<bool>,
}

// SAFETY: the handles are plain values used only through `call`, under MPI's process-wide
// lock, as for `MpiComm`.
unsafe impl Send for Health {}
// SAFETY: as above.
unsafe impl Sync for Health {}

static HEALTH: OnceLock<Health> = OnceLock::new();
static NEXT_WAIT: AtomicU32 = AtomicU32::new(0);
/// Threads of this process that have waited in MPI, and those waiting now: one record
/// describes one wait, and another thread may release it (the same rule as shm's board).
static THREADS: AtomicU32 = AtomicU32::new(0);
static BLOCKED: AtomicU32 = AtomicU32::new(0);
thread_local! {
    static ENTERED: Cell<bool> = const { Cell::new(false) };
}

/// Makes `comm` (a duplicate of the world, this process's alone) the job's board.
/// `procs` is every rank's (pid, host) as exchanged at init: a rank that never blocks
/// can still be found stopped (SIGSTOP) by a peer on its host.
pub(super) fn install(comm: ffi::MPI_Comm, me: usize, n: usize, procs: &[(u32, u64)]) {
    let host = crate::sys::host_id();
    let board = (0..n)
        .map(|r| {
            let pid = procs.get(r).filter(|p| p.1 == host).map_or(0, |p| p.0);
            Waiter { pid, ..Waiter::default() }
        })
        .collect();
    let extra = vec![Extra::default(); n];
    let coll_seen = vec![0; n];
    let hosts = procs.iter().map(|p| p.1).collect();
    let _ = HEALTH.set(Health {
        comm,
        me,
        n,
        host,
        hosts,
        st: Mutex::new(State { board, extra, coll_seen, reported: vec![false; n], ..State::default() }),
    });
}

/// Whether the world ranks `world` all run on this rank's host (as exchanged at init).
pub(super) fn on_this_host(world: &[usize]) -> bool {
    HEALTH.get().is_some_and(|h| world.iter().all(|&r| h.hosts.get(r) == Some(&h.host)))
}

/// This rank told its peers that it failed.
static ANNOUNCED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
/// The kind of a record that says its rank failed (its op field holds the reason).
const FAILED: u32 = 0xfa11;
/// The kind of a record that says its rank returned from its entry.
const LEFT: u32 = 0x1ef7;
/// A failed rank has written what it saw (its error, its flight recorder): kept beside
/// the board, never over the failure notice it follows.
const REPORTED: u32 = 0x4e90;

/// Whether this rank told its peers that it failed: it then lets those blocked on it
/// hear it and report (their error, their flight recorder) before it aborts the job,
/// which kills them.
pub(super) fn announced() -> bool {
    ANNOUNCED.load(SeqCst)
}

/// This rank's failure notice on MPI: every peer's board says it failed, and why; a peer
/// blocked on it stops with `Error::PeerFailed` at its next look (MPI itself would only
/// kill it when this rank aborts the job).
pub(super) fn announce(reason: &str) {
    let Some(h) = HEALTH.get() else { return };
    let mut st = h.st.lock().unwrap_or_else(|p| p.into_inner());
    let w = Waiter { kind: FAILED, pid: std::process::id(), op: reason.to_string(), ..Waiter::default() };
    if h.send_all(&mut st, &w, &Extra::default()).is_ok() && h.n > 1 {
        ANNOUNCED.store(true, SeqCst);
    }
    st.board[h.me] = w;
}

/// This rank returned from its entry: a peer still blocked on it after a moment (its last
/// messages may still be on their way, on another communicator) stops with an error
/// naming it, and the launcher names it as the cause.
pub(super) fn announce_left() {
    let Some(h) = HEALTH.get() else { return };
    let mut st = h.st.lock().unwrap_or_else(|p| p.into_inner());
    if st.board[h.me].kind == FAILED {
        return;
    }
    let w = Waiter { kind: LEFT, pid: std::process::id(), ..Waiter::default() };
    if h.n <= 64 {
        let _ = h.send_all(&mut st, &w, &Extra::default());
    } else {
        // Every rank of a large job saying so to every other at its end would be n²
        // messages: only the ranks already blocked on this one hear it (a rank that
        // starts waiting on it later has the deadline).
        let _ = h.drain(&mut st);
        let waiting: Vec<usize> =
            (0..h.n).filter(|&r| r != h.me && st.board[r].on.contains(&h.me) && st.board[r].kind != FAILED).collect();
        let _ = h.send_to(&mut st, &w, &Extra::default(), &waiting);
    }
    st.board[h.me] = w;
}

/// A failed rank has reported (its error on stderr, its flight recorder to the launcher
/// and beside the trace): every peer hears it, so the one that ends the job does not cut
/// this rank short.
pub(super) fn announce_reported() {
    let Some(h) = HEALTH.get() else { return };
    let mut st = h.st.lock().unwrap_or_else(|p| p.into_inner());
    let w = Waiter { kind: REPORTED, pid: std::process::id(), ..Waiter::default() };
    let _ = h.send_all(&mut st, &w, &Extra::default());
    st.reported[h.me] = true;
}

/// Before a failed rank aborts the job (which kills every rank): gives its peers `grace`
/// to hear of the failure (a rank blocked on it fails at its next look at the board),
/// then waits, for at most `bound` in all, until every peer that failed has reported
/// (its error, its flight recorder) or returned from its entry. On a loaded host a
/// report may take longer than any fixed grace, and an abort before it would leave the
/// job without that rank's record (the culprit's, when a victim aborts first). A peer
/// that never failed (killed, or computing) is not waited for past `grace`. Returns
/// whether nothing was left waiting.
pub(super) fn await_reports(grace: Duration, bound: Duration) -> bool {
    let Some(h) = HEALTH.get() else { return true };
    let start = Instant::now();
    loop {
        {
            let mut st = h.st.lock().unwrap_or_else(|p| p.into_inner());
            if h.drain(&mut st).is_err() {
                return false;
            }
            let past_grace = start.elapsed() >= grace;
            let settled = |r: usize| {
                r == h.me || st.reported[r] || st.board[r].kind == LEFT || (past_grace && st.board[r].kind != FAILED)
            };
            if (0..h.n).all(settled) {
                return true;
            }
        }
        if start.elapsed() >= bound {
            return false;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Before MPI ends: records still on their way out are let go (MPI delivers or drops
/// them; nobody waits for them), and the board's communicator is freed.
pub(super) fn shutdown() {
    let Some(h) = HEALTH.get() else { return };
    let mut st = h.st.lock().unwrap_or_else(|p| p.into_inner());
    for (mut req, _) in st.pending.drain(..) {
        // SAFETY: a live send request of this process; freeing lets it complete alone.
        let _ = call("MPI_Request_free", || unsafe { ffi::MPI_Request_free(&mut req) });
    }
}

/// The ranks of `c` (its own numbering) whose records showed them waiting in the
/// collective this rank waits in on `c` now (still, or until they gave up: a rank that
/// timed out first had reached it), this rank included: those that reached the call.
/// `None` until this rank has published its own wait (the others' records come at the
/// same pace, so before that the board says nothing about who arrived).
pub(super) fn in_this_collective(c: &MpiComm) -> Option<Vec<usize>> {
    let h = HEALTH.get()?;
    let inst = mix(c.uid, c.colls.load(SeqCst));
    let mut st = h.st.lock().unwrap_or_else(|p| p.into_inner());
    h.drain(&mut st).ok()?;
    if !st.published {
        return None;
    }
    let there =
        |r: usize| r == c.rank || c.world.get(r).and_then(|&w| st.coll_seen.get(w)).is_some_and(|&seen| seen == inst);
    Some((0..c.size).filter(|&r| there(r)).collect())
}

/// One blocked wait's state across its looks at the board.
pub(super) struct Watch {
    wait_id: u32,
    beat: u32,
    next: Option<Instant>,
    detector: Detector,
    verdict_at: Cell<Option<Instant>>,
    counted: bool,
    /// A rank this wait depends on that left its entry, and since when this wait knows.
    left: Option<(usize, Instant)>,
}

impl Watch {
    pub(super) fn new() -> Watch {
        // (A communicator's background worker is not a thread of its own here: see
        // `crate::backend::wait_is_the_ranks`.)
        ENTERED.with(|e| {
            if !e.get() && !crate::backend::background() {
                e.set(true);
                THREADS.fetch_add(1, SeqCst);
            }
        });
        Watch {
            wait_id: 0,
            beat: 0,
            next: None,
            detector: Detector::default(),
            verdict_at: Cell::new(None),
            counted: false,
            left: None,
        }
    }

    /// The stall this wait is in (a stopped rank it depends on), for the deadline's error.
    pub(super) fn stall(&self) -> Option<&(usize, String)> {
        self.detector.stall()
    }

    /// Called from every poll of a wait that has lasted `waited`: publishes and looks at
    /// the board every [`EVERY`] once the wait is [`FIRST`] old; a deadlock verdict is an
    /// error (see `verify::deadlock::verdict_error`).
    pub(super) fn look(
        &mut self,
        c: &MpiComm,
        what: Wait,
        op: &'static str,
        site: Site,
        waited: Duration,
    ) -> Result<()> {
        if waited < FIRST {
            return Ok(());
        }
        let Some(h) = HEALTH.get() else { return Ok(()) };
        let now = Instant::now();
        if self.next.is_some_and(|t| now < t) {
            return Ok(());
        }
        self.next = Some(now + EVERY);
        if !self.counted {
            self.counted = true;
            BLOCKED.fetch_add(1, SeqCst);
            self.wait_id = NEXT_WAIT.fetch_add(1, SeqCst).wrapping_add(1);
        }
        self.beat = self.beat.wrapping_add(1);
        let several = BLOCKED.load(SeqCst) > 1 || THREADS.load(SeqCst) > 1 || !crate::backend::wait_is_the_ranks();
        let me = mine(c, h, what, op, site, self, several);
        let posted: Posted = match what {
            Wait::Send { .. } => super::p2p::posted(c, 64)
                .into_iter()
                .map(|(src, tag)| {
                    let src =
                        if src == usize::MAX { u32::MAX } else { c.world.get(src).map_or(u32::MAX, |&w| w as u32) };
                    (src, mix(c.uid, tag as u64))
                })
                .collect(),
            _ => Posted::new(),
        };
        let coll = if matches!(what, Wait::Coll) { (c.uid, c.colls.load(SeqCst)) } else { (0, 0) };
        let extra = Extra { posted, progress: progress(), coll };
        let mut st = h.st.lock().unwrap_or_else(|p| p.into_inner());
        h.drain(&mut st)?;
        // A rank this wait depends on failed: its notice, as on shm.
        for &q in &me.on {
            if let Some(f) = st.board.get(q).filter(|f| f.kind == FAILED) {
                return Err(crate::verify::failure::peer_failed(c.local_of(q), c.name.clone(), f.op.clone()));
            }
        }
        // A rank of this host this wait depends on is gone without a word (killed, an
        // `exit()` mid-job): as on shm. (Its record's pid is 0 on another host.)
        for &q in &me.on {
            let pid = st.board.get(q).map_or(0, |f| f.pid);
            if pid != 0 && !crate::sys::pid_alive(pid) {
                let reason = format!("its process (pid {pid}) is gone: killed or exited without finishing");
                return Err(crate::verify::failure::peer_gone(c.local_of(q), c.name.clone(), reason));
            }
        }
        // A rank this wait depends on left its entry, and what it sent before has had
        // time to arrive ([`crate::verify::deadlock::CONFIRM`]) without ending the wait.
        match me.on.iter().copied().find(|&q| st.board.get(q).is_some_and(|f| f.kind == LEFT)) {
            Some(q) => {
                let since = match self.left {
                    Some((r, t)) if r == q => t,
                    _ => {
                        self.left = Some((q, now));
                        now
                    }
                };
                if now.duration_since(since) >= crate::verify::deadlock::CONFIRM {
                    let reason = format!(
                        "left {} ({}) while {} still waits on it in {op} at {}",
                        c.name,
                        crate::error::how_left(&c.name),
                        crate::error::rank_text(c.rank, &c.name),
                        site.with_callers()
                    );
                    return Err(crate::verify::failure::peer_left(c.local_of(q), c.name.clone(), reason));
                }
            }
            None => self.left = None,
        }
        // Past 64 ranks, beats go out less often (each one is a message to every rank).
        if !st.published || self.beat.is_multiple_of(1 + h.n as u32 / 64) {
            h.send_all(&mut st, &me, &extra)?;
            st.published = true;
        }
        if several {
            return Ok(());
        }
        st.board[h.me] = me;
        st.extra[h.me] = extra;
        let snap = prune(&st.board, &st.extra);
        drop(st);
        let local = |pid: u32| crate::sys::pid_state(pid);
        let Some(v) = self.detector.step(h.me, &snap, now, &local) else {
            self.verdict_at.set(None);
            return Ok(());
        };
        match crate::verify::deadlock::verdict_error(v, h.me, op, &c.name, site, &self.verdict_at, now) {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

impl Drop for Watch {
    /// The wait ended: when it had been published, the peers hear this rank is not
    /// blocked any more (once no other thread of it is).
    fn drop(&mut self) {
        if !self.counted {
            return;
        }
        if BLOCKED.fetch_sub(1, SeqCst) != 1 {
            return;
        }
        let Some(h) = HEALTH.get() else { return };
        let mut st = h.st.lock().unwrap_or_else(|p| p.into_inner());
        if st.published && st.board[h.me].kind != FAILED {
            let clear = Waiter { pid: std::process::id(), ..Waiter::default() };
            let _ = h.send_all(&mut st, &clear, &Extra::default());
            st.published = false;
            st.board[h.me] = clear;
        }
    }
}

/// This rank's record for the wait `what` on `c`.
fn mine(c: &MpiComm, h: &Health, what: Wait, op: &str, site: Site, w: &Watch, several: bool) -> Waiter {
    let world = |r: usize| c.world.get(r).copied().unwrap_or(usize::MAX);
    let others = || (0..c.size).filter(|&r| r != c.rank).map(world).collect::<Vec<usize>>();
    let (kind, peer, on, seq, inst) = match what {
        Wait::Coll => {
            let seq = c.colls.load(SeqCst);
            (WAIT_COLL, 0, others(), crate::verify::recorder::current(), mix(c.uid, seq))
        }
        Wait::Send { dst, tag } => (WAIT_SEND, world(dst), vec![world(dst)], 0, mix(c.uid, tag as u64)),
        Wait::Recv { src: Some(src), tag } => (WAIT_RECV, world(src), vec![world(src)], 0, mix(c.uid, tag as u64)),
        Wait::Recv { src: None, tag } => (WAIT_RECV, u32::MAX as usize, others(), 0, mix(c.uid, tag as u64)),
    };
    let tag = match what {
        Wait::Send { tag, .. } | Wait::Recv { tag, .. } => Some(tag),
        Wait::Coll => None,
    };
    Waiter {
        kind: if several { 0 } else { kind },
        wait_id: w.wait_id,
        beat: w.beat,
        moved: 0,
        peer: peer as u32,
        pid: std::process::id(),
        on: on.into_iter().filter(|&r| r < h.n).collect(),
        comm: c.name.clone(),
        op: op.to_string(),
        file: site.0.file().to_string(),
        line: site.0.line(),
        seq,
        tag,
        inst,
    }
}

/// A word for (communicator, number), equal on every rank that computes it.
pub(super) fn mix(a: u64, b: u64) -> u64 {
    let mut z = a ^ b.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The board with the edges that MPI's own progress will release taken out: a rank in
/// the same collective call as the one waiting on it, a send and the receive it matches
/// (the peer waits in that receive, or waits in a send of its own with that receive
/// posted: a send's wait takes in the messages its posted receives are due), and a rank
/// already in or past the collective waited in, wherever it waits now.
fn prune(board: &[Waiter], extra: &[Extra]) -> Vec<Waiter> {
    let mut snap = board.to_vec();
    for (a, w) in board.iter().enumerate() {
        if !matches!(w.kind, WAIT_COLL | WAIT_SEND | WAIT_RECV) {
            continue;
        }
        snap[a].on.retain(|&q| {
            let Some(p) = board.get(q) else { return false };
            let matched = match (w.kind, p.kind) {
                (WAIT_COLL, WAIT_COLL) => p.inst == w.inst,
                (WAIT_RECV, WAIT_SEND) => p.inst == w.inst && p.peer as usize == a,
                (WAIT_SEND, WAIT_RECV) => {
                    p.inst == w.inst && (p.peer as usize == a || p.peer == u32::MAX && p.on.contains(&a))
                }
                (WAIT_SEND, WAIT_SEND) => extra.get(q).is_some_and(|x| {
                    x.posted.iter().any(|&(src, inst)| inst == w.inst && (src as usize == a || src == u32::MAX))
                }),
                _ => false,
            };
            let past = w.kind == WAIT_COLL && entered(extra.get(a), extra.get(q));
            !matched && !past
        });
    }
    snap
}

/// Whether the rank whose record carried `peer` had entered the collective that the
/// record `waiter` waits in (its communicator's count there reached that number).
fn entered(waiter: Option<&Extra>, peer: Option<&Extra>) -> bool {
    let (Some(&Extra { coll: (uid, k), .. }), Some(p)) = (waiter, peer) else { return false };
    k > 0 && p.progress.iter().any(|&(u, n)| u == uid && n >= k)
}

impl Health {
    /// Reads every record that has arrived into the board (a sender's records arrive in
    /// the order it sent them, so the board ends at each one's latest).
    fn drain(&self, st: &mut State) -> Result<()> {
        // Bounded: a look never reads more than a few records per rank.
        for _ in 0..(4 * self.n + 16) {
            let mut flag: c_int = 0;
            // SAFETY: a placeholder, written by MPI.
            let mut s: ffi::MPI_Status = unsafe { std::mem::zeroed() };
            // SAFETY: a valid communicator; outputs written by MPI.
            call("MPI_Iprobe", || unsafe {
                ffi::MPI_Iprobe(ffi::RSMPI_ANY_SOURCE, TAG, self.comm, &mut flag, &mut s)
            })?;
            if flag == 0 {
                break;
            }
            let mut len: c_int = 0;
            // SAFETY: the status of the probed message.
            call("MPI_Get_count", || unsafe { ffi::MPI_Get_count(&s, super::ops::bytes(), &mut len) })?;
            let mut buf = vec![0u8; len.max(0) as usize];
            let src = s.MPI_SOURCE;
            // SAFETY: `buf` holds the probed message; the receive completes before it returns.
            call("MPI_Recv", || unsafe {
                ffi::MPI_Recv(
                    buf.as_mut_ptr() as *mut c_void,
                    len,
                    super::ops::bytes(),
                    src,
                    TAG,
                    self.comm,
                    ffi::RSMPI_STATUS_IGNORE,
                )
            })?;
            if let (Some(mut w), Some(slot)) = (decode(&buf), st.board.get_mut(src as usize)) {
                if w.inst_host != self.host {
                    w.waiter.pid = 0; // another host's pid: nothing to look up here
                }
                if w.waiter.kind == WAIT_COLL {
                    if let Some(seen) = st.coll_seen.get_mut(src as usize) {
                        *seen = w.waiter.inst;
                    }
                }
                if w.waiter.kind == REPORTED {
                    // Beside the board: the failure notice before it stays what peers read.
                    st.reported[src as usize] = true;
                    continue;
                }
                *slot = w.waiter;
                st.extra[src as usize] = w.extra;
            }
        }
        Ok(())
    }

    /// Sends `w` to every other rank; records still on their way are let be, and a rank
    /// whose peers read nothing for long sends no more than a bounded backlog.
    fn send_all(&self, st: &mut State, w: &Waiter, extra: &Extra) -> Result<()> {
        let all: Vec<usize> = (0..self.n).filter(|&r| r != self.me).collect();
        self.send_to(st, w, extra, &all)
    }

    /// Sends `w` to the ranks `to`, as [`send_all`](Self::send_all).
    fn send_to(&self, st: &mut State, w: &Waiter, extra: &Extra, to: &[usize]) -> Result<()> {
        st.pending.retain_mut(|(req, _)| {
            let mut flag: c_int = 0;
            // SAFETY: a live request of this process.
            let r = call("MPI_Test", || unsafe { ffi::MPI_Test(req, &mut flag, ffi::RSMPI_STATUS_IGNORE) });
            r.is_ok() && flag == 0
        });
        if st.pending.len() > 8 * self.n {
            return Ok(());
        }
        let bytes = encode(w, self.host, extra);
        for &r in to {
            let buf = bytes.clone();
            // SAFETY: a placeholder, written by MPI.
            let mut req: ffi::MPI_Request = unsafe { ffi::RSMPI_REQUEST_NULL };
            // SAFETY: `buf` is kept in `pending` until the request completes or is freed.
            call("MPI_Isend", || unsafe {
                ffi::MPI_Isend(
                    buf.as_ptr() as *const c_void as *mut c_void,
                    buf.len() as c_int,
                    super::ops::bytes(),
                    r as c_int,
                    TAG,
                    self.comm,
                    &mut req,
                )
            })?;
            st.pending.push((req, buf));
        }
        Ok(())
    }
}

/// A record as it travels: kind, wait id, beat, peer, pid, line (u32), collective number
/// (for a point-to-point wait: its tag + 1),
/// instance, host (u64), the ranks waited on (count, then u32 each), then communicator,
/// op and file (u16 length, then bytes), then the posted receives (count, then source
/// u32 and instance u64 each), the progress (count, then uid and count u64 each) and the
/// collective waited in (uid and number, u64).
fn encode(w: &Waiter, host: u64, x: &Extra) -> Vec<u8> {
    let mut b = Vec::with_capacity(80 + 4 * w.on.len() + w.file.len());
    for v in [w.kind, w.wait_id, w.beat, w.peer, w.pid, w.line] {
        b.extend_from_slice(&v.to_le_bytes());
    }
    // (A point-to-point wait has no collective number: the slot holds its tag + 1.)
    let seq = match w.tag {
        Some(t) if w.kind != WAIT_COLL => t as u64 + 1,
        _ => w.seq,
    };
    for v in [seq, w.inst, host] {
        b.extend_from_slice(&v.to_le_bytes());
    }
    b.extend_from_slice(&(w.on.len() as u32).to_le_bytes());
    for &r in &w.on {
        b.extend_from_slice(&(r as u32).to_le_bytes());
    }
    for s in [&w.comm, &w.op, &w.file] {
        let s = &s.as_bytes()[s.len().saturating_sub(u16::MAX as usize)..];
        b.extend_from_slice(&(s.len() as u16).to_le_bytes());
        b.extend_from_slice(s);
    }
    b.extend_from_slice(&(x.posted.len() as u32).to_le_bytes());
    for &(src, inst) in &x.posted {
        b.extend_from_slice(&src.to_le_bytes());
        b.extend_from_slice(&inst.to_le_bytes());
    }
    b.extend_from_slice(&(x.progress.len() as u32).to_le_bytes());
    for &(a, n) in x.progress.iter().chain([&x.coll]) {
        b.extend_from_slice(&a.to_le_bytes());
        b.extend_from_slice(&n.to_le_bytes());
    }
    b
}

struct Decoded {
    waiter: Waiter,
    inst_host: u64,
    extra: Extra,
}

fn decode(b: &[u8]) -> Option<Decoded> {
    let mut at = 0;
    let mut take = |n: usize| -> Option<&[u8]> {
        let s = b.get(at..at + n)?;
        at += n;
        Some(s)
    };
    let mut u32s = [0u32; 6];
    for v in &mut u32s {
        *v = u32::from_le_bytes(take(4)?.try_into().ok()?);
    }
    let mut u64s = [0u64; 3];
    for v in &mut u64s {
        *v = u64::from_le_bytes(take(8)?.try_into().ok()?);
    }
    let k = u32::from_le_bytes(take(4)?.try_into().ok()?) as usize;
    let mut on = Vec::with_capacity(k.min(1 << 16));
    for _ in 0..k {
        on.push(u32::from_le_bytes(take(4)?.try_into().ok()?) as usize);
    }
    let mut strs: [String; 3] = Default::default();
    for s in &mut strs {
        let n = u16::from_le_bytes(take(2)?.try_into().ok()?) as usize;
        *s = String::from_utf8_lossy(take(n)?).into_owned();
    }
    let k = u32::from_le_bytes(take(4)?.try_into().ok()?) as usize;
    let mut posted = Posted::with_capacity(k.min(64));
    for _ in 0..k {
        let src = u32::from_le_bytes(take(4)?.try_into().ok()?);
        posted.push((src, u64::from_le_bytes(take(8)?.try_into().ok()?)));
    }
    let k = u32::from_le_bytes(take(4)?.try_into().ok()?) as usize;
    let mut pairs = Vec::with_capacity(k.min(64) + 1);
    for _ in 0..=k {
        let a = u64::from_le_bytes(take(8)?.try_into().ok()?);
        pairs.push((a, u64::from_le_bytes(take(8)?.try_into().ok()?)));
    }
    let coll = pairs.pop().unwrap_or_default();
    let [kind, wait_id, beat, peer, pid, line] = u32s;
    let [seq, inst, host] = u64s;
    let p2p = matches!(kind, WAIT_SEND | WAIT_RECV);
    let (seq, tag) = if p2p { (0, seq.checked_sub(1).map(|t| t as u32)) } else { (seq, None) };
    let [comm, op, file] = strs;
    Some(Decoded {
        waiter: Waiter { kind, wait_id, beat, moved: 0, peer, pid, on, comm, op, file, line, seq, tag, inst },
        inst_host: host,
        extra: Extra { posted, progress: pairs, coll },
    })
}

/// What a rank waiting in collective `op` waits for: the ranks not in the call yet, where
/// the wait board shows them.
pub(super) fn waiting(c: &MpiComm, op: &crate::op::Op) -> String {
    // The ranks whose wait records show them in this call: the others have not reached
    // it (as shm names them, and torch's monitored_barrier).
    if let Some(there) = in_this_collective(c) {
        let missing: Vec<String> = (0..c.size).filter(|r| !there.contains(r)).map(|r| r.to_string()).collect();
        if !missing.is_empty() {
            return format!(
                "rank {} waits in {} for rank(s) {} to reach the same call (rank(s) {} reached it)",
                c.rank,
                op.name,
                missing.join(", "),
                there.iter().map(|r| r.to_string()).collect::<Vec<_>>().join(", ")
            );
        }
    }
    format!(
        "the other members of {} to make the matching {} call (MPI does not say which ones are missing; \
         DIST_DEBUG=check compares every call across ranks first)",
        c.name, op.name
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(kind: u32, peer: u32, on: &[usize], inst: u64) -> Waiter {
        Waiter { kind, wait_id: 1, peer, on: on.to_vec(), inst, comm: "World".into(), ..Default::default() }
    }

    #[test]
    fn a_record_travels_whole() {
        let mut x = w(WAIT_RECV, 3, &[3, 5], 77);
        x.file = "src/main.rs".into();
        x.op = "recv".into();
        x.line = 12;
        x.seq = 4;
        let e = Extra { posted: vec![(2, 44)], progress: vec![(1, 7), (5, 0)], coll: (1, 7) };
        let d = decode(&encode(&x, 9, &e)).expect("decodes");
        assert_eq!(d.waiter, x);
        assert_eq!((d.inst_host, d.extra), (9, e));
        assert!(decode(&encode(&x, 9, &Extra::default())[..20]).is_none(), "a short record is refused");
    }

    fn prune(board: &[Waiter]) -> Vec<Waiter> {
        super::prune(board, &vec![Extra::default(); board.len()])
    }

    fn posted(p: Posted) -> Extra {
        Extra { posted: p, ..Extra::default() }
    }

    #[test]
    fn a_send_whose_peer_posted_its_receive_is_progress() {
        // Both wait in sends; rank 1 had posted the receive rank 0's send is due, which
        // its own send's wait takes in: rank 0 can move, so no cycle.
        let b = vec![w(WAIT_SEND, 1, &[1], 8), w(WAIT_SEND, 0, &[0], 8)];
        let p = vec![Extra::default(), posted(vec![(0, 8)])];
        let s = super::prune(&b, &p);
        assert!(s[0].on.is_empty() && !s[1].on.is_empty());
        // Posted from any source counts; on another tag it does not.
        assert!(super::prune(&b, &[Extra::default(), posted(vec![(u32::MAX, 8)])])[0].on.is_empty());
        assert!(!super::prune(&b, &[Extra::default(), posted(vec![(0, 9)])])[0].on.is_empty());
    }

    #[test]
    fn a_peer_past_the_collective_is_not_waited_on() {
        // CI, chaos under mpirun with a rank stopped: rank 0 waits in collective #12 of
        // communicator 1 (a peer's data still on its way); rank 1 had entered #12, left
        // it, and waits in a receive from rank 0. Not a cycle: rank 1 owes #12 nothing.
        let b = vec![w(WAIT_COLL, 0, &[1], 5), w(WAIT_RECV, 0, &[0], 8)];
        let x = |progress: Vec<(u64, u64)>, coll| Extra { progress, coll, ..Extra::default() };
        let s = super::prune(&b, &[x(vec![(1, 12)], (1, 12)), x(vec![(1, 12), (2, 3)], (0, 0))]);
        assert!(s[0].on.is_empty() && s[1].on == vec![0]);
        // A peer not yet at #12 of that communicator (at #12 of another one): waited on.
        let s = super::prune(&b, &[x(vec![(1, 12)], (1, 12)), x(vec![(1, 11), (2, 12)], (0, 0))]);
        assert!(s[0].on == vec![1] && s[1].on == vec![0]);
    }

    #[test]
    fn matched_calls_are_progress_not_cycles() {
        // Both in the same collective: no edges left.
        let b = vec![w(WAIT_COLL, 0, &[1], 5), w(WAIT_COLL, 0, &[0], 5)];
        assert!(prune(&b).iter().all(|x| x.on.is_empty()));
        // Different collective calls: the edges stay.
        let b = vec![w(WAIT_COLL, 0, &[1], 5), w(WAIT_COLL, 0, &[0], 6)];
        assert!(prune(&b).iter().all(|x| !x.on.is_empty()));
        // A send and the receive it matches; a receive on another tag does not match.
        let b = vec![w(WAIT_SEND, 1, &[1], 8), w(WAIT_RECV, 0, &[0], 8)];
        assert!(prune(&b).iter().all(|x| x.on.is_empty()));
        let b = vec![w(WAIT_SEND, 1, &[1], 8), w(WAIT_RECV, 0, &[0], 9)];
        assert!(prune(&b).iter().all(|x| !x.on.is_empty()));
        // Two receives: a cycle.
        let b = vec![w(WAIT_RECV, 1, &[1], 8), w(WAIT_RECV, 0, &[0], 8)];
        assert!(prune(&b).iter().all(|x| !x.on.is_empty()));
    }
}
