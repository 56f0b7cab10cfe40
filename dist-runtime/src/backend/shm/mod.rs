//! The shared-memory backend: every member of a communicator maps one segment.
//!
//! Collectives advance in *epochs*. Each rank publishes the epoch it reached in its
//! control block; a step writes only into the writer's own staging slot of parity
//! `(epoch + 1) % 2`, arrives at `epoch + 1`, waits for every peer to arrive, then reads
//! peers' slots of the parity just completed. A rank can be at most one epoch ahead of
//! any peer, so double-buffering by parity is enough for a writer never to overwrite
//! data a slower peer is still reading. See `coll.rs` for the algorithms and
//! `p2p.rs` for the point-to-point rings.

mod cma;
mod coll;
mod copy;
mod p2p;
pub(crate) mod segment;
pub(crate) mod sync;
pub(crate) mod tuning;

use crate::backend::{Backend, ReqId};
use crate::dtype::DType;
use crate::error::{Error, Result, Site};
use crate::op::{Op, RECORD_LEN};
use crate::reduce_op::ReduceOp;
use crate::store::Store;
use crate::verify::watchdog::{describe_graph, RankWait, WaitRecord, WAIT_COLL, WAIT_LEN};
use segment::{Layout, Segment};
use std::sync::atomic::Ordering::SeqCst;
use std::sync::{Arc, Mutex};
use sync::Bell;
use tuning::Config;

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
    cfg: Arc<Config>,
    store: Option<Arc<Store>>,
    /// Collective state: the last epoch this rank arrived at.
    coll: Mutex<u32>,
    p2p: Mutex<p2p::P2p>,
    /// Single-copy reads of peers' buffers: 0 not probed yet, 1 usable, 2 not usable.
    cma: std::sync::atomic::AtomicU8,
}

/// Marks `rank` failed with `reason` in `seg`, and wakes every waiter so peers notice at
/// once instead of at their next health check (this backend's failure notice).
fn notify_failed(seg: &Segment, rank: usize, reason: &str) {
    write_reason(seg, rank, reason);
    seg.u32_at(seg.layout.ctl(rank) + segment::STATE).store(segment::FAILED, SeqCst);
    sync::futex_wake_all(seg.u32_at(segment::GEN));
    for r in 0..seg.layout.n {
        let c = seg.layout.ctl(r);
        sync::futex_wake_all(seg.u32_at(c + segment::EPOCH));
        sync::futex_wake_all(seg.u32_at(c + segment::BELL));
    }
}

fn write_reason(seg: &Segment, rank: usize, reason: &str) {
    let bytes = reason.as_bytes();
    let len = bytes.len().min(segment::REASON_LEN - 1);
    let dst = seg.ptr(seg.layout.ctl(rank) + segment::REASON);
    // SAFETY: the reason field of our own control block; peers read it only after they
    // see state == FAILED, which is stored (SeqCst) after this write.
    unsafe {
        std::ptr::copy_nonoverlapping(bytes.as_ptr(), dst, len);
        *dst.add(len) = 0;
    }
}

fn read_reason(seg: &Segment, rank: usize) -> String {
    let mut buf = [0u8; segment::REASON_LEN];
    // SAFETY: in bounds; see write_reason for the ordering.
    unsafe {
        std::ptr::copy_nonoverlapping(seg.ptr(seg.layout.ctl(rank) + segment::REASON), buf.as_mut_ptr(), buf.len())
    };
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).into_owned()
}

impl ShmComm {
    /// Creates (rank 0) or attaches to (others) the segment of communicator `id`.
    /// With `n > 1` a store is required to exchange the segment's address.
    pub(crate) fn connect(
        id: &str,
        name: &str,
        rank: usize,
        n: usize,
        cfg: Arc<Config>,
        store: Option<Arc<Store>>,
    ) -> Result<ShmComm> {
        let layout = Layout::for_size(n, cfg.slot);
        let key = format!("shm/{id}");
        let seg = if rank == 0 {
            let mut seg = Segment::create(&format!("dist-{}-{}", cfg.job_id, id), layout)?;
            if n > 1 {
                let store = store.as_ref().ok_or_else(|| Error::backend("shm", "a store is needed for n > 1"))?;
                let fd = seg.fd_number().expect("creator holds the fd");
                store.set(&key, format!("{}:{}", std::process::id(), fd).as_bytes())?;
                // Keep the fd open until every member has mapped the segment.
                let joined = format!("shm/{id}/joined");
                store.wait_count(&joined, (n - 1) as i64, cfg.timeout)?;
            }
            seg.forget_fd();
            seg
        } else {
            let store = store.as_ref().ok_or_else(|| Error::backend("shm", "a store is needed for n > 1"))?;
            let v = store.get(&key, cfg.timeout)?;
            let s = String::from_utf8_lossy(&v);
            let (pid, fd) = s
                .split_once(':')
                .and_then(|(p, f)| Some((p.parse::<u32>().ok()?, f.parse::<i32>().ok()?)))
                .ok_or_else(|| Error::backend("shm", format!("malformed segment address {s:?} in the store")))?;
            let seg = Segment::open(pid, fd, layout)?;
            store.add(&format!("shm/{id}/joined"), 1)?;
            seg
        };
        let ctl = seg.layout.ctl(rank);
        seg.u32_at(ctl + segment::PID).store(std::process::id(), SeqCst);
        seg.u64_at(ctl + segment::CMA_ADDR).store(cma::probe_addr(), SeqCst);
        seg.u32_at(ctl + segment::STATE).store(segment::ALIVE, SeqCst);
        let seg = Arc::new(seg);
        let weak = Arc::downgrade(&seg);
        crate::verify::failure::register(Box::new(move |reason| match weak.upgrade() {
            Some(seg) => {
                notify_failed(&seg, rank, reason);
                true
            }
            None => false,
        }));
        let comm = ShmComm {
            p2p: Mutex::new(p2p::P2p::new(n)),
            seg,
            rank,
            n,
            name: name.to_string(),
            id: id.to_string(),
            cfg,
            store,
            coll: Mutex::new(0),
            cma: std::sync::atomic::AtomicU8::new(0),
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
    pub(crate) fn pace(&self) -> sync::Pace {
        sync::Pace { spins: self.cfg.spins, yield_budget: self.cfg.yield_budget }
    }

    /// Fails if any of `ranks` died, failed or finished, or if the deadline passed.
    fn health(
        &self,
        ranks: &mut dyn Iterator<Item = usize>,
        op: &'static str,
        site: Site,
        started: std::time::Instant,
        waiting: &dyn Fn() -> String,
        warned: &std::cell::Cell<bool>,
    ) -> Result<()> {
        for r in ranks {
            if r == self.rank {
                continue;
            }
            let c = self.ctl(r);
            let state = self.seg.u32_at(c + segment::STATE).load(SeqCst);
            let pid = self.seg.u32_at(c + segment::PID).load(SeqCst);
            let reason = match state {
                segment::FAILED => Some(read_reason(&self.seg, r)),
                segment::FINISHED => Some(format!(
                    "it left {} (returned from its entry) while rank {} still waits on it in {op} at {site}",
                    self.name, self.rank
                )),
                _ if !sync::pid_alive(pid) => {
                    Some(format!("its process (pid {pid}) is gone: killed or exited without finishing"))
                }
                _ => None,
            };
            if let Some(reason) = reason {
                return Err(Error::PeerFailed { rank: r, comm: self.name.clone(), reason });
            }
        }
        let waited = started.elapsed();
        if self.cfg.detail && !warned.get() && waited >= (self.cfg.timeout / 2).min(std::time::Duration::from_secs(10))
        {
            warned.set(true);
            eprintln!(
                "[rank {}] watchdog: {} waits in {op} at {site} for {:.1}s; {}",
                self.rank,
                self.name,
                waited.as_secs_f64(),
                self.wait_graph()
            );
        }
        if waited >= self.cfg.timeout {
            return Err(Error::Timeout {
                op,
                comm: self.name.clone(),
                waiting_for: format!("{}; {}", waiting(), self.wait_graph()),
                secs: self.cfg.timeout.as_secs_f64(),
                site,
            });
        }
        Ok(())
    }

    /// Arrives at `epoch + 1` and waits for every peer to arrive there too.
    /// Before arriving, publishes `fp` (first step of a collective) and after the wait
    /// checks every peer published an agreeing one.
    fn sync(&self, epoch: &mut u32, cx: &Op, fp: bool) -> Result<()> {
        let next = epoch.wrapping_add(1);
        if fp && self.cfg.check {
            self.write_fp(next % 2, cx);
        }
        // Our own epoch word is for diagnostics (who is behind); the wait itself is on
        // the central counter, so the last arrival wakes everyone with one syscall.
        self.seg.u32_at(self.ctl(self.rank) + segment::EPOCH).store(next, SeqCst);
        *epoch = next;
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
                let warned = std::cell::Cell::new(false);
                let blocked = std::cell::Cell::new(false);
                let started = std::time::Instant::now();
                let res = sync::wait_on(
                    &gen,
                    self.pace(),
                    || Ok(reached()),
                    || self.health(&mut behind(), cx.name, cx.site, started, &waiting, &warned),
                    || {
                        blocked.set(true);
                        self.mark_wait(WAIT_COLL, next, cx.name, cx.site);
                    },
                );
                if blocked.get() {
                    self.clear_wait();
                }
                res?;
            }
        }
        if fp && self.cfg.check {
            self.check_fps(next % 2, cx)?;
        }
        Ok(())
    }

    fn gen_bell(&self) -> Bell<'_> {
        Bell { word: self.seg.u32_at(segment::GEN), sleepers: self.seg.u32_at(segment::GEN_SLEEPERS) }
    }

    /// Publishes what this rank is blocked on (read by peers' watchdogs).
    pub(crate) fn mark_wait(&self, kind: u32, peer: u32, op: &str, site: Site) {
        let base = self.ctl(self.rank) + segment::WAIT;
        let word = self.seg.u32_at(base);
        word.store(0, SeqCst);
        let body = WaitRecord::encode_body(peer, op, site);
        // SAFETY: our own wait record; readers check the kind word before and after.
        unsafe { std::ptr::copy_nonoverlapping(body.as_ptr(), self.seg.ptr(base + 4), body.len()) };
        word.store(kind, SeqCst);
    }

    pub(crate) fn clear_wait(&self) {
        self.seg.u32_at(self.ctl(self.rank) + segment::WAIT).store(0, SeqCst);
    }

    /// Rank r's wait record (kind 0 if not blocked, or if it changed while being read).
    fn read_wait(&self, r: usize) -> WaitRecord {
        let base = self.ctl(r) + segment::WAIT;
        let kind = self.seg.u32_at(base).load(SeqCst);
        let mut rec = [0u8; WAIT_LEN];
        // SAFETY: in bounds; a torn read is caught by re-reading the kind word below.
        unsafe { std::ptr::copy_nonoverlapping(self.seg.ptr(base), rec.as_mut_ptr(), rec.len()) };
        if kind == 0 || self.seg.u32_at(base).load(SeqCst) != kind {
            return WaitRecord::default();
        }
        WaitRecord::decode(kind, &rec)
    }

    /// The wait-for graph of this communicator, in words (see `verify::watchdog`).
    pub(crate) fn wait_graph(&self) -> String {
        let ranks: Vec<RankWait> = (0..self.n)
            .map(|r| {
                let rec = self.read_wait(r);
                match rec.kind {
                    0 => match self.seg.u32_at(self.ctl(r) + segment::STATE).load(SeqCst) {
                        segment::FINISHED => RankWait::Left,
                        segment::FAILED => RankWait::Failed,
                        _ => RankWait::Running,
                    },
                    WAIT_COLL => {
                        let behind = (0..self.n)
                            .filter(|&q| q != r)
                            .filter(|&q| {
                                (self.seg.u32_at(self.ctl(q) + segment::EPOCH).load(SeqCst).wrapping_sub(rec.peer)
                                    as i32)
                                    < 0
                            })
                            .collect();
                        RankWait::Blocked { rec, on: behind }
                    }
                    _ => {
                        let on = vec![rec.peer as usize];
                        RankWait::Blocked { rec, on }
                    }
                }
            })
            .collect();
        describe_graph(&self.name, &ranks)
    }

    fn write_fp(&self, parity: u32, op: &Op) {
        let rec = op.record();
        let dst = self.seg.ptr(self.ctl(self.rank) + segment::FP + parity as usize * segment::FP_LEN);
        // SAFETY: our own op record of this parity; peers read it only after they see
        // our epoch store (SeqCst) that follows.
        unsafe { std::ptr::copy_nonoverlapping(rec.as_ptr(), dst, rec.len()) };
    }

    fn read_fp(&self, r: usize, parity: u32) -> [u8; RECORD_LEN] {
        let mut rec = [0u8; RECORD_LEN];
        let src = self.seg.ptr(self.ctl(r) + segment::FP + parity as usize * segment::FP_LEN);
        // SAFETY: rank r wrote this record before arriving at the epoch we waited for,
        // and will not rewrite this parity before we arrive at the next one.
        unsafe { std::ptr::copy_nonoverlapping(src, rec.as_mut_ptr(), rec.len()) };
        rec
    }

    /// The agreement check of `verify`, on the records peers left in the segment.
    fn check_fps(&self, parity: u32, cx: &Op) -> Result<()> {
        let recs: Vec<(usize, [u8; RECORD_LEN])> =
            (0..self.n).filter(|&r| r != self.rank).map(|r| (r, self.read_fp(r, parity))).collect();
        crate::verify::agreement(&self.name, self.rank, cx, recs.iter().map(|(r, rec)| (*r, rec)))
    }

    /// Pointer to rank r's staging slot of `parity`.
    fn slot(&self, r: usize, parity: u32) -> *mut u8 {
        self.seg.ptr(self.seg.layout.slot(r, parity))
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

    fn barrier(&self, cx: &Op) -> Result<()> {
        if self.n == 1 {
            return Ok(());
        }
        let mut epoch = self.coll.lock().unwrap_or_else(|p| p.into_inner());
        self.sync(&mut epoch, cx, true)
    }

    fn broadcast(&self, cx: &Op, buf: &mut [u8], root: usize) -> Result<()> {
        coll::broadcast(self, cx, buf, root)
    }
    fn reduce(&self, cx: &Op, buf: &mut [u8], dtype: DType, op: ReduceOp, root: usize) -> Result<()> {
        coll::reduce(self, cx, buf, dtype, op, Some(root))
    }
    fn all_reduce(&self, cx: &Op, buf: &mut [u8], dtype: DType, op: ReduceOp) -> Result<()> {
        coll::reduce(self, cx, buf, dtype, op, None)
    }
    fn gather_v(
        &self,
        cx: &Op,
        send: &[u8],
        recv: Option<&mut [u8]>,
        counts: &[usize],
        root: Option<usize>,
    ) -> Result<()> {
        coll::gather_v(self, cx, send, recv, counts, root)
    }
    fn scatter(&self, cx: &Op, send: Option<&[u8]>, recv: &mut [u8], root: usize) -> Result<()> {
        coll::scatter(self, cx, send, recv, root)
    }
    fn reduce_scatter(&self, cx: &Op, send: &[u8], recv: &mut [u8], dtype: DType, op: ReduceOp) -> Result<()> {
        coll::reduce_scatter(self, cx, send, recv, dtype, op)
    }
    fn all_to_all_v(
        &self,
        cx: &Op,
        send: &[u8],
        send_counts: &[usize],
        recv: &mut [u8],
        recv_counts: &[usize],
    ) -> Result<()> {
        coll::all_to_all_v(self, cx, send, send_counts, recv, recv_counts)
    }

    fn send(&self, site: Site, dst: usize, tag: u32, dtype: DType, data: &[u8]) -> Result<()> {
        p2p::send(self, site, dst, tag, dtype, data)
    }
    fn recv(&self, site: Site, src: usize, tag: u32, dtype: DType, buf: &mut [u8]) -> Result<()> {
        let id = self.post_recv(site, src, tag)?;
        self.wait_recv(site, id, dtype, buf)
    }
    fn post_send(&self, site: Site, dst: usize, tag: u32, dtype: DType, data: &[u8]) -> Result<ReqId> {
        p2p::post_send(self, site, dst, tag, dtype, data)
    }
    fn post_recv(&self, _site: Site, src: usize, tag: u32) -> Result<ReqId> {
        Ok(self.p2p.lock().unwrap_or_else(|p| p.into_inner()).post_recv(src, tag))
    }
    fn wait_send(&self, site: Site, id: ReqId) -> Result<()> {
        p2p::wait_send(self, site, id)
    }
    fn wait_recv(&self, site: Site, id: ReqId, dtype: DType, buf: &mut [u8]) -> Result<()> {
        p2p::wait_recv(self, site, id, dtype, buf)
    }

    fn create_child(&self, cx: &Op, key: &str, members: &[usize]) -> Result<Option<Box<dyn Backend>>> {
        // Everyone agrees on the call first (fingerprint carries the member hash).
        self.barrier(cx)?;
        let child = match members.iter().position(|&m| m == self.rank) {
            None => None,
            Some(child_rank) => {
                let id = format!("{}.{key}", self.id);
                let name = key.split('#').next().unwrap_or(key).to_string();
                let name = format!("{name}{{{}}}", members.iter().map(|m| m.to_string()).collect::<Vec<_>>().join(","));
                let c = ShmComm::connect(&id, &name, child_rank, members.len(), self.cfg.clone(), self.store.clone())?;
                Some(Box::new(c) as Box<dyn Backend>)
            }
        };
        // Keep every rank (and so the store's host) until all children are mapped.
        self.barrier(cx)?;
        Ok(child)
    }

    fn finish(&self) {
        let ctl = self.ctl(self.rank);
        if self.seg.u32_at(ctl + segment::STATE).load(SeqCst) == segment::ALIVE {
            self.seg.u32_at(ctl + segment::STATE).store(segment::FINISHED, SeqCst);
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
