//! The one error type of dist.

use std::panic::Location;

/// `{:?}` (what `.unwrap()` and a failed `assert!` print) shows the variant and what
/// `Display` says, so a failing test reads `Timeout: recv at src/step.rs:9 timed out
/// after 3.0s on World: …` rather than the struct with its `Location`.
impl std::fmt::Debug for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kind = match self {
            Error::InvalidArgument { .. } => "InvalidArgument",
            Error::Mismatch { .. } => "Mismatch",
            Error::Timeout { .. } => "Timeout",
            Error::PeerFailed { .. } => "PeerFailed",
            Error::Revoked { .. } => "Revoked",
            Error::Deadlock { .. } => "Deadlock",
            Error::Backend { .. } => "Backend",
            Error::Env(_) => "Env",
            Error::Store { .. } => "Store",
            Error::RankFailed { .. } => "RankFailed",
            Error::Serde { .. } => "Serde",
        };
        write!(f, "{kind}: {self}")
    }
}

/// Result alias used across dist.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong in a communication call.
///
/// Checks that need no peer (lengths, ranks, roots, dtypes) run before any byte moves, so
/// an `InvalidArgument` leaves the communicator usable. A `Mismatch`, `Timeout` or
/// `PeerFailed` means the ranks no longer agree on where they are: treat the
/// communicator as broken and exit.
#[derive(thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An argument breaks the op's contract (a length, a rank or root out of range,
    /// duplicate ranks in a subgroup, `PreMulSum` on integers, …).
    #[error("invalid argument to {op} at {site}: {msg}")]
    InvalidArgument {
        /// The op that refused its arguments.
        op: &'static str,
        /// What is wrong and what to pass instead.
        msg: String,
        /// The caller's source location.
        site: Site,
    },
    /// The ranks of a communicator called different collectives, or the same one with
    /// different arguments, at the same point of their programs.
    #[error("mismatched collective on {comm}: {msg}")]
    Mismatch {
        /// The communicator.
        comm: String,
        /// What each rank called.
        msg: String,
    },
    /// A blocking call did not complete within `DIST_TIMEOUT`.
    #[error("{op} at {site} timed out after {secs:.1}s on {comm}: {waiting_for}")]
    Timeout {
        /// The op that waited.
        op: &'static str,
        /// The communicator.
        comm: String,
        /// Who or what it was waiting for.
        waiting_for: String,
        /// The timeout in force.
        secs: f64,
        /// The caller's source location.
        site: Site,
    },
    /// Another rank died, panicked or returned an error; this rank cannot go on.
    #[error("{}", peer_text(*.rank, .comm, .reason))]
    PeerFailed {
        /// The failed rank, in the communicator's numbering.
        rank: usize,
        /// The communicator.
        comm: String,
        /// What that rank reported, or how it ended.
        reason: String,
    },
    /// A rank revoked the communicator (`Comm::revoke`, after it saw a peer fail): every
    /// op on it fails on every rank from then on, so ranks blocked elsewhere learn of the
    /// failure and can `shrink` it.
    #[error("{op} at {site} on {comm}: the communicator was revoked by {}; shrink it (`shrink()`) to go on with the live ranks", rank_text(*.by, .comm))]
    Revoked {
        /// The op that found it revoked.
        op: &'static str,
        /// The communicator.
        comm: String,
        /// The rank that revoked it, in the communicator's numbering.
        by: usize,
        /// The caller's source location.
        site: Site,
    },
    /// Ranks wait on each other in a cycle (or on a stopped process): none can ever move.
    /// Found by state within about a second, not at the deadline; every rank involved
    /// gets the same story, and the one named as the cause exits as the failure.
    #[error("deadlock detected in {op} at {site} on {comm}: {story}")]
    Deadlock {
        /// The op this rank waited in.
        op: &'static str,
        /// The communicator it waited on.
        comm: String,
        /// This rank's call site.
        site: Site,
        /// Who waits in what, where, on whom (world ranks), and the cycle.
        story: String,
        /// World rank named as the cause (the rank whose wait differs from the rest, or
        /// the stopped one).
        culprit: usize,
        /// Whether this rank is not the culprit (it then exits as a peer's victim, 3).
        victim: bool,
    },
    /// A backend could not be set up or used (a missing library or device, a segment
    /// that cannot be mapped, …).
    #[error("{backend} backend: {msg}")]
    Backend {
        /// Which backend.
        backend: &'static str,
        /// What failed and what to do.
        msg: String,
        /// The underlying error, if any.
        #[source]
        source: Option<Box<dyn std::error::Error + Send + Sync>>,
    },
    /// The environment contract is broken (a malformed or missing variable).
    #[error("environment: {0}")]
    Env(String),
    /// The rendezvous store refused or lost the connection.
    #[error("rendezvous store: {msg}")]
    Store {
        /// What failed.
        msg: String,
        /// The underlying I/O error, if any.
        #[source]
        source: Option<std::io::Error>,
    },
    /// A rank of a launched job failed (from [`launch`](crate::launch())).
    #[error("rank {rank} of {n} failed first ({status}): {message}")]
    RankFailed {
        /// The rank that failed first.
        rank: usize,
        /// How many ranks the job had.
        n: usize,
        /// Its exit status, in words.
        status: String,
        /// The last lines it printed.
        message: String,
    },
    /// A value could not be (de)serialised by an object collective.
    #[error("object collective {op}: {msg}")]
    Serde {
        /// The op.
        op: &'static str,
        /// The serialiser's message.
        msg: String,
    },
}

thread_local! {
    /// Whether an op on this thread has handed its caller a fatal error (as errors leave
    /// ops, through [`Error::with_callers`]).
    static FATAL_HANDED_OUT: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

thread_local! {
    /// The user's call the point-to-point ops on this thread run for, where it is not
    /// the op itself (`sendrecv`, which posts a send and a receive as one batch).
    static USER_OP: std::cell::Cell<Option<&'static str>> = const { std::cell::Cell::new(None) };
}

/// The name to give a point-to-point op (`recv`, `send`, `batch`) in errors and wait
/// records: the user's call it runs for ([`AsUserOp`]), else `op` itself.
pub(crate) fn user_op(op: &'static str) -> &'static str {
    USER_OP.with(|u| u.get()).unwrap_or(op)
}

/// While it lives, the point-to-point ops of this thread are named `name` ([`user_op`]):
/// a deadlock names the `sendrecv` the user wrote, not the receive inside it. (A guard,
/// not a closure, so `#[track_caller]` still reaches the user's line.)
pub(crate) struct AsUserOp(Option<&'static str>);

impl AsUserOp {
    pub(crate) fn new(name: &'static str) -> AsUserOp {
        AsUserOp(USER_OP.with(|u| u.replace(Some(name))))
    }
}

impl Drop for AsUserOp {
    fn drop(&mut self) {
        USER_OP.with(|u| u.set(self.0));
    }
}

thread_local! {
    /// How many errors ops on this thread have handed their callers.
    static HANDED_OUT: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// How many errors ops on this thread have handed their callers so far: a request
/// dropped after one was handed out is dropped by that error's way out.
pub(crate) fn errors_handed_out() -> u64 {
    HANDED_OUT.with(|h| h.get())
}

/// Whether an op on this thread has already handed its caller a fatal error: the rank is
/// failing, and what fails after (a request dropped as that error leaves the caller's
/// function) is its consequence.
pub(crate) fn fatal_handed_out() -> bool {
    FATAL_HANDED_OUT.with(|f| f.get())
}

/// A source location (`file:line:col`) of a communication call, and, once an error has
/// been through the op's exit, the user's calls that led there ("src/grads.rs:17,
/// called from src/main.rs:42") where the program's debug info says so.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Site(pub &'static Location<'static>, pub(crate) Option<&'static str>);

#[cfg(feature = "candle")]
thread_local! {
    /// The user's call an op runs for when the op is reached through code that cannot
    /// carry `#[track_caller]` (a candle op's forward or backward): [`CallerAt`].
    static CALLER_AT: std::cell::Cell<Option<&'static Location<'static>>> = const { std::cell::Cell::new(None) };
}

/// While it lives, ops on this thread name `at` as their call site (the user's line that
/// started a tensor collective, not dist's own code that candle calls back into).
#[cfg(feature = "candle")]
pub(crate) struct CallerAt(Option<&'static Location<'static>>);

#[cfg(feature = "candle")]
impl CallerAt {
    pub(crate) fn new(at: &'static Location<'static>) -> CallerAt {
        CallerAt(CALLER_AT.with(|c| c.replace(Some(at))))
    }
}

#[cfg(feature = "candle")]
impl Drop for CallerAt {
    fn drop(&mut self) {
        CALLER_AT.with(|c| c.set(self.0));
    }
}

impl Site {
    /// The location of the caller (through `#[track_caller]` chains).
    #[track_caller]
    pub fn caller() -> Site {
        // (`Location::caller()` here, in this `#[track_caller]` body: passed on as a
        // function it would name the code that calls it.)
        let here = Location::caller();
        // (Only candle's callbacks set another: without the feature, no read on the
        // per-op path.)
        #[cfg(feature = "candle")]
        let here = CALLER_AT.with(|c| c.get()).unwrap_or(here);
        Site(here, None)
    }

    /// The user's functions that called the one holding this site, innermost first, as
    /// "file:line" joined by ", called from " (`None` where unknown).
    pub fn callers(&self) -> Option<&'static str> {
        self.1
    }

    /// This site with the user's calls above it, read from a backtrace of this thread
    /// (taken here: call it where the user's frames are still on the stack, on an error's
    /// way out). Frames of dist, std and other crates are skipped; the walk stops at the
    /// entry point (`#[spmd]`'s wrapper). Unchanged where the binary has no debug info.
    pub(crate) fn with_callers(self) -> Site {
        if self.1.is_some() {
            return self;
        }
        let bt = std::backtrace::Backtrace::force_capture();
        match callers_in(&bt.to_string(), self.0.file(), self.0.line()) {
            Some(c) => Site(self.0, Some(intern(c))),
            None => self,
        }
    }
}

/// Chains are kept for the process's life (errors are few; the same chain is kept once).
fn intern(s: String) -> &'static str {
    static SEEN: std::sync::Mutex<Vec<&'static str>> = std::sync::Mutex::new(Vec::new());
    let mut seen = SEEN.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(&x) = seen.iter().find(|&&x| x == s) {
        return x;
    }
    let x: &'static str = Box::leak(s.into_boxed_str());
    seen.push(x);
    x
}

/// The user's calls above `file:line` in a backtrace's text (std's format: "  N: name"
/// lines, each followed by "at path:line:col" where known), innermost first.
fn callers_in(bt: &str, file: &str, line: u32) -> Option<String> {
    let mut frames: Vec<(String, String, u32)> = Vec::new();
    let mut func = String::new();
    for l in bt.lines() {
        let t = l.trim();
        if let Some(at) = t.strip_prefix("at ") {
            let mut parts = at.rsplitn(3, ':');
            let (_col, ln, path) = (parts.next(), parts.next(), parts.next());
            if let (Some(ln), Some(path)) = (ln.and_then(|x| x.parse::<u32>().ok()), path) {
                frames.push((func.clone(), path.to_string(), ln));
            }
        } else {
            func = t.split_once(": ").map_or(t, |(n, f)| if n.parse::<u32>().is_ok() { f } else { t }).to_string();
        }
    }
    let ours = concat!(env!("CARGO_MANIFEST_DIR"), "/src/");
    let user = |(f, path, _): &&(String, String, u32)| {
        !(path.starts_with("/rustc/")
            || path.contains("/.cargo/registry/")
            || path.contains("/.cargo/git/")
            || path.starts_with(ours)
            || path.contains("/library/std/")
            || path.contains("/library/core/")
            || f.starts_with("dist_runtime::")
            || f.starts_with("std::")
            || f.starts_with("core::"))
    };
    let user: Vec<&(String, String, u32)> = frames.iter().filter(user).collect();
    // Backtraces print paths under the working directory as "./x.rs": the site's own
    // frame says which prefix of the site's path the working directory stands for.
    let bare = |p: &str| p.strip_prefix("./").unwrap_or(p).to_string();
    let same_file = |p: &str| file.ends_with(&bare(p)) || bare(p).ends_with(file);
    // (A request posted at `line` and waited on further down the same function, its
    // `wait_all` the innermost of the user's frames: that function's callers.)
    let here = user
        .iter()
        .position(|(_, p, l)| *l == line && same_file(p))
        .or_else(|| user.first().filter(|(_, p, _)| same_file(p)).map(|_| 0))?;
    let prefix = {
        let b = bare(&user[here].1);
        if user[here].1.starts_with("./") && file.ends_with(&b) {
            file[..file.len() - b.len()].to_string()
        } else {
            String::new()
        }
    };
    let shown = |p: &str| match p.strip_prefix("./") {
        Some(rest) => format!("{prefix}{rest}"),
        None => p.to_string(),
    };
    // The walk stops at the entry: an `#[spmd]` function's generated callers, or above the
    // body of an `#[spmd] fn main` (`__dist_spmd_main`: what calls it is the generated
    // `main`, then the C runtime).
    let mut up: Vec<String> = Vec::new();
    let mut below = &user[here];
    for frame in &user[here + 1..] {
        let (f, p, l) = frame;
        if below.0.contains("__dist_spmd_main") || f.contains("__dist_entry_") || f.contains("__dist_dispatch_") {
            break;
        }
        // (A closure and the function that holds it, `layers.iter_mut().try_fold(x, |h, l|
        // l.forward(&h))`, are two frames at one line: named once.)
        let at = format!("{}:{l}", shown(p));
        if up.last() == Some(&at) {
            below = frame;
            continue;
        }
        up.push(at);
        if up.len() == 4 {
            break;
        }
        below = frame;
    }
    (!up.is_empty()).then(|| up.join(", called from "))
}

impl std::fmt::Display for Site {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.0.file(), self.0.line())?;
        if let Some(c) = self.1 {
            write!(f, ", called from {c}")?;
        }
        Ok(())
    }
}

/// A rank of `comm` as messages name it: "rank 2" on the world, "world rank 5 (rank 1 of
/// Dp{1,5})" in a group, so one sentence never mixes the two numberings.
/// How a rank left communicator `comm` that peers still wait on: the world only as its
/// entry returns; any other communicator also when the rank drops it (a sub-group
/// reassigned in a loop, `self.cube = self.cube.split(..)`).
pub(crate) fn how_left(comm: &str) -> &'static str {
    if comm == "World" {
        "returned from its entry"
    } else {
        "dropped it, or returned from its entry"
    }
}

pub(crate) fn rank_text(rank: usize, comm: &str) -> String {
    match world_rank_in(comm, rank) {
        Some(w) if comm != "World" => format!("world rank {w} (rank {rank} of {comm})"),
        _ => format!("rank {rank}"),
    }
}

/// "rank 2 (of World) failed: …"; in a group, also the world rank, read from the
/// group's name (its members' world ranks, in group order: `Dp{1,5}`): "world rank 5
/// (rank 1 of Dp{1,5}) failed: …".
/// A rank that returned from its entry while peers waited did not fail: "rank 3 (of
/// World) left World (returned from its entry) while …".
fn peer_text(rank: usize, comm: &str, reason: &str) -> String {
    let who = match world_rank_in(comm, rank) {
        Some(w) if comm != "World" => format!("world rank {w} (rank {rank} of {comm})"),
        _ => format!("rank {rank} (of {comm})"),
    };
    if reason.starts_with("left ") {
        format!("{who} {reason}")
    } else {
        format!("{who} failed: {reason}")
    }
}

/// The world rank of rank `rank` of the communicator named `comm` (`World`, or a group
/// named with its members' world ranks in group order: `Dp{1,5}`).
pub(crate) fn world_rank_in(comm: &str, rank: usize) -> Option<usize> {
    if comm == "World" {
        return Some(rank);
    }
    comm.strip_suffix('}')
        .and_then(|s| s.split_once('{'))
        .and_then(|(_, list)| list.split(',').nth(rank))
        .and_then(|w| w.trim().parse::<usize>().ok())
}

impl Error {
    /// A refused argument at the caller's site (through `#[track_caller]`), with the
    /// user's calls above it: it is made while the user's frames are on the stack, as
    /// the op hands it out (counted: [`errors_handed_out`]).
    #[track_caller]
    pub(crate) fn invalid(op: &'static str, msg: impl Into<String>) -> Error {
        HANDED_OUT.with(|h| h.set(h.get() + 1));
        Error::InvalidArgument { op, msg: msg.into(), site: Site::caller().with_callers() }
    }

    /// [`Error::invalid`] at `site`: the user's call an op recorded.
    pub(crate) fn invalid_at(op: &'static str, site: Site, msg: impl Into<String>) -> Error {
        HANDED_OUT.with(|h| h.set(h.get() + 1));
        Error::InvalidArgument { op, msg: msg.into(), site: site.with_callers() }
    }

    pub(crate) fn backend(backend: &'static str, msg: impl Into<String>) -> Error {
        Error::Backend { backend, msg: msg.into(), source: None }
    }

    pub(crate) fn store(msg: impl Into<String>, source: Option<std::io::Error>) -> Error {
        Error::Store { msg: msg.into(), source }
    }

    /// This error with the user's calls above its site (see [`Site::with_callers`]),
    /// where it has a site: called as an error leaves an op, while the user's frames are
    /// still on the stack.
    pub(crate) fn with_callers(self) -> Error {
        HANDED_OUT.with(|h| h.set(h.get() + 1));
        if self.is_fatal() {
            FATAL_HANDED_OUT.with(|f| f.set(true));
        }
        match self {
            Error::InvalidArgument { op, msg, site } => Error::InvalidArgument { op, msg, site: site.with_callers() },
            Error::Timeout { op, comm, waiting_for, secs, site } => {
                Error::Timeout { op, comm, waiting_for, secs, site: site.with_callers() }
            }
            Error::Deadlock { op, comm, site, story, culprit, victim } => {
                Error::Deadlock { op, comm, site: site.with_callers(), story, culprit, victim }
            }
            // (`PeerFailed` and `Revoked` keep the op's own line: naming the callers reads
            // the binary's debug info, which takes a noticeable time the first time
            // (docs/performance.md, "Figures behind code choices"), and survivors
            // recovering from a death are waiting on each other's error.)
            e => e,
        }
    }

    /// Whether this error means the job can't continue (as opposed to a refused argument).
    pub fn is_fatal(&self) -> bool {
        !matches!(self, Error::InvalidArgument { .. } | Error::Serde { .. })
    }

    /// Process exit code the entry runners use for this error: 3 for a rank that stops
    /// because another failed (so launchers can name the first cause), 1 otherwise.
    pub fn exit_code(&self) -> i32 {
        match self {
            Error::PeerFailed { .. } | Error::Revoked { .. } | Error::Deadlock { victim: true, .. } => 3,
            _ => 1,
        }
    }
}

#[cfg(test)]
mod callers_tests {
    use super::callers_in;

    const BT: &str = "   0: std::backtrace::Backtrace::force_capture
             at /rustc/abc/library/std/src/backtrace.rs:312:13
   1: dist_runtime::error::Site::with_callers
             at /work/main/dist-runtime/src/error.rs:150:18
   2: trainer::parallel::grads::sync
             at ./src/parallel/grads.rs:17:5
   3: trainer::step
             at ./src/main.rs:42:9
   4: trainer::main
             at ./src/main.rs:60:5
   5: trainer::__dist_entry_main
             at ./src/main.rs:55:1
   6: dist_runtime::entry::run_rank
             at /work/main/dist-runtime/src/entry.rs:144:19
";

    #[test]
    fn the_users_callers_are_read_from_a_backtrace() {
        assert_eq!(
            callers_in(BT, "src/parallel/grads.rs", 17).as_deref(),
            Some("src/main.rs:42, called from src/main.rs:60")
        );
        // A workspace member's paths: the site names the member's folder, the backtrace not.
        let ws = BT.replace("./src/", "./");
        assert_eq!(
            callers_in(&ws, "tests/parallel/grads.rs", 17).as_deref(),
            Some("tests/main.rs:42, called from tests/main.rs:60")
        );
        // The site called from the entry itself: nothing above it worth naming.
        assert_eq!(callers_in(BT, "src/main.rs", 60), None);
        // An `#[spmd] fn main`: its body is `__dist_spmd_main`; the generated `main` and the
        // C runtime above it are not the user's calls.
        let main_bt = "   0: trainer::helpers::sync
             at ./src/helpers.rs:9:5
   1: trainer::__dist_spmd_main
             at ./src/main.rs:12:5
   2: trainer::main::{{closure}}
             at ./src/main.rs:5:1
   3: dist_runtime::entry::run_rank
             at /work/main/dist-runtime/src/entry.rs:144:19
   4: trainer::main
             at ./src/main.rs:5:1
   5: __libc_start_call_main
             at ./csu/../sysdeps/nptl/libc_start_call_main.h:58:16
";
        assert_eq!(callers_in(main_bt, "src/helpers.rs", 9).as_deref(), Some("src/main.rs:12"));
        assert_eq!(callers_in(main_bt, "src/main.rs", 12), None);
        // A request posted at line 14 of the helper and waited on at line 17 of it: the
        // helper's callers; posted in another function than the one that waits: none.
        assert_eq!(
            callers_in(BT, "src/parallel/grads.rs", 14).as_deref(),
            Some("src/main.rs:42, called from src/main.rs:60")
        );
        assert_eq!(callers_in(BT, "src/main.rs", 61), None);
        // A closure's frame and its function's at one line (`try_fold(.., |h, l|
        // l.forward(&h))`): that line once.
        let closure_bt = BT.replace(
            "   3: trainer::step\n",
            "   3: trainer::step::{{closure}}\n             at ./src/main.rs:42:9\n   3: core::iter::Iterator::try_fold\n             at /rustc/abc/library/core/src/iter/traits/iterator.rs:2370:21\n   3: trainer::step\n",
        );
        assert!(closure_bt.contains("{{closure}}"));
        assert_eq!(
            callers_in(&closure_bt, "src/parallel/grads.rs", 17).as_deref(),
            Some("src/main.rs:42, called from src/main.rs:60")
        );
        // No debug info: no chain.
        assert_eq!(callers_in("   0: trainer::step\n   1: trainer::main\n", "src/main.rs", 42), None);
    }
}

#[cfg(test)]
mod peer_text_tests {
    use super::Error;

    /// A peer's failure names its world rank too when the communicator is a group.
    #[test]
    fn a_group_peer_is_named_by_its_world_rank() {
        let e = |rank, comm: &str| Error::PeerFailed { rank, comm: comm.into(), reason: "boom".into() }.to_string();
        assert_eq!(e(1, "Dp{1,5}"), "world rank 5 (rank 1 of Dp{1,5}) failed: boom");
        assert_eq!(e(2, "World"), "rank 2 (of World) failed: boom");
        let left =
            Error::PeerFailed { rank: 3, comm: "World".into(), reason: "left World (returned from its entry)".into() };
        assert_eq!(left.to_string(), "rank 3 (of World) left World (returned from its entry)");
        assert_eq!(e(0, "Tp{4,5}"), "world rank 4 (rank 0 of Tp{4,5}) failed: boom");
    }

    /// `{:?}` (what `.unwrap()` prints) is the variant and the message, not the struct.
    #[test]
    fn debug_reads_like_the_message() {
        let e = Error::PeerFailed { rank: 2, comm: "World".into(), reason: "boom".into() };
        assert_eq!(format!("{e:?}"), "PeerFailed: rank 2 (of World) failed: boom");
        assert_eq!(format!("{:?}", Error::Env("DIST_TIMEOUT=x".into())), "Env: environment: DIST_TIMEOUT=x");
    }
}
