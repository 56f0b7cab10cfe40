//! `Request`, what every non-blocking op returns (`wait`, `test`, `wait_timeout`,
//! `stream_wait`), and `wait_all`, `wait_any`, `wait_some`.

use crate::backend::ReqId;
use crate::comm::device::DeviceWork;
use crate::comm::Inner;
use crate::dtype::DType;
use crate::error::{Error, Result, Site};
use std::marker::PhantomData;
use std::panic::Location;
use std::sync::mpsc;

/// A non-blocking op in flight. It borrows the op's buffer until [`wait`](Self::wait);
/// dropping it waits too, so a buffer is never touched after the borrow ends. An error
/// the dropped op ends with is dropped too, except one after which the job cannot go on
/// (a deadlock, a deadline, a peer's failure: [`Error::is_fatal`]) when no op of this
/// thread has returned a fatal error before: the drop panics with it, naming the
/// request's line, rather than let the rank carry on past it.
#[must_use = "a request must be waited on; dropping it blocks until the op completes"]
pub struct Request<'a> {
    pub(crate) state: ReqState<'a>,
    pub(crate) site: Site,
    pub(crate) _buf: PhantomData<&'a mut [u8]>,
    /// The flight recorder's id of the communicator and the name its wait is recorded
    /// under ("isend.wait"); `None` for requests that need no wait of their own.
    pub(crate) rec: Option<(u32, &'static str)>,
    /// Errors this thread's ops had handed out when it was posted
    /// ([`crate::error::errors_handed_out`]).
    pub(crate) errs: u64,
}

/// The name a request's wait has in records and errors: `"<op>.wait"` for every
/// non-blocking op of the op table (`dist_ops::OPS`), `"wait"` for anything else.
pub(crate) fn wait_label(op: &str) -> &'static str {
    static LABELS: std::sync::OnceLock<std::collections::HashMap<&'static str, &'static str>> =
        std::sync::OnceLock::new();
    let labels = LABELS.get_or_init(|| {
        dist_ops::OPS
            .iter()
            .filter(|s| !s.blocking)
            .map(|s| (s.name, &*Box::leak(format!("{}.wait", s.name).into_boxed_str())))
            .collect()
    });
    labels.get(op).copied().unwrap_or("wait")
}

pub(crate) enum ReqState<'a> {
    Send {
        inner: &'a Inner,
        id: ReqId,
    },
    Recv {
        inner: &'a Inner,
        id: ReqId,
        dtype: DType,
        buf: &'a mut [u8],
    },
    /// A non-blocking collective: the worker sends back its aligned copy of the buffer.
    Coll {
        rx: mpsc::Receiver<Result<Vec<u128>>>,
        out: &'a mut [u8],
        /// The communicator's deadline (for waits on a set of requests).
        timeout: std::time::Duration,
    },
    /// An op on device buffers: completes on the device (a CUDA event with NCCL).
    Device(DeviceWork),
    /// Several ops completing together (`batch_async`).
    Group(Vec<Request<'a>>),
    /// Ended with this error when tested; `wait` returns it.
    Failed(Error),
    Done,
}

impl Request<'_> {
    /// A request for an op that already completed (a blocking op run through the same
    /// path as its non-blocking form).
    pub(crate) fn done(site: Site) -> Self {
        Request { state: ReqState::Done, site, _buf: PhantomData, rec: None, errs: crate::error::errors_handed_out() }
    }

    /// A request for an op on the device's stream.
    pub(crate) fn device(w: DeviceWork, site: Site) -> Self {
        Request {
            state: ReqState::Device(w),
            site,
            _buf: PhantomData,
            rec: None,
            errs: crate::error::errors_handed_out(),
        }
    }

    /// This request, its wait recorded in the flight recorder of communicator `rec` as
    /// the wait of `op`.
    pub(crate) fn recorded(mut self, rec: u32, op: &'static str) -> Self {
        self.rec = Some((rec, wait_label(op)));
        self
    }

    /// Blocks until the op completes.
    ///
    /// ```
    /// # use dist_runtime::prelude::*;
    /// # const T: Tag<f32> = Tag::new(1);
    /// # #[spmd]
    /// # fn demo(world: Comm<World>) -> dist_runtime::Result<()> {
    /// let (r, n) = (world.rank(), world.size());
    /// let mine = [r as f32; 4];
    /// let mut got = [0.0f32; 4];
    /// let recv = world.irecv((r + n - 1) % n, T, &mut got)?;
    /// let send = world.isend((r + 1) % n, T, &mine)?;
    /// send.wait()?; // `mine` may change from here
    /// recv.wait()?; // `got` holds the message from here
    /// assert_eq!(got, [((r + n - 1) % n) as f32; 4]);
    /// # Ok(()) }
    /// # fn main() { dist_runtime::launch(3, demo).unwrap(); }
    /// ```
    #[track_caller]
    pub fn wait(mut self) -> Result<()> {
        let at = Location::caller();
        let slot = self.rec.map(|(rec, name)| crate::verify::recorder::start(rec, false, name, at));
        let r = self.complete();
        if let (Ok(()), Some(slot)) = (&r, slot) {
            crate::verify::recorder::done(slot);
        }
        r.map_err(Error::with_callers)
    }

    /// Whether the op has completed, without blocking (torch's `Work.is_completed()`,
    /// MPI's `MPI_Test`). Once it says `true` the op is over — a receive's buffer holds
    /// the message — and [`wait`](Self::wait) returns at once. An error (a peer that
    /// failed, a message that does not fit) is returned here, and by `wait` again.
    ///
    /// ```
    /// # use dist_runtime::prelude::*;
    /// # const T: Tag<u32> = Tag::new(1);
    /// # #[spmd]
    /// # fn demo(world: Comm<World>) -> dist_runtime::Result<()> {
    /// let (r, n) = (world.rank(), world.size());
    /// let mut got = [0u32];
    /// let mut recv = world.irecv((r + n - 1) % n, T, &mut got)?;
    /// world.send((r + 1) % n, T, &[r as u32])?;
    /// let mut polls = 0;
    /// while !recv.test()? {
    ///     polls += 1; // … other work while the message comes …
    ///     std::thread::yield_now();
    /// }
    /// recv.wait()?;
    /// assert_eq!(got, [((r + n - 1) % n) as u32]);
    /// # let _ = polls;
    /// # Ok(()) }
    /// # fn main() { dist_runtime::launch(3, demo).unwrap(); }
    /// ```
    pub fn test(&mut self) -> Result<bool> {
        let r = match &mut self.state {
            ReqState::Send { inner, id } => inner.backend.test_send(self.site, *id),
            ReqState::Recv { inner, id, dtype, buf } => inner.backend.test_recv(self.site, *id, *dtype, buf),
            ReqState::Coll { rx, out, .. } => match rx.try_recv() {
                Ok(Ok(data)) => {
                    let n = out.len();
                    out.copy_from_slice(&bytemuck::cast_slice::<u128, u8>(&data)[..n]);
                    Ok(true)
                }
                Ok(Err(e)) => Err(e),
                Err(mpsc::TryRecvError::Empty) => Ok(false),
                Err(mpsc::TryRecvError::Disconnected) => Err(Error::backend("comm", "the async worker stopped")),
            },
            ReqState::Device(w) => w.test(),
            ReqState::Group(reqs) => {
                let mut all = true;
                for r in reqs.iter_mut() {
                    all &= r.test()?;
                }
                Ok(all)
            }
            ReqState::Failed(e) => return Err(clone_err(e)),
            ReqState::Done => return Ok(true),
        };
        match r {
            Ok(true) => {
                self.state = ReqState::Done;
                Ok(true)
            }
            Ok(false) => Ok(false),
            Err(e) => {
                self.state = ReqState::Failed(clone_err(&e));
                Err(e)
            }
        }
    }

    /// Waits at most `timeout` for the op: `Ok(true)` once it has completed (as
    /// [`wait`](Self::wait), and the request is spent), `Ok(false)` if it is still
    /// running then (the request stays valid: wait again, or drop it, which waits).
    /// torch's `work.wait(timeout)`, without aborting the op.
    ///
    /// ```
    /// # use dist_runtime::prelude::*;
    /// # const T: Tag<u8> = Tag::new(1);
    /// # #[spmd(ranks = 2)]
    /// # fn demo(world: Comm<World>) -> dist_runtime::Result<()> {
    /// use std::time::Duration;
    /// let mut got = [0u8];
    /// if world.rank() == 0 {
    ///     let mut req = world.irecv(1, T, &mut got)?;
    ///     while !req.wait_timeout(Duration::from_millis(5))? {
    ///         // … report progress, then keep waiting …
    ///     }
    ///     req.wait()?;
    ///     assert_eq!(got, [7]);
    /// } else {
    ///     std::thread::sleep(Duration::from_millis(20));
    ///     world.send(0, T, &[7])?;
    /// }
    /// # Ok(()) }
    /// # fn main() { dist_runtime::launch(2, demo).unwrap(); }
    /// ```
    pub fn wait_timeout(&mut self, timeout: std::time::Duration) -> Result<bool> {
        let until = std::time::Instant::now() + timeout;
        let mut pause = Pause::default();
        loop {
            if self.test()? {
                return Ok(true);
            }
            if std::time::Instant::now() >= until {
                return Ok(false);
            }
            pause.next(until);
        }
    }

    /// Whether a request is still to be reported by [`wait_any`]/[`wait_some`].
    fn active(&self) -> bool {
        !matches!(self.state, ReqState::Done)
    }

    /// How long the op may take: its communicator's deadline.
    fn limit(&self) -> std::time::Duration {
        match &self.state {
            ReqState::Send { inner, .. } | ReqState::Recv { inner, .. } => inner.backend.timeout(),
            ReqState::Coll { timeout, .. } => *timeout,
            ReqState::Device(w) => w.timeout(),
            ReqState::Group(reqs) => reqs.iter().map(Request::limit).max().unwrap_or_default(),
            ReqState::Failed(_) | ReqState::Done => std::time::Duration::ZERO,
        }
    }

    /// [`test`](Self::test) as a yes or no: true once the op is over, successfully or
    /// not (`wait` then returns its result at once).
    pub fn is_completed(&mut self) -> bool {
        self.test().unwrap_or(true)
    }

    pub(crate) fn complete(&mut self) -> Result<()> {
        match std::mem::replace(&mut self.state, ReqState::Done) {
            ReqState::Failed(e) => Err(e),
            ReqState::Send { inner, id } => inner.backend.wait_send(self.site, id),
            ReqState::Recv { inner, id, dtype, buf } => inner.backend.wait_recv(self.site, id, dtype, buf),
            ReqState::Coll { rx, out, .. } => {
                // (Parked on the worker: its waits are this rank's meanwhile.)
                let data = crate::backend::parked(|| rx.recv())
                    .map_err(|_| Error::backend("comm", "the async worker stopped"))??;
                let n = out.len();
                out.copy_from_slice(&bytemuck::cast_slice::<u128, u8>(&data)[..n]);
                Ok(())
            }
            ReqState::Device(w) => w.wait(),
            ReqState::Group(reqs) => wait_all(reqs),
            ReqState::Done => Ok(()),
        }
    }

    /// Makes `stream` wait (on the GPU) for a device op, without blocking the host (the
    /// compute/communication overlap of torch's `work.wait()` on CUDA tensors). A host
    /// op is waited for here instead. The device op's deadline is not watched once its
    /// completion is handed to the GPU this way.
    #[cfg(feature = "nccl")]
    pub fn stream_wait(mut self, stream: &cudarc::driver::CudaStream) -> Result<()> {
        match std::mem::replace(&mut self.state, ReqState::Done) {
            ReqState::Device(w) => w.stream_wait(stream),
            other => {
                self.state = other;
                self.complete()
            }
        }
    }
}

impl Drop for Request<'_> {
    fn drop(&mut self) {
        // A rank already failing (marked failed: a deadlock verdict, a peer's failure; or
        // unwinding a panic) lets its pending sends go instead of waiting for each: hundreds of them
        // would each wait for the deadlock detector or the deadline, and the launcher would
        // take the culprit, still dropping them, for a victim of the peers it left waiting.
        // (A send's bytes are the backend's copy by now; receives are still completed,
        // their buffers go with this frame.)
        if matches!(self.state, ReqState::Send { .. }) && (std::thread::panicking() || crate::verify::failure::failed())
        {
            self.state = ReqState::Done;
            return;
        }
        // An error already handed out (by `test`, `wait_timeout`) is not raised again, nor
        // one after another op's fatal error (a request dropped as that error leaves the
        // caller's function: the rank is failing already, and its first error says why).
        let seen = matches!(self.state, ReqState::Failed(_));
        // Nor one dropped after an op of this thread handed out an error once it was
        // posted: that error is leaving the caller's function (`?`), dropping the requests
        // it had posted (a loop of `irecv`s whose next post was refused); it says why.
        let after_error = crate::error::errors_handed_out() != self.errs;
        if let Err(e) = self.complete() {
            if !seen && e.is_fatal() && !after_error && !std::thread::panicking() && !crate::error::fatal_handed_out() {
                panic!(
                    "the request posted at {} was dropped without a wait, and its op failed: {e} (wait on it to \
                     handle the error)",
                    self.site
                );
            }
        }
    }
}

/// A copy of an error for a request that keeps it for `wait` (the source chain of a
/// backend error is kept as text).
fn clone_err(e: &Error) -> Error {
    match e {
        Error::InvalidArgument { op, msg, site } => Error::InvalidArgument { op, msg: msg.clone(), site: *site },
        Error::Mismatch { comm, msg } => Error::Mismatch { comm: comm.clone(), msg: msg.clone() },
        Error::Timeout { op, comm, waiting_for, secs, site } => {
            Error::Timeout { op, comm: comm.clone(), waiting_for: waiting_for.clone(), secs: *secs, site: *site }
        }
        Error::PeerFailed { rank, comm, reason } => {
            Error::PeerFailed { rank: *rank, comm: comm.clone(), reason: reason.clone() }
        }
        Error::Deadlock { op, comm, site, story, culprit, victim } => Error::Deadlock {
            op,
            comm: comm.clone(),
            site: *site,
            story: story.clone(),
            culprit: *culprit,
            victim: *victim,
        },
        other => Error::backend("comm", other.to_string()),
    }
}

/// A poll loop's pause: spin, then yield, then short sleeps (never past `until`).
#[derive(Default)]
pub(crate) struct Pause(u32);

impl Pause {
    pub(crate) fn next(&mut self, until: std::time::Instant) {
        self.0 = self.0.saturating_add(1);
        match self.0 {
            0..=64 => std::hint::spin_loop(),
            65..=512 => std::thread::yield_now(),
            _ => {
                let left = until.saturating_duration_since(std::time::Instant::now());
                std::thread::sleep(left.min(std::time::Duration::from_micros(200)));
            }
        }
    }
}

/// Polls the active requests of `reqs` until at least one completes; returns the
/// indices of those that did (at least one), each then spent as after `wait`. Errors
/// after the longest deadline of the requests' communicators.
#[track_caller]
fn wait_until_some(reqs: &mut [Request<'_>], op: &'static str, all: bool) -> Result<Vec<usize>> {
    let site = Site::caller();
    let limit = reqs.iter().filter(|r| r.active()).map(Request::limit).max().unwrap_or_default();
    let until = std::time::Instant::now() + limit;
    let mut pause = Pause::default();
    loop {
        let mut done = Vec::new();
        for (i, r) in reqs.iter_mut().enumerate().filter(|(_, r)| r.active()) {
            match r.test() {
                Ok(true) => {
                    done.push(i);
                    if !all {
                        return Ok(done);
                    }
                }
                Ok(false) => {}
                Err(e) => {
                    r.state = ReqState::Done; // reported: inactive from now on
                    return Err(e);
                }
            }
        }
        if !done.is_empty() {
            return Ok(done);
        }
        if std::time::Instant::now() >= until {
            let pending: Vec<String> = reqs.iter().filter(|r| r.active()).map(|r| r.site.to_string()).collect();
            return Err(Error::Timeout {
                op,
                comm: "their communicators".into(),
                waiting_for: format!("any of the requests started at {}", pending.join(", ")),
                secs: limit.as_secs_f64(),
                site,
            });
        }
        pause.next(until);
    }
}

/// Waits until one of the active requests in `reqs` completes and returns its index
/// (MPI's `Waitany`); that request is spent (a later `wait` returns at once) and later
/// calls skip it. `Ok(None)` when no request is active. An op's error is returned, and
/// its request is spent too. Past the longest deadline of the requests'
/// communicators, `Error::Timeout` naming where the pending ones were started.
///
/// ```
/// # use dist_runtime::prelude::*;
/// # const T: Tag<u32> = Tag::new(1);
/// # #[spmd]
/// # fn demo(world: Comm<World>) -> dist_runtime::Result<()> {
/// let (r, n) = (world.rank(), world.size());
/// if r == 0 {
///     // Take the workers' results in whatever order they come.
///     let mut got = vec![[0u32]; n];
///     let (_, others) = got.split_at_mut(1);
///     let mut reqs: Vec<_> =
///         others.iter_mut().enumerate().map(|(i, g)| world.irecv(i + 1, T, g)).collect::<Result<_, _>>()?;
///     let mut seen = 0;
///     while let Some(i) = dist_runtime::wait_any(&mut reqs)? {
///         seen += 1; // request i (from rank i + 1) has its result here
///         let _ = i;
///     }
///     assert_eq!(seen, n - 1);
///     drop(reqs);
///     assert!(got[1..].iter().enumerate().all(|(i, g)| g[0] == 10 * (i as u32 + 1)));
/// } else {
///     world.send(0, T, &[10 * r as u32])?;
/// }
/// # Ok(()) }
/// # fn main() { dist_runtime::launch(4, demo).unwrap(); }
/// ```
#[track_caller]
pub fn wait_any(reqs: &mut [Request<'_>]) -> Result<Option<usize>> {
    if !reqs.iter().any(Request::active) {
        return Ok(None);
    }
    Ok(wait_until_some(reqs, "wait_any", false)?.first().copied())
}

/// Waits until at least one of the active requests in `reqs` completes and returns the
/// indices of all that have (MPI's `Waitsome`), each then spent; an empty list when no
/// request is active. Errors as [`wait_any`].
///
/// ```
/// # use dist_runtime::prelude::*;
/// # #[spmd]
/// # fn demo(world: Comm<World>) -> dist_runtime::Result<()> {
/// let (mut a, mut b) = ([1u64], [2u64]);
/// let mut reqs = vec![
///     world.all_reduce_async(&mut a, ReduceOp::Sum)?,
///     world.all_reduce_async(&mut b, ReduceOp::Sum)?,
/// ];
/// let mut finished = 0;
/// while finished < 2 {
///     finished += dist_runtime::wait_some(&mut reqs)?.len();
/// }
/// drop(reqs);
/// assert_eq!((a[0], b[0]), (world.size() as u64, 2 * world.size() as u64));
/// # Ok(()) }
/// # fn main() { dist_runtime::launch(3, demo).unwrap(); }
/// ```
#[track_caller]
pub fn wait_some(reqs: &mut [Request<'_>]) -> Result<Vec<usize>> {
    if !reqs.iter().any(Request::active) {
        return Ok(Vec::new());
    }
    wait_until_some(reqs, "wait_some", true)
}

/// Wait for all requests, returning the first error.
///
/// ```
/// # use dist_runtime::prelude::*;
/// # const FWD: Tag<u32> = Tag::new(1);
/// # const BWD: Tag<u32> = Tag::new(2);
/// # #[spmd]
/// # fn demo(world: Comm<World>) -> dist_runtime::Result<()> {
/// let (r, n) = (world.rank(), world.size());
/// let (prev, next) = ((r + n - 1) % n, (r + 1) % n);
/// let mine = [r as u32];
/// let (mut a, mut b) = ([0u32], [0u32]);
/// let reqs = vec![
///     world.irecv(prev, FWD, &mut a)?,
///     world.irecv(next, BWD, &mut b)?,
///     world.isend(next, FWD, &mine)?,
///     world.isend(prev, BWD, &mine)?,
/// ];
/// dist_runtime::wait_all(reqs)?;
/// assert_eq!((a, b), ([prev as u32], [next as u32]));
/// # Ok(()) }
/// # fn main() { dist_runtime::launch(3, demo).unwrap(); }
/// ```
#[track_caller]
pub fn wait_all<'a>(reqs: impl IntoIterator<Item = Request<'a>>) -> Result<()> {
    let mut first = None;
    for r in reqs {
        if let Err(e) = r.wait() {
            first.get_or_insert(e);
        }
    }
    first.map_or(Ok(()), Err)
}

#[cfg(test)]
mod tests {
    /// Every non-blocking op of the table has its own wait label (six `_async` ops once
    /// fell back to a bare "wait").
    #[test]
    fn every_nonblocking_op_names_its_wait() {
        for s in dist_ops::OPS.iter().filter(|s| !s.blocking) {
            assert_eq!(super::wait_label(s.name), format!("{}.wait", s.name));
        }
        assert_eq!(super::wait_label("all_reduce"), "wait");
    }
}
