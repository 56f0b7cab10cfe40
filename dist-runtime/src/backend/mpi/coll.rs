//! The collectives on MPI: dist's own direct exchanges on one host (`own.rs`), else each
//! `Bufs` shape as one nonblocking MPI collective, then
//! the backend's bounded wait. Data moves as bytes; reductions use the element type.

use super::ops::{self, bytes, datatype, ptr};
use super::{call, count, MpiComm};
use crate::backend::{reduce, wrong_shape, Bufs};
use crate::error::{Error, Result};
use crate::op::{Op, OpKind};
use crate::reduce_op::ReduceOp;
use mpi::ffi;
use std::ffi::{c_int, c_void};

fn counts_displs(counts: &[usize], what: &str) -> Result<(Vec<c_int>, Vec<c_int>)> {
    let mut c = Vec::with_capacity(counts.len());
    let mut d = Vec::with_capacity(counts.len());
    let mut off = 0usize;
    for &x in counts {
        c.push(count(x, what)?);
        d.push(count(off, what)?);
        off += x;
    }
    Ok((c, d))
}

/// Whether an all-reduce of `len` bytes per rank takes the one-phase path
/// ([`super::own::all_reduce_small`]): dist's reductions on this communicator, a built-in
/// reduction, at most [`super::own::SMALL`] bytes over all ranks.
pub(super) fn small_all_reduce(c: &MpiComm, op: &Op, len: usize) -> bool {
    op.kind == OpKind::AllReduce
        && op.dtype.is_some()
        && matches!(op.reduce_op(), Some(r) if !matches!(r, ReduceOp::User(_)))
        && len * c.size <= super::own::SMALL
        && super::own::applies_to_reductions(c)
}

/// A small collective under `DIST_DEBUG=check` whose op key rides in its own messages
/// (`own::exchange_agreed`: one phase where the generic path exchanges records first):
/// the op to run, given the user's call name, or the buffers back for the generic path.
/// Small: every message (the key and a block) within Open MPI's eager size (the
/// all-reduce's own rule: up to 16 KiB of all ranks' bytes, whose fold is the cost), on a
/// communicator of up to 16 ranks, across hosts too (`own::applies_agreed`); user reductions keep the generic path,
/// and so does all_to_all_v (each rank's counts are its own, so the pairs' agreement is
/// an exchange of counts the key cannot stand for). Past the eager size a message is a rendezvous read into the receive slot and then a
/// copy out, and the record round it saves costs less: `dist-bench -n 2 --backend mpi
/// --ops broadcast,all_gather,all_to_all,reduce_scatter --sizes 1K,2K,4K,8K,16K`, µs,
/// records first / one phase: all_gather 1 KiB 1.97 / 1.26, 4 KiB (2 KiB blocks) 2.62 /
/// 2.07, 8 KiB 3.46 / 4.07; broadcast 2 KiB 2.29 / 1.98, 4 KiB 2.48 / 2.96.
#[allow(clippy::type_complexity)]
pub(super) fn agreed_in_one_phase<'a: 'c, 'c>(
    c: &'c MpiComm,
    op: &'c Op,
    bufs: Bufs<'a>,
) -> std::result::Result<Box<dyn FnOnce(&str) -> Result<()> + 'c>, Bufs<'a>> {
    use super::own;
    // Blocks of at most this many bytes go with the key inside Open MPI's eager sends
    // (`btl_vader_eager_limit`, 4 KiB); the total stays within the all-reduce's
    // one-phase size (the copies out of the slots).
    const BLOCK: usize = (4 << 10) - crate::op::KEY_LEN;
    let most = |counts: &[usize]| counts.iter().copied().max().unwrap_or(0);
    let small = |block: usize, total: usize| block <= BLOCK && total <= own::SMALL;
    let reduction = op.dtype.zip(op.reduce_op()).filter(|(_, r)| !matches!(r, ReduceOp::User(_)));
    if !own::applies_agreed(c) {
        return Err(bufs);
    }
    match (op.kind, bufs) {
        (OpKind::AllReduce, Bufs::InPlace(buf)) if reduction.is_some() && buf.len() * c.size <= own::SMALL => {
            let (d, r) = reduction.expect("checked above");
            Ok(Box::new(move |name| own::all_reduce_small_agreed(c, name, op, d, r, buf)))
        }
        (OpKind::Broadcast, Bufs::InPlace(buf)) if small(buf.len(), buf.len()) => {
            Ok(Box::new(move |name| own::broadcast_agreed(c, name, op, buf, op.root as usize)))
        }
        (OpKind::AllGather, Bufs::Gather { send, recv: Some(recv), counts }) if small(most(counts), recv.len()) => {
            Ok(Box::new(move |name| own::all_gather_agreed(c, name, op, send, recv, counts)))
        }
        (OpKind::AllToAll, Bufs::AllToAll { send, send_counts, recv, recv_counts })
            if !op.varying && small(most(send_counts), send.len()) && small(most(recv_counts), recv.len()) =>
        {
            Ok(Box::new(move |name| own::all_to_all_agreed(c, name, op, send, send_counts, recv, recv_counts)))
        }
        (OpKind::ReduceScatter, Bufs::ReduceScatter { send, recv, counts })
            if small(most(counts), send.len()) && reduction.is_some() =>
        {
            let (d, r) = reduction.expect("checked above");
            Ok(Box::new(move |name| own::reduce_scatter_agreed(c, name, op, d, r, send, recv, counts)))
        }
        (_, bufs) => Err(bufs),
    }
}

pub(super) fn run(c: &MpiComm, op: &Op, bufs: Bufs<'_>) -> Result<()> {
    // In-place collectives past MPI's 32-bit counts run as consecutive calls on parts of
    // the buffer (every rank splits alike: the lengths agree); each part is elementwise
    // independent of the others. A user reduction moves whole buffers (`user`).
    let bufs = match (op.kind, bufs) {
        (
            OpKind::Broadcast | OpKind::AllReduce | OpKind::Reduce | OpKind::Scan | OpKind::Exscan,
            Bufs::InPlace(buf),
        ) if !matches!(op.reduce_op(), Some(ReduceOp::User(_))) => {
            let unit = if op.kind == OpKind::Broadcast { 1 } else { op.dtype.map_or(1, |d| d.size()) };
            // At most max_count elements, and (by default) 1 GiB, per call.
            let limit = if std::env::var_os("DIST_MPI_MAX_COUNT").is_some() {
                super::max_count()
            } else {
                super::MAX_PART_BYTES / unit.max(1)
            };
            let part = limit.max(1).saturating_mul(unit);
            if buf.len() > part {
                for piece in buf.chunks_mut(part) {
                    run_part(c, op, Bufs::InPlace(piece))?;
                }
                return Ok(());
            }
            Bufs::InPlace(buf)
        }
        (_, b) => b,
    };
    if let Some(u @ ReduceOp::User(_)) = op.reduce_op() {
        return user(c, op, u, bufs);
    }
    run_part(c, op, bufs)
}

/// One collective call on MPI (a part of a larger in-place one, see [`run`]; never a
/// user reduction, which [`run`] hands to `user`).
/// (Long as one `match` over the op's kind and buffer shape, one MPI call per arm.)
fn run_part(c: &MpiComm, op: &Op, bufs: Bufs<'_>) -> Result<()> {
    // SAFETY: placeholder, written by the posting call.
    let mut req: ffi::MPI_Request = unsafe { ffi::RSMPI_REQUEST_NULL };
    let comm = c.comm;
    let root = op.root as c_int;
    let dt = || op.dtype.ok_or_else(|| wrong_shape("mpi", op));
    let rop = || op.reduce_op().ok_or_else(|| wrong_shape("mpi", op));
    // Buffers a posted op reads must outlive the wait (the copy when MPI has no
    // MPI_IN_PLACE we know).
    let mut _scratch: Vec<u8> = Vec::new();
    // What to finish after the wait: (buffer, dtype, op) of a reduction's result.
    let mut post: Option<(&mut [u8], crate::dtype::DType, ReduceOp)> = None;
    let own = super::own::applies(c);
    let own_reductions = super::own::applies_to_reductions(c);
    match (op.kind, bufs) {
        (OpKind::Broadcast, Bufs::InPlace(buf)) if own => {
            return super::own::broadcast(c, op, buf, op.root as usize);
        }
        (OpKind::AllReduce, Bufs::InPlace(buf)) if small_all_reduce(c, op, buf.len()) => {
            return super::own::all_reduce_small(c, op, dt()?, rop()?, buf);
        }
        (OpKind::AllGather, Bufs::Gather { send, recv: Some(recv), .. }) if own && op.agreement => {
            return super::own::agreement_gather(c, op, send, recv);
        }
        // Past 4 ranks on this 2-core machine libnbc's all-reduce was ahead below 1 MiB
        // (docs/performance.md): the direct schedule posts 2(n − 1) messages per phase.
        (OpKind::AllReduce, Bufs::InPlace(buf)) if own_reductions && (c.size <= 4 || buf.len() >= 1 << 20) => {
            return super::own::all_reduce(c, op, dt()?, rop()?, buf);
        }
        (OpKind::ReduceScatter, Bufs::ReduceScatter { send, recv, counts }) if own_reductions => {
            return super::own::reduce_scatter(c, op, dt()?, rop()?, send, recv, counts);
        }
        (OpKind::AllGather, Bufs::Gather { send, recv: Some(recv), counts }) if own => {
            return super::own::all_gather(c, op, send, recv, counts);
        }
        (OpKind::Barrier, Bufs::None) => {
            // SAFETY: a valid communicator; `req` written by MPI.
            call("MPI_Ibarrier", || unsafe { ffi::MPI_Ibarrier(comm, &mut req) })?;
        }
        (OpKind::Broadcast, Bufs::InPlace(buf)) => {
            let n = count(buf.len(), "broadcast")?;
            // SAFETY: `buf` lives until the wait below returns.
            call("MPI_Ibcast", || unsafe { ffi::MPI_Ibcast(ptr(buf), n, bytes(), root, comm, &mut req) })?;
        }
        (OpKind::AllReduce | OpKind::Reduce, Bufs::InPlace(buf)) => {
            let (d, r) = (dt()?, rop()?);
            let n = count(buf.len() / d.size(), op.name)?;
            let mop = ops::op(d, r)?;
            let to_root = op.kind == OpKind::Reduce;
            let me_root = !to_root || c.rank == op.root as usize;
            // The send side: MPI_IN_PLACE where the result lands in `buf`, else a copy.
            let send = if !me_root {
                ptr(buf)
            } else if let Some(p) = c.in_place {
                p
            } else {
                _scratch = buf.to_vec();
                ptr(&_scratch)
            };
            let recv = if me_root { ptr(buf) } else { std::ptr::null_mut() };
            let t = datatype(d);
            if to_root {
                // SAFETY: buffers of `n` elements live until the wait returns.
                call("MPI_Ireduce", || unsafe { ffi::MPI_Ireduce(send, recv, n, t, mop, root, comm, &mut req) })?;
            } else {
                // SAFETY: buffers of `n` elements live until the wait returns.
                call("MPI_Iallreduce", || unsafe { ffi::MPI_Iallreduce(send, recv, n, t, mop, comm, &mut req) })?;
            }
            if me_root {
                post = Some((buf, d, r));
            }
        }
        (OpKind::Scan | OpKind::Exscan, Bufs::InPlace(buf)) => {
            let (d, r) = (dt()?, rop()?);
            let n = count(buf.len() / d.size(), op.name)?;
            let (mop, t) = (ops::op(d, r)?, datatype(d));
            // MPI's scans are not in place here: send from a copy.
            _scratch = buf.to_vec();
            let (sp, rp) = (ptr(&_scratch), ptr(buf));
            let exclusive = op.kind == OpKind::Exscan;
            if exclusive {
                // SAFETY: both buffers hold `n` elements and outlive the wait.
                call("MPI_Iexscan", || unsafe { ffi::MPI_Iexscan(sp, rp, n, t, mop, comm, &mut req) })?;
            } else {
                // SAFETY: both buffers hold `n` elements and outlive the wait.
                call("MPI_Iscan", || unsafe { ffi::MPI_Iscan(sp, rp, n, t, mop, comm, &mut req) })?;
            }
            wait_coll(c, &mut req, op)?;
            let upto = if exclusive { c.rank } else { c.rank + 1 };
            if upto == 0 {
                // MPI leaves rank 0's exclusive result undefined; ours is the identity.
                crate::backend::reduce::identity(d, r, buf);
            } else {
                ops::finish(d, r, upto, buf);
            }
            return Ok(());
        }
        (OpKind::ReduceScatter, Bufs::ReduceScatter { send, recv, counts }) => {
            let (d, r) = (dt()?, rop()?);
            let n = count(recv.len() / d.size(), op.name)?;
            let (mop, t) = (ops::op(d, r)?, datatype(d));
            let rp = ptr(recv);
            if counts.iter().all(|&x| x == recv.len()) {
                // SAFETY: `send` holds size × n elements, `recv` n; both outlive the wait.
                call("MPI_Ireduce_scatter_block", || unsafe {
                    ffi::MPI_Ireduce_scatter_block(ptr(send), rp, n, t, mop, comm, &mut req)
                })?;
            } else {
                let es = d.size();
                let elems: Vec<c_int> = counts.iter().map(|&x| count(x / es, op.name)).collect::<Result<_>>()?;
                // SAFETY: `send` holds Σ counts bytes, `recv` counts[rank]; both outlive the wait.
                call("MPI_Ireduce_scatter", || unsafe {
                    ffi::MPI_Ireduce_scatter(ptr(send), rp, elems.as_ptr(), t, mop, comm, &mut req)
                })?;
                wait_coll(c, &mut req, op)?;
                ops::finish(d, r, c.size, recv);
                return Ok(());
            }
            post = Some((recv, d, r));
        }
        (OpKind::AllGather | OpKind::Gather, Bufs::Gather { send, recv, counts }) => {
            let (cs, ds) = counts_displs(counts, op.name)?;
            let sn = count(send.len(), op.name)?;
            let rp = recv.map_or(std::ptr::null_mut(), |r| ptr(r));
            if op.kind == OpKind::AllGather {
                // SAFETY: the typed layer checked the lengths against `counts`.
                call("MPI_Iallgatherv", || unsafe {
                    ffi::MPI_Iallgatherv(ptr(send), sn, bytes(), rp, cs.as_ptr(), ds.as_ptr(), bytes(), comm, &mut req)
                })?;
            } else {
                // SAFETY: the typed layer checked the lengths against `counts`.
                call("MPI_Igatherv", || unsafe {
                    ffi::MPI_Igatherv(
                        ptr(send),
                        sn,
                        bytes(),
                        rp,
                        cs.as_ptr(),
                        ds.as_ptr(),
                        bytes(),
                        root,
                        comm,
                        &mut req,
                    )
                })?;
            }
            return wait_coll(c, &mut req, op);
        }
        (OpKind::Scatter, Bufs::Scatter { send, recv, counts }) => {
            let k = count(recv.len(), op.name)?;
            let sp = send.map_or(std::ptr::null_mut(), ptr);
            let rp = ptr(recv);
            if counts.iter().all(|&x| x == recv.len()) {
                // SAFETY: `send` (root) holds size × k bytes.
                call("MPI_Iscatter", || unsafe {
                    ffi::MPI_Iscatter(sp, k, bytes(), rp, k, bytes(), root, comm, &mut req)
                })?;
            } else {
                let (cs, ds) = counts_displs(counts, op.name)?;
                // SAFETY: `send` (root) holds Σ counts bytes; the arrays outlive the wait.
                call("MPI_Iscatterv", || unsafe {
                    ffi::MPI_Iscatterv(sp, cs.as_ptr(), ds.as_ptr(), bytes(), rp, k, bytes(), root, comm, &mut req)
                })?;
                return wait_coll(c, &mut req, op);
            }
        }
        (OpKind::AllToAll, Bufs::AllToAll { send, send_counts, recv, recv_counts }) => {
            if op.varying {
                agree_counts(c, op, send_counts, recv_counts)?;
            }
            // The typed layer checked the lengths against the counts.
            return all_to_all_bytes(c, op, send, send_counts, recv, recv_counts);
        }
        _ => return Err(wrong_shape("mpi", op)),
    }
    wait_coll(c, &mut req, op)?;
    if let Some((buf, d, r)) = post {
        ops::finish(d, r, c.size, buf);
    }
    Ok(())
}

/// A user reduction on MPI: every contribution is moved (all-gather, or all-to-all for
/// a reduce-scatter) and folded here in rank order with the user's function, since MPI
/// cannot call it on its own buffers. Costs `size` times a built-in op's traffic.
fn user(c: &MpiComm, op: &Op, u: ReduceOp, bufs: Bufs<'_>) -> Result<()> {
    let (n, me, comm) = (c.size, c.rank, c.comm);
    let d = op.dtype.ok_or_else(|| wrong_shape("mpi", op))?;
    // SAFETY: placeholder, written by the posting call.
    let mut req: ffi::MPI_Request = unsafe { ffi::RSMPI_REQUEST_NULL };
    // Aligned for every element type (the user's function sees typed slices).
    let aligned = |len: usize| vec![0u128; len.div_ceil(16)];
    match (op.kind, bufs) {
        (OpKind::AllReduce | OpKind::Reduce | OpKind::Scan | OpKind::Exscan, Bufs::InPlace(buf)) => {
            let len = buf.len();
            let mut words = aligned(n * len);
            let all = &mut bytemuck::cast_slice_mut::<u128, u8>(&mut words)[..n * len];
            let k = count(len, op.name)?;
            let rp = ptr(all);
            // SAFETY: `buf` holds `len` bytes, `all` n × len; both outlive the wait.
            call("MPI_Iallgather", || unsafe {
                ffi::MPI_Iallgather(ptr(buf), k, bytes(), rp, k, bytes(), comm, &mut req)
            })?;
            wait_coll(c, &mut req, op)?;
            let upto = match op.kind {
                OpKind::Reduce if me != op.root as usize => return Ok(()),
                OpKind::Scan => me + 1,
                OpKind::Exscan => me,
                _ => n,
            };
            if upto == 0 {
                return Ok(()); // exscan's rank 0 keeps its buffer: no identity is known
            }
            buf.copy_from_slice(&all[..len]);
            for i in 1..upto {
                reduce::reduce_into(d, u, buf, &all[i * len..(i + 1) * len]);
            }
            Ok(())
        }
        (OpKind::ReduceScatter, Bufs::ReduceScatter { send, recv, counts }) => {
            let m = recv.len();
            let mut words = aligned(n * m);
            let all = &mut bytemuck::cast_slice_mut::<u128, u8>(&mut words)[..n * m];
            // Block j of `send` to rank j; every rank's block for this one into `all`.
            all_to_all_bytes(c, op, send, counts, all, &vec![m; n])?;
            recv.copy_from_slice(&all[..m]);
            for i in 1..n {
                reduce::reduce_into(d, u, recv, &all[i * m..(i + 1) * m]);
            }
            Ok(())
        }
        _ => Err(wrong_shape("mpi", op)),
    }
}

/// An all-to-all of bytes (block j of `send`, `send_counts[j]` bytes, to rank j;
/// `recv_counts[i]` bytes from rank i): dist's direct exchange where it applies
/// (`own.rs`), else `MPI_Ialltoallv`, waited on against the deadline. The lengths are
/// the callers' to check: `send` holds Σ send_counts bytes, `recv` Σ recv_counts.
fn all_to_all_bytes(
    c: &MpiComm,
    op: &Op,
    send: &[u8],
    send_counts: &[usize],
    recv: &mut [u8],
    recv_counts: &[usize],
) -> Result<()> {
    debug_assert_eq!((send.len(), recv.len()), (send_counts.iter().sum(), recv_counts.iter().sum()));
    if super::own::applies(c) {
        return super::own::all_to_all(c, op, send, send_counts, recv, recv_counts);
    }
    // SAFETY: placeholder, written by the posting call.
    let mut req: ffi::MPI_Request = unsafe { ffi::RSMPI_REQUEST_NULL };
    let (sc, sd) = counts_displs(send_counts, op.name)?;
    let (rc, rd) = counts_displs(recv_counts, op.name)?;
    let rp = ptr(recv);
    // SAFETY: both buffers hold what their counts say and outlive the wait.
    call("MPI_Ialltoallv", || unsafe {
        ffi::MPI_Ialltoallv(
            ptr(send),
            sc.as_ptr(),
            sd.as_ptr(),
            bytes(),
            rp,
            rc.as_ptr(),
            rd.as_ptr(),
            bytes(),
            c.comm,
            &mut req,
        )
    })?;
    wait_coll(c, &mut req, op)
}

/// Waits for a collective posted on memory that is freed or handed back to the caller
/// once this returns (the caller's buffers, or copies dropped on the way out): when the
/// wait fails while MPI may still use that memory, MPI must let go of it first, or the
/// rank ends the job ([`super::release`]).
fn wait_coll(c: &MpiComm, req: &mut ffi::MPI_Request, op: &Op) -> Result<()> {
    let r = c.wait(super::Wait::Coll, req, op.name, op.site, &|| super::health::waiting(c, op));
    if let Err(e) = &r {
        super::release(c, std::slice::from_mut(req), e, super::Held::Collective);
    }
    r
}

/// The per-pair counts of an all-to-all-v agree (what i sends j is what j expects from
/// i): every rank learns what each peer will send it, and the first disagreement is an
/// error on every rank, as on shm.
fn agree_counts(c: &MpiComm, op: &Op, send_counts: &[usize], recv_counts: &[usize]) -> Result<()> {
    let n = c.size;
    let mine: Vec<u64> = send_counts.iter().map(|&x| x as u64).collect();
    let mut theirs = vec![0u64; n];
    let one = count(8, op.name)?;
    // SAFETY: reading rsmpi's exported constant.
    let mut req: ffi::MPI_Request = unsafe { ffi::RSMPI_REQUEST_NULL };
    let rp = theirs.as_mut_ptr() as *mut c_void;
    // SAFETY: n u64 each way, alive until the wait.
    call("MPI_Ialltoall", || unsafe {
        ffi::MPI_Ialltoall(mine.as_ptr() as *mut c_void, one, bytes(), rp, one, bytes(), c.comm, &mut req)
    })?;
    wait_coll(c, &mut req, op)?;
    let me = c.rank;
    let wrong: Vec<String> = (0..n)
        .filter(|&j| theirs[j] != recv_counts[j] as u64)
        .map(|j| format!("rank {j} sends {} bytes to rank {me}, which expects {}", theirs[j], recv_counts[j]))
        .collect();
    // Every rank learns whether any disagrees, so all of them fail, not only the victim.
    let mut flag = [!wrong.is_empty() as u64];
    let mut any = [0u64];
    let (sp, rp) = (flag.as_mut_ptr() as *mut c_void, any.as_mut_ptr() as *mut c_void);
    // SAFETY: one u64 each way.
    call("MPI_Iallreduce", || unsafe {
        ffi::MPI_Iallreduce(sp, rp, 1, datatype(crate::dtype::DType::U64), ffi::RSMPI_MAX, c.comm, &mut req)
    })?;
    wait_coll(c, &mut req, op)?;
    if any[0] == 0 {
        return Ok(());
    }
    Err(Error::Mismatch {
        comm: c.name.clone(),
        msg: if wrong.is_empty() {
            format!("{} at {}: another rank's counts disagree with its peers' (see its error)", op.name, op.site)
        } else {
            format!("{} at {}: {}", op.name, op.site, wrong.join("; "))
        },
    })
}
