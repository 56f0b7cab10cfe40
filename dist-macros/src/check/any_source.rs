//! Receives from any source (`recv_any`): each given its sender, the one rank that can
//! send it, or, where several race for it, the sender of one order the ranks can run in
//! ([`scheduled`]).

use super::describe::{ev_tag, ranks, tag_desc, tag_id};
use super::stuck::{run_until_stuck, Stuck};
use super::trace::Ev;
use std::collections::{BTreeMap, HashMap};

/// Why receives from any source could not be given a sender.
pub enum AnySource {
    /// Two ranks race for one: which it gets depends on timing (left to run time).
    Race(proc_macro2::TokenStream, String),
    /// No rank sends what it waits for.
    /// A receive that no send can match, and the rank that posts it.
    Unmatched(syn::Error, usize),
}

/// Gives each receive from any source (`recv_any`) its sender: on a communicator and
/// tag, the one rank whose sends to the receiver outnumber the receives naming it; none
/// is an error. Where two or more such ranks race for the messages (a master serving
/// its workers), with `schedule` the senders are those of one order the program can run
/// in ([`scheduled`]), else the race is left to run time. `found` gets each resolved
/// receive's sender, by (rank, event id).
pub fn resolve_any(
    n: usize,
    traces: &mut [Vec<Ev<'_>>],
    found: &mut HashMap<(usize, usize), usize>,
    schedule: bool,
) -> Result<(), AnySource> {
    use super::trace::ANY_SOURCE;
    // (comm, receiver, tag) → positions of its wildcard receives.
    let mut wild: BTreeMap<(String, usize, String), Vec<usize>> = BTreeMap::new();
    for (r, t) in traces.iter().enumerate() {
        for (i, ev) in t.iter().enumerate() {
            if let Ev::P2p { send: false, comm, peer: ANY_SOURCE, tag, .. } = ev {
                wild.entry((comm.clone(), r, tag_id(tag))).or_default().push(i);
            }
        }
    }
    for ((comm, dst, tag), at) in wild {
        let mut surplus: BTreeMap<usize, i64> = BTreeMap::new();
        for (r, t) in traces.iter().enumerate() {
            for ev in t {
                if let Ev::P2p { send, comm: c, peer, tag: t, .. } = ev {
                    if *c != comm || tag_id(t) != tag {
                        continue;
                    }
                    if *send && *peer == dst {
                        *surplus.entry(r).or_default() += 1;
                    } else if !*send && r == dst && *peer != ANY_SOURCE {
                        *surplus.entry(*peer).or_default() -= 1;
                    }
                }
            }
        }
        let senders: Vec<usize> = surplus.iter().filter(|(_, &k)| k > 0).map(|(&r, _)| r).collect();
        let first = &traces[dst][at[0]];
        let td = tag_desc(&ev_tag(first));
        match senders.as_slice() {
            [] => {
                return Err(AnySource::Unmatched(
                    first.site().error(format!(
                        "this `{}`{} on rank {dst} ({td}) has no matching `send` at world size {n}: no rank sends \
                         rank {dst} a message with {td} that a receive naming its source does not take; it would \
                         wait forever{}",
                        first.call(),
                        first.site().helper_note(),
                        stray_sends(traces, &comm, dst, &tag)
                    )),
                    dst,
                ))
            }
            // More receives from any source than `s` sends: the first one left over
            // waits forever (resolving it to `s` would have the program read a message
            // that never comes, and take paths it cannot take).
            [s] if surplus[s] < at.len() as i64 => {
                let extra = &traces[dst][at[surplus[s].max(0) as usize]];
                return Err(AnySource::Unmatched(
                    extra.site().error(format!(
                    "this `{}`{} on rank {dst} ({td}) has no matching `send` at world size {n}: rank {s}, the only \
                     rank that sends rank {dst} a message with {td} beyond the receives that name it, sends {} \
                     such message{}, and rank {dst} posts {} receives from any source for them; it would wait \
                     forever",
                    extra.call(),
                    extra.site().helper_note(),
                    surplus[s],
                    if surplus[s] == 1 { "" } else { "s" },
                    at.len()
                    )),
                    dst,
                ));
            }
            [s] => {
                for &i in &at {
                    if let Ev::P2p { peer, id, .. } = &mut traces[dst][i] {
                        *peer = *s;
                        found.insert((dst, *id), *s);
                    }
                }
            }
            // Several ranks may send it: the ranks run in one order the program can take
            // (each as far as it goes, in rank order), each receive from any source
            // taking the message posted first.
            _ if schedule => return scheduled(n, traces, found),
            _ => {
                return Err(AnySource::Race(
                    first.tokens(),
                    format!(
                        "a receive from any source that {} race for (`{}` on rank {dst}, {td}): \
                         which message it gets first depends on timing; name the source, or leave it to run time",
                        ranks(&senders),
                        first.call()
                    ),
                ))
            }
        }
    }
    Ok(())
}

/// Sends to `dst` on `comm` with another tag than `tag` that no receive of `dst` takes
/// (counted per sender and tag, against the receives naming that sender or any source),
/// as a note: the message a receive with no matching send may have been meant to take
/// (a result sent with the hello's tag).
fn stray_sends(traces: &[Vec<Ev<'_>>], comm: &str, dst: usize, tag: &str) -> String {
    use super::trace::ANY_SOURCE;
    let mut surplus: BTreeMap<(usize, String), (i64, Option<usize>)> = BTreeMap::new();
    for (r, t) in traces.iter().enumerate() {
        for (i, ev) in t.iter().enumerate() {
            let Ev::P2p { send, comm: c, peer, tag: tg, .. } = ev else { continue };
            if c != comm || tag_id(tg) == tag {
                continue;
            }
            if *send && *peer == dst {
                // (The last one: the receives take them in order.)
                let e = surplus.entry((r, tag_id(tg))).or_default();
                e.0 += 1;
                e.1 = Some(i);
            } else if !*send && r == dst && *peer != ANY_SOURCE {
                surplus.entry((*peer, tag_id(tg))).or_default().0 -= 1;
            }
        }
    }
    // (Receives from any source on a tag take what any rank sends with it.)
    let wild = |t: &str| {
        traces[dst]
            .iter()
            .filter(|e| matches!(e, Ev::P2p { send: false, comm: c, peer: ANY_SOURCE, tag: g, .. } if c == comm && tag_id(g) == t))
            .count() as i64
    };
    let mut by_tag: BTreeMap<String, i64> = BTreeMap::new();
    for ((_, t), (k, _)) in &surplus {
        *by_tag.entry(t.clone()).or_default() += k;
    }
    let stray = surplus.iter().find(|((_, t), (k, _))| *k > 0 && by_tag[t] > wild(t));
    let Some(((r, _), (_, Some(i)))) = stray else { return String::new() };
    let ev = &traces[*r][*i];
    format!(
        "\nnote: rank {r} sends rank {dst} a message with {} that no receive takes, at {}: the message this \
         receive was meant to take?",
        tag_desc(&ev_tag(ev)),
        ev.site().loc()
    )
}

/// Every receive from any source given the sender it takes when the ranks run in one
/// order the program can take ([`run_until_stuck`]: in rank order, each as far as it
/// goes, a receive from any source taking the message posted first). Other orders are
/// left to the run-time checks. A receive left waiting when no rank can go on is
/// [`AnySource::Unmatched`]; a rank blocked before one ends there.
pub fn scheduled(
    n: usize,
    traces: &mut [Vec<Ev<'_>>],
    found: &mut HashMap<(usize, usize), usize>,
) -> Result<(), AnySource> {
    use super::trace::ANY_SOURCE;
    let Stuck { pc, any_took: took, .. } = run_until_stuck(n, traces);
    let mut left: Option<AnySource> = None;
    for (r, t) in traces.iter_mut().enumerate() {
        // A rank that blocked before a receive from any source never posts it: its trace
        // ends before the first such receive it did not reach (the block is judged).
        let unreached = (pc[r]..t.len()).find(|&i| matches!(t[i], Ev::P2p { send: false, peer: ANY_SOURCE, .. }));
        if let Some(i) = unreached {
            t.truncate(i);
        }
        for ev in t.iter_mut() {
            let Ev::P2p { send: false, peer: ANY_SOURCE, id, .. } = ev else { continue };
            match took.get(&(r, *id)) {
                Some(&s) => {
                    found.insert((r, *id), s);
                    if let Ev::P2p { peer, .. } = ev {
                        *peer = s;
                    }
                }
                None if left.is_none() => {
                    let td = tag_desc(&ev_tag(ev));
                    left = Some(AnySource::Unmatched(
                        ev.site().error(format!(
                            "this `{}`{} on rank {r} ({td}) has no matching `send` at world size {n}: run in one \
                             order the program can take (each receive from any source taking the message sent \
                             first), every message sent to rank {r} with {td} is taken by another receive, and \
                             no rank sends another; it would wait forever",
                            ev.call(),
                            ev.site().helper_note()
                        )),
                        r,
                    ));
                }
                None => {}
            }
        }
    }
    left.map_or(Ok(()), Err)
}
