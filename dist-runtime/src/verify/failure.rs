//! Failures every peer must hear of: the panic capture, and the failure notice each live
//! backend registers, so the typed layer and the entry runner tell every transport at
//! once without naming any of them.

use std::sync::{Mutex, Once};

static LAST_PANIC: Mutex<Option<String>> = Mutex::new(None);

/// The message of the last panic in this process (for failure reports).
pub(crate) fn last_panic() -> String {
    LAST_PANIC.lock().unwrap_or_else(|p| p.into_inner()).clone().unwrap_or_else(|| "panicked".into())
}

/// Records every panic's message and location (then runs the previous hook), so a rank's
/// failure notice says why it failed.
pub(crate) fn install_panic_hook() {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        let prev = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let payload = info
                .payload()
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| info.payload().downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "Box<dyn Any>".into());
            let at = info.location().map(|l| format!(" at {}:{}", l.file(), l.line())).unwrap_or_default();
            *LAST_PANIC.lock().unwrap_or_else(|p| p.into_inner()) = Some(format!("panicked{at}: {payload}"));
            prev(info)
        }));
    });
}

/// A backend's way to tell its peers that this rank failed, and why. Returns false once
/// the communicator it belongs to is gone (the notice is then dropped).
pub(crate) type Notice = Box<dyn Fn(&str) -> bool + Send>;

static NOTICES: Mutex<Vec<Notice>> = Mutex::new(Vec::new());

/// Registers a live communicator's failure notice (every backend does, at creation).
pub(crate) fn register(notice: Notice) {
    let mut all = NOTICES.lock().unwrap_or_else(|p| p.into_inner());
    all.push(notice);
}

/// Whether an op of this rank reported a peer's failure: the rank then stops because a
/// peer failed (exit code 3), whatever its entry made of the error (a `String` keeps no
/// type), so the launcher never takes it for the cause.
static SAW_PEER_FAILURE: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// The error for a peer's failure, remembered for the rank's exit code.
pub(crate) fn peer_failed(rank: usize, comm: String, reason: String) -> crate::error::Error {
    SAW_PEER_FAILURE.store(true, std::sync::atomic::Ordering::SeqCst);
    crate::error::Error::PeerFailed { rank, comm, reason }
}

/// The program recovered from the peer failures it saw (`Comm::shrink` succeeded): a later
/// error is this rank's own again, not a peer's failure passed on.
pub(crate) fn recovered() {
    SAW_PEER_FAILURE.store(false, std::sync::atomic::Ordering::SeqCst);
}

/// Messages that reached this rank and were never received, from the communicators it
/// has dropped (one line per sender call site).
static UNRECEIVED: Mutex<Vec<String>> = Mutex::new(Vec::new());

pub(crate) fn record_unreceived(lines: Vec<String>) {
    if !lines.is_empty() {
        UNRECEIVED.lock().unwrap_or_else(|p| p.into_inner()).extend(lines);
    }
}

/// Takes what `record_unreceived` gathered.
pub(crate) fn take_unreceived() -> Vec<String> {
    std::mem::take(&mut *UNRECEIVED.lock().unwrap_or_else(|p| p.into_inner()))
}

/// The rank this rank's failure is due to, as the launcher's store key prefix (`left`: it
/// returned from its entry while this rank waited on it, and exited 0; `cause`: a
/// deadlock detector named it), its world rank, and the words. The first one counts.
static NAMED: Mutex<Option<(&'static str, usize, String)>> = Mutex::new(None);

fn name_cause(key: &'static str, world_rank: usize, text: String) {
    NAMED.lock().unwrap_or_else(|p| p.into_inner()).get_or_insert((key, world_rank, text));
}

/// The error for a peer that returned from its entry while this rank waits on it.
pub(crate) fn peer_left(rank: usize, comm: String, reason: String) -> crate::error::Error {
    let e = peer_failed(rank, comm, reason);
    if let crate::error::Error::PeerFailed { rank, comm, .. } = &e {
        if let Some(w) = crate::error::world_rank_in(comm, *rank) {
            name_cause("left", w, e.to_string());
        }
    }
    e
}

/// The error for a peer whose process is gone without a word (killed, or an `exit()` or
/// abort inside its entry): the launcher is told which rank it was, since its exit status
/// may read as success (`exit(0)`) or be mpirun's to see.
pub(crate) fn peer_gone(rank: usize, comm: String, reason: String) -> crate::error::Error {
    let e = peer_failed(rank, comm, reason);
    if let crate::error::Error::PeerFailed { rank, comm, .. } = &e {
        if let Some(w) = crate::error::world_rank_in(comm, *rank) {
            name_cause("cause", w, e.to_string());
        }
    }
    e
}

/// A deadlock (or a stopped rank) named by this rank's detector, whose cause is another
/// rank (world rank `culprit`): this rank stops as that failure's victim (exit code 3),
/// and the launcher is told which rank caused it (the culprit may be stopped, or may
/// have heard of this rank's exit before its own detector spoke).
pub(crate) fn deadlock_victim(culprit: usize, story: &str) {
    SAW_PEER_FAILURE.store(true, std::sync::atomic::Ordering::SeqCst);
    name_cause("cause", culprit, story.to_string());
}

/// Takes what `peer_left` or `deadlock_victim` recorded: (store key prefix, world rank,
/// words).
pub(crate) fn take_named() -> Option<(&'static str, usize, String)> {
    NAMED.lock().unwrap_or_else(|p| p.into_inner()).take()
}

static FAILED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Whether this rank has marked itself failed (its peers were told).
pub(crate) fn failed() -> bool {
    FAILED.load(std::sync::atomic::Ordering::SeqCst)
}

/// Whether this rank has seen a peer's failure.
pub(crate) fn saw_peer_failure() -> bool {
    SAW_PEER_FAILURE.load(std::sync::atomic::Ordering::SeqCst)
}

static POISONED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
static POISON: Mutex<String> = Mutex::new(String::new());

/// Every op of this process from now on fails with `reason`, and so does the rank's
/// end: the job was found mixed with another (ranks started by hand on one port).
pub(crate) fn poison(reason: &str) {
    *POISON.lock().unwrap_or_else(|p| p.into_inner()) = reason.to_string();
    POISONED.store(true, std::sync::atomic::Ordering::SeqCst);
}

/// The error every op returns once [`poison`] was called.
#[inline]
pub(crate) fn poisoned() -> Option<crate::error::Error> {
    if !POISONED.load(std::sync::atomic::Ordering::Relaxed) {
        return None;
    }
    Some(crate::error::Error::Env(POISON.lock().unwrap_or_else(|p| p.into_inner()).clone()))
}

/// Marks this rank failed with `reason` in every communicator it belongs to, on every
/// backend, so peers stop waiting on it at once instead of at their deadline. Whether
/// any communicator heard it (none: this rank has joined none yet).
pub(crate) fn mark_failed(reason: &str) -> bool {
    FAILED.store(true, std::sync::atomic::Ordering::SeqCst);
    let mut all = NOTICES.lock().unwrap_or_else(|p| p.into_inner());
    all.retain(|notify| notify(reason));
    !all.is_empty()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    #[test]
    fn every_live_notice_hears_and_dead_ones_are_dropped() {
        let heard = Arc::new(AtomicUsize::new(0));
        let live = heard.clone();
        register(Box::new(move |r| {
            assert_eq!(r, "boom");
            live.fetch_add(1, Ordering::SeqCst);
            true
        }));
        let dead = Arc::new(AtomicUsize::new(0));
        let d = dead.clone();
        register(Box::new(move |_| {
            d.fetch_add(1, Ordering::SeqCst);
            false
        }));
        mark_failed("boom");
        mark_failed("boom");
        assert_eq!(heard.load(Ordering::SeqCst), 2);
        assert_eq!(dead.load(Ordering::SeqCst), 1, "a notice that reports its communicator gone is dropped");
    }
}
