//! The MPI backend (feature `mpi`): host buffers over the system's MPI (OpenMPI, MPICH)
//! through rsmpi's bindings (`mpi::ffi`), so a job spans hosts on MPI's own transports.
//!
//! - `mod.rs`: the communicator (a duplicate of `MPI_COMM_WORLD`, or a split of a
//!   parent), MPI's start and end, and the wait every op ends in: post nonblocking,
//!   then `MPI_Test` until done or `DIST_TIMEOUT` (never a blocking MPI wait).
//! - `coll.rs`: each collective's shape as MPI's nonblocking collective.
//! - `p2p.rs`: sends and receives with typed tags, matched in posting order.
//! - `ops.rs`: element types and reductions (f16/bf16 through user-defined MPI ops).
//! - `own.rs`: the collectives run with dist's own schedules over MPI's point-to-point
//!   (small messages, where the agreement key rides in the op's own messages).
//! - `health.rs`: the health board ranks post and read while they wait (who is still
//!   running, who failed, who is stuck where), and the missing-ranks text.
//! - `unreceived.rs`: messages sent that no receive took, named at the rank's exit.
//!
//! Every MPI call goes through [`call`], under one process-wide lock (the library is
//! started with `MPI_THREAD_SERIALIZED`: the runtime calls it from the user's thread,
//! the non-blocking collectives' worker and the simulated device). The cross-rank
//! checks are the typed layer's (this backend does not piggyback them), so they hold
//! here as on every backend.

mod coll;
mod health;
mod ops;
mod own;
mod p2p;
mod unreceived;

use crate::backend::{Backend, Bufs, ReqId};
use crate::dtype::DType;
use crate::error::{Error, Result, Site};
use crate::op::Op;
pub(crate) use health::Wait;
use mpi::ffi;
use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Serialises every MPI call of the process.
static LOCK: Mutex<()> = Mutex::new(());
/// Live communicators of this backend; the last one to go finalizes MPI.
static LIVE: AtomicUsize = AtomicUsize::new(0);
/// This rank failed (an error or a panic left its entry): MPI gives no way to tell the
/// peers blocked on it, so the last communicator aborts the job (`MPI_Abort`) instead of
/// finalizing; mpirun then stops every rank, and the launcher names this one, which has
/// reported its exit code and error before.
static FAILED: AtomicBool = AtomicBool::new(false);
/// MPI was ended (finalized or aborted): no MPI call may follow.
static ENDED: AtomicBool = AtomicBool::new(false);
/// A blocking MPI call (one MPI has no nonblocking form of) outlived its deadline: its
/// thread still holds the lock, so no MPI call may wait for it.
/// The library's largest tag (`MPI_TAG_UB`: 2^31 - 1 in Open MPI's ob1 and MPICH, 2^23 - 1
/// in Open MPI over UCX, at least 32767 by the standard), read when MPI starts.
static TAG_UB: AtomicI32 = AtomicI32::new(c_int::MAX);
static STUCK: AtomicBool = AtomicBool::new(false);

/// The process-wide lock; `None` once a blocking call is stuck holding it.
fn lock() -> Option<std::sync::MutexGuard<'static, ()>> {
    loop {
        match LOCK.try_lock() {
            Ok(g) => return Some(g),
            Err(std::sync::TryLockError::Poisoned(p)) => return Some(p.into_inner()),
            Err(std::sync::TryLockError::WouldBlock) if STUCK.load(Ordering::SeqCst) => return None,
            Err(std::sync::TryLockError::WouldBlock) => std::thread::yield_now(),
        }
    }
}

fn stuck_error(what: &str) -> Error {
    Error::backend(
        "mpi",
        format!("{what}: an earlier MPI call of this process never returned (it timed out), so MPI cannot be used"),
    )
}

/// Runs one MPI call under the process-wide lock; a non-success code is an error naming
/// the call and MPI's own description of the code.
pub(crate) fn call(what: &str, f: impl FnOnce() -> c_int) -> Result<()> {
    let Some(_g) = lock() else { return Err(stuck_error(what)) };
    if ENDED.load(Ordering::SeqCst) {
        return Err(Error::backend("mpi", format!("{what} after MPI was finalized in this process")));
    }
    check(f(), what)
}

/// A value moved to the thread that makes a blocking MPI call (MPI handles are plain
/// values; the calls are serialized by the lock).
struct Handle<T>(T);
// SAFETY: see above; MPI is started with MPI_THREAD_SERIALIZED.
unsafe impl<T> Send for Handle<T> {}

/// A blocking MPI call that MPI has no nonblocking form of (`MPI_Comm_split`), bounded
/// like every wait: it runs on a helper thread and this one waits at most `timeout`.
/// `None` when the deadline passed; the call may still be blocked in MPI then, holding
/// the lock, so every later MPI call of the process fails at once and the process
/// aborts the job at its end instead of finalizing.
fn call_bounded<T: 'static>(
    what: &'static str,
    timeout: Duration,
    f: impl FnOnce() -> (c_int, T) + Send + 'static,
) -> Option<Result<T>> {
    let (tx, rx) = std::sync::mpsc::channel();
    let spawned = std::thread::Builder::new().name("dist-mpi-call".into()).spawn(move || {
        let mut out = None;
        let r = call(what, || {
            let (rc, v) = f();
            out = Some(Handle(v));
            rc
        });
        let _ = tx.send(r.map(|()| out.expect("set by the call")));
    });
    if let Err(e) = spawned {
        return Some(Err(Error::backend("mpi", format!("{what}: cannot start its thread: {e}"))));
    }
    match rx.recv_timeout(timeout) {
        Ok(r) => Some(r.map(|h| h.0)),
        Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
            STUCK.store(true, Ordering::SeqCst);
            FAILED.store(true, Ordering::SeqCst);
            None
        }
        Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
            Some(Err(Error::backend("mpi", format!("{what}: its thread ended without an answer"))))
        }
    }
}

/// Reads `MPI_TAG_UB` into [`TAG_UB`].
fn read_tag_ub() -> Result<()> {
    let mut value: *mut c_int = std::ptr::null_mut();
    let mut flag: c_int = 0;
    // SAFETY: MPI is initialized; for MPI_TAG_UB the attribute value MPI stores is a
    // pointer to an int, which it writes into `value`.
    call("MPI_Comm_get_attr", || unsafe {
        ffi::MPI_Comm_get_attr(
            ffi::RSMPI_COMM_WORLD,
            ffi::MPI_TAG_UB as c_int,
            &mut value as *mut *mut c_int as *mut c_void,
            &mut flag,
        )
    })?;
    if flag != 0 && !value.is_null() {
        // SAFETY: MPI keeps the predefined attribute's int alive for the whole job.
        let ub = unsafe { *value };
        if ub >= 32767 {
            TAG_UB.store(ub, Ordering::Relaxed);
        }
    }
    Ok(())
}

/// The error for a non-success code (called under the lock: MPI_Error_string is an MPI call).
fn check(rc: c_int, what: &str) -> Result<()> {
    if rc == 0 {
        return Ok(());
    }
    let mut buf = vec![0 as std::ffi::c_char; 512];
    let mut len: c_int = 0;
    // SAFETY: the buffer is larger than MPI_MAX_ERROR_STRING (256 in OpenMPI and MPICH).
    let text = unsafe {
        if ffi::MPI_Error_string(rc, buf.as_mut_ptr(), &mut len) == 0 {
            std::ffi::CStr::from_ptr(buf.as_ptr()).to_string_lossy().into_owned()
        } else {
            format!("error code {rc}")
        }
    };
    Err(Error::backend("mpi", format!("{what} failed: {text}")))
}

/// The most bytes one MPI call moves by default: MPI's counts are 32-bit, and Open MPI
/// 4.1's shared-memory transport (vader) crashes on single messages from about 2^31 − 1
/// bytes (a broadcast of 2^31 − 1 bytes segfaulted in 6 of 27 runs; below 2^31 − 4096,
/// none in 12), so larger buffers go as parts of 1 GiB.
pub(super) const MAX_PART_BYTES: usize = 1 << 30;

/// The largest count one MPI call takes, in bytes for the byte-typed transfers
/// ([`MAX_PART_BYTES`] by default). `DIST_MPI_MAX_COUNT` lowers it (the tests exercise
/// the splits with small buffers).
fn max_count() -> usize {
    static MAX: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *MAX.get_or_init(|| {
        let env = std::env::var("DIST_MPI_MAX_COUNT").ok().and_then(|v| v.trim().parse::<usize>().ok());
        env.filter(|&m| m > 0).unwrap_or(MAX_PART_BYTES).min(c_int::MAX as usize)
    })
}

/// A count as MPI takes it (32-bit; at most `DIST_MPI_MAX_COUNT` where set).
fn count(n: usize, what: &str) -> Result<c_int> {
    static SET: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    let set = *SET.get_or_init(|| std::env::var_os("DIST_MPI_MAX_COUNT").is_some());
    let limit = if set { max_count() } else { c_int::MAX as usize };
    c_int::try_from(n).ok().filter(|_| n <= limit).ok_or_else(|| {
        Error::backend(
            "mpi",
            format!("{what}: {n} exceeds MPI's 32-bit counts (split the buffer into parts under 2 GiB)"),
        )
    })
}

/// `MPI_IN_PLACE`, which rsmpi does not export: the value of the MPI this process runs
/// on (Open MPI's header defines it as `(void *) 1`, MPICH's and its derivatives' as
/// `(void *) -1`); `None` on another MPI, where the backend copies instead.
fn in_place() -> Option<*mut c_void> {
    let mut buf = vec![0 as std::ffi::c_char; 8192];
    let mut len: c_int = 0;
    // SAFETY: the buffer exceeds MPI_MAX_LIBRARY_VERSION_STRING in both implementations.
    call("MPI_Get_library_version", || unsafe { ffi::MPI_Get_library_version(buf.as_mut_ptr(), &mut len) }).ok()?;
    // SAFETY: MPI wrote a NUL-terminated string.
    let v = unsafe { std::ffi::CStr::from_ptr(buf.as_ptr()) }.to_string_lossy().into_owned();
    if v.contains("Open MPI") {
        // The address 1, as the header defines it (not a pointer to anything).
        #[allow(clippy::manual_dangling_ptr)]
        Some(1usize as *mut c_void)
    } else if v.contains("MPICH") || v.contains("Intel(R) MPI") || v.contains("MVAPICH") {
        Some(usize::MAX as *mut c_void)
    } else {
        None
    }
}

/// The world communicator's `uid`.
const WORLD_UID: u64 = 0x0077_6f72_6c64; // "world"

/// A word for a child communicator's key (the same on every member).
fn key_word(key: &str) -> u64 {
    key.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ b as u64).wrapping_mul(0x100_0000_01b3))
}

/// One rank's view of one communicator on the MPI backend.
pub(crate) struct MpiComm {
    comm: ffi::MPI_Comm,
    rank: usize,
    size: usize,
    name: String,
    /// World rank of each rank of this communicator.
    world: Vec<usize>,
    /// The same on every member: the world's, or a mix of the parent's and the child's
    /// key (wait records name calls by it).
    uid: u64,
    /// Collectives run on this communicator (the agreement all-gathers included): the
    /// same count on every member of a correct program.
    colls: std::sync::Arc<std::sync::atomic::AtomicU64>,
    /// The deadline of a wait, in microseconds (`DIST_TIMEOUT`, or `Comm::set_timeout`).
    timeout_us: std::sync::atomic::AtomicU64,
    in_place: Option<*mut c_void>,
    /// Set when a wait timed out: the communicator holds an op that may never finish.
    broken: AtomicBool,
    p2p: Mutex<p2p::State>,
    /// Receives posted and not yet matched (in `p2p`'s queues): the waits' polls look
    /// here before locking `p2p` to serve them, the common case being none.
    queued: std::sync::atomic::AtomicUsize,
    /// Held across the messages of one send, so two threads' headers and payloads never
    /// interleave on the wire.
    send_order: Mutex<()>,
    /// Serialises waits on received messages (matching follows posting order), and holds
    /// the buffer a header with its inline payload lands in.
    recv_order: Mutex<Vec<u8>>,
    /// The blocks dist's own collectives receive before folding them (`own::scratch`),
    /// kept from one call to the next: allocating and zeroing them per call cost a 64 KiB
    /// all-reduce at 2 ranks a good part of its time (measured: docs/performance.md,
    /// "Figures behind code choices").
    scratch: Mutex<Vec<u128>>,
}

// SAFETY: the MPI handles are plain values used only through `call`, under the
// process-wide lock, with the library started for serialized threads.
unsafe impl Send for MpiComm {}
// SAFETY: as above.
unsafe impl Sync for MpiComm {}

impl Drop for MpiComm {
    fn drop(&mut self) {
        let mut c = self.comm;
        // Sends still travelling (buffered: their callers moved on) complete first.
        p2p::flush(self);
        // SAFETY: our own duplicate or split, freed once (`call` refuses after MPI ended).
        let _ = call("MPI_Comm_free", || unsafe { ffi::MPI_Comm_free(&mut c) });
        // The last communicator, on the main thread (MPI wants MPI_Finalize from the
        // thread that started it): end MPI. Elsewhere (a worker holding the last one),
        // `at_exit` does it on the main thread.
        if LIVE.fetch_sub(1, Ordering::SeqCst) == 1 && std::thread::current().name() == Some("main") {
            end();
        }
    }
}

/// How long a failed rank waits for its peers to report before it aborts the job (they
/// report within a look at the board, 50 ms, when the host is not overloaded).
const REPORT_WAIT: Duration = Duration::from_secs(10);

/// Ends MPI once: `MPI_Finalize`, or `MPI_Abort` when this rank failed.
fn end() {
    static ENDING: AtomicBool = AtomicBool::new(false);
    if ENDING.swap(true, Ordering::SeqCst) {
        return;
    }
    health::shutdown();
    if FAILED.load(Ordering::SeqCst) {
        if health::announced() {
            // Peers blocked on this rank hear of its failure at their next look at the
            // board (every 50 ms) and report what they saw (their error, their flight
            // recorder): abort only after every one has said so, or mpirun's kill would
            // cut them short. (A call stuck in MPI holds its lock: then a fixed grace.)
            if STUCK.load(Ordering::SeqCst) {
                std::thread::sleep(crate::verify::deadlock::VICTIM_GRACE);
            } else {
                health::announce_reported();
                health::await_reports(crate::verify::deadlock::VICTIM_GRACE, REPORT_WAIT);
            }
        }
        use std::io::Write;
        let _ = std::io::stderr().flush();
        let _ = std::io::stdout().flush();
        if STUCK.load(Ordering::SeqCst) {
            // A call blocked in MPI holds the lock and never returns: abort past it (the
            // only way out; Open MPI's abort goes through its runtime, not the stuck call).
            // SAFETY: MPI is initialized; this ends the job.
            unsafe { ffi::MPI_Abort(ffi::RSMPI_COMM_WORLD, 1) };
        }
        // SAFETY: MPI is initialized; this ends the job.
        let _ = call("MPI_Abort", || unsafe { ffi::MPI_Abort(ffi::RSMPI_COMM_WORLD, 1) });
    }
    // SAFETY: MPI is initialized (checked above) and this is its last call in the process.
    let _ = call("MPI_Finalize", || unsafe { ffi::MPI_Finalize() });
    ENDED.store(true, Ordering::SeqCst);
}

/// How long a failed op's cancellation may take before the rank gives up on it.
const CANCEL_WAIT: Duration = Duration::from_secs(1);

/// What a failed op's pending requests hold of the caller's memory.
#[derive(Clone, Copy)]
pub(super) enum Held {
    /// Receives writing into the caller's buffers.
    Receive,
    /// Sends reading the caller's buffer (a blocking send's payload goes from it directly).
    Send,
    /// A nonblocking collective on the caller's buffers (MPI cancels none).
    Collective,
}

/// Lets go of the requests `reqs` of an op that failed (`e`) while they still use the
/// caller's memory, before the op returns and the caller has that memory back: each is
/// cancelled, then tested for up to [`CANCEL_WAIT`]. A receive whose message started to
/// arrive cannot be cancelled (MPI completes it only when the rest comes: a blocking
/// `MPI_Wait` here never returned when the sender had stopped), and Open MPI's ob1 cancels
/// no send at all: a receiver that posts its receive after the sender's error would read
/// whatever the caller has written into the buffer since. So past the wait, when the peer
/// may still take part (a deadlock, a deadline), this rank ends the job instead of
/// returning ([`end_here`]), as MPI's default error handler and NCCL's watchdog would. A
/// send to a rank that failed is left to MPI (the peer reads nothing more): the error
/// returns, and the exit code rules name the culprit.
pub(super) fn release(c: &MpiComm, reqs: &mut [ffi::MPI_Request], e: &Error, held: Held) {
    if reqs.is_empty() {
        return;
    }
    // The standard makes cancelling a collective erroneous; the wait below may still
    // see it complete (a late peer).
    for r in reqs.iter_mut().filter(|_| !matches!(held, Held::Collective)) {
        // SAFETY: cancelling our own pending request (a completed one is MPI_REQUEST_NULL).
        let _ = call("MPI_Cancel", || unsafe { ffi::MPI_Cancel(r) });
    }
    let start = Instant::now();
    loop {
        let mut flag: c_int = 0;
        // SAFETY: our own requests, cancelled or completed.
        let tested = call("MPI_Testall", || unsafe {
            ffi::MPI_Testall(reqs.len() as c_int, reqs.as_mut_ptr(), &mut flag, ffi::RSMPI_STATUSES_IGNORE)
        });
        if tested.is_err() || flag != 0 {
            return;
        }
        if start.elapsed() >= CANCEL_WAIT {
            match held {
                Held::Send | Held::Collective if matches!(e, Error::PeerFailed { .. }) => return,
                _ => end_here(c.world.get(c.rank).copied().unwrap_or(c.rank), e, held),
            }
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Ends the job from inside an op that cannot return: MPI still holds the caller's buffer
/// ([`release`]). Says the error (as the entry runner would), tells the peers, and aborts
/// the job; never returns.
fn end_here(rank: usize, e: &Error, held: Held) -> ! {
    let why = match held {
        Held::Receive => "MPI still holds the receive buffer (a message that started to arrive cannot be cancelled)",
        Held::Send => {
            "MPI still holds the send buffer (MPI cannot cancel a send: a receive posted later would read whatever \
             the buffer holds by then)"
        }
        Held::Collective => "MPI still holds the collective's buffers (MPI cannot cancel a collective)",
    };
    let text = format!("{e}; {why}, so rank {rank} ends the job here");
    crate::sys::say(format!("[rank {rank}] error: {text}"));
    crate::store::report::report_flight(rank);
    crate::store::report::report_exit(rank, 1);
    FAILED.store(true, Ordering::SeqCst);
    health::announce(&text);
    end();
    std::process::exit(1)
}

/// Called by the rank runner before the process exits: waits (briefly) for communicators
/// that worker threads still hold, then ends MPI on this thread, as mpirun expects of
/// every process that started it.
pub(crate) fn at_exit() {
    if STUCK.load(Ordering::SeqCst) {
        end();
        return;
    }
    let mut up: c_int = 0;
    // SAFETY: MPI_Initialized may be called at any time.
    if call("MPI_Initialized", || unsafe { ffi::MPI_Initialized(&mut up) }).is_err() || up == 0 {
        return;
    }
    let start = Instant::now();
    while LIVE.load(Ordering::SeqCst) > 0 && start.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(1));
    }
    end();
}

/// Starts MPI in this process unless it runs already (`MPI_Init_thread`, bounded by
/// `timeout`), refusing a process whose MPI was finalized or that lacks
/// `MPI_THREAD_SERIALIZED`.
fn start_mpi(timeout: Duration) -> Result<()> {
    let mut done: c_int = 0;
    // SAFETY: MPI_Finalized may be called at any time; it writes `done`.
    call("MPI_Finalized", || unsafe { ffi::MPI_Finalized(&mut done) })?;
    if done != 0 {
        return Err(Error::backend(
            "mpi",
            "MPI was already finalized in this process (its world communicator was dropped): a process \
             joins an MPI job once",
        ));
    }
    let mut up: c_int = 0;
    // SAFETY: MPI_Initialized may be called at any time; it writes `up`.
    call("MPI_Initialized", || unsafe { ffi::MPI_Initialized(&mut up) })?;
    if up == 0 {
        // Bounded like the rest of init: MPI_Init may connect to every peer (Open MPI's
        // `mpi_preconnect_mpi`) and never return when a connection is lost. The thread
        // that calls it needs no special role (SERIALIZED, not FUNNELED).
        let provided = call_bounded("MPI_Init_thread", timeout, || {
            let mut provided: c_int = 0;
            // SAFETY: MPI_Init_thread accepts null argc/argv; `provided` is written by MPI.
            let rc = unsafe {
                ffi::MPI_Init_thread(
                    std::ptr::null_mut(),
                    std::ptr::null_mut(),
                    ffi::RSMPI_THREAD_SERIALIZED,
                    &mut provided,
                )
            };
            (rc, provided)
        })
        .unwrap_or_else(|| {
            Err(Error::Timeout {
                op: "init",
                comm: "World".into(),
                waiting_for: "MPI_Init_thread to return (MPI starts and connects this rank to the job's others)".into(),
                secs: timeout.as_secs_f64(),
                site: crate::error::Site::caller(),
            })
        })?;
        // SAFETY: reading rsmpi's exported constant.
        if provided < unsafe { ffi::RSMPI_THREAD_SERIALIZED } {
            return Err(Error::backend(
                "mpi",
                "this MPI library does not support MPI_THREAD_SERIALIZED, which dist needs (calls come from \
                 more than one thread, one at a time)",
            ));
        }
    }
    Ok(())
}

impl MpiComm {
    /// Starts MPI (once per process) and returns this rank's world communicator: a
    /// duplicate of `MPI_COMM_WORLD`, returning errors instead of aborting the job.
    pub(crate) fn world(expect: Option<(usize, usize)>, timeout: Duration) -> Result<MpiComm> {
        start_mpi(timeout)?;
        read_tag_ub()?;
        // SAFETY: MPI is initialized; `comm` is written by MPI.
        let comm = call_bounded("MPI_Comm_dup", timeout, || unsafe {
            let mut comm: ffi::MPI_Comm = ffi::RSMPI_COMM_NULL;
            (ffi::MPI_Comm_dup(ffi::RSMPI_COMM_WORLD, &mut comm), Handle(comm))
        })
        .unwrap_or_else(|| {
            Err(Error::Timeout {
                op: "init",
                comm: "World".into(),
                waiting_for: "every rank of the MPI job to join the world communicator (MPI_Comm_dup)".into(),
                secs: timeout.as_secs_f64(),
                site: crate::error::Site::caller(),
            })
        })?
        .0;
        let mut c = MpiComm::wrap(comm, "World".into(), timeout)?;
        c.world = (0..c.size).collect();
        c.uid = WORLD_UID;
        health::track(c.uid, &c.colls);
        c.join_board(timeout)?;
        if let Some((rank, size)) = expect {
            if (rank, size) != (c.rank, c.size) {
                return Err(Error::backend(
                    "mpi",
                    format!(
                        "the environment says rank {rank} of {size}, but MPI says rank {} of {}: start the job \
                         with one launcher (mpirun/srun sets both)",
                        c.rank, c.size
                    ),
                ));
            }
        }
        Ok(c)
    }

    /// Joins the deadlock detector's board: a duplicate of the world of its own, over which
    /// every rank learns every rank's pid and host (so the detector can tell a stopped
    /// rank on its host), then the health check and the failure notice are installed.
    fn join_board(&self, timeout: Duration) -> Result<()> {
        let c = self;
        // SAFETY: MPI is initialized; `board` is written by MPI.
        let board = call_bounded("MPI_Comm_dup", timeout, || unsafe {
            let mut board: ffi::MPI_Comm = ffi::RSMPI_COMM_NULL;
            (ffi::MPI_Comm_dup(ffi::RSMPI_COMM_WORLD, &mut board), Handle(board))
        })
        .unwrap_or_else(|| Err(Error::backend("mpi", "init timed out duplicating the world for the wait board")))?
        .0;
        // SAFETY: a valid communicator.
        call("MPI_Comm_set_errhandler", || unsafe { ffi::MPI_Comm_set_errhandler(board, ffi::RSMPI_ERRORS_RETURN) })?;
        // Every rank's pid and host, so the detector can tell a stopped rank on its host.
        let mut mine = std::process::id().to_le_bytes().to_vec();
        mine.extend_from_slice(&crate::sys::host_id().to_le_bytes());
        let mut all = vec![0u8; 12 * c.size];
        // SAFETY: a placeholder, written by MPI.
        let mut req: ffi::MPI_Request = unsafe { ffi::RSMPI_REQUEST_NULL };
        // SAFETY: both buffers outlive the wait below (12 bytes per rank).
        call("MPI_Iallgather", || unsafe {
            ffi::MPI_Iallgather(
                mine.as_ptr() as *mut c_void,
                12,
                ops::bytes(),
                all.as_mut_ptr() as *mut c_void,
                12,
                ops::bytes(),
                board,
                &mut req,
            )
        })?;
        c.wait(Wait::Coll, &mut req, "init", Site::caller(), &|| "every rank to join the wait board".into())?;
        let procs: Vec<(u32, u64)> = all
            .chunks_exact(12)
            .map(|b| {
                let pid = u32::from_le_bytes(b[..4].try_into().expect("4 bytes"));
                (pid, u64::from_le_bytes(b[4..].try_into().expect("8 bytes")))
            })
            .collect();
        health::install(board, c.rank, c.size, &procs);
        crate::verify::failure::register(Box::new(|reason| {
            FAILED.store(true, Ordering::SeqCst);
            health::announce(reason);
            true
        }));
        Ok(())
    }

    fn wrap(comm: ffi::MPI_Comm, name: String, timeout: Duration) -> Result<MpiComm> {
        LIVE.fetch_add(1, Ordering::SeqCst);
        let (mut rank, mut size) = (0, 0);
        let mut c = MpiComm {
            comm,
            rank: 0,
            size: 0,
            name,
            world: Vec::new(),
            uid: 0,
            colls: std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0)),
            timeout_us: std::sync::atomic::AtomicU64::new(timeout.as_micros().min(u64::MAX as u128) as u64),
            in_place: in_place(),
            broken: AtomicBool::new(false),
            p2p: Mutex::new(p2p::State::default()),
            queued: std::sync::atomic::AtomicUsize::new(0),
            send_order: Mutex::new(()),
            recv_order: Mutex::new(Vec::new()),
            scratch: Mutex::new(Vec::new()),
        };
        // SAFETY: a valid communicator.
        call("MPI_Comm_set_errhandler", || unsafe { ffi::MPI_Comm_set_errhandler(comm, ffi::RSMPI_ERRORS_RETURN) })?;
        // SAFETY: a valid communicator.
        call("MPI_Comm_rank", || unsafe { ffi::MPI_Comm_rank(comm, &mut rank) })?;
        // SAFETY: a valid communicator.
        call("MPI_Comm_size", || unsafe { ffi::MPI_Comm_size(comm, &mut size) })?;
        c.rank = rank as usize;
        c.size = size as usize;
        Ok(c)
    }

    /// Tests `req` until it completes or the deadline passes; `waiting_for` says what
    /// the op waits for, in the timeout error.
    fn wait(
        &self,
        what: Wait,
        req: &mut ffi::MPI_Request,
        name: &'static str,
        site: Site,
        waiting_for: &dyn Fn() -> String,
    ) -> Result<()> {
        self.poll(what, name, site, waiting_for, || {
            let mut flag: c_int = 0;
            // SAFETY: `req` is a live request of this process.
            call("MPI_Test", || unsafe { ffi::MPI_Test(req, &mut flag, ffi::RSMPI_STATUS_IGNORE) })?;
            Ok(flag != 0)
        })
    }

    /// Calls `done` until it says so or the deadline passes (then `Error::Timeout`, and
    /// the communicator refuses further ops). MPI progresses only inside MPI calls:
    /// spin for the first 50 µs, yielding every 32 polls, then yield on every poll, and
    /// sleep once the wait is long.
    fn poll(
        &self,
        what: Wait,
        name: &'static str,
        site: Site,
        waiting_for: &dyn Fn() -> String,
        mut done: impl FnMut() -> Result<bool>,
    ) -> Result<()> {
        let start = Instant::now();
        let mut nap = Duration::from_micros(2);
        let mut watch = health::Watch::new();
        let mut polls = 0u32;
        loop {
            if done()? {
                return Ok(());
            }
            polls = polls.wrapping_add(1);
            p2p::serve_posted(self, site)?;
            let t = start.elapsed();
            if t >= health::FIRST {
                if let Err(e) = watch.look(self, what, name, site, t) {
                    drop(watch);
                    return crate::verify::deadlock::settle(Err(e));
                }
            }
            if t >= self.timeout() {
                self.broken.store(true, Ordering::SeqCst);
                return Err(Error::Timeout {
                    op: name,
                    comm: self.name.clone(),
                    waiting_for: format!(
                        "{}{}",
                        waiting_for(),
                        crate::verify::deadlock::stall_at_deadline(watch.stall())
                    ),
                    secs: self.timeout().as_secs_f64(),
                    site,
                });
            }
            // Spinning yields every 32 polls (a few µs), as shm's waits do: ranks the
            // scheduler put on one CPU would otherwise each spin out the 50 µs while the
            // peer they wait for cannot run. So where ranks outnumber the cores too: there
            // a yield on every poll (a system call each, and MPI moves messages only
            // inside its calls) measured slower (docs/performance.md, "Buffers that sit
            // alike; the MPI backend's sends, small collectives and waits").
            if t < Duration::from_micros(50) && !crate::backend::background() && !polls.is_multiple_of(32) {
                std::hint::spin_loop();
            } else if t < Duration::from_millis(2) {
                std::thread::yield_now();
            } else {
                std::thread::sleep(nap);
                nap = (nap * 2).min(Duration::from_micros(200));
            }
        }
    }

    /// This communicator's rank of world rank `w` (`w` itself if it is not a member).
    fn local_of(&self, w: usize) -> usize {
        self.world.iter().position(|&x| x == w).unwrap_or(w)
    }

    fn usable(&self, what: &str) -> Result<()> {
        if self.broken.load(Ordering::SeqCst) {
            return Err(Error::backend(
                "mpi",
                format!("{what} on {}: an earlier op of this communicator timed out and never completed", self.name),
            ));
        }
        Ok(())
    }
}

impl Backend for MpiComm {
    fn kind(&self) -> &'static str {
        "mpi"
    }
    fn rank(&self) -> usize {
        self.rank
    }
    fn size(&self) -> usize {
        self.size
    }

    fn run(&self, op: &Op, bufs: Bufs<'_>) -> Result<()> {
        self.usable(op.name)?;
        self.colls.fetch_add(1, Ordering::SeqCst);
        coll::run(self, op, bufs)
    }

    fn run_agreed(&self, name: &str, op: &Op, bufs: Bufs<'_>) -> Result<()> {
        match coll::agreed_in_one_phase(self, op, bufs) {
            Ok(run) => {
                self.usable(op.name)?;
                // Counted as the record exchange and, once the ranks agree, the op, as on
                // the path below (whose op never runs after a mismatch), so collective
                // numbers agree whichever path a rank took, a mismatch included.
                self.colls.fetch_add(1, Ordering::SeqCst);
                let ran = run(name);
                if ran.is_ok() {
                    self.colls.fetch_add(1, Ordering::SeqCst);
                }
                ran
            }
            Err(bufs) => {
                crate::backend::agree::exchange_records(self, name, op)?;
                self.run(op, bufs)
            }
        }
    }

    fn send(&self, site: Site, dst: usize, tag: u32, dtype: DType, data: &[u8]) -> Result<()> {
        self.usable("send")?;
        p2p::send(self, site, dst, tag, dtype, data)
    }
    fn recv(&self, site: Site, src: usize, tag: u32, dtype: DType, buf: &mut [u8]) -> Result<()> {
        let id = self.post_recv(site, src, tag)?;
        self.wait_recv(site, id, dtype, buf)
    }
    fn post_send(&self, site: Site, dst: usize, tag: u32, dtype: DType, data: &[u8]) -> Result<ReqId> {
        self.usable("send")?;
        p2p::post_send(self, site, dst, tag, dtype, data)
    }
    fn post_recv(&self, site: Site, src: usize, tag: u32) -> Result<ReqId> {
        self.usable("recv")?;
        p2p::post_recv(self, site, src, tag)
    }
    fn wait_send(&self, site: Site, id: ReqId) -> Result<()> {
        p2p::wait_send(self, site, id)
    }
    fn wait_recv(&self, site: Site, id: ReqId, dtype: DType, buf: &mut [u8]) -> Result<()> {
        p2p::wait_recv(self, site, id, dtype, buf)
    }
    fn test_send(&self, site: Site, id: ReqId) -> Result<bool> {
        p2p::test_send(self, site, id)
    }
    fn test_recv(&self, site: Site, id: ReqId, dtype: DType, buf: &mut [u8]) -> Result<bool> {
        p2p::test_recv(self, site, id, dtype, buf)
    }
    fn post_recv_any(&self, _site: Site, tag: u32) -> Result<ReqId> {
        self.usable("recv_any")?;
        p2p::post_recv_any(self, tag)
    }
    fn wait_recv_any(&self, site: Site, id: ReqId, dtype: DType, buf: &mut [u8]) -> Result<(usize, usize)> {
        p2p::wait_recv_any(self, site, id, dtype, buf)
    }
    fn test_recv_any(&self, site: Site, id: ReqId, dtype: DType, buf: &mut [u8]) -> Result<Option<(usize, usize)>> {
        p2p::test_recv_any(self, site, id, dtype, buf)
    }

    fn create_child(&self, cx: &Op, key: &str, name: &str, members: &[usize]) -> Result<Option<Box<dyn Backend>>> {
        self.usable("communicator creation")?;
        // One MPI_Comm_split per call: the groups ranks pass partition the members of
        // this communicator (subgroup: members and the rest; split and mesh2: one group
        // per color), so the lowest member names each group.
        let pos = members.iter().position(|&m| m == self.rank);
        let color = match pos {
            Some(_) => *members.iter().min().expect("a member") as c_int,
            // SAFETY: reading rsmpi's exported constant.
            None => unsafe { ffi::RSMPI_UNDEFINED },
        };
        let k = pos.unwrap_or(0) as c_int;
        let parent = Handle(self.comm);
        // SAFETY: collective over a valid communicator; `new` is written by MPI.
        let new = call_bounded("MPI_Comm_split", self.timeout(), move || unsafe {
            let parent = parent;
            let mut new: ffi::MPI_Comm = ffi::RSMPI_COMM_NULL;
            (ffi::MPI_Comm_split(parent.0, color, k, &mut new), Handle(new))
        })
        .unwrap_or_else(|| {
            self.broken.store(true, Ordering::SeqCst);
            Err(Error::Timeout {
                op: "communicator creation",
                comm: self.name.clone(),
                waiting_for: format!(
                    "the other members of {} to create the communicator with it (MPI_Comm_split)",
                    self.name
                ),
                secs: self.timeout().as_secs_f64(),
                site: cx.site,
            })
        })?
        .0;
        if pos.is_none() {
            return Ok(None);
        }
        let mut child = MpiComm::wrap(new, name.to_string(), self.timeout())?;
        child.world = members.iter().map(|&m| self.world.get(m).copied().unwrap_or(usize::MAX)).collect();
        child.uid = health::mix(self.uid, key_word(key));
        health::track(child.uid, &child.colls);
        Ok(Some(Box::new(child)))
    }

    fn finish(&self) {
        if self.uid == WORLD_UID {
            health::announce_left();
        }
    }

    fn set_timeout(&self, t: Duration) {
        self.timeout_us.store(t.as_micros().min(u64::MAX as u128) as u64, Ordering::Relaxed);
    }
    fn unreceived(&self) -> Vec<String> {
        if ENDED.load(Ordering::SeqCst) || STUCK.load(Ordering::SeqCst) {
            return Vec::new();
        }
        unreceived::unreceived(self)
    }
    fn timeout(&self) -> Duration {
        Duration::from_micros(self.timeout_us.load(Ordering::Relaxed))
    }
}
