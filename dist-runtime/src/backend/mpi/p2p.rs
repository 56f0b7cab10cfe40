//! Point-to-point on MPI. Every message starts with a 128-byte header (element type,
//! length, the sender's call site). Up to [`INLINE`] bytes the payload follows the
//! header in the same MPI message (one message, one copy); larger payloads go as a
//! second message with the same tag right after the header (MPI does not let messages
//! with the same source and tag overtake each other), received straight into the
//! caller's buffer; past MPI's 32-bit counts (2 GiB), as several such messages of at
//! most that many bytes, the part size written in the header. `post_send` copies what it sends (the caller's buffer is free at
//! once, as the `Backend` contract says); a blocking `send` sends a large payload from
//! the caller's buffer, without a copy. A receive is claimed at
//! posting and matched at its wait with a matched probe (`MPI_Improbe`, polled with the
//! deadline, then `MPI_Imrecv`, polled likewise): a wait for a later receive first takes the earlier
//! ones' messages of the same (source, tag) into their own buffers, so messages match
//! receives in posting order, as on shm, whatever order they are waited in. The probe
//! also gives the message's length, checked against the receive buffer before a byte
//! lands.

use super::ops::bytes;
use super::{call, count, MpiComm};
use crate::backend::ReqId;
use crate::dtype::DType;
use crate::error::{Error, Result, Site};
use mpi::ffi;
use std::collections::{HashMap, VecDeque};
use std::ffi::c_int;
use std::sync::atomic::Ordering;

/// A posted send: its requests (the header and an inline payload; a separate payload)
/// and the buffers MPI reads.
struct Send {
    reqs: Vec<ffi::MPI_Request>,
    _bufs: Vec<Vec<u8>>,
    dst: usize,
    tag: u32,
}

impl Send {
    /// Bytes of the copies this send holds.
    fn held(&self) -> u64 {
        self._bufs.iter().map(|b| b.len() as u64).sum()
    }

    /// `MPI_Test` on each of the send's requests: whether all have completed.
    fn test(&mut self) -> Result<bool> {
        let mut all = true;
        for r in self.reqs.iter_mut() {
            let mut flag: c_int = 0;
            // SAFETY: a live request of this process (a completed one is MPI_REQUEST_NULL).
            call("MPI_Test", || unsafe { ffi::MPI_Test(r, &mut flag, ffi::RSMPI_STATUS_IGNORE) })?;
            all &= flag != 0;
        }
        Ok(all)
    }
}

pub(super) const HEADER: usize = 128;
/// Largest payload sent inside the header's message.
pub(super) const INLINE: usize = 4 << 10;
/// Header byte 1: the payload follows in the same message.
const INLINE_FLAG: u8 = 1;

/// Writes the header of a message into `h` (its first [`HEADER`] bytes): element type,
/// payload length, the size of the payload's parts, the sender's call site ("file:line",
/// its tail where longer than the room). No allocation or formatting: this is on every
/// send's path.
fn write_header(h: &mut [u8], dtype: DType, len: usize, site: Site) {
    let h = &mut h[..HEADER];
    h.fill(0);
    h[0] = dtype as u8;
    h[1] = if len <= INLINE { INLINE_FLAG } else { 0 };
    h[2..6].copy_from_slice(&(super::max_count() as u32).to_le_bytes());
    h[8..16].copy_from_slice(&(len as u64).to_le_bytes());
    let mut digits = [0u8; 10];
    let (mut line, mut k) = (site.0.line(), digits.len());
    loop {
        k -= 1;
        digits[k] = b'0' + (line % 10) as u8;
        line /= 10;
        if line == 0 {
            break;
        }
    }
    let (file, line) = (site.0.file().as_bytes(), &digits[k..]);
    let total = file.len() + 1 + line.len();
    let file = &file[total.saturating_sub(HEADER - 16).min(file.len())..];
    let at = &mut h[16..16 + file.len() + 1 + line.len()];
    at[..file.len()].copy_from_slice(file);
    at[file.len()] = b':';
    at[file.len() + 1..].copy_from_slice(line);
}

/// The header of a message, with room reserved for an inline payload (see
/// [`write_header`]).
fn header(dtype: DType, len: usize, site: Site) -> Vec<u8> {
    let mut h = Vec::with_capacity(HEADER + if len <= INLINE { len } else { 0 });
    h.resize(HEADER, 0);
    write_header(&mut h, dtype, len, site);
    h
}

/// The size of a separate payload's parts (the last may be shorter): every part is one
/// MPI message of at most MPI's largest count.
fn part_size(h: &[u8]) -> usize {
    match u32::from_le_bytes(h[2..6].try_into().expect("4 bytes")) {
        0 => usize::MAX,
        p => p as usize,
    }
}

/// (dtype, length) of a header.
pub(super) fn read_header(h: &[u8]) -> (Option<DType>, usize) {
    let len = u64::from_le_bytes(h[8..16].try_into().expect("8 bytes")) as usize;
    (DType::from_u8(h[0]), len)
}

/// The sender's "file:line" in a header (read for error messages only).
pub(super) fn sender_site(h: &[u8]) -> String {
    String::from_utf8_lossy(&h[16..HEADER]).trim_end_matches('\0').to_string()
}

/// A posted receive: where it comes from, and its message (header, payload) once
/// taken early.
struct Recv {
    /// `usize::MAX`: any source (`recv_any`).
    src: usize,
    tag: u32,
    early: Option<(Vec<u8>, Vec<u8>)>,
    /// The source of the message taken early (for a receive from any source).
    from: usize,
}

#[derive(Default)]
pub(super) struct State {
    next: ReqId,
    sends: HashMap<ReqId, Send>,
    recvs: HashMap<ReqId, Recv>,
    /// Per (source, tag): receives posted and not yet matched, in posting order.
    queue: HashMap<(usize, u32), VecDeque<ReqId>>,
    /// Per tag: receives from any source posted and not yet matched, in posting order.
    any: HashMap<u32, VecDeque<ReqId>>,
    /// Bytes of the copies posted sends hold, per destination (`bound_copies`).
    held: HashMap<usize, u64>,
}

impl State {
    /// Takes the posted send `id` out, its copies no longer counted.
    fn remove_send(&mut self, id: ReqId) -> Option<Send> {
        let send = self.sends.remove(&id)?;
        *self.held.entry(send.dst).or_default() -= send.held();
        Some(send)
    }
}

// SAFETY: the request handles are plain values used under the backend's lock.
unsafe impl std::marker::Send for State {}

/// The receives posted on `c` and not yet matched, as (source or `usize::MAX` for any,
/// tag), at most `max` of them: what a send's wait takes in while it waits (`service`).
pub(super) fn posted(c: &MpiComm, max: usize) -> Vec<(usize, u32)> {
    let s = c.p2p.lock().unwrap_or_else(|p| p.into_inner());
    s.recvs.values().filter(|r| r.early.is_none()).take(max).map(|r| (r.src, r.tag)).collect()
}

/// The count of a message whose size the protocol bounds (a header of at most
/// `HEADER + INLINE` bytes, a payload part no longer than the sender's part size), as
/// MPI takes it. Payloads are cut at [`super::max_count`] by the sender (`count`).
fn wire_count(n: usize) -> Result<c_int> {
    c_int::try_from(n).map_err(|_| Error::backend("mpi", format!("a message part of {n} bytes exceeds MPI's counts")))
}

fn tag_of(tag: u32) -> Result<c_int> {
    let top = super::ops::tag();
    c_int::try_from(tag).ok().filter(|&t| t < top).ok_or_else(|| {
        Error::invalid(
            "send",
            format!(
                "tag {tag} is beyond the MPI backend's tags (0..={}: this MPI library's range, MPI_TAG_UB = {top}, \
                 less its largest, which dist's own collective messages use)",
                top - 1
            ),
        )
    })
}

/// Posts the header (with an inline payload) and, for a large payload, the payload from
/// `payload` (kept alive by the caller until the requests complete).
fn isend(
    c: &MpiComm,
    site: Site,
    dst: usize,
    tag: u32,
    dtype: DType,
    data: &[u8],
) -> Result<(Vec<ffi::MPI_Request>, Vec<u8>)> {
    let t = tag_of(tag)?;
    let mut h = header(dtype, data.len(), site);
    if data.len() <= INLINE {
        h.extend_from_slice(data);
    }
    let mut reqs = Vec::with_capacity(2);
    // SAFETY: placeholder, written by MPI_Isend.
    let mut r: ffi::MPI_Request = unsafe { ffi::RSMPI_REQUEST_NULL };
    let (p, n) = (super::ops::ptr(&h), wire_count(h.len())?);
    // SAFETY: `h` is returned to the caller, which keeps it until the request completes
    // (its heap buffer does not move when the Vec does).
    call("MPI_Isend", || unsafe { ffi::MPI_Isend(p, n, bytes(), dst as c_int, t, c.comm, &mut r) })?;
    reqs.push(r);
    Ok((reqs, h))
}

/// Posts a separate (large) payload from `data`, which the caller keeps alive until the
/// requests complete: one message per part of at most MPI's largest count.
fn isend_payload(c: &MpiComm, dst: usize, tag: u32, data: &[u8]) -> Result<Vec<ffi::MPI_Request>> {
    let t = tag_of(tag)?;
    let mut reqs = Vec::with_capacity(data.len().div_ceil(super::max_count()));
    for part in data.chunks(super::max_count()) {
        let n = count(part.len(), "send")?;
        // SAFETY: placeholder, written by MPI_Isend.
        let mut r: ffi::MPI_Request = unsafe { ffi::RSMPI_REQUEST_NULL };
        let p = super::ops::ptr(part);
        // SAFETY: the caller keeps `data` alive and unmoved until the requests complete.
        call("MPI_Isend", || unsafe { ffi::MPI_Isend(p, n, bytes(), dst as c_int, t, c.comm, &mut r) })?;
        reqs.push(r);
    }
    Ok(reqs)
}

pub(super) fn post_send(c: &MpiComm, site: Site, dst: usize, tag: u32, dtype: DType, data: &[u8]) -> Result<ReqId> {
    bound_copies(c, site, dst, tag, data.len())?;
    let copy = (data.len() > INLINE).then(|| data.to_vec());
    let _one = c.send_order.lock().unwrap_or_else(|p| p.into_inner());
    let (mut reqs, h) = isend(c, site, dst, tag, dtype, data)?;
    let mut bufs = vec![h];
    if let Some(copy) = copy {
        reqs.extend(isend_payload(c, dst, tag, &copy)?);
        bufs.push(copy);
    }
    drop(_one);
    let mut s = c.p2p.lock().unwrap_or_else(|p| p.into_inner());
    s.next += 1;
    let id = s.next;
    let send = Send { reqs, _bufs: bufs, dst, tag };
    *s.held.entry(dst).or_default() += send.held();
    s.sends.insert(id, send);
    Ok(id)
}

/// Bounded memory for `isend`: each one keeps a copy of its data until MPI has sent it.
/// Copies of sends MPI has finished are freed here (not only at their wait); past
/// `DIST_ISEND_MIB` still held for `dst`, this send waits for MPI to finish earlier ones
/// (taking what this rank's posted receives are due meanwhile), as a send on a bounded
/// transport does.
fn bound_copies(c: &MpiComm, site: Site, dst: usize, tag: u32, len: usize) -> Result<()> {
    let limit = crate::env::isend_limit();
    let fits = |held: u64| held + len as u64 <= limit || held == 0;
    // The common case costs a lookup: the copies held for `dst` are counted as posted.
    if fits(c.p2p.lock().unwrap_or_else(|p| p.into_inner()).held.get(&dst).copied().unwrap_or(0)) {
        return Ok(());
    }
    // Past the bound: free the copies of the sends MPI has finished, and wait for more.
    let reclaim = |c: &MpiComm| -> Result<u64> {
        let mut s = c.p2p.lock().unwrap_or_else(|p| p.into_inner());
        let mut freed = 0u64;
        for send in s.sends.values_mut().filter(|x| x.dst == dst && !x._bufs.is_empty()) {
            if send.test()? {
                freed += send.held();
                send._bufs = Vec::new(); // sent: MPI reads the copy no more
            }
        }
        let held = s.held.entry(dst).or_default();
        *held -= freed;
        Ok(*held)
    };
    let waiting_for =
        || format!("rank {dst} to receive earlier isends (DIST_ISEND_MIB={} MiB of copies held for it)", limit >> 20);
    c.poll(super::Wait::Send { dst, tag }, "isend", site, &waiting_for, || {
        if fits(reclaim(c)?) {
            return Ok(true);
        }
        service(c, site)?;
        Ok(false)
    })
}

/// Waits for a send's requests. A large send completes only once the peer receives it,
/// so while waiting this rank takes the messages its own posted receives are due (into
/// their stashes): `isend; irecv; wait` and `irecv; send; wait` on both ends complete,
/// as they do on an MPI whose receives are posted at once.
fn wait_all(c: &MpiComm, site: Site, dst: usize, tag: u32, reqs: &mut [ffi::MPI_Request]) -> Result<()> {
    let waiting_for = || {
        format!(
            "rank {dst} to receive the message with tag {tag} (MPI completes a large send only once it is received)"
        )
    };
    for r in reqs {
        c.poll(super::Wait::Send { dst, tag }, crate::error::user_op("send"), site, &waiting_for, || {
            let mut flag: c_int = 0;
            // SAFETY: a live request of this process.
            call("MPI_Test", || unsafe { ffi::MPI_Test(r, &mut flag, ffi::RSMPI_STATUS_IGNORE) })?;
            if flag == 0 {
                service(c, site)?;
            }
            Ok(flag != 0)
        })?;
    }
    Ok(())
}

/// Takes every message already here for the receive at the front of each (source, tag)
/// queue into that receive's stash (posting order is kept: only fronts are served).
fn service(c: &MpiComm, site: Site) -> Result<()> {
    if c.queued.load(Ordering::Relaxed) == 0 {
        return Ok(());
    }
    // Another thread waiting on a receive is matching already.
    let Ok(_order) = c.recv_order.try_lock() else { return Ok(()) };
    serve(c, site, None)
}

thread_local! {
    /// Set while this thread serves posted receives (no re-entry from the polls inside).
    static SERVING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    /// The (source, tag) a `wait_recv` of this thread is matching while it holds
    /// `recv_order`: serving takes the other queues' messages, never that one's.
    static MATCHING: std::cell::Cell<Option<(usize, u32)>> = const { std::cell::Cell::new(None) };
}

/// Clears [`MATCHING`] when a `wait_recv` ends, however it ends.
struct Matching;

impl Drop for Matching {
    fn drop(&mut self) {
        MATCHING.set(None);
    }
}

/// Run from every wait of this communicator (`MpiComm::poll`: collectives, sends,
/// receives of another source or tag): takes the messages this rank's posted receives
/// are due into their stashes, as MPI itself does for a receive posted with `MPI_Irecv`.
/// A blocking send to this rank, which MPI completes only once received (past 4 KiB),
/// is then released while its receive, posted earlier, waits its turn: `irecv;
/// barrier; wait` against `send; barrier` completes, as under MPI.
pub(super) fn serve_posted(c: &MpiComm, site: Site) -> Result<()> {
    if SERVING.get() {
        return Ok(());
    }
    if c.queued.load(Ordering::Relaxed) == 0 {
        return Ok(());
    }
    SERVING.set(true);
    let r = match MATCHING.get() {
        // This thread's `wait_recv` holds `recv_order`.
        Some(key) => serve(c, site, Some(key)),
        None => service(c, site),
    };
    SERVING.set(false);
    r
}

/// Counts a receive out of the queues (`MpiComm::queued`), if one was taken out.
fn unqueue(c: &MpiComm, taken: Option<ReqId>) {
    if taken.is_some() {
        c.queued.fetch_sub(1, Ordering::Relaxed);
    }
}

/// [`service`]'s work, the caller holding `recv_order`; `except`: the (source, tag) this
/// thread is matching now, left alone.
fn serve(c: &MpiComm, site: Site, except: Option<(usize, u32)>) -> Result<()> {
    let tags: Vec<u32> = {
        let s = c.p2p.lock().unwrap_or_else(|p| p.into_inner());
        s.any.iter().filter(|(&t, q)| !q.is_empty() && Some(t) != except.map(|k| k.1)).map(|(&t, _)| t).collect()
    };
    for tag in tags {
        while take_any(c, site, tag)? {}
    }
    // The fronts as they are now: a message taken for a receive from any source may have
    // gone to the front receive of its source, which then has its message already.
    let fronts: Vec<(ReqId, usize, u32)> = {
        let s = c.p2p.lock().unwrap_or_else(|p| p.into_inner());
        s.queue
            .iter()
            .filter(|(&key, _)| Some(key) != except)
            .filter_map(|(&(src, tag), q)| q.front().map(|&id| (id, src, tag)))
            .collect()
    };
    for (id, src, tag) in fronts {
        let Some(header) = try_probe(c, src, tag)? else { continue };
        let (h, v) = take_message(c, site, src, tag, header)?;
        let mut s = c.p2p.lock().unwrap_or_else(|p| p.into_inner());
        unqueue(c, s.queue.get_mut(&(src, tag)).and_then(|q| q.pop_front()));
        if let Some(r) = s.recvs.get_mut(&id) {
            r.early = Some((h, v));
        }
    }
    Ok(())
}

/// Takes one message with `tag` from any source, if one is here and a receive from any
/// source waits for `tag`: it goes to the front receive posted for its source, which
/// claimed it, else to the first receive from any source. Whether one was taken. The
/// caller holds `recv_order`.
fn take_any(c: &MpiComm, site: Site, tag: u32) -> Result<bool> {
    let waiting = {
        let s = c.p2p.lock().unwrap_or_else(|p| p.into_inner());
        s.any.get(&tag).is_some_and(|q| !q.is_empty())
    };
    if !waiting {
        return Ok(false);
    }
    // SAFETY: reading rsmpi's exported constant.
    let Some((msg, len, src)) = try_probe_from(c, unsafe { ffi::RSMPI_ANY_SOURCE }, tag)? else { return Ok(false) };
    let whole = take_message(c, site, src, tag, (msg, len))?;
    let mut s = c.p2p.lock().unwrap_or_else(|p| p.into_inner());
    let front = s.queue.get_mut(&(src, tag)).and_then(|q| q.pop_front());
    let id = match front {
        Some(id) => id,
        None => s.any.get_mut(&tag).and_then(|q| q.pop_front()).expect("checked: one waits"),
    };
    unqueue(c, Some(id));
    if let Some(r) = s.recvs.get_mut(&id) {
        r.early = Some(whole);
        r.from = src;
    }
    Ok(true)
}

pub(super) fn post_recv_any(c: &MpiComm, tag: u32) -> Result<ReqId> {
    tag_of(tag)?;
    let mut s = c.p2p.lock().unwrap_or_else(|p| p.into_inner());
    s.next += 1;
    let id = s.next;
    s.recvs.insert(id, Recv { src: usize::MAX, tag, early: None, from: usize::MAX });
    s.any.entry(tag).or_default().push_back(id);
    c.queued.fetch_add(1, Ordering::Relaxed);
    Ok(id)
}

/// A receive from any source's message, once taken: checked against its buffer (up to
/// `buf.len()` bytes of `dtype`) and copied in; (source, bytes).
fn land_any(
    c: &MpiComm,
    site: Site,
    tag: u32,
    (from, h, v): Taken,
    dtype: DType,
    buf: &mut [u8],
) -> Result<(usize, usize)> {
    if h.len() < HEADER {
        return Err(Error::backend("mpi", format!("a message from rank {from} with tag {tag} has no dist header")));
    }
    let (sent, len) = read_header(&h[..HEADER]);
    if sent != Some(dtype) || len > buf.len() || v.len() != len {
        let at = sender_site(&h);
        return Err(Error::InvalidArgument {
            op: "recv_any",
            msg: format!(
                "rank {} receives up to {} × {dtype} with tag {tag} from any rank on {}, and got the message rank \
                 {from} sent ({}, {at}); a receive from any source takes a message of its element \
                 type no longer than its buffer",
                c.rank,
                buf.len() / dtype.size(),
                c.name,
                crate::dtype::sent_as(sent, len),
            ),
            site,
        });
    }
    buf[..len].copy_from_slice(&v);
    Ok((from, len))
}

/// A message taken for a receive from any source: (source, header, payload).
type Taken = (usize, Vec<u8>, Vec<u8>);

/// Takes a receive from any source's message if it was taken early.
fn early_any(c: &MpiComm, id: ReqId) -> Result<Option<Taken>> {
    let mut s = c.p2p.lock().unwrap_or_else(|p| p.into_inner());
    let r = s.recvs.get_mut(&id).ok_or_else(|| Error::backend("mpi", format!("no posted receive {id}")))?;
    let Some((h, v)) = r.early.take() else { return Ok(None) };
    let from = r.from;
    s.recvs.remove(&id);
    Ok(Some((from, h, v)))
}

pub(super) fn wait_recv_any(
    c: &MpiComm,
    site: Site,
    id: ReqId,
    dtype: DType,
    buf: &mut [u8],
) -> Result<(usize, usize)> {
    let tag = {
        let s = c.p2p.lock().unwrap_or_else(|p| p.into_inner());
        s.recvs.get(&id).ok_or_else(|| Error::backend("mpi", format!("no posted receive {id}")))?.tag
    };
    let mut got = None;
    let waiting_for = || format!("a message with tag {tag} from any rank (none came)");
    let r = c.poll(super::Wait::Recv { src: None, tag }, "recv_any", site, &waiting_for, || {
        {
            let _order = c.recv_order.lock().unwrap_or_else(|p| p.into_inner());
            while got.is_none() && take_any(c, site, tag)? {
                got = early_any(c, id)?;
            }
        }
        if got.is_none() {
            got = early_any(c, id)?;
        }
        Ok(got.is_some())
    });
    if let Err(e) = r {
        let mut s = c.p2p.lock().unwrap_or_else(|p| p.into_inner());
        s.recvs.remove(&id);
        if let Some(q) = s.any.get_mut(&tag) {
            let before = q.len();
            q.retain(|&x| x != id);
            unqueue(c, (q.len() < before).then_some(id));
        }
        return Err(e);
    }
    land_any(c, site, tag, got.expect("polled until taken"), dtype, buf)
}

pub(super) fn test_recv_any(
    c: &MpiComm,
    site: Site,
    id: ReqId,
    dtype: DType,
    buf: &mut [u8],
) -> Result<Option<(usize, usize)>> {
    service(c, site)?;
    let tag = {
        let s = c.p2p.lock().unwrap_or_else(|p| p.into_inner());
        s.recvs.get(&id).ok_or_else(|| Error::backend("mpi", format!("no posted receive {id}")))?.tag
    };
    match early_any(c, id)? {
        Some(m) => land_any(c, site, tag, m, dtype, buf).map(Some),
        None => Ok(None),
    }
}

/// Before a communicator goes: completes the sends still travelling (posted and never
/// waited for), for at most a second, so their peers get every byte promised.
pub(super) fn flush(c: &MpiComm) {
    let pending: Vec<Send> = c.p2p.lock().unwrap_or_else(|p| p.into_inner()).sends.drain().map(|(_, v)| v).collect();
    let start = std::time::Instant::now();
    for mut send in pending {
        for r in send.reqs.iter_mut() {
            let mut flag: c_int = 0;
            while flag == 0 && start.elapsed() < std::time::Duration::from_secs(1) {
                // SAFETY: a live request of this process.
                if call("MPI_Test", || unsafe { ffi::MPI_Test(r, &mut flag, ffi::RSMPI_STATUS_IGNORE) }).is_err() {
                    break;
                }
            }
        }
        // Not received in time: the copies stay with MPI (leaked), never freed under it.
        if start.elapsed() >= std::time::Duration::from_secs(1) {
            std::mem::forget(send);
        }
    }
}

thread_local! {
    /// A blocking send's room for its header and an inline payload, reused from send to
    /// send (one allocation per thread; no 4 KiB zeroing per message).
    static ROOM: std::cell::Cell<Option<Box<[u8; HEADER + INLINE]>>> = const { std::cell::Cell::new(None) };
}

/// A blocking send: the header (and an inline payload) goes from this thread's reused
/// room and a large payload from `data` itself (it is borrowed until the send completes
/// here), without the copies and allocations `post_send` makes.
pub(super) fn send(c: &MpiComm, site: Site, dst: usize, tag: u32, dtype: DType, data: &[u8]) -> Result<()> {
    let t = tag_of(tag)?;
    let inline = data.len() <= INLINE;
    let n = HEADER + if inline { data.len() } else { 0 };
    let mut room = ROOM.take().unwrap_or_else(|| Box::new([0u8; HEADER + INLINE]));
    let sent = (|| {
        let h = &mut room[..n];
        write_header(h, dtype, data.len(), site);
        if inline {
            h[HEADER..].copy_from_slice(data);
        }
        let one = c.send_order.lock().unwrap_or_else(|p| p.into_inner());
        // SAFETY: placeholders, written by MPI_Isend.
        let mut reqs: [ffi::MPI_Request; 2] = unsafe { [ffi::RSMPI_REQUEST_NULL; 2] };
        let p = super::ops::ptr(h);
        // SAFETY: the room outlives the request: it is kept for the next send only once
        // the waits below completed it, and left to MPI (leaked) otherwise.
        call("MPI_Isend", || unsafe { ffi::MPI_Isend(p, n as c_int, bytes(), dst as c_int, t, c.comm, &mut reqs[0]) })?;
        let mut parts = Vec::new();
        if !inline && data.len() <= super::max_count() {
            let (p, n) = (super::ops::ptr(data), count(data.len(), "send")?);
            // SAFETY: `data` is borrowed until the wait below completes the request.
            call("MPI_Isend", || unsafe { ffi::MPI_Isend(p, n, bytes(), dst as c_int, t, c.comm, &mut reqs[1]) })?;
        } else if !inline {
            parts = isend_payload(c, dst, tag, data)?;
        }
        drop(one);
        let waited = wait_all(c, site, dst, tag, &mut reqs[..if inline { 1 } else { 2 }])
            .and_then(|()| wait_all(c, site, dst, tag, &mut parts));
        if let (Err(e), false) = (&waited, inline) {
            // The payload goes from `data` itself, which the caller has back once this
            // returns: MPI must let go of it first (or the rank ends the job).
            super::release(c, &mut reqs[1..], e, super::Held::Send);
            super::release(c, &mut parts, e, super::Held::Send);
        }
        waited
    })();
    match sent {
        Ok(()) => ROOM.set(Some(room)),
        // A request may still read the room (a send that timed out): MPI keeps it.
        Err(_) => std::mem::forget(room),
    }
    sent
}

pub(super) fn wait_send(c: &MpiComm, site: Site, id: ReqId) -> Result<()> {
    let mut send = {
        let mut s = c.p2p.lock().unwrap_or_else(|p| p.into_inner());
        s.remove_send(id).ok_or_else(|| Error::backend("mpi", format!("no posted send {id}")))?
    };
    let r = wait_all(c, site, send.dst, send.tag, &mut send.reqs);
    if r.is_err() {
        // A request MPI has not completed may still be read (a peer that posts its receive
        // later reads the copy straight from this process): the copies stay with MPI
        // (leaked), never freed under it.
        std::mem::forget(send);
    }
    r
}

/// `wait_send` without the wait: `MPI_Test` on its requests (taking what this rank's
/// own receives are due meanwhile, as `wait_send` does).
pub(super) fn test_send(c: &MpiComm, site: Site, id: ReqId) -> Result<bool> {
    let done = {
        let mut s = c.p2p.lock().unwrap_or_else(|p| p.into_inner());
        let send = s.sends.get_mut(&id).ok_or_else(|| Error::backend("mpi", format!("no posted send {id}")))?;
        let all = send.test()?;
        if all {
            s.remove_send(id);
        }
        all
    };
    if !done {
        service(c, site)?;
    }
    Ok(done)
}

/// `wait_recv` without the wait: takes what is here for the receives at the front of
/// their queues, then this receive's message if it is among them.
pub(super) fn test_recv(c: &MpiComm, site: Site, id: ReqId, dtype: DType, buf: &mut [u8]) -> Result<bool> {
    service(c, site)?;
    let (src, tag, early) = {
        let mut s = c.p2p.lock().unwrap_or_else(|p| p.into_inner());
        let r = s.recvs.get_mut(&id).ok_or_else(|| Error::backend("mpi", format!("no posted receive {id}")))?;
        let (src, tag, early) = (r.src, r.tag, r.early.take());
        if early.is_some() {
            s.recvs.remove(&id);
        }
        (src, tag, early)
    };
    let Some((h, v)) = early else { return Ok(false) };
    fits(c, site, src, tag, &h[..HEADER.min(h.len())], dtype, buf.len())?;
    buf.copy_from_slice(&v);
    Ok(true)
}

pub(super) fn post_recv(c: &MpiComm, _site: Site, src: usize, tag: u32) -> Result<ReqId> {
    tag_of(tag)?;
    let mut s = c.p2p.lock().unwrap_or_else(|p| p.into_inner());
    s.next += 1;
    let id = s.next;
    s.recvs.insert(id, Recv { src, tag, early: None, from: src });
    s.queue.entry((src, tag)).or_default().push_back(id);
    c.queued.fetch_add(1, Ordering::Relaxed);
    Ok(id)
}

/// Probes for the next message from `src` with `tag` until the deadline; returns the
/// matched message and its length in bytes.
fn probe(c: &MpiComm, site: Site, src: usize, tag: u32) -> Result<(ffi::MPI_Message, usize)> {
    let mut found = None;
    let waiting_for =
        || format!("a message from rank {src} with tag {tag} (none arrived: not sent, or not delivered by MPI)");
    c.poll(super::Wait::Recv { src: Some(src), tag }, crate::error::user_op("recv"), site, &waiting_for, || {
        found = try_probe(c, src, tag)?;
        Ok(found.is_some())
    })?;
    Ok(found.expect("polled until found"))
}

/// One nonblocking matched probe for the next message from `src` with `tag`: the
/// message and its length in bytes, or `None` when none has arrived yet.
fn try_probe(c: &MpiComm, src: usize, tag: u32) -> Result<Option<(ffi::MPI_Message, usize)>> {
    Ok(try_probe_from(c, src as c_int, tag)?.map(|(m, n, _)| (m, n)))
}

/// [`try_probe`] from `src` (or `MPI_ANY_SOURCE`), also giving the message's source.
fn try_probe_from(c: &MpiComm, src: c_int, tag: u32) -> Result<Option<(ffi::MPI_Message, usize, usize)>> {
    let mut flag: c_int = 0;
    // SAFETY: placeholders, written by MPI.
    let mut msg: ffi::MPI_Message = unsafe { ffi::RSMPI_MESSAGE_NULL };
    // SAFETY: placeholders, written by MPI.
    let mut st: ffi::MPI_Status = unsafe { std::mem::zeroed() };
    // SAFETY: a valid communicator; outputs written by MPI.
    call("MPI_Improbe", || unsafe { ffi::MPI_Improbe(src, tag as c_int, c.comm, &mut flag, &mut msg, &mut st) })?;
    if flag == 0 {
        return Ok(None);
    }
    let mut n: c_int = 0;
    // SAFETY: the status of the matched message.
    call("MPI_Get_count", || unsafe { ffi::MPI_Get_count(&st, bytes(), &mut n) })?;
    Ok(Some((msg, n as usize, st.MPI_SOURCE as usize)))
}

/// Posts a receive into `buf` of the next message from `src` with `tag` and waits for it
/// with the deadline; returns its length. A receive that times out is cancelled, so MPI
/// never writes `buf` after this returns (one MPI cannot cancel ends the job).
fn irecv_wait(c: &MpiComm, site: Site, src: usize, tag: u32, buf: &mut [u8]) -> Result<usize> {
    // SAFETY: placeholders, written by MPI.
    let mut req: ffi::MPI_Request = unsafe { ffi::RSMPI_REQUEST_NULL };
    // SAFETY: placeholders, written by MPI.
    let mut st: ffi::MPI_Status = unsafe { std::mem::zeroed() };
    let (p, n) = (super::ops::ptr(buf), wire_count(buf.len())?);
    // SAFETY: `buf` outlives the request: it completes, or is cancelled, before we return.
    call("MPI_Irecv", || unsafe { ffi::MPI_Irecv(p, n, bytes(), src as c_int, tag as c_int, c.comm, &mut req) })?;
    let waiting_for = || {
        format!("a message from rank {src} with tag {tag} (none arrived, or only its start: not sent, or not delivered by MPI)")
    };
    let done =
        c.poll(super::Wait::Recv { src: Some(src), tag }, crate::error::user_op("recv"), site, &waiting_for, || {
            let mut flag: c_int = 0;
            // SAFETY: a live request; `st` written by MPI.
            call("MPI_Test", || unsafe { ffi::MPI_Test(&mut req, &mut flag, &mut st) })?;
            Ok(flag != 0)
        });
    if let Err(e) = done {
        super::release(c, std::slice::from_mut(&mut req), &e, super::Held::Receive);
        return Err(e);
    }
    let mut got: c_int = 0;
    // SAFETY: the status of the completed receive.
    call("MPI_Get_count", || unsafe { ffi::MPI_Get_count(&st, bytes(), &mut got) })?;
    Ok(got as usize)
}

/// Receives the matched message `msg` of `len` bytes from `src` into a new buffer
/// (`MPI_Imrecv`, polled with the deadline like every wait: a matched message whose
/// payload never comes, as when its sender stalls mid-rendezvous, is a timeout naming the
/// pair, never a wait without end). A receive that timed out cannot be cancelled (MPI
/// does not cancel a matched receive), so its buffer is left to MPI, never freed under it.
fn take(c: &MpiComm, site: Site, src: usize, tag: u32, msg: &mut ffi::MPI_Message, len: usize) -> Result<Vec<u8>> {
    let n = wire_count(len)?;
    let mut buf = vec![0u8; len];
    let p: *mut std::ffi::c_void = if len == 0 { std::ptr::null_mut() } else { buf.as_mut_ptr().cast() };
    // SAFETY: placeholder, written by MPI_Imrecv.
    let mut req: ffi::MPI_Request = unsafe { ffi::RSMPI_REQUEST_NULL };
    // SAFETY: `buf` holds `len` bytes and outlives the request (completed below, or leaked
    // on a timeout); the message is ours (matched probe).
    call("MPI_Imrecv", || unsafe { ffi::MPI_Imrecv(p, n, bytes(), msg, &mut req) })?;
    let waiting_for = || {
        format!(
            "the rest of a {len}-byte message from rank {src} with tag {tag}, whose start arrived (not delivered by MPI)"
        )
    };
    let done =
        c.poll(super::Wait::Recv { src: Some(src), tag }, crate::error::user_op("recv"), site, &waiting_for, || {
            let mut flag: c_int = 0;
            // SAFETY: a live request of this process.
            call("MPI_Test", || unsafe { ffi::MPI_Test(&mut req, &mut flag, ffi::RSMPI_STATUS_IGNORE) })?;
            Ok(flag != 0)
        });
    if let Err(e) = done {
        std::mem::forget(buf);
        return Err(e);
    }
    Ok(buf)
}

/// Whether a received header message carries its payload inline.
pub(super) fn inline(h: &[u8]) -> bool {
    h.len() >= HEADER && h[1] == INLINE_FLAG
}

/// Takes the next message (header and payload) from `src` with `tag` into new buffers.
fn take_whole(c: &MpiComm, site: Site, src: usize, tag: u32) -> Result<(Vec<u8>, Vec<u8>)> {
    let header = probe(c, site, src, tag)?;
    take_message(c, site, src, tag, header)
}

/// Receives the matched header message `header` and its payload (inline, or the next
/// message from `src` with `tag`) into new buffers.
fn take_message(
    c: &MpiComm,
    site: Site,
    src: usize,
    tag: u32,
    (mut msg, len): (ffi::MPI_Message, usize),
) -> Result<(Vec<u8>, Vec<u8>)> {
    let mut h = take(c, site, src, tag, &mut msg, len)?;
    if inline(&h) {
        let v = h.split_off(HEADER.min(h.len()));
        return Ok((h, v));
    }
    if h.len() < HEADER {
        return Err(Error::backend("mpi", format!("a message from rank {src} with tag {tag} has no dist header")));
    }
    let total = read_header(&h).1;
    let mut v = Vec::new();
    while v.len() < total {
        let want = (total - v.len()).min(part_size(&h));
        let (mut msg, len) = probe(c, site, src, tag)?;
        if len != want {
            return Err(Error::backend(
                "mpi",
                format!("a payload part of {len} bytes from rank {src} where its header promised {want}"),
            ));
        }
        let part = take(c, site, src, tag, &mut msg, len)?;
        if v.is_empty() {
            v = part;
        } else {
            v.extend_from_slice(&part);
        }
    }
    Ok((h, v))
}

pub(super) fn wait_recv(c: &MpiComm, site: Site, id: ReqId, dtype: DType, buf: &mut [u8]) -> Result<()> {
    let mut landing = c.recv_order.lock().unwrap_or_else(|p| p.into_inner());
    let (src, tag) = {
        let s = c.p2p.lock().unwrap_or_else(|p| p.into_inner());
        let r = s.recvs.get(&id).ok_or_else(|| Error::backend("mpi", format!("no posted receive {id}")))?;
        (r.src, r.tag)
    };
    MATCHING.set(Some((src, tag)));
    let _matching = Matching;
    loop {
        // Our message was taken by an earlier wait (for a later receive).
        let early = {
            let mut s = c.p2p.lock().unwrap_or_else(|p| p.into_inner());
            match s.recvs.get_mut(&id).and_then(|r| r.early.take()) {
                Some(v) => {
                    s.recvs.remove(&id);
                    Some(v)
                }
                None => None,
            }
        };
        if let Some((h, v)) = early {
            fits(c, site, src, tag, &h[..HEADER.min(h.len())], dtype, buf.len())?;
            buf.copy_from_slice(&v);
            return Ok(());
        }
        let first = {
            let s = c.p2p.lock().unwrap_or_else(|p| p.into_inner());
            s.queue.get(&(src, tag)).and_then(|q| q.front().copied())
        };
        let first = first.ok_or_else(|| Error::backend("mpi", format!("receive {id} is not queued")))?;
        if first == id {
            {
                let mut s = c.p2p.lock().unwrap_or_else(|p| p.into_inner());
                unqueue(c, s.queue.get_mut(&(src, tag)).and_then(|q| q.pop_front()));
                s.recvs.remove(&id);
            }
            // The next message from (src, tag) is ours: receive its header (and an inline
            // payload) straight away rather than probing for it.
            if landing.len() < HEADER + INLINE {
                landing.resize(HEADER + INLINE, 0);
            }
            let n = irecv_wait(c, site, src, tag, &mut landing[..])?;
            let h = &landing[..n];
            if inline(h) {
                fits(c, site, src, tag, &h[..HEADER], dtype, buf.len())?;
                buf.copy_from_slice(&h[HEADER..]);
                return Ok(());
            }
            if let Err(e) = fits(c, site, src, tag, h, dtype, buf.len()) {
                // The payload is not for this buffer: take its parts off the wire.
                let mut left = if h.len() >= HEADER { read_header(h).1 } else { 0 };
                while left > 0 {
                    let (mut msg, len) = probe(c, site, src, tag)?;
                    take(c, site, src, tag, &mut msg, len)?;
                    left = left.saturating_sub(len.max(1));
                }
                return Err(e);
            }
            let part = part_size(h);
            for chunk in buf.chunks_mut(part) {
                let got = irecv_wait(c, site, src, tag, chunk)?;
                if got != chunk.len() {
                    return Err(Error::backend(
                        "mpi",
                        format!(
                            "a payload part of {got} bytes from rank {src} where its header promised {}",
                            chunk.len()
                        ),
                    ));
                }
            }
            return Ok(());
        }
        // An earlier receive's message: keep it for that receive's wait.
        let whole = take_whole(c, site, src, tag)?;
        let mut s = c.p2p.lock().unwrap_or_else(|p| p.into_inner());
        unqueue(c, s.queue.get_mut(&(src, tag)).and_then(|q| q.pop_front()));
        if let Some(r) = s.recvs.get_mut(&first) {
            r.early = Some(whole);
        }
    }
}

/// The message (by its header) fits the receive exactly, or an error naming both ends.
fn fits(c: &MpiComm, site: Site, src: usize, tag: u32, h: &[u8], dtype: DType, want: usize) -> Result<()> {
    if h.len() < HEADER {
        return Err(Error::backend("mpi", format!("a message from rank {src} with tag {tag} has no dist header")));
    }
    let (sent, len) = read_header(h);
    if sent == Some(dtype) && len == want {
        return Ok(());
    }
    let at = sender_site(h);
    Err(Error::InvalidArgument {
        op: crate::error::user_op("recv"),
        msg: format!(
            "rank {} receives {} × {dtype} with tag {tag} from rank {src} on {}, but rank {src} sent {} \
             ({at}); the receive buffer must match the message exactly",
            c.rank,
            want / dtype.size(),
            c.name,
            crate::dtype::sent_as(sent, len),
        ),
        site,
    })
}
