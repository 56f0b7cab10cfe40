//! Surviving a rank's death on shared memory (ULFM's vocabulary): who is gone, revoking a
//! communicator, a fault-tolerant agreement, and shrinking to the live ranks.
//!
//! - **Gone** is read from each member's control block: `FAILED` (it said so), or a
//!   process that no longer exists (`kill -9`, a crash; a zombie counts) without having
//!   finished.
//! - **Revoke** sets the header word `REVOKED` and wakes every waiter; every op of every
//!   member checks it on entry and in its health check, so blocked ranks learn within one
//!   wait slice (50 ms) and the next op fails at once.
//! - **Agree** runs through the job's store, which lives in the launcher and outlives any
//!   rank: each live rank posts its flag under the agreement's key, waits until every
//!   member has posted or is gone, and proposes (AND of the flags, members without a
//!   flag). The first proposal is written with one compare-and-set and every rank returns
//!   that one, so all live ranks get the same answer even when ranks die during the call.
//! - **Shrink** is an agreement whose failed set says who is left out, then a new segment
//!   among the others alone (`ShmComm::connect`), renumbered in rank order.

use super::{segment, sync, ShmComm};
use crate::backend::Backend;
use crate::error::{Error, Result, Site};
use crate::op::Op;
use std::sync::atomic::Ordering::{Relaxed, SeqCst};
use std::sync::Arc;
use std::time::{Duration, Instant};

impl ShmComm {
    /// Whether member `r` is gone: it marked itself failed, or its process ended without
    /// finishing.
    pub(super) fn gone(&self, r: usize) -> bool {
        let c = self.ctl(r);
        match self.seg.u32_at(c + segment::STATE).load(SeqCst) {
            segment::FAILED => true,
            segment::FINISHED => false,
            _ => !sync::pid_alive(self.seg.u32_at(c + segment::PID).load(SeqCst)),
        }
    }

    /// `Err(Revoked)` once a member revoked this communicator (one load of a line nobody
    /// writes until then).
    pub(super) fn live(&self, op: &'static str, site: Site) -> Result<()> {
        match self.seg.u32_at(segment::REVOKED).load(Relaxed) {
            0 => Ok(()),
            by => Err(Error::Revoked { op, comm: self.name.clone(), by: by as usize - 1, site }),
        }
    }

    /// Whether a member revoked this communicator or is gone: its unreceived messages are
    /// then the failure's leftovers, not the program's mistake.
    pub(super) fn broken(&self) -> bool {
        self.seg.u32_at(segment::REVOKED).load(SeqCst) != 0 || (0..self.n).any(|r| r != self.rank && self.gone(r))
    }

    pub(super) fn failed(&self) -> Vec<usize> {
        (0..self.n).filter(|&r| r != self.rank && self.gone(r)).collect()
    }

    pub(super) fn revoke_now(&self) {
        let _ = self.seg.u32_at(segment::REVOKED).compare_exchange(0, self.rank as u32 + 1, SeqCst, SeqCst);
        sync::futex_wake_all(self.seg.u32_at(segment::GEN));
        for r in 0..self.n {
            sync::futex_wake_all(self.seg.u32_at(self.ctl(r) + segment::EPOCH));
            sync::futex_wake_all(self.seg.u32_at(self.ctl(r) + segment::BELL));
        }
    }

    /// The agreement numbered `call` on this communicator: (AND of the live ranks'
    /// flags, the members that took no part), the same on every live rank.
    pub(super) fn agreement(&self, cx: &Op, flag: bool, call: u64) -> Result<(bool, Vec<usize>)> {
        if self.n == 1 {
            return Ok((flag, Vec::new()));
        }
        let store = self.store.as_ref().ok_or_else(|| Error::backend("shm", "an agreement needs the job's store"))?;
        let key = format!("ft/{}/{call}", self.id);
        // The call's kind travels with the flag: an `agree` on one rank meeting a `shrink`
        // on another (the n-th of either, on one communicator) is a mismatch, not a pair.
        let kinds = ["agree", "shrink"];
        let kind = kinds.iter().position(|&k| k == cx.name).unwrap_or(0) as u8;
        store.set(&format!("{key}/v{}", self.rank), &[flag as u8, kind])?;
        let decision = format!("{key}/decision");
        let mut flags: Vec<Option<bool>> = vec![None; self.n];
        flags[self.rank] = Some(flag);
        let (start, mut pause) = (Instant::now(), Duration::from_micros(200));
        loop {
            if let Some(d) = store.get_within(&decision, Duration::ZERO)? {
                return decode(&d, self.n);
            }
            let mut waiting = Vec::new();
            for (r, f) in flags.iter_mut().enumerate().filter(|(_, f)| f.is_none()) {
                // (Whether it is gone or finished is read before its flag: a rank that
                // posted its flag, met a mismatch and finished between a read of the flag
                // and a look at its state would otherwise be taken for one that never
                // joined, and left out of a shrink it took part in.)
                let left = self.gone(r) || self.finished(r);
                match store.get_within(&format!("{key}/v{r}"), Duration::ZERO)? {
                    Some(v) if v.get(1).is_some_and(|&k| k != kind) => {
                        let theirs = kinds.get(usize::from(v[1])).copied().unwrap_or("another call");
                        return Err(Error::Mismatch {
                            comm: self.name.clone(),
                            msg: format!(
                                "rank {} called {} at {} where rank {r} called {theirs} (its agreement or shrink \
                                 #{} on this communicator): every live rank must make the same recovery call",
                                self.rank,
                                cx.name,
                                cx.site,
                                call + 1
                            ),
                        });
                    }
                    Some(v) => *f = Some(v.first() == Some(&1)),
                    None if left => {}
                    None => waiting.push(r),
                }
            }
            if waiting.is_empty() {
                let all = flags.iter().flatten().all(|&f| f);
                let out: Vec<usize> = (0..self.n).filter(|&r| flags[r].is_none()).collect();
                let d = store.compare_set(&decision, b"", &encode(all, &out))?;
                return decode(&d, self.n);
            }
            if start.elapsed() >= self.timeout() {
                return Err(Error::Timeout {
                    op: cx.name,
                    comm: self.name.clone(),
                    waiting_for: format!(
                        "rank(s) {waiting:?}, alive, never joined the agreement (every live rank must call it)"
                    ),
                    secs: self.timeout().as_secs_f64(),
                    site: cx.site,
                });
            }
            std::thread::sleep(pause);
            pause = (pause * 2).min(Duration::from_millis(5));
        }
    }

    fn finished(&self, r: usize) -> bool {
        self.seg.u32_at(self.ctl(r) + segment::STATE).load(SeqCst) == segment::FINISHED
    }

    /// The communicator of the ranks the agreement numbered `call` found alive, and the
    /// ranks it left out.
    pub(super) fn shrunk(
        &self,
        cx: &Op,
        call: u64,
        name: &dyn Fn(&[usize]) -> String,
    ) -> Result<(Box<dyn Backend>, Vec<usize>)> {
        let (_, out) = self.agreement(cx, true, call)?;
        let live: Vec<usize> = (0..self.n).filter(|r| !out.contains(r)).collect();
        let rank = live.iter().position(|&r| r == self.rank).ok_or_else(|| {
            Error::backend("shm", format!("rank {} was counted out of the shrink of {}", self.rank, self.name))
        })?;
        let world: Arc<[usize]> = live.iter().map(|&r| self.world[r]).collect();
        let dead = || live.iter().copied().find(|&r| r != self.rank && self.gone(r));
        let c = ShmComm::connect_watched(
            &format!("{}.s{call}", self.id),
            &name(&live),
            rank,
            live.len(),
            world,
            self.cfg.clone(),
            self.store.clone(),
            Some((&dead, &self.name)),
        )?;
        c.set_timeout(self.timeout());
        Ok((Box::new(c), out))
    }
}

/// An agreement's decision on the store: the flag, then each rank left out (u32 each).
fn encode(flag: bool, out: &[usize]) -> Vec<u8> {
    let mut v = vec![flag as u8];
    out.iter().for_each(|&r| v.extend_from_slice(&(r as u32).to_le_bytes()));
    v
}

fn decode(d: &[u8], n: usize) -> Result<(bool, Vec<usize>)> {
    let bad = || Error::backend("shm", "a malformed agreement in the job's store");
    let (&flag, rest) = d.split_first().ok_or_else(bad)?;
    if rest.len() % 4 != 0 {
        return Err(bad());
    }
    let out: Vec<usize> = rest.chunks(4).map(|c| u32::from_le_bytes(c.try_into().expect("4 bytes")) as usize).collect();
    if out.iter().any(|&r| r >= n) {
        return Err(bad());
    }
    Ok((flag == 1, out))
}

#[cfg(test)]
mod tests {
    #[test]
    fn decisions_read_back_as_written() {
        let d = super::encode(true, &[1, 5]);
        assert_eq!(super::decode(&d, 8).unwrap(), (true, vec![1, 5]));
        assert_eq!(super::decode(&super::encode(false, &[]), 2).unwrap(), (false, vec![]));
        assert!(super::decode(&d, 4).is_err());
        assert!(super::decode(&[1, 2, 3], 4).is_err());
        assert!(super::decode(&[], 4).is_err());
    }
}
