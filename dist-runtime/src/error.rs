//! The one error type of dist.

use std::panic::Location;

/// Result alias used across dist.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong in a communication call.
///
/// Checks that need no peer (lengths, ranks, roots, dtypes) run before any byte moves, so
/// an `InvalidArgument` leaves the communicator usable. A `Mismatch`, `Timeout` or
/// `PeerFailed` means the ranks no longer agree on where they are: treat the
/// communicator as broken and exit.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An argument breaks the op's contract (a length, a rank or root out of range,
    /// duplicate ranks in a subgroup, `Avg` on integers, …).
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

/// A source location (`file:line:col`) of a communication call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Site(pub &'static Location<'static>);

impl Site {
    /// The location of the caller (through `#[track_caller]` chains).
    #[track_caller]
    pub fn caller() -> Site {
        Site(Location::caller())
    }
}

impl std::fmt::Display for Site {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.0.file(), self.0.line())
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
    #[track_caller]
    pub(crate) fn invalid(op: &'static str, msg: impl Into<String>) -> Error {
        Error::InvalidArgument { op, msg: msg.into(), site: Site::caller() }
    }

    pub(crate) fn backend(backend: &'static str, msg: impl Into<String>) -> Error {
        Error::Backend { backend, msg: msg.into(), source: None }
    }

    pub(crate) fn store(msg: impl Into<String>, source: Option<std::io::Error>) -> Error {
        Error::Store { msg: msg.into(), source }
    }

    /// Whether this error means the job can't continue (as opposed to a refused argument).
    pub fn is_fatal(&self) -> bool {
        !matches!(self, Error::InvalidArgument { .. } | Error::Serde { .. })
    }

    /// Process exit code the entry runners use for this error: 3 for a rank that stops
    /// because another failed (so launchers can name the first cause), 1 otherwise.
    pub fn exit_code(&self) -> i32 {
        match self {
            Error::PeerFailed { .. } | Error::Deadlock { victim: true, .. } => 3,
            _ => 1,
        }
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
}
