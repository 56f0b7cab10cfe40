//! Messages that reached a rank and that no receive took, asked as the rank leaves (or
//! drops a communicator): on MPI they sit in MPI's own queue of unexpected messages, and
//! a small send completes as soon as MPI holds it, so without this look a send nobody
//! receives would end the job with exit code 0 and the message gone.

use super::p2p::{inline, read_header, sender_site, HEADER, INLINE};
use super::{call, MpiComm};
use mpi::ffi;
use std::collections::BTreeMap;
use std::ffi::c_int;

/// Most messages taken per source (a flood of them is named by the first ones).
const MOST: usize = 4096;

/// One line per sender's call site, as the shared-memory backend words it: "rank 0 of
/// World sent 1 message with tag 3 (8 bytes) at src/main.rs:12 that rank 1 never
/// received". Each source's queue is read in order, header by header (a header's
/// payload, when it is not inline, follows it from the same source with the same tag and
/// is counted with it: a message longer than a header ends that source's look). dist's
/// own collective messages, on the largest tag, are not the user's.
pub(super) fn unreceived(c: &MpiComm) -> Vec<String> {
    let own = super::ops::tag();
    // (source, tag, sender's site) -> (messages, bytes)
    let mut by: BTreeMap<(usize, c_int, String), (usize, u64)> = BTreeMap::new();
    for src in (0..c.size).filter(|&s| s != c.rank) {
        for _ in 0..MOST {
            let mut flag: c_int = 0;
            // SAFETY: placeholders, written by MPI.
            let mut msg: ffi::MPI_Message = unsafe { ffi::RSMPI_MESSAGE_NULL };
            // SAFETY: placeholders, written by MPI.
            let mut st: ffi::MPI_Status = unsafe { std::mem::zeroed() };
            // SAFETY: a valid communicator; outputs written by MPI.
            let probed = call("MPI_Improbe", || unsafe {
                ffi::MPI_Improbe(src as c_int, ffi::RSMPI_ANY_TAG, c.comm, &mut flag, &mut msg, &mut st)
            });
            if probed.is_err() || flag == 0 {
                break;
            }
            let mut n: c_int = 0;
            // SAFETY: the status of the matched message.
            if call("MPI_Get_count", || unsafe { ffi::MPI_Get_count(&st, super::ops::bytes(), &mut n) }).is_err() {
                break;
            }
            let n = n.max(0) as usize;
            if !(HEADER..=HEADER + INLINE).contains(&n) {
                // A payload (its header was counted) or not dist's: left to MPI.
                break;
            }
            let mut h = vec![0u8; n];
            // SAFETY: `h` holds the `n` bytes of the matched message, which is ours.
            let got = call("MPI_Mrecv", || unsafe {
                ffi::MPI_Mrecv(
                    h.as_mut_ptr().cast(),
                    n as c_int,
                    super::ops::bytes(),
                    &mut msg,
                    ffi::RSMPI_STATUS_IGNORE,
                )
            });
            if got.is_err() || st.MPI_TAG >= own {
                continue;
            }
            let (_, len) = read_header(&h);
            let e = by.entry((src, st.MPI_TAG, sender_site(&h))).or_default();
            e.0 += 1;
            e.1 += len as u64;
            if !inline(&h) {
                // Its payload is next from this source: not read (it may be large).
                break;
            }
        }
    }
    by.into_iter()
        .map(|((src, tag, site), (k, bytes))| {
            format!(
                "rank {src} of {} sent {k} message{} with tag {tag} ({bytes} bytes) at {site} that rank {} never \
                 received",
                c.name,
                if k == 1 { "" } else { "s" },
                c.rank
            )
        })
        .collect()
}
