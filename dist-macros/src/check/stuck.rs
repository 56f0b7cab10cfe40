//! The ranks' traces run together as far as they go (one order the program can run
//! in): where each rank stops, which receive from any source takes which sender, and
//! the deadlocks under rendezvous semantics that leaves.

use super::describe::{comm_desc, ranks, tag_id, Channel};
use super::trace::{Ev, Site};
use std::collections::{HashMap, HashSet, VecDeque};

/// Where the ranks stop when every event runs as soon as it can: each rank's next event
/// (`pc`), the posted events that completed (`done`), each collective's arrivals by
/// (communicator, index), and each posted collective's (communicator, index).
pub(super) struct Stuck {
    pub(super) pc: Vec<usize>,
    pub(super) done: Vec<HashSet<usize>>,
    pub(super) arrivals: HashMap<(String, usize), Vec<(usize, usize)>>,
    pub(super) coll_at: HashMap<(usize, usize), (String, usize)>,
    /// The sender each receive from any source took, by (rank, event id).
    pub(super) any_took: HashMap<(usize, usize), usize>,
}

/// Runs the traces as far as they go: a send and a receive on one channel complete
/// together, in posting order; a collective completes when every member posted it; a
/// wait passes when what it waits on completed. A receive from any source takes the
/// send to its rank (communicator, tag) posted first, or, when none is, the next one
/// posted that no receive naming its sender waits for: ranks run in order, each as far
/// as it goes, which is one order the program can run in.
pub(super) fn run_until_stuck(n: usize, traces: &[Vec<Ev<'_>>]) -> Stuck {
    use super::trace::ANY_SOURCE;
    let mut pc = vec![0usize; n];
    let mut done: Vec<HashSet<usize>> = vec![HashSet::new(); n];
    // Posted, unmatched (rank, id) per channel: sends, then receives.
    type Queue = VecDeque<(usize, usize)>;
    let mut queues: HashMap<Channel, (Queue, Queue)> = HashMap::new();
    // Receives from any source waiting, by (communicator, receiver, tag); when each
    // pending send was posted.
    let mut wild: HashMap<(String, usize, String), Queue> = HashMap::new();
    let mut posted_at: HashMap<(usize, usize), u64> = HashMap::new();
    let mut clock = 0u64;
    let mut any_took: HashMap<(usize, usize), usize> = HashMap::new();
    let mut arrivals: HashMap<(String, usize), Vec<(usize, usize)>> = HashMap::new();
    let mut coll_seq: Vec<HashMap<String, usize>> = vec![HashMap::new(); n];
    // (rank, id) → (comm, index) of a posted collective.
    let mut coll_at: HashMap<(usize, usize), (String, usize)> = HashMap::new();
    loop {
        let mut progress = false;
        for r in 0..n {
            while let Some(ev) = traces[r].get(pc[r]) {
                match ev {
                    Ev::P2p { id, send: false, comm, peer: ANY_SOURCE, tag, .. } => {
                        let t = tag_id(tag);
                        let first = queues
                            .iter()
                            .filter(|((c, _, d, tg), q)| c == comm && *d == r && *tg == t && !q.0.is_empty())
                            .min_by_key(|(_, q)| posted_at.get(q.0.front().expect("non-empty")).copied())
                            .map(|(k, _)| k.clone());
                        match first.and_then(|k| queues.get_mut(&k)).and_then(|q| q.0.pop_front()) {
                            Some(a) => {
                                done[a.0].insert(a.1);
                                done[r].insert(*id);
                                any_took.insert((r, *id), a.0);
                            }
                            None => wild.entry((comm.clone(), r, t)).or_default().push_back((r, *id)),
                        }
                    }
                    Ev::P2p { id, send, comm, peer, tag, .. } => {
                        if *send {
                            clock += 1;
                            posted_at.insert((r, *id), clock);
                            // No receive naming this rank waits: a receive from any source
                            // that waits takes it.
                            let named =
                                queues.get(&(comm.clone(), r, *peer, tag_id(tag))).is_some_and(|q| !q.1.is_empty());
                            if !named {
                                if let Some(w) =
                                    wild.get_mut(&(comm.clone(), *peer, tag_id(tag))).and_then(|w| w.pop_front())
                                {
                                    done[r].insert(*id);
                                    done[w.0].insert(w.1);
                                    any_took.insert(w, r);
                                    pc[r] += 1;
                                    progress = true;
                                    continue;
                                }
                            }
                        }
                        let key = if *send {
                            (comm.clone(), r, *peer, tag_id(tag))
                        } else {
                            (comm.clone(), *peer, r, tag_id(tag))
                        };
                        let q = queues.entry(key).or_default();
                        if *send {
                            q.0.push_back((r, *id))
                        } else {
                            q.1.push_back((r, *id))
                        }
                        while !q.0.is_empty() && !q.1.is_empty() {
                            let (a, b) = (q.0.pop_front().expect("send"), q.1.pop_front().expect("recv"));
                            done[a.0].insert(a.1);
                            done[b.0].insert(b.1);
                        }
                    }
                    Ev::Coll { id, comm, members, .. } => {
                        let k = coll_seq[r].entry(comm.clone()).or_default();
                        let key = (comm.clone(), *k);
                        *k += 1;
                        coll_at.insert((r, *id), key.clone());
                        let a = arrivals.entry(key).or_default();
                        a.push((r, *id));
                        if a.len() == members.len() {
                            for &(x, i) in a.iter() {
                                done[x].insert(i);
                            }
                        }
                    }
                    Ev::Wait { ids, .. } => {
                        if !ids.iter().all(|i| done[r].contains(i)) {
                            break;
                        }
                    }
                }
                pc[r] += 1;
                progress = true;
            }
        }
        if !progress {
            break;
        }
    }
    Stuck { pc, done, arrivals, coll_at, any_took }
}

/// Where each rank but `but` blocks forever when the traces run as far as they go
/// ("rank 1 blocks in `recv` from rank 0 (src/worker.rs:20)"), at most three: what a
/// receive no send matches waits beside.
pub fn blocked_elsewhere(n: usize, traces: &[Vec<Ev<'_>>], but: usize) -> Vec<String> {
    let Stuck { pc, done, .. } = run_until_stuck(n, traces);
    let blocked = (0..n).filter(|&r| r != but && pc[r] < traces[r].len()).filter_map(|r| {
        let Ev::Wait { ids, .. } = &traces[r][pc[r]] else { return None };
        let id = ids.iter().find(|i| !done[r].contains(i))?;
        let ev = traces[r][..pc[r]]
            .iter()
            .find(|e| matches!(e, Ev::P2p { id: x, .. } | Ev::Coll { id: x, .. } if x == id))?;
        let what = match ev {
            Ev::P2p { send: true, peer, .. } => format!("`{}` to rank {peer}", ev.call()),
            Ev::P2p { peer, .. } if *peer == super::trace::ANY_SOURCE => format!("`{}` from any rank", ev.call()),
            Ev::P2p { peer, .. } => format!("`{}` from rank {peer}", ev.call()),
            _ => format!("`{}`", ev.call()),
        };
        Some(format!("rank {r} blocks in {what} ({})", ev.site().loc()))
    });
    blocked.take(3).collect()
}

/// Whether each of `ranks` blocks forever before the end of its trace (the traces run
/// as far as they go).
pub fn blocked_before_end(n: usize, traces: &[Vec<Ev<'_>>], ranks: &[usize]) -> bool {
    let Stuck { pc, .. } = run_until_stuck(n, traces);
    !ranks.is_empty() && ranks.iter().all(|&r| pc[r] < traces[r].len())
}

pub(super) fn deadlock(n: usize, traces: &[Vec<Ev<'_>>]) -> Option<syn::Error> {
    let Stuck { pc, done, arrivals, coll_at, .. } = run_until_stuck(n, traces);
    let blocked: Vec<usize> = (0..n).filter(|&r| pc[r] < traces[r].len()).collect();
    let first = *blocked.first()?;
    // What rank r waits for: (the posted event it waits on, the ranks it waits for).
    let waits = |r: usize| -> (&Ev, Vec<usize>) {
        let Ev::Wait { ids, .. } = &traces[r][pc[r]] else { unreachable!("only waits block") };
        let id = *ids.iter().find(|i| !done[r].contains(i)).expect("an incomplete id");
        let ev = traces[r][..pc[r]]
            .iter()
            .find(|e| matches!(e, Ev::P2p { id: x, .. } | Ev::Coll { id: x, .. } if *x == id))
            .expect("posted before the wait");
        let on = match ev {
            Ev::P2p { peer, .. } => vec![*peer],
            Ev::Coll { members, .. } => {
                let key = &coll_at[&(r, id)];
                let here: HashSet<usize> =
                    arrivals.get(key).map(|a| a.iter().map(|x| x.0).collect()).unwrap_or_default();
                members.iter().copied().filter(|m| !here.contains(m)).collect()
            }
            Ev::Wait { .. } => vec![],
        };
        (ev, on)
    };
    let mut path = vec![first];
    let cycle: Vec<usize> = loop {
        let cur = *path.last().expect("non-empty");
        let (_, on) = waits(cur);
        let next = on.iter().copied().find(|p| blocked.contains(p)).or(on.first().copied());
        match next {
            Some(p) if path.contains(&p) => {
                let at = path.iter().position(|&x| x == p).expect("contained");
                break path[at..].to_vec();
            }
            Some(p) if blocked.contains(&p) => path.push(p),
            _ => break path.clone(),
        }
    };
    let describe = |r: usize| -> String {
        let (ev, on) = waits(r);
        let w = &traces[r][pc[r]];
        let via = if w.call() == ev.call() { String::new() } else { format!("`{}` for its ", w.call()) };
        match ev {
            Ev::P2p { send, peer, site, call, .. } => format!(
                "rank {r} blocks in {via}`{call}` {} rank {peer} ({})",
                if *send { "to" } else { "from" },
                site.loc()
            ),
            Ev::Coll { kind, comm, group, members, site, .. } => format!(
                "rank {r} waits in {via}`{kind}` on {} ({}) for {}",
                comm_desc(comm, group, members),
                site.loc(),
                ranks(&on)
            ),
            Ev::Wait { .. } => format!("rank {r} waits"),
        }
    };
    let mut parts: Vec<String> = cycle.iter().take(3).map(|&r| describe(r)).collect();
    if cycle.len() > 3 {
        parts.push(format!("so on around a cycle of {} ranks", cycle.len()));
    }
    let all_sends = cycle.iter().all(|&r| matches!(waits(r).0, Ev::P2p { send: true, .. }));
    let any_coll = cycle.iter().any(|&r| matches!(waits(r).0, Ev::Coll { .. }));
    let to_itself = cycle.len() == 1 && waits(cycle[0]).1 == vec![cycle[0]];
    let fix = deadlock_fix(to_itself, all_sends, any_coll);
    let site: Site = traces[first][pc[first]].site();
    let site = match waits(first).0 {
        Ev::P2p { site, .. } | Ev::Coll { site, .. } if traces[first][pc[first]].call() == waits(first).0.call() => {
            *site
        }
        _ => site,
    };
    Some(site.error(format!("deadlock at world size {n}: {}; {fix}", parts.join(", while "))))
}

/// The fix a deadlock suggests: a send to oneself, a cycle of sends (rendezvous), one
/// through a collective, or receives waiting on each other.
fn deadlock_fix(to_itself: bool, all_sends: bool, any_coll: bool) -> String {
    if to_itself {
        "a blocking send to oneself completes only when the matching recv is posted: put both in one \
         `batch(|b| { b.send(..); b.recv(..) })`, or use `sendrecv`"
            .to_string()
    } else if all_sends {
        "under rendezvous semantics (NCCL, MPI_Ssend) a send completes only once its recv is posted, so none \
         of these sends finishes: post both directions at once with `sendrecv` or `batch`, or order them by \
         parity (even ranks send first, odd ranks receive first)"
            .to_string()
    } else if any_coll {
        "every rank must reach its collectives and its p2p calls in an order that lets each complete: call the \
         collective at the same point on every rank, or make the p2p non-blocking (`isend`/`irecv`) and wait \
         after the collective"
            .to_string()
    } else {
        "each waits for the other: reorder the calls so that one side sends while the other receives, or post \
         both with `sendrecv` or `batch`"
            .to_string()
    }
}
