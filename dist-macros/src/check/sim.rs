//! From the traces of every rank at one world size: collectives that not every member
//! reaches (or reaches in another order, with another root or op), sends and receives
//! without a partner, and deadlocks under rendezvous semantics (found where the traces,
//! run together, stop: `stuck.rs`).

use super::describe::{comm_desc, ev_tag, ranks, tag_desc, tag_id, Channel};
use super::interp;
use super::stuck::{deadlock, run_until_stuck};
use super::trace::{A2a, Count, Counts, Ev};
use std::collections::{BTreeMap, HashSet};

/// Problems found at world size `n`, each an error spanned at the call to fix.
pub fn check(n: usize, traces: &[Vec<Ev<'_>>]) -> Vec<syn::Error> {
    // `DIST_CHECK_DUMP=FILE`: every rank's events as the check saw them, per world
    // size (for the check's developers: which lengths, roots and peers it held).
    if let Some(path) = std::env::var_os("DIST_CHECK_DUMP") {
        use std::io::Write;
        if let Ok(mut out) = std::fs::OpenOptions::new().create(true).append(true).open(path) {
            for (r, t) in traces.iter().enumerate() {
                let _ = writeln!(out, "== world size {n}, rank {r}");
                for ev in t {
                    let _ = writeln!(out, "{ev:?}");
                }
            }
        }
    }
    let mut errs = collectives(n, traces);
    if paths_only() {
        // (Only what the ranks' paths show: a collective some reach, collectives in
        // another order. See [`set_paths_only`].)
        errs.truncate(4);
        return errs;
    }
    errs.extend(unmatched(n, traces));
    if errs.is_empty() {
        errs.extend(message_lengths(n, traces));
    }
    if errs.is_empty() {
        errs.extend(deadlock(n, traces));
    }
    errs.truncate(4);
    errs
}

// ---------------------------------------------------------------- collectives

/// Collectives that not every member reaches, or reaches in another order, with another
/// root, op or length.
pub fn collectives(n: usize, traces: &[Vec<Ev<'_>>]) -> Vec<syn::Error> {
    collectives_of(n, traces, false)
}

/// Collectives that disagree (kind, root, op, length, counts) among those every member
/// of their communicator reached, in a run where some rank then failed (its own error
/// after a broadcast of the wrong length): what ranks skipped after the failure is not
/// judged.
pub fn reached_collectives(n: usize, traces: &[Vec<Ev<'_>>]) -> Vec<syn::Error> {
    collectives_of(n, traces, true)
}

/// Roots or count lists that differ between the members of the collective a rank of
/// `invalid` ended its run at (an invalid call, last in its trace), at that call's place
/// in its communicator's sequence, where every member reached it: a rank that took itself
/// for the root (or not) because its root differs passed its buffers as a root (or not),
/// and a rank whose buffers do not add up to counts that are not the others' (`vec![my_len;
/// n]`) passed the counts wrong; those are the error to name.
pub fn roots_or_counts_differ(n: usize, traces: &[Vec<Ev<'_>>], invalid: &[usize]) -> Option<syn::Error> {
    let root = |e: &Option<&Ev>| match e {
        Some(Ev::Coll { root, .. }) => *root,
        _ => None,
    };
    let seqs = sequences(traces);
    for &r in invalid {
        let Some(Ev::Coll { comm, .. }) = traces.get(r).and_then(|t| t.last()) else { continue };
        let Some((group, members, by_rank)) = seqs.get(comm) else { continue };
        let Some(i) = by_rank.get(&r).map(|s| s.len() - 1) else { continue };
        let at: Vec<(usize, Option<&Ev>)> =
            members.iter().map(|&m| (m, by_rank.get(&m).and_then(|s| s.get(i)).copied())).collect();
        if at.iter().any(|(_, e)| e.is_none_or(|e| kind_of(e) != kind_of(at[0].1.expect("checked")))) {
            continue;
        }
        let known: HashSet<i128> = at.iter().filter_map(|(_, e)| root(e)).collect();
        let counts: HashSet<&Vec<i128>> = at.iter().filter_map(|(_, e)| known_counts(e)).collect();
        if known.len() > 1 || counts.len() > 1 {
            return agreement_at(&at, &comm_desc(comm, group, members), n);
        }
    }
    None
}

/// A `_v` collective's counts, where known.
fn known_counts<'e>(e: &Option<&'e Ev<'_>>) -> Option<&'e Vec<i128>> {
    match e {
        Some(Ev::Coll { counts: Some(Counts::Known(k)), .. }) => Some(k),
        _ => None,
    }
}

/// Each communicator's collectives, by rank, in order.
fn sequences<'t, 'a>(traces: &'t [Vec<Ev<'a>>]) -> Seqs<'t, 'a> {
    let mut seqs: Seqs<'_, '_> = BTreeMap::new();
    for (r, t) in traces.iter().enumerate() {
        for ev in t {
            if let Ev::Coll { comm, group, members, .. } = ev {
                let e = seqs.entry(comm.clone()).or_insert_with(|| (group.clone(), members.clone(), BTreeMap::new()));
                e.2.entry(r).or_default().push(ev);
            }
        }
    }
    seqs
}

fn collectives_of(n: usize, traces: &[Vec<Ev<'_>>], reached_only: bool) -> Vec<syn::Error> {
    let seqs = sequences(traces);
    let mut errs = Vec::new();
    for (comm, (group, members, by_rank)) in &seqs {
        let desc = comm_desc(comm, group, members);
        let len = members.iter().map(|r| by_rank.get(r).map_or(0, Vec::len)).max().unwrap_or(0);
        for i in 0..len {
            let at: Vec<(usize, Option<&Ev>)> =
                members.iter().map(|&r| (r, by_rank.get(&r).and_then(|s| s.get(i)).copied())).collect();
            let reached: Vec<usize> = at.iter().filter(|(_, e)| e.is_some()).map(|(r, _)| *r).collect();
            let missing: Vec<usize> = at.iter().filter(|(_, e)| e.is_none()).map(|(r, _)| *r).collect();
            if !missing.is_empty() {
                if reached_only {
                    break;
                }
                let ev = at.iter().find_map(|(_, e)| *e).expect("someone reached it");
                // (An extra collective earlier that met the others' next one, `count()`
                // on the rank that prints: the one it names, where dropping it lines up
                // the rest.)
                let extra = extra_before(members, by_rank, i, (&desc, n), reached_only);
                errs.push(extra.unwrap_or_else(|| reached_by_some(ev, &desc, &reached, &missing, n)));
                break;
            }
            let found = order_at(&at, by_rank, i, &desc, n).or_else(|| {
                // (Judged by paths alone: not the arguments. See [`set_paths_only`].)
                if paths_only() {
                    return None;
                }
                agreement_at(&at, &desc, n)
                    .or_else(|| data_counts_at(&at, &desc, n))
                    .or_else(|| pairs_at(&at, members, &desc, n, &seqs))
                    .or_else(|| item_taken_at(&at, members, &desc, n, &seqs))
                    .or_else(|| data_root_at(&at, &desc, n))
            });
            if let Some(e) = found {
                // Collectives that agree in kind, op, root and length but come from
                // different lines may be one rank's extra collective meeting the others'
                // next one: where dropping it lines every later collective up, it is
                // that collective the error names (`if rank == 0 { log(norm()?) }`).
                errs.push(extra_before(members, by_rank, i, (&desc, n), reached_only).unwrap_or(e));
                break;
            }
        }
    }
    errs
}

/// The first position up to `i` of a communicator's sequences where the members'
/// collectives come from different lines and one group of ranks has an extra collective
/// there (or as many more as its sequence is longer: a loop's, skipped by the others):
/// without them, its later collectives are the others' (kind, root, op, length).
/// That collective, as reached by some ranks only.
fn extra_before(
    members: &[usize],
    by_rank: &BTreeMap<usize, Vec<&Ev<'_>>>,
    i: usize,
    (desc, n): (&str, usize),
    reached_only: bool,
) -> Option<syn::Error> {
    let sig = |e: &&Ev| match e {
        Ev::Coll { kind, root, op, len, .. } => Some((*kind, *root, op.clone(), *len)),
        _ => None,
    };
    let seq = |r: usize| by_rank.get(&r).map(|s| s.as_slice()).unwrap_or_default();
    for j in 0..=i {
        let at: Vec<(usize, &Ev)> = members.iter().filter_map(|&r| seq(r).get(j).map(|e| (r, *e))).collect();
        if at.len() != members.len() {
            return None;
        }
        let first = at[0].1.site().loc();
        if at.iter().all(|(_, e)| e.site().loc() == first) {
            continue;
        }
        // Split by line: the ranks at the first rank's line, the rest.
        let (with, without): (Vec<usize>, Vec<usize>) = at
            .iter()
            .map(|x| x.0)
            .partition(|&r| at.iter().find(|x| x.0 == r).is_some_and(|x| x.1.site().loc() == first));
        for (extra, others) in [(&with, &without), (&without, &with)] {
            // (As many extra collectives as the one side has more, all of the line the
            // first is at: one per step of a loop the others skip. Not where a rank's
            // sequence is short because it failed.)
            let (Some(&a0), Some(&b0)) = (extra.first(), others.first()) else { continue };
            let more = match seq(a0).len().saturating_sub(seq(b0).len()) {
                m if m > 1 && !reached_only => m,
                _ => 1,
            };
            // (The extra ones need not be in a row: `if rank == 0 && it % 10 == 0 {
            // log(norm()?) }` adds one every tenth step. Without the first `more` of the
            // line's from `j` on, the rest must line up.)
            let line = seq(a0)[j].site().loc();
            let without_extra = |a: usize| -> Option<Vec<&Ev<'_>>> {
                let mut left = more;
                let rest: Vec<&Ev<'_>> = seq(a)[j..]
                    .iter()
                    .filter(|e| {
                        let drop = left > 0 && e.site().loc() == line;
                        left -= usize::from(drop);
                        !drop
                    })
                    .copied()
                    .collect();
                (left == 0).then_some(rest)
            };
            let lines_up = extra.iter().all(|&a| {
                let Some(sa) = without_extra(a) else { return false };
                others.iter().all(|&b| {
                    let sb = &seq(b)[j..];
                    sa.len() == sb.len() && sa.iter().zip(sb).all(|(x, y)| sig(x) == sig(y))
                })
            });
            if lines_up {
                let ev = seq(extra[0])[j];
                return Some(reached_by_some(ev, desc, extra, others, n));
            }
        }
        return None;
    }
    None
}

/// comm → (group, members, rank → its collectives on it in order).
type Seqs<'t, 'a> = BTreeMap<String, (String, Vec<usize>, BTreeMap<usize, Vec<&'t Ev<'a>>>)>;

/// Every member's collective at one position of a communicator's sequence.
type At<'t, 'a> = [(usize, Option<&'t Ev<'a>>)];

/// What kind of collective an event is ("" for anything else).
fn kind_of(e: &Ev) -> &'static str {
    match e {
        Ev::Coll { kind, .. } => kind,
        _ => "",
    }
}

/// Collectives of different kinds at position `i`: one reached by some ranks only (the
/// others' sequences line up without it), or two in a different order.
fn order_at(
    at: &At<'_, '_>,
    by_rank: &BTreeMap<usize, Vec<&Ev<'_>>>,
    i: usize,
    desc: &str,
    n: usize,
) -> Option<syn::Error> {
    let first = at[0].1.expect("all reached");
    let other = at.iter().find(|(_, e)| kind_of(e.expect("reached")) != kind_of(first));
    if let Some((or, Some(o))) = other {
        // One side has an extra collective: say it is reached by some ranks only.
        let kinds = |r: usize, from: usize| -> Vec<&'static str> {
            by_rank.get(&r).map(|s| s[from.min(s.len())..].iter().map(|e| kind_of(e)).collect()).unwrap_or_default()
        };
        let r0 = at[0].0;
        let extra = if kinds(r0, i + 1) == kinds(*or, i) {
            Some((first, kind_of(first)))
        } else if kinds(*or, i + 1) == kinds(r0, i) {
            Some((*o, kind_of(o)))
        } else {
            None
        };
        if let Some((ev, k)) = extra {
            let with: Vec<usize> = at.iter().filter(|(_, e)| kind_of(e.expect("reached")) == k).map(|x| x.0).collect();
            let without: Vec<usize> =
                at.iter().filter(|(_, e)| kind_of(e.expect("reached")) != k).map(|x| x.0).collect();
            return Some(reached_by_some(ev, desc, &with, &without, n));
        }
        let with = |k: &str| -> Vec<usize> {
            at.iter().filter(|(_, e)| kind_of(e.expect("reached")) == k).map(|x| x.0).collect()
        };
        let (a, b) = (with(kind_of(first)), with(kind_of(o)));
        note_path_problem();
        return Some(o.site().error(format!(
            "collectives in a different order at world size {n}: on {desc}, collective #{} is `{}` \
             ({}) on {} but `{}` ({}) on {}; every rank must call the same collectives \
             in the same order",
            i + 1,
            first.call(),
            first.site().loc(),
            ranks(&a),
            o.call(),
            o.site().loc(),
            ranks(&b),
        )));
    }
    None
}

/// Collectives of one kind whose root, op, buffer length or known counts differ.
fn agreement_at(at: &At<'_, '_>, desc: &str, n: usize) -> Option<syn::Error> {
    // Same kind everywhere: the root and the op must agree where both are known.
    let mismatch = |get: &dyn Fn(&Ev) -> Option<String>, what: &str| -> Option<syn::Error> {
        let base = at.iter().find_map(|(r, e)| get(e.expect("reached")).map(|v| (*r, v, *e)))?;
        let odd = at.iter().find_map(|(r, e)| {
            let v = get(e.expect("reached"))?;
            (v != base.1).then_some((*r, v, *e))
        })?;
        let same: Vec<usize> =
            at.iter().filter(|(_, e)| get(e.expect("reached")).as_ref() == Some(&base.1)).map(|x| x.0).collect();
        let diff: Vec<usize> =
            at.iter().filter(|(_, e)| get(e.expect("reached")).as_ref() == Some(&odd.1)).map(|x| x.0).collect();
        let (oe, be) = (odd.2.expect("reached"), base.2.expect("reached"));
        Some(oe.site().error(format!(
            "`{}` on {desc} is called with different {what}s at world size {n}: {} pass{} {what} {} \
             ({}) but {} pass{} {what} {} ({}); every rank must pass the same {what}",
            oe.call(),
            ranks(&same),
            if same.len() == 1 { "es" } else { "" },
            base.1,
            be.site().loc(),
            ranks(&diff),
            if diff.len() == 1 { "es" } else { "" },
            odd.1,
            oe.site().loc(),
        )))
    };
    let root = |e: &Ev| match e {
        Ev::Coll { root, .. } => root.map(|r| r.to_string()),
        _ => None,
    };
    // (`PreMulSum(0.25)`: the op, and its scale where the check knows it.)
    let op = |e: &Ev| match e {
        Ev::Coll { op, .. } => op.as_ref().map(|o| o.split('(').next().unwrap_or(o).to_string()),
        _ => None,
    };
    let scale = |e: &Ev| match e {
        Ev::Coll { op: Some(o), .. } => o.split_once('(').map(|(_, s)| s.trim_end_matches(')').to_string()),
        _ => None,
    };
    let len = |e: &Ev| match e {
        Ev::Coll { len, .. } => len.map(|l| l.to_string()),
        _ => None,
    };
    let counts = |e: &Ev| match e {
        Ev::Coll { counts: Some(Counts::Known(k)), .. } => Some(format!("{k:?}")),
        _ => None,
    };
    mismatch(&root, "root")
        .or_else(|| mismatch(&op, "op"))
        .or_else(|| mismatch(&scale, "`PreMulSum` scale"))
        .or_else(|| mismatch(&len, "buffer length"))
        .or_else(|| mismatch(&counts, "count list"))
}

/// Counts that are data on every rank, computed from different values on two of them
/// (`vec![keys.len(); n]` of a rank's own keys).
fn data_counts_at(at: &At<'_, '_>, desc: &str, n: usize) -> Option<syn::Error> {
    let data_counts = |e: &Ev| match e {
        Ev::Coll { counts: Some(Counts::Data(fp, t)), .. } => Some((*fp, t.clone())),
        _ => None,
    };
    let cs: Vec<(usize, (u64, String), &Ev)> =
        at.iter().filter_map(|(r, e)| Some((*r, data_counts(e.expect("reached"))?, e.expect("reached")))).collect();
    if cs.len() == at.len() {
        if let Some((r1, (_, text), ev)) = cs.iter().find(|x| x.1 .0 != cs[0].1 .0) {
            return Some(ev.site().error(format!(
                "`{}` on {desc} may be called with different counts at world size {n}: `{text}` ({}) is \
                 data that rank {r1} computes from other values than rank {} does ({}), so the ranks may \
                 pass different counts; every rank must pass the same counts: exchange the lengths first \
                 (`all_gather` of each rank's length)",
                ev.call(),
                ev.site().loc(),
                cs[0].0,
                cs[0].2.site().loc(),
            )));
        }
    }
    None
}

/// Each member's `all_to_all_v` send and receive counts at `at`, with its event; `None`
/// unless every member's are held as lists.
type Pairs<'t, 'a> = Vec<(usize, (&'t [Count], &'t [Count]), &'t Ev<'a>)>;

fn a2a_counts<'t, 'a>(at: &At<'t, 'a>) -> Option<Pairs<'t, 'a>> {
    let a2a: Pairs<'_, '_> = at
        .iter()
        .filter_map(|(r, e)| match e.expect("reached") {
            ev @ Ev::Coll { a2a: Some(A2a::Counts(s, v)), .. } => Some((*r, (s.as_slice(), v.as_slice()), ev)),
            _ => None,
        })
        .collect();
    (a2a.len() == at.len()).then_some(a2a)
}

/// One ordered pair of an `all_to_all_v`'s members: rank `i` (its send counts and call)
/// and rank `j` (its own send counts, its receive counts and call), with their places
/// in the communicator (`li`, `lj`).
struct Pair<'t, 'a> {
    i: usize,
    j: usize,
    li: usize,
    lj: usize,
    send: &'t [Count],
    own: &'t [Count],
    recv: &'t [Count],
    ev: &'t Ev<'a>,
    ev2: &'t Ev<'a>,
}

/// The first `Some` that `f` gives over the ordered pairs of `a2a`'s members.
fn find_pair<'t, 'a, T>(
    a2a: &Pairs<'t, 'a>,
    members: &[usize],
    mut f: impl FnMut(Pair<'t, 'a>) -> Option<T>,
) -> Option<T> {
    let local = |w: usize| members.iter().position(|&m| m == w).unwrap_or(0);
    a2a.iter().find_map(|&(i, (send, _), ev)| {
        a2a.iter()
            .find_map(|&(j, (own, recv), ev2)| f(Pair { i, j, li: local(i), lj: local(j), send, own, recv, ev, ev2 }))
    })
}

/// What rank `from` sent by its `seq`-th collective on a communicator, from `seqs`.
fn sent_of<'s>(seqs: &'s Seqs<'_, '_>) -> impl Fn(&str, usize, u64) -> Option<Vec<Count>> + 's {
    move |comm: &str, from: usize, seq: u64| seqs.get(comm)?.2.get(&from).and_then(|evs| interp::sent_in(evs, seq))
}

/// `all_to_all_v` whose receive count takes the wrong item of an exchange of counts:
/// rank j's count from rank i is item x of what rank i sent by an `all_to_all`, while
/// what rank i sends rank j is item y of that same exchange, another value (counts of
/// records and of words exchanged side by side, and the second `all_to_all_v` passed
/// the words' counts). Data counts are compared by what they were computed from: the
/// two items are two values rank i computed apart, so the receiver takes a count that
/// is not the one its sender sends by.
fn item_taken_at(at: &At<'_, '_>, members: &[usize], desc: &str, n: usize, seqs: &Seqs<'_, '_>) -> Option<syn::Error> {
    let a2a = a2a_counts(at)?;
    let sent = sent_of(seqs);
    find_pair(&a2a, members, |Pair { i, j, li, lj, send, recv, ev, ev2, .. }| {
        let Count::Recv { comm, seq, from, idx } = recv.get(li)? else { return None };
        let s = interp::resolve(send.get(lj)?, &sent, 8);
        if *from != i || !matches!(s, Count::Data(_)) {
            return None;
        }
        let items = sent(comm, *from, *seq)?;
        let item = |k: usize| interp::resolve(&items[k], &sent, 8);
        // (Positions in the block rank i sent rank j: `b` items a destination.)
        let b = items.len() / members.len().max(1);
        let block = lj * b..(lj + 1) * b;
        let y = block.clone().find(|&k| item(k) == s)?;
        if y == *idx || !block.contains(idx) || item(*idx) == s {
            return None;
        }
        let (x, y) = (idx - block.start, y - block.start);
        let exchange = seqs
            .get(comm)?
            .2
            .get(from)?
            .iter()
            .find(|e| matches!(e, Ev::Coll { a2a: Some(A2a::Sent(q, _)), .. } if q == seq))?;
        Some(ev2.site().error(format!(
            "`{}` on {desc} at world size {n}: rank {j} expects from rank {i} item {x} of the {b} rank {i} \
                 sent it by the `all_to_all` at {} (item {li} of its receive counts, {}), but what rank {i} sends \
                 rank {j} (item {lj} of its send counts, {}) is item {y} of those {b}, another value rank {i} \
                 computed; the receive counts must be the exchanged counts of what this call sends",
            ev2.call(),
            exchange.site().loc(),
            ev2.site().loc(),
            ev.site().loc(),
        )))
    })
}

/// `all_to_all_v`: what rank i sends rank j is what j expects from i. Counts that are
/// data are compared by what they were computed from, counts received by an
/// `all_to_all` replaced by what their sender sent (`seqs`: every rank's collectives).
fn pairs_at(at: &At<'_, '_>, members: &[usize], desc: &str, n: usize, seqs: &Seqs<'_, '_>) -> Option<syn::Error> {
    let a2a = a2a_counts(at)?;
    let sent = sent_of(seqs);
    // Data counts are taken to differ where the receiver's count is its own send count
    // for that rank (receive counts assumed to mirror send counts) and the sender's
    // count is not provably the same value (another hash, or data not computed exactly). (Two counts each rank works out from its own data
    // otherwise, which a program may have proven equal, are not compared; nor counts
    // traced to an exchange whose items the check follows only as a whole: a list
    // mapped `c as u64` for the exchange is another value to it than the list.)
    // (Known numbers equal by chance, `vec![block; n]` passed for both, prove no
    // mirroring: a known count beside data is compared only where some member's receive
    // counts are its send counts item for item on data.)
    let data_mirror = a2a.iter().any(|(_, (own, recv), _)| {
        own.len() == recv.len()
            && own.iter().zip(*recv).all(|(a, b)| a == b)
            && own.iter().any(|c| matches!(c, Count::Data(_)))
    });
    let bad = find_pair(&a2a, members, |Pair { i, j, li, lj, send, own, recv, ev, ev2 }| {
        let (s0, r0) = (send.get(lj)?, recv.get(li)?);
        let s = interp::resolve(s0, &sent, 8);
        let r = interp::resolve(r0, &sent, 8);
        let mirrored = own.get(li) == Some(r0);
        let differ = match (&s, &r) {
            (Count::Known(a), Count::Known(b)) => a != b,
            // (Equal hashes prove nothing unless the data is exact: the same recipe of
            // known values.)
            (Count::Data(f), Count::Data(g)) => mirrored && i != j && (f != g || !interp::exact(*f)),
            // (A rank whose data left nothing to send, a known 0, beside one that
            // mirrors its own data count: that data may be more.)
            (Count::Known(_), Count::Data(_)) | (Count::Data(_), Count::Known(_)) => data_mirror && mirrored && i != j,
            _ => false,
        };
        differ.then_some((i, j, s, r, ev, ev2, lj, li))
    });
    let Some((i, j, s, r, ev, ev2, lj, li)) = bad else { return formed_pairs_at(&a2a, members, desc, n, seqs) };
    Some(ev2.site().error(match (s, r) {
        (Count::Known(s), Count::Known(r)) => format!(
            "`{}` on {desc} at world size {n}: rank {i} sends rank {j} {s} element{} (its send counts, \
             {}) but rank {j} expects {r} from rank {i} (its receive counts, {}); what each rank sends \
             another must be what that rank expects from it",
            ev2.call(),
            if s == 1 { "" } else { "s" },
            ev.site().loc(),
            ev2.site().loc(),
        ),
        (Count::Known(s), _) => format!(
            "`{}` on {desc} at world size {n}: rank {j} expects from rank {i} as many elements as it sends \
             rank {i} (item {li} of its receive counts is item {li} of its send counts, {}), data computed on \
             rank {j}, but rank {i} sends rank {j} {s} element{} (item {lj} of its send counts, {}), so the two \
             may differ; what each rank sends another must be what that rank expects from it: exchange the send \
             counts first (an `all_to_all` of them) and pass what arrived as the receive counts",
            ev2.call(),
            ev2.site().loc(),
            if s == 1 { "" } else { "s" },
            ev.site().loc(),
        ),
        _ => format!(
            "`{}` on {desc} at world size {n}: rank {j} expects from rank {i} as many elements as it sends \
             rank {i} (item {li} of its receive counts is item {li} of its send counts, {}), but what rank {i} \
             sends rank {j} (item {lj} of its send counts, {}) is data computed on that rank, so the two may \
             differ; what each rank sends another must be what that rank expects from it: exchange the send \
             counts first (an `all_to_all` of them) and pass what arrived as the receive counts",
            ev2.call(),
            ev2.site().loc(),
            ev.site().loc(),
        ),
    }))
}

/// `all_to_all_v` counts that are data on both sides, compared by their forms
/// (`interp::of_count`): rank j expects from rank i a count computed from what rank i
/// sent it, which differs from what rank i sends by a known number or a factor
/// (`c` against `2 · c`: payload counts in pairs where the counts were exchanged as
/// pairs) whatever that data is.
fn formed_pairs_at(
    a2a: &Pairs<'_, '_>,
    members: &[usize],
    desc: &str,
    n: usize,
    seqs: &Seqs<'_, '_>,
) -> Option<syn::Error> {
    let sent = sent_of(seqs);
    find_pair(a2a, members, |Pair { i, j, li, lj, send, recv, ev, ev2, .. }| {
        let (s, r) = (send.get(lj)?, recv.get(li)?);
        if matches!((s, r), (Count::Known(_), Count::Known(_))) {
            return None;
        }
        let (fs, fr) = (interp::of_count(s, &sent, 8)?, interp::of_count(r, &sent, 8)?);
        let how = interp::provably_differ(&fr, &fs)?;
        let (from, sends) = if i == j {
            ("itself".into(), "it sends itself".into())
        } else {
            (format!("rank {i}"), format!("rank {i} sends it"))
        };
        Some(ev2.site().error(format!(
            "`{}` on {desc} at world size {n}: rank {j} expects from {from} {how} {sends} (item {li} of rank \
                 {j}'s receive counts, {}, against item {lj} of rank {i}'s send counts, {}), whatever the data both \
                 are computed from; what each rank sends another must be what that rank expects from it",
            ev2.call(),
            ev2.site().loc(),
            ev.site().loc(),
        )))
    })
}

/// The first root or reduce op, in rank order, that the check could not prove the same
/// on every rank ([`Ev::Coll`]'s `unproven`): the call's tokens and what it is, naming
/// the helper's place where the call is in one.
pub fn unproven(traces: &[Vec<Ev<'_>>]) -> Option<(proc_macro2::TokenStream, String)> {
    traces.iter().flatten().find_map(|e| match e {
        Ev::Coll { unproven: Some(what), site, .. } => Some((site.tokens(), format!("{what}{}", site.helper_note()))),
        _ => None,
    })
}

/// A root that is data on every rank, computed from different values on two of them:
/// the ranks may pass different roots.
fn data_root_at(at: &At<'_, '_>, desc: &str, n: usize) -> Option<syn::Error> {
    let data_root = |e: &Ev| match e {
        Ev::Coll { root: None, root_data: Some(d), .. } => Some(d.clone()),
        _ => None,
    };
    let roots: Vec<(usize, (u64, String), &Ev)> =
        at.iter().filter_map(|(r, e)| Some((*r, data_root(e.expect("reached"))?, e.expect("reached")))).collect();
    if roots.len() == at.len() {
        if let Some((r1, (_, text), ev)) = roots.iter().find(|x| x.1 .0 != roots[0].1 .0) {
            let (r0, e0) = (roots[0].0, roots[0].2);
            return Some(ev.site().error(format!(
                "`{}` on {desc} may be called with different roots at world size {n}: the root `{text}` \
                 ({}) is data that rank {r1} computes from other values than rank {r0} does (`{}`, {}), \
                 so the ranks may pass different roots; every rank must pass the same root: compute it \
                 from `rank()`, `size()`, constants or the program's inputs, or broadcast it from a fixed \
                 root first",
                ev.call(),
                ev.site().loc(),
                roots[0].1 .1,
                e0.site().loc(),
            )));
        }
    }
    None
}

thread_local! {
    /// Whether runs are judged by their paths alone ([`set_paths_only`]), and how many
    /// such problems were found since the check started.
    static PATHS_ONLY: std::cell::Cell<(bool, u32)> = const { std::cell::Cell::new((false, 0)) };
}

/// Judges runs by the paths the ranks take alone: a collective reached by some ranks
/// only, collectives in a different order; not the arguments, lengths or messages,
/// which a run with larger input numbers than any other computes from guesses as well
/// (a list's length a quiet helper left unknown, taken to be the run's number).
pub fn set_paths_only(on: bool) {
    PATHS_ONLY.with(|p| p.set((on, p.get().1)));
}

/// Whether runs are judged by their paths alone.
pub fn paths_only() -> bool {
    PATHS_ONLY.with(|p| p.get().0)
}

/// How many problems of paths ([`set_paths_only`]) were found so far.
pub fn path_problems() -> u32 {
    PATHS_ONLY.with(|p| p.get().1)
}

fn note_path_problem() {
    PATHS_ONLY.with(|p| p.set((p.get().0, p.get().1 + 1)));
}

/// A collective that `with` reach and `without` do not.
fn reached_by_some(ev: &Ev, desc: &str, with: &[usize], without: &[usize], n: usize) -> syn::Error {
    note_path_problem();
    ev.site().error(format!(
        "`{}`{} on {desc} is reached by {} but not by {} at world size {n}: a collective must be called by \
         every rank of its communicator, in the same order; call it outside the rank-dependent branch, or on a \
         subgroup of the ranks that reach it",
        ev.call(),
        ev.site().helper_note(),
        ranks(with),
        ranks(without),
    ))
}

// ---------------------------------------------------------------- unmatched p2p

/// Each channel's sends and receives, in posting order (a channel's ranks are world ranks).
fn channels<'t, 'a>(traces: &'t [Vec<Ev<'a>>]) -> BTreeMap<Channel, (Vec<&'t Ev<'a>>, Vec<&'t Ev<'a>>)> {
    let mut ch: BTreeMap<Channel, (Vec<&Ev>, Vec<&Ev>)> = BTreeMap::new();
    for (r, t) in traces.iter().enumerate() {
        for ev in t {
            if let Ev::P2p { send, comm, peer, tag, .. } = ev {
                let key =
                    if *send { (comm.clone(), r, *peer, tag_id(tag)) } else { (comm.clone(), *peer, r, tag_id(tag)) };
                let e = ch.entry(key).or_default();
                if *send {
                    e.0.push(ev)
                } else {
                    e.1.push(ev)
                }
            }
        }
    }
    ch
}

fn unmatched(n: usize, traces: &[Vec<Ev<'_>>]) -> Vec<syn::Error> {
    let ch = channels(traces);
    let mut errs = Vec::new();
    for ((comm, src, dst, tag), (sends, recvs)) in &ch {
        if sends.len() == recvs.len() {
            continue;
        }
        let on = match sends.first().or(recvs.first()) {
            Some(Ev::P2p { group, .. }) if comm != "world" => format!(" on `{group}`"),
            _ => String::new(),
        };
        let msgs = |k: usize| if k == 1 { "1 message".to_string() } else { format!("{k} messages") };
        let posts = |k: usize| match k {
            0 => "posts no matching `recv`".to_string(),
            1 => "posts 1 matching `recv`".to_string(),
            k => format!("posts {k} matching `recv`s"),
        };
        let td = tag_desc(&sends.first().or(recvs.first()).map(|e| ev_tag(e)).unwrap_or_else(|| tag.clone()));
        if sends.len() > recvs.len() {
            let ev = sends[recvs.len()];
            let hint = near_miss(&ch, comm, *src, *dst, tag, false);
            errs.push(ev.site().error(format!(
                "this `{}`{} from rank {src} to rank {dst} ({td}{on}) has no matching `recv` at world size {n}: \
                 rank {src} sends {} to rank {dst} with {td}, and rank {dst} {}{hint}; add the `recv` on \
                 rank {dst} or remove the send",
                ev.call(),
                ev.site().helper_note(),
                msgs(sends.len()),
                posts(recvs.len()),
            )));
        } else {
            let ev = recvs[sends.len()];
            let hint = near_miss(&ch, comm, *src, *dst, tag, true);
            errs.push(ev.site().error(format!(
                "this `{}`{} on rank {dst} from rank {src} ({td}{on}) has no matching `send` at world size {n}: \
                 rank {dst} expects {} from rank {src} with {td}, and rank {src} sends {}{hint}; it would \
                 wait forever",
                ev.call(),
                ev.site().helper_note(),
                msgs(recvs.len()),
                if sends.is_empty() { "none".to_string() } else { msgs(sends.len()) },
            )));
        }
    }
    errs
}

/// A hint when the partner exists with another tag or another peer.
fn near_miss(
    ch: &BTreeMap<Channel, (Vec<&Ev>, Vec<&Ev>)>,
    comm: &str,
    src: usize,
    dst: usize,
    tag: &str,
    for_recv: bool,
) -> String {
    for ((c, s, d, t), (sends, recvs)) in ch {
        if c != comm || sends.len() == recvs.len() {
            continue;
        }
        if for_recv && sends.len() > recvs.len() && *d == dst && (*s != src || t != tag) {
            let ev = sends[recvs.len()];
            return format!(
                " (rank {s} does send to rank {dst} with {} at {})",
                tag_desc(&ev_tag(ev)),
                ev.site().loc()
            );
        }
        if !for_recv && recvs.len() > sends.len() && *s == src && (*d != dst || t != tag) {
            let ev = recvs[sends.len()];
            return format!(
                " (rank {d} does receive from rank {src} with {} at {})",
                tag_desc(&ev_tag(ev)),
                ev.site().loc()
            );
        }
    }
    String::new()
}

// ---------------------------------------------------------------- message lengths

/// A send and the receive that takes it (in order, per communicator, pair of ranks and
/// tag, as MPI matches them) with different buffer lengths: the runtime fails both.
fn message_lengths(n: usize, traces: &[Vec<Ev<'_>>]) -> Option<syn::Error> {
    lengths_where(n, traces, &|_, _| true)
}

/// [`message_lengths`] on traces a rank left early, by its own error or panic: only the
/// receives the run completes (each rank going as far as it can, the one that failed up
/// to its failure: none after a receive whose sender failed first) and that their rank
/// waited for (a blocking receive, a `wait`), where the runtime fails the call before
/// the rank goes on to its own check; and none where a receive takes any source (which
/// send it takes is not resolved in such a run).
pub fn waited_message_lengths(n: usize, traces: &[Vec<Ev<'_>>]) -> Option<syn::Error> {
    let any = |e: &Ev| matches!(e, Ev::P2p { send: false, peer, .. } if *peer == super::trace::ANY_SOURCE);
    if traces.iter().flatten().any(any) {
        return None;
    }
    let stuck = run_until_stuck(n, traces);
    let waited: Vec<HashSet<usize>> = traces
        .iter()
        .map(|t| {
            t.iter().flat_map(|e| if let Ev::Wait { ids, .. } = e { ids.as_slice() } else { &[] }).copied().collect()
        })
        .collect();
    lengths_where(n, traces, &|r, id| stuck.done[r].contains(&id) && waited[r].contains(&id))
}

/// [`message_lengths`] judging the receives `keep` (its rank, its id) takes.
fn lengths_where(n: usize, traces: &[Vec<Ev<'_>>], keep: &dyn Fn(usize, usize) -> bool) -> Option<syn::Error> {
    type Posts<'t, 'a> = (Vec<&'t Ev<'a>>, Vec<&'t Ev<'a>>);
    let mut chans: BTreeMap<(String, usize, usize, String), Posts<'_, '_>> = BTreeMap::new();
    for (r, t) in traces.iter().enumerate() {
        for ev in t {
            if let Ev::P2p { send, comm, peer, tag, .. } = ev {
                if *peer == super::trace::ANY_SOURCE {
                    continue;
                }
                let key =
                    if *send { (comm.clone(), r, *peer, tag_id(tag)) } else { (comm.clone(), *peer, r, tag_id(tag)) };
                let e = chans.entry(key).or_default();
                if *send {
                    e.0.push(ev)
                } else {
                    e.1.push(ev)
                }
            }
        }
    }
    for ((_, src, dst, _), (sends, recvs)) in &chans {
        for (s, r) in sends.iter().zip(recvs) {
            let (Ev::P2p { len: Some(a), .. }, Ev::P2p { len: Some(b), id, .. }) = (s, r) else { continue };
            if !keep(*dst, *id) {
                continue;
            }
            let el = |k: &i128| format!("{k} element{}", if *k == 1 { "" } else { "s" });
            // A receive from any source takes a message no longer than its buffer.
            if matches!(r.call(), "recv_any" | "irecv_any") {
                if a > b {
                    return Some(r.site().error(format!(
                        "this `{}`{} on rank {dst} takes up to {} but the message it takes here, from the `{}` on \
                         rank {src} ({}, {}), has {} at world size {n}: a receive from any source takes a message \
                         no longer than its buffer (the runtime fails it); size the buffer for the longest message",
                        r.call(),
                        r.site().helper_note(),
                        el(b),
                        s.call(),
                        s.site().loc(),
                        tag_desc(&ev_tag(s)),
                        el(a),
                    )));
                }
                continue;
            }
            if a != b {
                return Some(r.site().error(format!(
                    "this `{}`{} on rank {dst} takes {} but the message it matches, from the `{}` on rank {src} ({}, \
                     {}), has {} at world size {n}: a receive must be posted with the length of the message (the \
                     runtime fails both calls); make the two buffers the same length",
                    r.call(),
                    r.site().helper_note(),
                    el(b),
                    s.call(),
                    s.site().loc(),
                    tag_desc(&ev_tag(s)),
                    el(a),
                )));
            }
        }
    }
    None
}
