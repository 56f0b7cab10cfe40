//! Per-rank control records in the segment, and what peers read from them: the state
//! word and failure reason (the failure notice), the op record of each collective (for
//! `verify`'s agreement check), the wait record (for the wait-for graph), and the health
//! check every wait runs. The formats are `verify`'s; this file only stores and loads
//! them. See README.md beside this file.

use super::{board, segment, sync, ShmComm};
use crate::backend::Backend;
use crate::error::{Error, Result, Site};
use crate::op::{Op, KEY_LEN, RECORD_LEN};
use crate::verify::deadlock::{Detector, Waiter};
use crate::verify::watchdog::{describe_graph, RankWait, WaitRecord, WAIT_COLL, WAIT_LEN};
use segment::Segment;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::atomic::Ordering::SeqCst;

/// One blocked wait's state across its health checks.
#[derive(Default)]
pub(crate) struct WaitState {
    /// `WAIT_RECV`, `WAIT_SEND` or `WAIT_COLL`.
    pub kind: u32,
    /// The peer, in this communicator (p2p).
    pub peer: u32,
    /// The message's tag (p2p), where the wait has one.
    pub tag: Option<u32>,
    warned: std::cell::Cell<bool>,
    beat: std::cell::Cell<u32>,
    detector: std::cell::RefCell<Detector>,
    verdict_at: std::cell::Cell<Option<std::time::Instant>>,
}

impl WaitState {
    pub(crate) fn new(kind: u32, peer: u32) -> WaitState {
        WaitState { kind, peer, ..Default::default() }
    }

    /// A point-to-point wait for a message with `tag`.
    pub(crate) fn with_tag(kind: u32, peer: u32, tag: Option<u32>) -> WaitState {
        WaitState { kind, peer, tag, ..Default::default() }
    }
}

/// Marks `rank` failed with `reason` in `seg`, and wakes every waiter so peers notice at
/// once instead of at their next health check (this backend's failure notice).
pub(super) fn notify_failed(seg: &Segment, rank: usize, reason: &str) {
    write_reason(seg, rank, reason);
    seg.u32_at(seg.layout.ctl(rank) + segment::STATE).store(segment::FAILED, SeqCst);
    sync::futex_wake_all(seg.u32_at(segment::GEN));
    for r in 0..seg.layout.n {
        let c = seg.layout.ctl(r);
        sync::futex_wake_all(seg.u32_at(c + segment::EPOCH));
        sync::futex_wake_all(seg.u32_at(c + segment::BELL));
    }
}

/// `reason` within `max` bytes: whole where it fits, else cut at a word boundary (never
/// inside a character) with a note that it was cut, so a peer's "rank 0 failed: …" does
/// not end mid-word as if that were the message.
fn fitted(reason: &str, max: usize) -> std::borrow::Cow<'_, str> {
    const CUT: &str = " … (cut here; the failed rank's own error line has the rest)";
    debug_assert!(max > CUT.len() + 16, "a reason slot of {max} bytes leaves no room for the text");
    if reason.len() <= max {
        return reason.into();
    }
    let mut end = max.saturating_sub(CUT.len());
    while !reason.is_char_boundary(end) {
        end -= 1;
    }
    let end = reason[..end].rfind(' ').filter(|&s| s > end / 2).unwrap_or(end);
    format!("{}{CUT}", reason[..end].trim_end_matches([' ', ',', ';', ':'])).into()
}

fn write_reason(seg: &Segment, rank: usize, reason: &str) {
    let reason = fitted(reason, segment::REASON_LEN - 1);
    let bytes = reason.as_bytes();
    let len = bytes.len().min(segment::REASON_LEN - 1);
    let dst = seg.ptr(seg.layout.ctl(rank) + segment::REASON);
    // SAFETY: the reason field of our own control block; peers read it only after they
    // see state == FAILED, which is stored (SeqCst) after this write.
    unsafe {
        std::ptr::copy_nonoverlapping(bytes.as_ptr(), dst, len);
        *dst.add(len) = 0;
    }
}

fn read_reason(seg: &Segment, rank: usize) -> String {
    let mut buf = [0u8; segment::REASON_LEN];
    // SAFETY: in bounds; see write_reason for the ordering.
    unsafe {
        std::ptr::copy_nonoverlapping(seg.ptr(seg.layout.ctl(rank) + segment::REASON), buf.as_mut_ptr(), buf.len())
    };
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).into_owned()
}

impl ShmComm {
    /// Fails if any of `ranks` died, failed or finished, if the job is deadlocked around
    /// this wait (the board, `verify::deadlock`), or if the deadline passed.
    pub(crate) fn health(
        &self,
        ranks: &mut dyn Iterator<Item = usize>,
        op: &'static str,
        site: Site,
        started: std::time::Instant,
        waiting: &dyn Fn() -> String,
        ws: &WaitState,
    ) -> Result<()> {
        self.live(op, site)?;
        let on: Vec<usize> = ranks.filter(|&r| r != self.rank).collect();
        for &r in &on {
            let c = self.ctl(r);
            let state = self.seg.u32_at(c + segment::STATE).load(SeqCst);
            let pid = self.seg.u32_at(c + segment::PID).load(SeqCst);
            let reason = match state {
                segment::FAILED => Some(read_reason(&self.seg, r)),
                segment::FINISHED => {
                    let reason = format!(
                        "left {} ({}) while {} still waits on it in {op} at {}",
                        self.name,
                        crate::error::how_left(&self.name),
                        crate::error::rank_text(self.rank, &self.name),
                        site.with_callers()
                    );
                    return Err(crate::verify::failure::peer_left(r, self.name.clone(), reason));
                }
                _ if !sync::pid_alive(pid) => {
                    let reason = format!("its process (pid {pid}) is gone: killed or exited without finishing");
                    return Err(crate::verify::failure::peer_gone(r, self.name.clone(), reason));
                }
                _ => None,
            };
            if let Some(reason) = reason {
                return Err(crate::verify::failure::peer_failed(r, self.name.clone(), reason));
            }
        }
        // A send or receive with this rank itself as the peer waits on this rank: a
        // blocked thread that is its own peer is a cycle of one (`recv(me, ..)` with
        // nothing sent to itself first), named as a deadlock like any other.
        if ws.kind != WAIT_COLL && ws.peer as usize == self.rank {
            self.watch(&[self.rank], op, site, ws)?;
        } else {
            self.watch(&on, op, site, ws)?;
        }
        let waited = started.elapsed();
        if self.cfg.detail && !ws.warned.get() && waited >= (self.timeout() / 2).min(std::time::Duration::from_secs(10))
        {
            ws.warned.set(true);
            crate::sys::say(format!(
                "[rank {}] watchdog: {} waits in {op} at {site} for {:.1}s; {}",
                self.rank,
                self.name,
                waited.as_secs_f64(),
                self.wait_graph()
            ));
        }
        if waited >= self.timeout() {
            return Err(Error::Timeout {
                op,
                comm: self.name.clone(),
                waiting_for: format!(
                    "{}; {}{}",
                    waiting(),
                    self.wait_graph(),
                    crate::verify::deadlock::stall_at_deadline(ws.detector.borrow().stall())
                ),
                secs: self.timeout().as_secs_f64(),
                site,
            });
        }
        Ok(())
    }

    /// Publishes this wait on the job's board and runs the deadlock detector over it.
    fn watch(&self, on: &[usize], op: &'static str, site: Site, ws: &WaitState) -> Result<()> {
        let Some(board) = board::current() else { return Ok(()) };
        let beat = ws.beat.get().wrapping_add(1);
        ws.beat.set(beat);
        let p2p = ws.kind != WAIT_COLL;
        board.publish(&Waiter {
            kind: if board::several() { 0 } else { ws.kind },
            wait_id: board::wait_id(),
            beat,
            moved: self.moved.load(Relaxed),
            peer: if p2p { self.world.get(ws.peer as usize).copied().unwrap_or(usize::MAX) as u32 } else { 0 },
            pid: std::process::id(),
            on: on.iter().filter_map(|&r| self.world.get(r).copied()).collect(),
            comm: self.name.clone(),
            op: op.to_string(),
            file: site.0.file().to_string(),
            line: site.0.line(),
            seq: if p2p { 0 } else { crate::verify::recorder::current() },
            tag: if p2p { ws.tag } else { None },
            inst: 0,
        });
        // Large jobs look at the board less often (each look reads every rank's entry).
        if !beat.is_multiple_of(1 + board.size() as u32 / 64) {
            return Ok(());
        }
        let now = std::time::Instant::now();
        let state = |pid: u32| sync::pid_state(pid);
        let Some(v) = ws.detector.borrow_mut().step(board.me, &board.snapshot(), now, &state) else {
            ws.verdict_at.set(None);
            return Ok(());
        };
        match crate::verify::deadlock::verdict_error(v, board.me, op, &self.name, site, &ws.verdict_at, now) {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// Publishes what this rank is blocked on (read by peers' watchdogs).
    /// Also counts this thread blocked for the job's board (`clear_wait` ends it).
    pub(crate) fn mark_wait(&self, kind: u32, peer: u32, op: &str, site: Site) {
        board::begin();
        let base = self.ctl(self.rank) + segment::WAIT;
        let word = self.seg.u32_at(base);
        word.store(0, SeqCst);
        let body = WaitRecord::encode_body(peer, op, site);
        // SAFETY: our own wait record; readers check the kind word before and after.
        unsafe { std::ptr::copy_nonoverlapping(body.as_ptr(), self.seg.ptr(base + 4), body.len()) };
        word.store(kind, SeqCst);
    }

    pub(crate) fn clear_wait(&self) {
        self.seg.u32_at(self.ctl(self.rank) + segment::WAIT).store(0, SeqCst);
        board::end();
    }

    /// Rank r's wait record (kind 0 if not blocked, or if it changed while being read).
    pub(crate) fn read_wait(&self, r: usize) -> WaitRecord {
        let base = self.ctl(r) + segment::WAIT;
        let kind = self.seg.u32_at(base).load(SeqCst);
        let mut rec = [0u8; WAIT_LEN];
        // SAFETY: in bounds; a torn read is caught by re-reading the kind word below.
        unsafe { std::ptr::copy_nonoverlapping(self.seg.ptr(base), rec.as_mut_ptr(), rec.len()) };
        if kind == 0 || self.seg.u32_at(base).load(SeqCst) != kind {
            return WaitRecord::default();
        }
        WaitRecord::decode(kind, &rec)
    }

    /// The wait-for graph of this communicator, in words (see `verify::watchdog`).
    pub(crate) fn wait_graph(&self) -> String {
        let ranks: Vec<RankWait> = (0..self.n)
            .map(|r| {
                let pid = self.seg.u32_at(self.ctl(r) + segment::PID).load(SeqCst);
                if r != self.rank && sync::pid_stopped(pid) {
                    return RankWait::Stopped;
                }
                let rec = self.read_wait(r);
                match rec.kind {
                    0 => match self.seg.u32_at(self.ctl(r) + segment::STATE).load(SeqCst) {
                        segment::FINISHED => RankWait::Left,
                        segment::FAILED => RankWait::Failed,
                        _ => RankWait::Running,
                    },
                    WAIT_COLL => {
                        let behind = (0..self.n)
                            .filter(|&q| q != r)
                            .filter(|&q| {
                                (self.seg.u32_at(self.ctl(q) + segment::EPOCH).load(SeqCst).wrapping_sub(rec.peer)
                                    as i32)
                                    < 0
                            })
                            .collect();
                        RankWait::Blocked { rec, on: behind }
                    }
                    // A receive from any source waits on every other rank (any one may send).
                    _ if rec.peer == crate::verify::deadlock::ANY_PEER => {
                        let on = (0..self.n).filter(|&q| q != r).collect();
                        RankWait::Blocked { rec, on }
                    }
                    _ => {
                        let on = vec![rec.peer as usize];
                        RankWait::Blocked { rec, on }
                    }
                }
            })
            .collect();
        describe_graph(&self.name, &ranks)
    }

    /// Publishes this rank's op record of `parity`: the 32-byte key every time, the call
    /// site only when it differs from the last one written to that parity (the ops of a
    /// loop rewrite 32 bytes, not 256).
    pub(crate) fn write_fp(&self, parity: u32, op: &Op) {
        self.write_fp_key(parity, op, &op.key());
    }

    /// `write_fp` with the op's key already made.
    pub(crate) fn write_fp_key(&self, parity: u32, op: &Op, key: &[u8; KEY_LEN]) {
        let base = self.ctl(self.rank) + segment::FP + parity as usize * segment::FP_LEN;
        // SAFETY: our own op record of this parity; peers read it only after they see our
        // epoch store (SeqCst) that follows.
        unsafe { std::ptr::copy_nonoverlapping(key.as_ptr(), self.seg.ptr(base), KEY_LEN) };
        let file = op.site.0.file();
        let tag = ((file.len() as u64) << 32) | op.site.0.line() as u64;
        let (fp, ft) = &self.last_site[parity as usize];
        if fp.load(Relaxed) != file.as_ptr() as u64 || ft.load(Relaxed) != tag {
            let site = op.site_part();
            // SAFETY: the site part of the same record, inside its FP_LEN bytes (`site_part`
            // is RECORD_LEN - KEY_LEN long, and FP_LEN == RECORD_LEN), under the same rule.
            unsafe { std::ptr::copy_nonoverlapping(site.as_ptr(), self.seg.ptr(base + KEY_LEN), site.len()) };
            fp.store(file.as_ptr() as u64, Relaxed);
            ft.store(tag, Relaxed);
        }
    }

    pub(crate) fn read_fp(&self, r: usize, parity: u32) -> [u8; RECORD_LEN] {
        let mut rec = [0u8; RECORD_LEN];
        let src = self.seg.ptr(self.ctl(r) + segment::FP + parity as usize * segment::FP_LEN);
        // SAFETY: rank r wrote this record before arriving at the epoch we waited for,
        // and will not rewrite this parity before we arrive at the next one.
        unsafe { std::ptr::copy_nonoverlapping(src, rec.as_mut_ptr(), rec.len()) };
        rec
    }

    /// The agreement check of `verify`, on the records peers left in the segment: each
    /// peer's key is compared in place (32 bytes), and whole records are read only for
    /// the peers that disagree, to name their calls.
    pub(crate) fn check_fps(&self, parity: u32, cx: &Op) -> Result<()> {
        let key = cx.key();
        let differs = |r: usize| {
            let src = self.seg.ptr(self.ctl(r) + segment::FP + parity as usize * segment::FP_LEN);
            // SAFETY: as in read_fp; only the key is read.
            unsafe { std::slice::from_raw_parts(src as *const u8, KEY_LEN) != key }
        };
        if !(0..self.n).any(|r| r != self.rank && differs(r)) {
            return Ok(());
        }
        let peers = (0..self.n).filter(|&r| r != self.rank && differs(r)).map(|r| (r, self.read_fp(r, parity)));
        crate::verify::agreement(&self.name, self.rank, cx, peers)
    }
}

#[cfg(test)]
mod tests {
    use super::fitted;

    /// A reason that fits is kept whole; a longer one is cut at a word boundary, never
    /// inside a character, within the limit, saying it was cut.
    #[test]
    fn a_long_reason_is_cut_at_a_word_and_says_so() {
        assert_eq!(fitted("deadlock: rank 0 waits", 319), "deadlock: rank 0 waits");
        let long = "the tags differ: rank 1 sends rank 0 tag 11 → ".repeat(12);
        for max in [100, 200, 319] {
            let f = fitted(&long, max);
            assert!(f.len() <= max, "{} > {max}", f.len());
            assert!(f.ends_with("the failed rank's own error line has the rest)"), "{f}");
            let kept = f.split(" … (cut here").next().unwrap();
            assert!(long.starts_with(kept), "{kept:?}");
            assert!(long[kept.len()..].starts_with([' ', ',', ';', ':']), "cut mid-word: {kept:?}");
        }
        // No space to cut at, and two-byte characters across the limit: cut between
        // characters, still within it and saying so.
        let word = "é".repeat(400);
        for max in [100, 101, 319] {
            let f = fitted(&word, max);
            assert!(f.len() <= max && f.starts_with("éé") && f.ends_with("has the rest)"), "{max}: {f}");
        }
        assert_eq!(fitted(&word[..318], 318), &word[..318]);
    }
}
