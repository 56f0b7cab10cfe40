//! The shared-memory backend: every member of a communicator maps one segment.
//! How it works, and the invariants it keeps: README.md beside this file.

mod board;
mod cma;
mod coll;
mod copy;
mod epoch;
mod p2p;
mod records;
mod recovery;
pub(crate) mod segment;
mod shared;
mod single;
mod slots;
pub(crate) mod sync;
pub(crate) mod tuning;

use crate::backend::{wrong_shape, Backend, Bufs, ReqId};
use crate::dtype::DType;
use crate::error::{Error, Result, Site};
use crate::op::{Op, OpKind, RECORD_LEN};
use crate::store::Store;
use crate::verify::watchdog::WAIT_LEN;
use segment::{Layout, Segment};
use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering::SeqCst;
use std::sync::{Arc, Mutex};
use sync::Bell;
use tuning::Config;

/// Id of the world communicator's segment (children extend it).
pub(crate) const WORLD_ID: &str = "w";

// The segment holds the verify layer's records as they are.
const _: () = assert!(segment::FP_LEN == RECORD_LEN && segment::WAIT_LEN == WAIT_LEN);

/// One rank's view of one communicator on the shm backend.
pub(crate) struct ShmComm {
    seg: Arc<Segment>,
    rank: usize,
    n: usize,
    /// For messages: "World", "Tp#3", ...
    name: String,
    /// Unique id among the job's communicators; children extend it.
    id: String,
    /// World rank of each member, by rank in this communicator (for the job's board).
    world: Arc<[usize]>,
    /// Counts ring reads and writes of this rank's point-to-point engine: progress made
    /// inside a wait, for the deadlock detector.
    moved: std::sync::atomic::AtomicU32,
    /// This communicator's deadline for a wait, in microseconds (`DIST_TIMEOUT`, or
    /// `Comm::set_timeout`).
    timeout_us: AtomicU64,
    cfg: Arc<Config>,
    /// Rank 0's `cfg.oversubscribed`, the same on every member (`segment::OVERSUBSCRIBED`):
    /// what path choices that depend on it read.
    oversubscribed: bool,
    /// The world's segment and the offset there of the word counting the ranks awake
    /// that this rank's waits compete with (`awake_word`), with how many of them leave a
    /// core to each (`sync::wait_on`); `None` where the world is not on shared memory.
    world_seg: Option<(Arc<Segment>, usize, usize)>,
    store: Option<Arc<Store>>,
    /// Collective state: the last epoch this rank arrived at.
    coll: Mutex<u32>,
    p2p: Mutex<p2p::P2p>,
    /// Whether this rank's point-to-point engine holds bytes not yet in their rings (an
    /// `isend` larger than the room, the rest of a failed send): a collective's waits then
    /// keep moving them (MPI's progress rule, `p2p::push_pending`).
    pending_out: std::sync::atomic::AtomicBool,
    /// Single-copy reads of peers' buffers: 0 not probed yet, 1 usable, 2 not usable.
    cma: std::sync::atomic::AtomicU8,
    /// Barriers this rank has arrived at on this communicator (the epoch, never wrapping):
    /// what `shared.rs` tags its words with.
    barriers: AtomicU64,
    /// Allocations made so far (`Comm::alloc`): the next one's number.
    allocs: std::sync::atomic::AtomicU32,
    /// This rank's live allocations, looked up by address in collectives (`shared.rs`).
    regions: Mutex<Vec<std::sync::Weak<shared::Region>>>,
    /// Per parity, the call site last written into this rank's op record: (file
    /// address, file length << 32 | line). See `records.rs`, `write_fp`.
    last_site: [(AtomicU64, AtomicU64); 2],
}

/// The world-segment word counting the ranks awake that this rank competes with for a
/// core, and how many of them may be awake for its waits still to spin: the ranks bound
/// to its CPU and 1 where ranks are bound (`init.rs`), else every rank of the host and
/// its core count.
fn awake_word(cfg: &Config) -> (usize, usize) {
    match crate::sys::pinned_cpu() {
        Some(i) => (segment::AWAKE_CPU + 4 * (i % segment::AWAKE_CPUS), 1),
        None => (segment::AWAKE, cfg.cores),
    }
}

impl ShmComm {
    /// Creates (rank 0) or attaches to (others) the segment of communicator `id`.
    /// With `n > 1` a store is required to exchange the segment's address. `world` holds
    /// the members' world ranks; the world communicator's segment (`world` the identity
    /// over the whole job) is this process's wait board.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn connect(
        id: &str,
        name: &str,
        rank: usize,
        n: usize,
        world: Arc<[usize]>,
        cfg: Arc<Config>,
        store: Option<Arc<Store>>,
    ) -> Result<ShmComm> {
        Self::connect_watched(id, name, rank, n, world, cfg, store, None)
    }

    /// [`Self::connect`] for a communicator made from another (`split`, `shrink`):
    /// `watch` names a member of the parent that died (in the parent's numbering, with
    /// the parent's name), so a member that dies while the others wait for it to join
    /// is an error at once, not at the deadline.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn connect_watched(
        id: &str,
        name: &str,
        rank: usize,
        n: usize,
        world: Arc<[usize]>,
        cfg: Arc<Config>,
        store: Option<Arc<Store>>,
        watch: Watch<'_>,
    ) -> Result<ShmComm> {
        let layout = Layout::for_size(n, cfg.slot);
        let key = format!("shm/{id}");
        let seg = if rank == 0 {
            let mut seg = Segment::create(&format!("dist-{}-{}", cfg.job_id, id), layout)?;
            seg.u32_at(segment::OVERSUBSCRIBED).store(cfg.oversubscribed as u32, SeqCst);
            if n > 1 {
                let store = store.as_ref().ok_or_else(|| Error::backend("shm", "a store is needed for n > 1"))?;
                let fd = seg.fd_number().expect("creator holds the fd");
                store.set(&key, format!("{}:{}", std::process::id(), fd).as_bytes())?;
                // Keep the fd open until every member has mapped the segment.
                let joined = format!("shm/{id}/joined");
                await_joined(store, &joined, (n - 1) as i64, cfg.timeout, watch)?;
            }
            seg.forget_fd();
            seg
        } else {
            let store = store.as_ref().ok_or_else(|| Error::backend("shm", "a store is needed for n > 1"))?;
            let v = await_address(store, &key, cfg.timeout, watch)?;
            let s = String::from_utf8_lossy(&v);
            let (pid, fd) = s
                .split_once(':')
                .and_then(|(p, f)| Some((p.parse::<u32>().ok()?, f.parse::<i32>().ok()?)))
                .ok_or_else(|| Error::backend("shm", format!("malformed segment address {s:?} in the store")))?;
            let seg = Segment::open(pid, fd, layout)?;
            store.add(&format!("shm/{id}/joined"), 1)?;
            seg
        };
        let oversubscribed = seg.u32_at(segment::OVERSUBSCRIBED).load(SeqCst) != 0;
        seg.prefault(rank);
        let ctl = seg.layout.ctl(rank);
        seg.u32_at(ctl + segment::PID).store(std::process::id(), SeqCst);
        seg.u64_at(ctl + segment::CMA_ADDR).store(cma::probe_addr(), SeqCst);
        seg.u32_at(ctl + segment::STATE).store(segment::ALIVE, SeqCst);
        let seg = Arc::new(seg);
        let world_seg = if id == WORLD_ID {
            board::install(seg.clone(), rank);
            let (at, limit) = awake_word(&cfg);
            // This rank is awake until it sleeps in a wait or finishes.
            seg.u32_at(at).fetch_add(1, SeqCst);
            Some((seg.clone(), at, limit))
        } else {
            board::current().map(|b| {
                let (at, limit) = awake_word(&cfg);
                (b.segment(), at, limit)
            })
        };
        let weak = Arc::downgrade(&seg);
        crate::verify::failure::register(Box::new(move |reason| match weak.upgrade() {
            Some(seg) => {
                records::notify_failed(&seg, rank, reason);
                true
            }
            None => false,
        }));
        let comm = ShmComm {
            p2p: Mutex::new(p2p::P2p::new(n)),
            pending_out: std::sync::atomic::AtomicBool::new(false),
            seg,
            rank,
            n,
            name: name.to_string(),
            id: id.to_string(),
            world,
            moved: std::sync::atomic::AtomicU32::new(0),
            timeout_us: AtomicU64::new(cfg.timeout.as_micros().min(u64::MAX as u128) as u64),
            cfg,
            oversubscribed,
            world_seg,
            store,
            coll: Mutex::new(0),
            cma: std::sync::atomic::AtomicU8::new(0),
            barriers: AtomicU64::new(0),
            allocs: std::sync::atomic::AtomicU32::new(0),
            regions: Mutex::new(Vec::new()),
            last_site: Default::default(),
        };
        Ok(comm)
    }

    fn ctl(&self, r: usize) -> usize {
        self.seg.layout.ctl(r)
    }

    fn bell(&self, r: usize) -> Bell<'_> {
        Bell {
            word: self.seg.u32_at(self.ctl(r) + segment::BELL),
            sleepers: self.seg.u32_at(self.ctl(r) + segment::BELL_SLEEPERS),
        }
    }

    /// How this communicator's waiters wait before they sleep.
    pub(crate) fn pace(&self) -> sync::Pace<'_> {
        let background = crate::backend::background();
        let spins = if background { 0 } else { self.cfg.spins };
        let awake = match &self.world_seg {
            Some((w, at, limit)) if self.cfg.adaptive_spin && !background => Some((w.u32_at(*at), *limit)),
            _ => None,
        };
        sync::Pace { spins, yield_budget: self.cfg.yield_budget, awake }
    }
    /// Pointer to rank r's staging slot of `parity`.
    fn slot(&self, r: usize, parity: u32) -> *mut u8 {
        self.seg.ptr(self.seg.layout.slot(r, parity))
    }
}

impl ShmComm {
    /// One barrier carrying the op record (also the agreement step of child creation).
    fn barrier(&self, cx: &Op) -> Result<()> {
        if self.n == 1 {
            return Ok(());
        }
        let mut epoch = self.coll.lock().unwrap_or_else(|p| p.into_inner());
        self.sync(&mut epoch, cx, true)
    }
}

impl Backend for ShmComm {
    fn kind(&self) -> &'static str {
        "shm"
    }
    fn rank(&self) -> usize {
        self.rank
    }
    fn size(&self) -> usize {
        self.n
    }

    fn piggybacks_agreement(&self) -> bool {
        self.cfg.check
    }

    fn run(&self, cx: &Op, bufs: Bufs<'_>) -> Result<()> {
        board::enter();
        self.live(cx.name, cx.site)?;
        let reduce_op = || cx.reduce_op().ok_or_else(|| wrong_shape("shm", cx));
        let dtype = || cx.dtype.ok_or_else(|| wrong_shape("shm", cx));
        match (cx.kind, bufs) {
            (OpKind::Barrier, Bufs::None) => self.barrier(cx),
            (OpKind::Broadcast, Bufs::InPlace(buf)) => {
                coll::broadcast(self, cx, buf, cx.root_rank().ok_or_else(|| wrong_shape("shm", cx))?)
            }
            (OpKind::Reduce, Bufs::InPlace(buf)) => coll::reduce(self, cx, buf, dtype()?, reduce_op()?, cx.root_rank()),
            (OpKind::AllReduce, Bufs::InPlace(buf)) => coll::reduce(self, cx, buf, dtype()?, reduce_op()?, None),
            (OpKind::Scan | OpKind::Exscan, Bufs::InPlace(buf)) => {
                coll::scan(self, cx, buf, dtype()?, reduce_op()?, cx.kind == OpKind::Exscan)
            }
            (OpKind::Gather | OpKind::AllGather, Bufs::Gather { send, recv, counts }) => {
                coll::gather_v(self, cx, send, recv, counts, cx.root_rank())
            }
            (OpKind::Scatter, Bufs::Scatter { send, recv, counts }) => {
                coll::scatter(self, cx, send, recv, counts, cx.root_rank().ok_or_else(|| wrong_shape("shm", cx))?)
            }
            (OpKind::ReduceScatter, Bufs::ReduceScatter { send, recv, counts }) => {
                coll::reduce_scatter(self, cx, send, recv, counts, dtype()?, reduce_op()?)
            }
            (OpKind::AllToAll, Bufs::AllToAll { send, send_counts, recv, recv_counts }) => {
                coll::all_to_all_v(self, cx, send, send_counts, recv, recv_counts)
            }
            _ => Err(wrong_shape("shm", cx)),
        }
    }

    fn alloc(&self, cx: &Op, bytes: usize) -> Result<Box<dyn crate::backend::SharedMem>> {
        board::enter();
        shared::alloc(self, cx, bytes)
    }

    fn send(&self, site: Site, dst: usize, tag: u32, dtype: DType, data: &[u8]) -> Result<()> {
        board::enter();
        self.live(crate::error::user_op("send"), site)?;
        p2p::send(self, site, dst, tag, dtype, data)
    }
    fn recv(&self, site: Site, src: usize, tag: u32, dtype: DType, buf: &mut [u8]) -> Result<()> {
        board::enter();
        let id = self.post_recv(site, src, tag)?;
        self.wait_recv(site, id, dtype, buf)
    }
    fn post_send(&self, site: Site, dst: usize, tag: u32, dtype: DType, data: &[u8]) -> Result<ReqId> {
        board::enter();
        self.live(crate::error::user_op("isend"), site)?;
        p2p::post_send(self, site, dst, tag, dtype, data)
    }
    fn post_recv(&self, site: Site, src: usize, tag: u32) -> Result<ReqId> {
        board::enter();
        self.live(crate::error::user_op("irecv"), site)?;
        Ok(self.p2p.lock().unwrap_or_else(|p| p.into_inner()).post_recv(self, src, tag))
    }
    fn wait_send(&self, site: Site, id: ReqId) -> Result<()> {
        board::enter();
        self.live(crate::error::user_op("wait"), site)?;
        p2p::wait_send(self, site, id)
    }
    fn wait_recv(&self, site: Site, id: ReqId, dtype: DType, buf: &mut [u8]) -> Result<()> {
        board::enter();
        self.live(crate::error::user_op("wait"), site)?;
        p2p::wait_recv(self, site, id, dtype, buf)
    }
    fn test_send(&self, site: Site, id: ReqId) -> Result<bool> {
        board::enter();
        self.live(crate::error::user_op("test"), site)?;
        p2p::test_send(self, id)
    }
    fn test_recv(&self, site: Site, id: ReqId, dtype: DType, buf: &mut [u8]) -> Result<bool> {
        board::enter();
        self.live(crate::error::user_op("test"), site)?;
        p2p::test_recv(self, site, id, dtype, buf)
    }
    fn post_recv_any(&self, site: Site, tag: u32) -> Result<ReqId> {
        board::enter();
        self.live(crate::error::user_op("irecv_any"), site)?;
        Ok(p2p::post_recv_any(self, tag))
    }
    fn wait_recv_any(&self, site: Site, id: ReqId, dtype: DType, buf: &mut [u8]) -> Result<(usize, usize)> {
        board::enter();
        self.live(crate::error::user_op("wait"), site)?;
        p2p::wait_recv_any(self, site, id, dtype, buf)
    }
    fn test_recv_any(&self, site: Site, id: ReqId, dtype: DType, buf: &mut [u8]) -> Result<Option<(usize, usize)>> {
        board::enter();
        self.live(crate::error::user_op("test"), site)?;
        p2p::test_recv_any(self, site, id, dtype, buf)
    }

    fn create_child(&self, cx: &Op, key: &str, name: &str, members: &[usize]) -> Result<Option<Box<dyn Backend>>> {
        // Everyone agrees on the call first (fingerprint carries the member hash).
        self.barrier(cx)?;
        let child = match members.iter().position(|&m| m == self.rank) {
            None => None,
            Some(child_rank) => {
                let id = format!("{}.{key}", self.id);
                let world: Arc<[usize]> = members.iter().map(|&m| self.world[m]).collect();
                let dead = || members.iter().position(|&m| m != self.rank && self.gone(m)).map(|i| members[i]);
                let c = ShmComm::connect_watched(
                    &id,
                    name,
                    child_rank,
                    members.len(),
                    world,
                    self.cfg.clone(),
                    self.store.clone(),
                    Some((&dead, &self.name)),
                )?;
                Some(Box::new(c) as Box<dyn Backend>)
            }
        };
        // Keep every rank (and so the store's host) until all children are mapped.
        self.barrier(cx)?;
        Ok(child)
    }

    fn unreceived(&self) -> Vec<String> {
        // On a communicator a member revoked or left by dying, what no receive claimed
        // is the failure's leftovers (ULFM drops them too), not the program's mistake.
        if self.broken() {
            return Vec::new();
        }
        p2p::unreceived(self)
    }

    fn failed_ranks(&self) -> Result<Vec<usize>> {
        Ok(self.failed())
    }
    fn revoke(&self) -> Result<()> {
        self.revoke_now();
        Ok(())
    }
    fn agree(&self, cx: &Op, flag: bool, call: u64) -> Result<(bool, Vec<usize>)> {
        self.agreement(cx, flag, call)
    }
    fn shrink(&self, cx: &Op, call: u64, name: &dyn Fn(&[usize]) -> String) -> Result<(Box<dyn Backend>, Vec<usize>)> {
        self.shrunk(cx, call, name)
    }

    fn set_timeout(&self, t: std::time::Duration) {
        self.timeout_us.store(t.as_micros().min(u64::MAX as u128) as u64, std::sync::atomic::Ordering::Relaxed);
    }
    fn timeout(&self) -> std::time::Duration {
        std::time::Duration::from_micros(self.timeout_us.load(std::sync::atomic::Ordering::Relaxed))
    }

    fn finish(&self) {
        let ctl = self.ctl(self.rank);
        if self.seg.u32_at(ctl + segment::STATE).load(SeqCst) == segment::ALIVE {
            self.seg.u32_at(ctl + segment::STATE).store(segment::FINISHED, SeqCst);
            if self.id == WORLD_ID {
                self.seg.u32_at(awake_word(&self.cfg).0).fetch_sub(1, SeqCst);
            }
        }
        // Flush sends still buffered here so peers get every byte we promised them.
        let _ = p2p::flush(self);
        // Wake peers sleeping on our words (without moving our epoch) so they look at our state.
        sync::futex_wake_all(self.seg.u32_at(ctl + segment::EPOCH));
        sync::futex_wake_all(self.seg.u32_at(segment::GEN));
        for r in 0..self.n {
            sync::futex_wake_all(self.seg.u32_at(self.ctl(r) + segment::BELL));
        }
    }
}

/// A member of the parent that died (its rank there) and the parent's name: what a
/// wait for the members of a communicator being made watches.
pub(crate) type Watch<'w> = Option<(&'w dyn Fn() -> Option<usize>, &'w str)>;

/// The creator's wait until the `others` members mapped the segment (`joined` counts
/// them), ended at once by a member's death where `watch` is given.
fn await_joined(
    store: &Store,
    joined: &str,
    others: i64,
    timeout: std::time::Duration,
    watch: Watch<'_>,
) -> Result<()> {
    let Some(w) = watch else { return store.wait_count(joined, others, timeout) };
    watched(timeout, w, |_| Ok((store.add(joined, 0)? >= others).then_some(()))).map_err(|e| {
        e.unwrap_or_else(|| {
            Error::store(
                format!("timed out after {:.0}s waiting for {others} ranks at {joined:?}", timeout.as_secs_f64()),
                None,
            )
        })
    })
}

/// A member's wait for the creator's address of the segment (`key`), ended at once by a
/// member's death where `watch` is given.
fn await_address(store: &Store, key: &str, timeout: std::time::Duration, watch: Watch<'_>) -> Result<Vec<u8>> {
    let Some(w) = watch else { return store.get(key, timeout) };
    watched(timeout, w, |slice| store.get_within(key, slice)).map_err(|e| {
        e.unwrap_or_else(|| {
            Error::store(
                format!("timed out after {:.0}s waiting for {key:?}: a rank did not join", timeout.as_secs_f64()),
                None,
            )
        })
    })
}

/// Polls `poll` (given the time it may block) until it answers, in slices of 10 ms,
/// checking between them whether `watch` names a member that died: `Err(Some(_))` for
/// such a death or an error of `poll`, `Err(None)` when `timeout` passed.
fn watched<T>(
    timeout: std::time::Duration,
    (watch, comm): (&dyn Fn() -> Option<usize>, &str),
    mut poll: impl FnMut(std::time::Duration) -> Result<Option<T>>,
) -> std::result::Result<T, Option<Error>> {
    let start = std::time::Instant::now();
    loop {
        let slice = timeout.saturating_sub(start.elapsed()).min(std::time::Duration::from_millis(10));
        if let Some(v) = poll(slice).map_err(Some)? {
            return Ok(v);
        }
        if let Some(rank) = watch() {
            return Err(Some(Error::PeerFailed {
                rank,
                comm: comm.to_string(),
                reason: "it died while the members were making a communicator from this one".into(),
            }));
        }
        if start.elapsed() >= timeout {
            return Err(None);
        }
        if slice.is_zero() {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;
    use std::time::{Duration, Instant};

    #[test]
    fn a_member_that_dies_while_others_wait_is_named_at_once() {
        let polls = Cell::new(0);
        let dead = || (polls.get() >= 3).then_some(2);
        let t = Instant::now();
        let got = watched(Duration::from_secs(30), (&dead, "World"), |slice| {
            polls.set(polls.get() + 1);
            std::thread::sleep(slice);
            Ok(None::<()>)
        });
        assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
        match got {
            Err(Some(Error::PeerFailed { rank: 2, comm, .. })) => assert_eq!(comm, "World"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn waits_end_with_an_answer_or_at_the_deadline() {
        let alive = || None;
        let n = Cell::new(0);
        let got = watched(Duration::from_secs(30), (&alive, "World"), |_| {
            n.set(n.get() + 1);
            Ok((n.get() == 4).then_some(7))
        });
        assert_eq!(got.ok(), Some(7));
        let t = Instant::now();
        let none = watched(Duration::from_millis(50), (&alive, "World"), |slice| {
            std::thread::sleep(slice);
            Ok(None::<()>)
        });
        assert!(matches!(none, Err(None)) && t.elapsed() >= Duration::from_millis(50));
    }
}
