//! Personalised all-to-all by pairwise rounds: in each round of the tournament a rank
//! swaps, with its one partner, first the counts and then the blocks meant for each
//! other. Nothing is sent to a bye.

use dist_runtime::prelude::*;

use crate::schedule::Schedule;

const COUNT: Tag<u64> = Tag::new(40);

/// Offsets of consecutive blocks of the given sizes, plus the end.
pub fn displacements(counts: &[usize]) -> Vec<usize> {
    std::iter::once(0).chain(counts.iter().scan(0, |acc, &c| { *acc += c; Some(*acc) })).collect()
}

/// `send` holds `counts[q]` elements for each rank `q`, in rank order. Returns what
/// every rank sent here, in rank order, and how much came from each.
pub fn pairwise_all_to_all_v<G: Group, T: Element + Default + Clone>(
    comm: &Comm<G>,
    send: &[T],
    counts: &[usize],
    data: Tag<T>,
) -> dist_runtime::Result<(Vec<T>, Vec<usize>)> {
    let (r, n) = (comm.rank(), comm.size());
    assert_eq!(counts.len(), n, "one count per rank");
    let displs = displacements(counts);
    let block = |q: usize| &send[displs[q]..displs[q + 1]];

    let mut pieces: Vec<Vec<T>> = vec![Vec::new(); n];
    pieces[r] = block(r).to_vec();
    let partners = Schedule::new(r, n).filter_map(|round| round.partner);
    for p in partners {
        let mut theirs = [0u64];
        comm.sendrecv(p, COUNT, &[counts[p] as u64], p, &mut theirs)?;
        let mut incoming = vec![T::default(); theirs[0] as usize];
        comm.sendrecv(p, data, block(p), p, &mut incoming)?;
        pieces[p] = incoming;
    }
    let recv_counts = pieces.iter().map(Vec::len).collect();
    Ok((pieces.concat(), recv_counts))
}

/// The same exchange with the runtime's collectives: counts by `all_to_all`, data by
/// `all_to_all_v`.
pub fn builtin_all_to_all_v<G: Group, T: Element + Default + Clone>(
    comm: &Comm<G>,
    send: &[T],
    counts: &[usize],
) -> dist_runtime::Result<(Vec<T>, Vec<usize>)> {
    let out: Vec<u64> = counts.iter().map(|&c| c as u64).collect();
    let mut back = vec![0u64; comm.size()];
    comm.all_to_all(&out, &mut back)?;
    let recv_counts: Vec<usize> = back.iter().map(|&c| c as usize).collect();
    let mut recv = vec![T::default(); recv_counts.iter().sum()];
    comm.all_to_all_v(send, counts, &mut recv, &recv_counts)?;
    Ok((recv, recv_counts))
}
