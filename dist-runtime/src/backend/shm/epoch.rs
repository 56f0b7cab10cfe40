//! The epoch barrier every collective step ends with: arrive at `epoch + 1` in this
//! rank's own epoch word, wait (spin, yield, then futex) until every member's word is
//! there, and check the op records published with the first step. Slot parity follows the epoch. See README.md.

use super::{segment, sync, ShmComm};
use crate::error::Result;
use crate::op::Op;
use crate::verify::watchdog::WAIT_COLL;
use std::sync::atomic::Ordering::SeqCst;
use sync::Bell;

impl ShmComm {
    /// Arrives at `epoch + 1` and waits for every peer to arrive there too.
    /// Before arriving, publishes `fp` (first step of a collective) and after the wait
    /// checks every peer published an agreeing one.
    pub(crate) fn sync(&self, epoch: &mut u32, cx: &Op, fp: bool) -> Result<()> {
        let next = epoch.wrapping_add(1);
        if fp && self.cfg.check {
            self.write_fp(next % 2, cx);
        }
        // Each rank's own epoch word is its arrival: a waiter reads its peers' words
        // (a peer's arrival is one cache line from it, where a central counter took
        // two), and an arrival that sees every peer there bumps the generation word and
        // wakes its sleepers with one syscall. Of two ranks arriving last at once, at
        // least one sees the other (both store, then load, sequentially consistent).
        self.seg.u32_at(self.ctl(self.rank) + segment::EPOCH).store(next, SeqCst);
        *epoch = next;
        self.barriers.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let gen = self.gen_bell();
        // Peers below `seen` have arrived (words only move forward): a poll reads the
        // first peer not seen there yet, not every peer's line again.
        let seen = std::cell::Cell::new(0);
        let reached = || {
            let mut q = seen.get();
            while q < self.n {
                if q != self.rank
                    && (self.seg.u32_at(self.ctl(q) + segment::EPOCH).load(SeqCst).wrapping_sub(next) as i32) < 0
                {
                    seen.set(q);
                    return false;
                }
                q += 1;
            }
            seen.set(q);
            true
        };
        if reached() {
            // Sleepers only: the word changes for them (a sleeper's futex wait returns at
            // once if it moved after the sleeper's last look); an RMW on this shared line
            // per barrier would cost every completer a cache-line transfer.
            if gen.sleepers.load(SeqCst) > 0 {
                gen.ring();
            }
        } else {
            let behind = || {
                (0..self.n).filter(move |&q| {
                    q != self.rank
                        && (self.seg.u32_at(self.ctl(q) + segment::EPOCH).load(SeqCst).wrapping_sub(next) as i32) < 0
                })
            };
            let waiting = || {
                let who: Vec<String> = behind().map(|q| q.to_string()).collect();
                format!("rank {} waits in {} for rank(s) {} to reach the same call", self.rank, cx.name, who.join(", "))
            };
            let ws = super::records::WaitState::new(WAIT_COLL, 0);
            let blocked = std::cell::Cell::new(false);
            let started = std::time::Instant::now();
            let res = sync::wait_on(
                &gen,
                self.pace(),
                || {
                    // Bytes of this rank's sends still queued move on while it waits
                    // here (MPI's progress rule): its receiver may be in `recv`, not yet
                    // here. Moving them is work: the wait keeps yielding, not sleeping.
                    if super::p2p::push_pending(self) {
                        sync::worked();
                    }
                    Ok(reached())
                },
                || self.health(&mut behind(), cx.name, cx.site, started, &waiting, &ws),
                || {
                    blocked.set(true);
                    self.mark_wait(WAIT_COLL, next, cx.name, cx.site);
                },
            );
            if blocked.get() {
                self.clear_wait();
            }
            crate::verify::deadlock::settle(res)?;
        }
        if fp && self.cfg.check {
            self.check_fps(next % 2, cx)?;
        }
        Ok(())
    }

    pub(crate) fn gen_bell(&self) -> Bell<'_> {
        Bell { word: self.seg.u32_at(segment::GEN), sleepers: self.seg.u32_at(segment::GEN_SLEEPERS) }
    }
}
