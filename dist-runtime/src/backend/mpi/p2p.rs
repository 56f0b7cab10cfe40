//! Point-to-point on MPI. A send copies its data and posts two `MPI_Isend`s with the
//! same tag: a 128-byte header (element type, length, the sender's call site), then the
//! payload (MPI does not let messages with the same source and tag overtake each other,
//! so the pair arrives in order). The caller's buffer is free at once, as the `Backend`
//! contract says. A receive is claimed at
//! posting and matched at its wait with a matched probe (`MPI_Improbe`, polled with the
//! deadline, then `MPI_Mrecv`): a wait for a later receive first takes the earlier
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

/// A posted send: its two requests (header, payload) and the copies MPI reads.
struct Send {
    reqs: [ffi::MPI_Request; 2],
    _bufs: [Vec<u8>; 2],
    dst: usize,
    tag: u32,
}

const HEADER: usize = 128;

/// The header of a message: element type, payload length, the sender's call site.
fn header(dtype: DType, len: usize, site: Site) -> Vec<u8> {
    let mut h = vec![0u8; HEADER];
    h[0] = dtype as u8;
    h[8..16].copy_from_slice(&(len as u64).to_le_bytes());
    let at = site.to_string();
    let at = at.as_bytes();
    let k = at.len().min(HEADER - 16);
    h[16..16 + k].copy_from_slice(&at[at.len() - k..]);
    h
}

/// (dtype, length, "file:line") of a header.
fn read_header(h: &[u8]) -> (Option<DType>, usize, String) {
    let len = u64::from_le_bytes(h[8..16].try_into().expect("8 bytes")) as usize;
    let at = String::from_utf8_lossy(&h[16..]).trim_end_matches('\0').to_string();
    (DType::from_u8(h[0]), len, at)
}

/// A posted receive: where it comes from, and its message (header, payload) once
/// taken early.
struct Recv {
    src: usize,
    tag: u32,
    early: Option<(Vec<u8>, Vec<u8>)>,
}

#[derive(Default)]
pub(super) struct State {
    next: ReqId,
    sends: HashMap<ReqId, Send>,
    recvs: HashMap<ReqId, Recv>,
    /// Per (source, tag): receives posted and not yet matched, in posting order.
    queue: HashMap<(usize, u32), VecDeque<ReqId>>,
}

// SAFETY: the request handles are plain values used under the backend's lock.
unsafe impl std::marker::Send for State {}

fn tag_of(tag: u32) -> Result<c_int> {
    c_int::try_from(tag)
        .map_err(|_| Error::invalid("send", format!("tag {tag} is beyond MPI's tag range (0..=2147483647 at most)")))
}

pub(super) fn post_send(c: &MpiComm, site: Site, dst: usize, tag: u32, dtype: DType, data: &[u8]) -> Result<ReqId> {
    let t = tag_of(tag)?;
    let n = count(data.len(), "send")?;
    let bufs = [header(dtype, data.len(), site), data.to_vec()];
    // SAFETY: placeholders, written by MPI_Isend.
    let mut reqs: [ffi::MPI_Request; 2] = unsafe { [ffi::RSMPI_REQUEST_NULL; 2] };
    for (i, (b, len)) in bufs.iter().zip([HEADER as c_int, n]).enumerate() {
        let p = super::coll::ptr(b);
        // SAFETY: the copies are kept with the requests until the send completes (their
        // heap buffers do not move when the Vecs do).
        call("MPI_Isend", || unsafe { ffi::MPI_Isend(p, len, bytes(), dst as c_int, t, c.comm, &mut reqs[i]) })?;
    }
    let mut s = c.p2p.lock().unwrap_or_else(|p| p.into_inner());
    s.next += 1;
    let id = s.next;
    s.sends.insert(id, Send { reqs, _bufs: bufs, dst, tag });
    Ok(id)
}

pub(super) fn wait_send(c: &MpiComm, site: Site, id: ReqId) -> Result<()> {
    let mut send = {
        let mut s = c.p2p.lock().unwrap_or_else(|p| p.into_inner());
        s.sends.remove(&id).ok_or_else(|| Error::backend("mpi", format!("no posted send {id}")))?
    };
    let (dst, tag) = (send.dst, send.tag);
    for r in send.reqs.iter_mut() {
        c.wait(r, "send", site, &|| {
            format!("rank {dst} to receive the message with tag {tag} (MPI completes a large send only once it is received)")
        })?;
    }
    Ok(())
}

pub(super) fn post_recv(c: &MpiComm, _site: Site, src: usize, tag: u32) -> Result<ReqId> {
    tag_of(tag)?;
    let mut s = c.p2p.lock().unwrap_or_else(|p| p.into_inner());
    s.next += 1;
    let id = s.next;
    s.recvs.insert(id, Recv { src, tag, early: None });
    s.queue.entry((src, tag)).or_default().push_back(id);
    Ok(id)
}

/// Probes for the next message from `src` with `tag` until the deadline; returns the
/// matched message and its length in bytes.
fn probe(c: &MpiComm, site: Site, src: usize, tag: u32) -> Result<(ffi::MPI_Message, usize)> {
    let mut found = None;
    let waiting_for = || format!("a message from rank {src} with tag {tag} (it never sent one)");
    c.poll("recv", site, &waiting_for, || {
        let mut flag: c_int = 0;
        // SAFETY: placeholders, written by MPI.
        let mut msg: ffi::MPI_Message = unsafe { ffi::RSMPI_MESSAGE_NULL };
        let mut st: ffi::MPI_Status = unsafe { std::mem::zeroed() };
        // SAFETY: a valid communicator; outputs written by MPI.
        call("MPI_Improbe", || unsafe {
            ffi::MPI_Improbe(src as c_int, tag as c_int, c.comm, &mut flag, &mut msg, &mut st)
        })?;
        if flag == 0 {
            return Ok(false);
        }
        let mut n: c_int = 0;
        // SAFETY: the status of the matched message.
        call("MPI_Get_count", || unsafe { ffi::MPI_Get_count(&st, bytes(), &mut n) })?;
        found = Some((msg, n as usize));
        Ok(true)
    })?;
    Ok(found.expect("polled until found"))
}

/// Receives the matched message `msg` of `len` bytes into `buf`.
fn take(msg: &mut ffi::MPI_Message, len: usize, buf: &mut [u8]) -> Result<()> {
    let n = count(len, "recv")?;
    let p = super::coll::ptr(buf);
    // SAFETY: `buf` holds `len` bytes; the message is ours (matched probe).
    call("MPI_Mrecv", || unsafe { ffi::MPI_Mrecv(p, n, bytes(), msg, ffi::RSMPI_STATUS_IGNORE) })
}

/// Takes the next message (header and payload) from `src` with `tag` into new buffers.
fn take_whole(c: &MpiComm, site: Site, src: usize, tag: u32) -> Result<(Vec<u8>, Vec<u8>)> {
    let (mut msg, len) = probe(c, site, src, tag)?;
    let mut h = vec![0u8; len];
    take(&mut msg, len, &mut h)?;
    let (mut msg, len) = probe(c, site, src, tag)?;
    let mut v = vec![0u8; len];
    take(&mut msg, len, &mut v)?;
    Ok((h, v))
}

pub(super) fn wait_recv(c: &MpiComm, site: Site, id: ReqId, dtype: DType, buf: &mut [u8]) -> Result<()> {
    let _order = c.recv_order.lock().unwrap_or_else(|p| p.into_inner());
    let (src, tag) = {
        let s = c.p2p.lock().unwrap_or_else(|p| p.into_inner());
        let r = s.recvs.get(&id).ok_or_else(|| Error::backend("mpi", format!("no posted receive {id}")))?;
        (r.src, r.tag)
    };
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
            fits(c, site, src, tag, &h, dtype, buf.len())?;
            buf.copy_from_slice(&v);
            return Ok(());
        }
        let first = {
            let s = c.p2p.lock().unwrap_or_else(|p| p.into_inner());
            s.queue.get(&(src, tag)).and_then(|q| q.front().copied())
        };
        let first = first.ok_or_else(|| Error::backend("mpi", format!("receive {id} is not queued")))?;
        if first == id {
            let (mut msg, hlen) = probe(c, site, src, tag)?;
            let mut h = vec![0u8; hlen];
            take(&mut msg, hlen, &mut h)?;
            {
                let mut s = c.p2p.lock().unwrap_or_else(|p| p.into_inner());
                if let Some(q) = s.queue.get_mut(&(src, tag)) {
                    q.pop_front();
                }
                s.recvs.remove(&id);
            }
            let (mut msg, len) = probe(c, site, src, tag)?;
            if let Err(e) = fits(c, site, src, tag, &h, dtype, buf.len()) {
                let mut sink = vec![0u8; len];
                take(&mut msg, len, &mut sink)?;
                return Err(e);
            }
            return take(&mut msg, len, buf);
        }
        // An earlier receive's message: keep it for that receive's wait.
        let whole = take_whole(c, site, src, tag)?;
        let mut s = c.p2p.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(q) = s.queue.get_mut(&(src, tag)) {
            q.pop_front();
        }
        if let Some(r) = s.recvs.get_mut(&first) {
            r.early = Some(whole);
        }
    }
}

/// The message (by its header) fits the receive exactly, or an error naming both ends.
fn fits(c: &MpiComm, site: Site, src: usize, tag: u32, h: &[u8], dtype: DType, want: usize) -> Result<()> {
    if h.len() != HEADER {
        return Err(Error::backend("mpi", format!("a message from rank {src} with tag {tag} has no dist header")));
    }
    let (sent, len, at) = read_header(h);
    if sent == Some(dtype) && len == want {
        return Ok(());
    }
    Err(Error::InvalidArgument {
        op: "recv",
        msg: format!(
            "rank {} receives {} × {dtype} with tag {tag} from rank {src} on {}, but rank {src} sent {len} bytes of \
             {} ({at}); the receive buffer must match the message exactly",
            c.rank,
            want / dtype.size(),
            c.name,
            sent.map_or("?", |d| d.name()),
        ),
        site,
    })
}
