//! The epoch barrier every collective step ends with: arrive at `epoch + 1` on the
//! central counter, wait (spin, yield, then futex) for every member, and check the op
//! records published with the first step. Slot parity follows the epoch. See README.md.

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
        // Our own epoch word is for diagnostics (who is behind); the wait itself is on
        // the central counter, so the last arrival wakes everyone with one syscall.
        self.seg.u32_at(self.ctl(self.rank) + segment::EPOCH).store(next, SeqCst);
        *epoch = next;
        self.barriers.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let gen = self.gen_bell();
        let arrived = self.seg.u32_at(segment::ARRIVALS).fetch_add(1, SeqCst).wrapping_add(1);
        if arrived == next.wrapping_mul(self.n as u32) {
            gen.store(next);
        } else {
            let reached = || (gen.word.load(SeqCst).wrapping_sub(next) as i32) >= 0;
            if !reached() {
                let behind = || {
                    (0..self.n).filter(move |&q| {
                        q != self.rank
                            && (self.seg.u32_at(self.ctl(q) + segment::EPOCH).load(SeqCst).wrapping_sub(next) as i32)
                                < 0
                    })
                };
                let waiting = || {
                    let who: Vec<String> = behind().map(|q| q.to_string()).collect();
                    format!(
                        "rank {} waits in {} for rank(s) {} to reach the same call",
                        self.rank,
                        cx.name,
                        who.join(", ")
                    )
                };
                let ws = super::records::WaitState::new(WAIT_COLL, 0);
                let blocked = std::cell::Cell::new(false);
                let started = std::time::Instant::now();
                let res = sync::wait_on(
                    &gen,
                    self.pace(),
                    || Ok(reached()),
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
