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

use crate::backend::{Backend, Fingerprint, OpCtx, OpKind, ReqId};
use crate::config::Config;
use crate::dtype::DType;
use crate::error::{Error, Result, Site};
use crate::op::ReduceOp;
use crate::store::Store;
use segment::{Layout, Segment};
use std::sync::atomic::Ordering::SeqCst;
use std::sync::{Arc, Mutex, Weak};
use sync::Bell;

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

/// Every segment this process maps, so a failing rank can tell all its peers at once.
static LIVE: Mutex<Vec<(Weak<Segment>, usize)>> = Mutex::new(Vec::new());

/// Marks this rank failed with `reason` in every communicator it belongs to, and wakes
/// every waiter so peers notice at once instead of at their next health check.
pub(crate) fn mark_failed(reason: &str) {
    let live = LIVE.lock().unwrap_or_else(|p| p.into_inner());
    for (w, rank) in live.iter() {
        if let Some(seg) = w.upgrade() {
            write_reason(&seg, *rank, reason);
            seg.u32_at(seg.layout.ctl(*rank) + segment::STATE).store(segment::FAILED, SeqCst);
            sync::futex_wake_all(seg.u32_at(segment::GEN));
            for r in 0..seg.layout.n {
                let c = seg.layout.ctl(r);
                sync::futex_wake_all(seg.u32_at(c + segment::EPOCH));
                sync::futex_wake_all(seg.u32_at(c + segment::BELL));
            }
        }
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
        let layout = Layout::for_size(n);
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
        {
            let mut live = LIVE.lock().unwrap_or_else(|p| p.into_inner());
            live.retain(|(w, _)| w.strong_count() > 0);
            live.push((Arc::downgrade(&seg), rank));
        }
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

    pub(crate) fn spins(&self) -> u32 {
        self.cfg.spins
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
    fn sync(&self, epoch: &mut u32, cx: &OpCtx, fp: bool) -> Result<()> {
        let next = epoch.wrapping_add(1);
        if fp && self.cfg.check {
            self.write_fp(next % 2, &cx.fp);
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
                    self.spins(),
                    || Ok(reached()),
                    || self.health(&mut behind(), cx.name, cx.fp.site, started, &waiting, &warned),
                    || {
                        blocked.set(true);
                        self.mark_wait(WAIT_COLL, next, cx.name, cx.fp.site);
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
        let mut rec = [0u8; segment::WAIT_LEN];
        rec[4..8].copy_from_slice(&peer.to_le_bytes());
        rec[8..12].copy_from_slice(&site.0.line().to_le_bytes());
        let opb = op.as_bytes();
        let k = opb.len().min(31);
        rec[16..16 + k].copy_from_slice(&opb[..k]);
        let f = site.0.file().as_bytes();
        let k = f.len().min(segment::WAIT_LEN - 49);
        rec[48..48 + k].copy_from_slice(&f[f.len() - k..]);
        // SAFETY: our own wait record; readers check the kind word before and after.
        unsafe { std::ptr::copy_nonoverlapping(rec[4..].as_ptr(), self.seg.ptr(base + 4), segment::WAIT_LEN - 4) };
        word.store(kind, SeqCst);
    }

    pub(crate) fn clear_wait(&self) {
        self.seg.u32_at(self.ctl(self.rank) + segment::WAIT).store(0, SeqCst);
    }

    /// Rank r's wait record: (kind, peer-or-epoch, op, file, line); kind 0 if not blocked.
    fn read_wait(&self, r: usize) -> (u32, u32, String, String, u32) {
        let base = self.ctl(r) + segment::WAIT;
        let kind = self.seg.u32_at(base).load(SeqCst);
        let mut rec = [0u8; segment::WAIT_LEN];
        // SAFETY: in bounds; a torn read is caught by re-reading the kind word below.
        unsafe { std::ptr::copy_nonoverlapping(self.seg.ptr(base), rec.as_mut_ptr(), rec.len()) };
        if self.seg.u32_at(base).load(SeqCst) != kind {
            return (0, 0, String::new(), String::new(), 0);
        }
        let cstr =
            |b: &[u8]| String::from_utf8_lossy(&b[..b.iter().position(|&x| x == 0).unwrap_or(b.len())]).into_owned();
        let peer = u32::from_le_bytes(rec[4..8].try_into().unwrap());
        let line = u32::from_le_bytes(rec[8..12].try_into().unwrap());
        (kind, peer, cstr(&rec[16..48]), cstr(&rec[48..]), line)
    }

    /// The wait-for graph of this communicator, in words, naming a cycle if there is one:
    /// "rank 0 waits in recv from rank 1 (src/x.rs:12); rank 1 waits in recv from rank 0
    /// (src/x.rs:20): deadlock (0 → 1 → 0)".
    pub(crate) fn wait_graph(&self) -> String {
        let n = self.n;
        let mut edges: Vec<Vec<usize>> = vec![Vec::new(); n];
        let mut parts = Vec::new();
        for (r, out) in edges.iter_mut().enumerate() {
            let state = self.seg.u32_at(self.ctl(r) + segment::STATE).load(SeqCst);
            let (kind, peer, op, file, line) = self.read_wait(r);
            let at = format!("{file}:{line}");
            let desc = match kind {
                WAIT_RECV => {
                    out.push(peer as usize);
                    format!("rank {r} waits in {op} from rank {peer} ({at})")
                }
                WAIT_SEND => {
                    out.push(peer as usize);
                    format!("rank {r} waits in {op} to rank {peer} ({at})")
                }
                WAIT_COLL => {
                    let behind: Vec<usize> = (0..n)
                        .filter(|&q| q != r)
                        .filter(|&q| {
                            (self.seg.u32_at(self.ctl(q) + segment::EPOCH).load(SeqCst).wrapping_sub(peer) as i32) < 0
                        })
                        .collect();
                    out.extend(&behind);
                    format!("rank {r} waits in {op} ({at}) for rank(s) {behind:?}")
                }
                _ => match state {
                    segment::FINISHED => format!("rank {r} has left {}", self.name),
                    segment::FAILED => format!("rank {r} failed"),
                    _ => format!("rank {r} is not blocked in {}", self.name),
                },
            };
            parts.push(desc);
        }
        let mut s = format!("wait-for graph of {}: {}", self.name, parts.join("; "));
        if let Some(cycle) = find_cycle(&edges) {
            let path: Vec<String> = cycle.iter().map(|r| r.to_string()).collect();
            s.push_str(&format!(": deadlock ({})", path.join(" → ")));
        }
        s
    }

    fn write_fp(&self, parity: u32, fp: &Fingerprint) {
        let mut rec = [0u8; segment::FP_LEN];
        rec[0] = fp.kind as u8;
        rec[1] = fp.dtype.map(|d| d as u8).unwrap_or(0);
        rec[4..8].copy_from_slice(&fp.root.to_le_bytes());
        rec[8..16].copy_from_slice(&fp.count.to_le_bytes());
        rec[16..24].copy_from_slice(&fp.op.to_le_bytes());
        rec[24..32].copy_from_slice(&fp.extra.to_le_bytes());
        rec[32..36].copy_from_slice(&fp.site.0.line().to_le_bytes());
        let file = fp.site.0.file().as_bytes();
        let keep = file.len().min(segment::FP_LEN - 41);
        // keep the tail of long paths: it names the file
        rec[40..40 + keep].copy_from_slice(&file[file.len() - keep..]);
        let dst = self.seg.ptr(self.ctl(self.rank) + segment::FP + parity as usize * segment::FP_LEN);
        // SAFETY: our own fingerprint record of this parity; peers read it only after
        // they see our epoch store (SeqCst) that follows.
        unsafe { std::ptr::copy_nonoverlapping(rec.as_ptr(), dst, rec.len()) };
    }

    fn read_fp(&self, r: usize, parity: u32) -> (Option<Fingerprint>, String, u32) {
        let mut rec = [0u8; segment::FP_LEN];
        let src = self.seg.ptr(self.ctl(r) + segment::FP + parity as usize * segment::FP_LEN);
        // SAFETY: rank r wrote this record before arriving at the epoch we waited for,
        // and will not rewrite this parity before we arrive at the next one.
        unsafe { std::ptr::copy_nonoverlapping(src, rec.as_mut_ptr(), rec.len()) };
        let u64_at = |o: usize| u64::from_le_bytes(rec[o..o + 8].try_into().unwrap());
        let line = u32::from_le_bytes(rec[32..36].try_into().unwrap());
        let end = rec[40..].iter().position(|&b| b == 0).map(|p| p + 40).unwrap_or(rec.len());
        let file = String::from_utf8_lossy(&rec[40..end]).into_owned();
        let fp = OpKind::from_u8(rec[0]).map(|kind| Fingerprint {
            kind,
            dtype: DType::from_u8(rec[1]),
            root: u32::from_le_bytes(rec[4..8].try_into().unwrap()),
            count: u64_at(8),
            op: u64_at(16),
            extra: u64_at(24),
            site: Site::caller(), // not used for comparison
        });
        (fp, file, line)
    }

    fn check_fps(&self, parity: u32, cx: &OpCtx) -> Result<()> {
        let mine = &cx.fp;
        let mut bad = Vec::new();
        for r in 0..self.n {
            if r == self.rank {
                continue;
            }
            let (fp, file, line) = self.read_fp(r, parity);
            match fp {
                Some(fp) if fp.agrees(mine) => {}
                Some(fp) => bad.push(format!("rank {r} called {}", fp.describe(&file, line))),
                None => bad.push(format!("rank {r} called an unknown op at {file}:{line}")),
            }
        }
        if bad.is_empty() {
            return Ok(());
        }
        Err(Error::Mismatch {
            comm: self.name.clone(),
            msg: format!(
                "rank {} called {}, but {}",
                self.rank,
                mine.describe(mine.site.0.file(), mine.site.0.line()),
                bad.join("; ")
            ),
        })
    }

    /// Pointer to rank r's staging slot of `parity`.
    fn slot(&self, r: usize, parity: u32) -> *mut u8 {
        self.seg.ptr(self.seg.layout.slot(r, parity))
    }
}

pub(crate) const WAIT_RECV: u32 = 1;
pub(crate) const WAIT_SEND: u32 = 2;
pub(crate) const WAIT_COLL: u32 = 3;

/// A cycle in the wait-for graph, as the ranks along it (first repeated at the end).
fn find_cycle(edges: &[Vec<usize>]) -> Option<Vec<usize>> {
    let n = edges.len();
    // 0 unvisited, 1 on stack, 2 done
    let mut color = vec![0u8; n];
    let mut stack: Vec<usize> = Vec::new();
    fn dfs(u: usize, edges: &[Vec<usize>], color: &mut [u8], stack: &mut Vec<usize>) -> Option<Vec<usize>> {
        color[u] = 1;
        stack.push(u);
        for &v in &edges[u] {
            if v >= edges.len() {
                continue;
            }
            if color[v] == 1 {
                let at = stack.iter().position(|&x| x == v).expect("on stack");
                let mut c = stack[at..].to_vec();
                c.push(v);
                return Some(c);
            }
            if color[v] == 0 {
                if let Some(c) = dfs(v, edges, color, stack) {
                    return Some(c);
                }
            }
        }
        stack.pop();
        color[u] = 2;
        None
    }
    (0..n).find_map(|u| if color[u] == 0 { dfs(u, edges, &mut color, &mut stack) } else { None })
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

    fn barrier(&self, cx: &OpCtx) -> Result<()> {
        if self.n == 1 {
            return Ok(());
        }
        let mut epoch = self.coll.lock().unwrap_or_else(|p| p.into_inner());
        self.sync(&mut epoch, cx, true)
    }

    fn broadcast(&self, cx: &OpCtx, buf: &mut [u8], root: usize) -> Result<()> {
        coll::broadcast(self, cx, buf, root)
    }
    fn reduce(&self, cx: &OpCtx, buf: &mut [u8], dtype: DType, op: ReduceOp, root: usize) -> Result<()> {
        coll::reduce(self, cx, buf, dtype, op, Some(root))
    }
    fn all_reduce(&self, cx: &OpCtx, buf: &mut [u8], dtype: DType, op: ReduceOp) -> Result<()> {
        coll::reduce(self, cx, buf, dtype, op, None)
    }
    fn gather_v(
        &self,
        cx: &OpCtx,
        send: &[u8],
        recv: Option<&mut [u8]>,
        counts: &[usize],
        root: Option<usize>,
    ) -> Result<()> {
        coll::gather_v(self, cx, send, recv, counts, root)
    }
    fn scatter(&self, cx: &OpCtx, send: Option<&[u8]>, recv: &mut [u8], root: usize) -> Result<()> {
        coll::scatter(self, cx, send, recv, root)
    }
    fn reduce_scatter(&self, cx: &OpCtx, send: &[u8], recv: &mut [u8], dtype: DType, op: ReduceOp) -> Result<()> {
        coll::reduce_scatter(self, cx, send, recv, dtype, op)
    }
    fn all_to_all_v(
        &self,
        cx: &OpCtx,
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

    fn create_child(&self, cx: &OpCtx, key: &str, members: &[usize]) -> Result<Option<Box<dyn Backend>>> {
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

#[cfg(test)]
mod tests {
    use super::find_cycle;

    #[test]
    fn cycles_in_wait_for_graphs() {
        // 0 -> 1 -> 0
        assert_eq!(find_cycle(&[vec![1], vec![0]]), Some(vec![0, 1, 0]));
        // a chain is no deadlock
        assert_eq!(find_cycle(&[vec![1], vec![2], vec![]]), None);
        // a ring of 4 where every rank sends first
        assert_eq!(find_cycle(&[vec![1], vec![2], vec![3], vec![0]]), Some(vec![0, 1, 2, 3, 0]));
        // a collective waiting on a rank that waits on a recv from the first
        assert_eq!(find_cycle(&[vec![2, 3], vec![], vec![0], vec![]]), Some(vec![0, 2, 0]));
        // edges to ranks out of range are ignored
        assert_eq!(find_cycle(&[vec![7]]), None);
    }
}
