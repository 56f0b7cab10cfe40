//! Futex waits on words in the shared segment, with a spin phase sized to the machine.
//!
//! A waiter spins while the job has no more ranks than cores; otherwise it sleeps in the
//! kernel at once, so an oversubscribed rank never burns the core its peer needs.
//! Wake-ups are never lost: a waiter registers in the word's `sleepers` count, then
//! re-reads the word and re-checks its condition before `FUTEX_WAIT` (which itself
//! returns at once if the word moved); a writer stores, then wakes if anyone sleeps.

use std::sync::atomic::{
    AtomicU32,
    Ordering::{Relaxed, SeqCst},
};
use std::time::{Duration, Instant};

/// Sleeps while `*word == expected`, at most `timeout`. Not private: the word is shared
/// between processes.
pub(crate) fn futex_wait(word: &AtomicU32, expected: u32, timeout: Duration) {
    let ts =
        libc::timespec { tv_sec: timeout.as_secs() as libc::time_t, tv_nsec: timeout.subsec_nanos() as libc::c_long };
    // SAFETY: `word` is a valid, aligned u32 for the duration of the call; the kernel
    // only reads it. EAGAIN/EINTR/ETIMEDOUT are all "re-check and carry on".
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAIT,
            expected,
            &ts as *const libc::timespec,
            std::ptr::null::<u32>(),
            0u32,
        );
    }
}

/// Wakes every thread (of any process) sleeping on `word`.
pub(crate) fn futex_wake_all(word: &AtomicU32) {
    // SAFETY: as above; FUTEX_WAKE only uses the address as a key.
    unsafe {
        libc::syscall(libc::SYS_futex, word.as_ptr(), libc::FUTEX_WAKE, i32::MAX, std::ptr::null::<u32>(), 0, 0);
    }
}

/// A futex word plus the count of its sleepers, so writers skip the syscall when nobody waits.
pub(crate) struct Bell<'a> {
    pub word: &'a AtomicU32,
    pub sleepers: &'a AtomicU32,
}

impl Bell<'_> {
    /// Bumps the word and wakes sleepers.
    pub(crate) fn ring(&self) {
        self.word.fetch_add(1, SeqCst);
        if self.sleepers.load(SeqCst) > 0 {
            futex_wake_all(self.word);
        }
    }
}

/// How a waiter waits before it sleeps: `spins` polls, then `sched_yield` polls for
/// `yield_budget` (`DIST_SPIN`, `DIST_YIELD_US`; by default long enough to cover a
/// peer's copy of a chunk, so streaming ops don't pay a futex sleep and wake-up per
/// chunk: docs/performance.md, "Figures behind code choices").
///
/// With `awake` (a host with more ranks than cores, `DIST_SPIN` unset): the host's count
/// of ranks awake and its cores; a waiter spins [`IDLE_SPINS`] polls first while the
/// count is at most the cores, as ranks that fit their cores do (the others sleep in
/// waits: two ranks exchanging messages while six wait in a barrier). Yielding at once
/// slows each side's copies and costs a helping sender its share, so a ping-pong at 4
/// ranks on 2 cores measured faster this way (docs/performance.md, "Figures behind code
/// choices").
#[derive(Clone, Copy, Debug)]
pub(crate) struct Pace<'a> {
    pub spins: u32,
    pub yield_budget: Duration,
    pub awake: Option<(&'a AtomicU32, usize)>,
}

/// Spin polls of a waiter on an oversubscribed host while few enough ranks are awake
/// (the default of a host whose ranks fit its cores).
pub(crate) const IDLE_SPINS: u32 = 1_000;

/// Spin polls between two `sched_yield`s of the spin phase (a few µs: docs/performance.md,
/// "Figures behind code choices").
const SPIN_BURST: u32 = 128;

/// How long a waiter sleeps before it looks at its peers' health and the deadline.
pub(crate) const SLICE: Duration = Duration::from_millis(50);

thread_local! {
    static WORKED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Says that the current poll of a wait did work of its own (copied data for a peer), so
/// the wait's yield budget starts again (`wait_on`).
pub(crate) fn worked() {
    WORKED.with(|w| w.set(true));
}

fn take_worked() -> bool {
    WORKED.with(|w| w.replace(false))
}

/// Waits until `poll` says done. `poll` is re-run after every wake-up; `check` runs
/// every `SLICE` of sleep (peer health, deadline) and ends the wait with its error.
/// `block` runs once, just before the first sleep (the waiter publishes what it waits
/// on there, so the fast path pays nothing for the watchdog).
pub(crate) fn wait_on<E>(
    bell: &Bell<'_>,
    pace: Pace<'_>,
    mut poll: impl FnMut() -> Result<bool, E>,
    mut check: impl FnMut() -> Result<(), E>,
    block: impl FnOnce(),
) -> Result<(), E> {
    let mut block = Some(block);
    let spins = match pace.awake {
        Some((awake, cores)) if pace.spins == 0 && (awake.load(Relaxed) as i32) <= cores as i32 => IDLE_SPINS,
        _ => pace.spins,
    };
    for i in 1..=spins {
        if poll()? {
            return Ok(());
        }
        // A spin longer than a short op yields now and then: ranks the scheduler put on
        // one CPU (another process busy on the other) would otherwise each burn the whole
        // spin while the peer it waits for cannot run (measured with 2 ranks on 2 cores
        // and a busy loop on one: docs/performance.md, "Steadiness: a busy CPU, and a
        // job's first ops"). Where the CPU is its own, `sched_yield` returns at once.
        if i.is_multiple_of(SPIN_BURST) {
            // SAFETY: sched_yield has no preconditions.
            unsafe { libc::sched_yield() };
        } else {
            std::hint::spin_loop();
        }
    }
    // Then poll with sched_yield: a runnable peer on this core gets it at once (we never
    // hold a core someone needs), and when nobody else wants the core we answer within
    // microseconds instead of paying a futex sleep and wake-up.
    // The budget counts idle polling: a poll that did work of its own (a sender
    // helping its receiver copy, p2p.rs, says so with `worked`) starts it again, so the
    // wait does not go to sleep right after the work while what it waits for is
    // microseconds away. (Not wall time: a poll preempted on a crowded host would look
    // busy, and the wait would never sleep.)
    let mut until = Instant::now() + pace.yield_budget;
    let _ = take_worked();
    loop {
        if poll()? {
            return Ok(());
        }
        let now = Instant::now();
        if take_worked() {
            until = now + pace.yield_budget;
        }
        if now >= until {
            break;
        }
        // SAFETY: sched_yield has no preconditions.
        unsafe { libc::sched_yield() };
    }
    let mut last_check = Instant::now();
    loop {
        bell.sleepers.fetch_add(1, SeqCst);
        let v = bell.word.load(SeqCst);
        let done = poll();
        if !matches!(done, Ok(false)) {
            bell.sleepers.fetch_sub(1, SeqCst);
            return done.map(|_| ());
        }
        if let Some(b) = block.take() {
            b();
        }
        if let Some((awake, _)) = pace.awake {
            awake.fetch_sub(1, Relaxed);
        }
        futex_wait(bell.word, v, SLICE);
        if let Some((awake, _)) = pace.awake {
            awake.fetch_add(1, Relaxed);
        }
        bell.sleepers.fetch_sub(1, SeqCst);
        if last_check.elapsed() >= SLICE {
            if let Err(e) = check() {
                // What we wait for may have arrived just before the peer left (a sender
                // that wrote its last bytes and exited): look once more before failing.
                return if poll()? { Ok(()) } else { Err(e) };
            }
            last_check = Instant::now();
        }
    }
}

/// Waits for another process (`pid`) to end a copy it makes on its own into or out of
/// this one's memory (a point-to-point sender or a broadcast root writing its share, a
/// receiver reading an offered buffer: `p2p.rs`, `coll.rs`), until `done` gives an
/// answer: spins, then yields, then sleeps in 200 µs steps. No deadline: returning while
/// the peer may still copy would hand the caller a buffer another process uses; its copy
/// ends in microseconds unless it stopped, and once it is gone nothing copies any more
/// (then `None`).
pub(crate) fn await_peer<T>(pid: u32, mut done: impl FnMut() -> Option<T>) -> Option<T> {
    let mut polls = 0u32;
    let mut last_look = Instant::now();
    loop {
        if let Some(v) = done() {
            return Some(v);
        }
        polls += 1;
        if polls < 64 {
            std::hint::spin_loop();
            continue;
        }
        if polls < 64 + 4096 {
            std::thread::yield_now();
        } else {
            std::thread::sleep(Duration::from_micros(200));
        }
        if last_look.elapsed() >= Duration::from_millis(10) {
            if !pid_alive(pid) {
                return None;
            }
            last_look = Instant::now();
        }
    }
}

/// Whether process `pid` is stopped (state T: SIGSTOP; t: stopped by a tracer).
pub(crate) fn pid_stopped(pid: u32) -> bool {
    matches!(pid_state(pid), Some('T' | 't'))
}

pub(crate) use crate::sys::{pid_alive, pid_state};

#[cfg(test)]
mod tests {
    use super::*;

    fn bell_pair() -> (AtomicU32, AtomicU32) {
        (AtomicU32::new(0), AtomicU32::new(0))
    }

    #[test]
    fn a_wait_looks_again_before_failing() {
        // The condition came true while we slept, and the peer is gone by the time the
        // health check runs (a sender that wrote its last bytes and exited): success.
        let (w, s) = bell_pair();
        let bell = Bell { word: &w, sleepers: &s };
        let mut polls = 0;
        let r: Result<(), &str> = wait_on(
            &bell,
            Pace { spins: 0, yield_budget: Duration::from_micros(500), awake: None },
            || {
                polls += 1;
                Ok(polls >= 2)
            },
            || Err("peer gone"),
            || {},
        );
        assert_eq!(r, Ok(()));
    }

    #[test]
    fn a_failed_check_ends_a_wait_that_cannot_complete() {
        let (w, s) = bell_pair();
        let bell = Bell { word: &w, sleepers: &s };
        let mut blocked = false;
        let r: Result<(), &str> = wait_on(
            &bell,
            Pace { spins: 10, yield_budget: Duration::from_micros(500), awake: None },
            || Ok(false),
            || Err("peer gone"),
            || blocked = true,
        );
        assert_eq!(r, Err("peer gone"));
        assert!(blocked, "the block hook runs before the first sleep");
    }

    #[test]
    fn a_store_wakes_a_sleeper() {
        let (w, s) = bell_pair();
        std::thread::scope(|sc| {
            let (w, s) = (&w, &s);
            let h = sc.spawn(move || {
                let bell = Bell { word: w, sleepers: s };
                let t = Instant::now();
                let r: Result<(), ()> = wait_on(
                    &bell,
                    Pace { spins: 0, yield_budget: Duration::from_micros(500), awake: None },
                    || Ok(w.load(SeqCst) >= 7),
                    || Ok(()),
                    || {},
                );
                (r, t.elapsed())
            });
            std::thread::sleep(Duration::from_millis(20));
            w.store(7, SeqCst);
            Bell { word: w, sleepers: s }.ring();
            let (r, took) = h.join().unwrap();
            assert_eq!(r, Ok(()));
            assert!(took < Duration::from_secs(5));
        });
    }
}
