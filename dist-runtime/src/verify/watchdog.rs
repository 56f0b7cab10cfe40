//! What a blocked rank publishes (its wait record) and how the job reads them: the
//! wait-for graph in words, naming both call sites and the cycle when there is one.
//! Transport-free: a backend stores the records where its peers can read them (the shm
//! segment) and hands back what it read.

use crate::error::Site;

/// The peer of a receive from any source (`recv_any`): it waits on any one of the
/// ranks it names (the deadlock detector's `stuck`).
pub(crate) const ANY_PEER: u32 = u32::MAX;
/// A blocked receive: `peer` is the rank it waits for (or [`ANY_PEER`]).
pub(crate) const WAIT_RECV: u32 = 1;
/// A blocked send: `peer` is the rank it waits for.
pub(crate) const WAIT_SEND: u32 = 2;
/// A blocked collective: `peer` is the epoch it waits for every member to reach.
pub(crate) const WAIT_COLL: u32 = 3;

/// Bytes of a wait record. The first 4 are the kind word, which the writer stores last
/// (and clears first), so a reader that sees the same kind before and after copying
/// read a whole record.
pub(crate) const WAIT_LEN: usize = 256;

/// What one rank is blocked on.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct WaitRecord {
    /// `WAIT_RECV`, `WAIT_SEND`, `WAIT_COLL`, or 0 when not blocked.
    pub kind: u32,
    /// The peer (p2p) or the epoch (collective).
    pub peer: u32,
    /// The op's name.
    pub op: String,
    pub file: String,
    pub line: u32,
}

impl WaitRecord {
    /// The record's bytes after the kind word (`WAIT_LEN - 4` of them).
    pub(crate) fn encode_body(peer: u32, op: &str, site: Site) -> [u8; WAIT_LEN - 4] {
        let mut rec = [0u8; WAIT_LEN];
        rec[4..8].copy_from_slice(&peer.to_le_bytes());
        rec[8..12].copy_from_slice(&site.0.line().to_le_bytes());
        let opb = op.as_bytes();
        let k = opb.len().min(31);
        rec[16..16 + k].copy_from_slice(&opb[..k]);
        let f = site.0.file().as_bytes();
        let k = f.len().min(WAIT_LEN - 49);
        rec[48..48 + k].copy_from_slice(&f[f.len() - k..]);
        rec[4..].try_into().expect("WAIT_LEN - 4 bytes")
    }

    /// Reads a whole record (kind word included).
    pub(crate) fn decode(kind: u32, rec: &[u8; WAIT_LEN]) -> WaitRecord {
        let cstr =
            |b: &[u8]| String::from_utf8_lossy(&b[..b.iter().position(|&x| x == 0).unwrap_or(b.len())]).into_owned();
        WaitRecord {
            kind,
            peer: u32::from_le_bytes(rec[4..8].try_into().expect("4 bytes")),
            line: u32::from_le_bytes(rec[8..12].try_into().expect("4 bytes")),
            op: cstr(&rec[16..48]),
            file: cstr(&rec[48..]),
        }
    }
}

/// One rank as the wait-for graph sees it.
#[derive(Clone, Debug)]
pub(crate) enum RankWait {
    /// Blocked, on the ranks in `on` (the peer of a p2p wait; the members behind a
    /// collective).
    Blocked {
        rec: WaitRecord,
        on: Vec<usize>,
    },
    /// Returned from its entry / left the communicator.
    Left,
    Failed,
    /// Running (not blocked in this communicator).
    Running,
    /// Its process is stopped (SIGSTOP, or held by a debugger): it will not move.
    Stopped,
}

/// The wait-for graph of communicator `comm`, in words, naming a cycle if there is one:
/// "rank 0 waits in recv from rank 1 (src/x.rs:12); rank 1 waits in recv from rank 0
/// (src/x.rs:20): deadlock (0 → 1 → 0)".
pub(crate) fn describe_graph(comm: &str, ranks: &[RankWait]) -> String {
    let mut edges: Vec<Vec<usize>> = vec![Vec::new(); ranks.len()];
    let mut parts = Vec::with_capacity(ranks.len());
    for (r, w) in ranks.iter().enumerate() {
        parts.push(match w {
            RankWait::Blocked { rec, on } => {
                edges[r].extend(on);
                let at = format!("{}:{}", rec.file, rec.line);
                match rec.kind {
                    WAIT_RECV if rec.peer == ANY_PEER => {
                        format!("rank {r} waits in {} from any rank ({at})", rec.op)
                    }
                    WAIT_RECV => format!("rank {r} waits in {} from rank {} ({at})", rec.op, rec.peer),
                    WAIT_SEND => format!("rank {r} waits in {} to rank {} ({at})", rec.op, rec.peer),
                    _ => format!("rank {r} waits in {} ({at}) for rank(s) {on:?}", rec.op),
                }
            }
            RankWait::Left => format!("rank {r} has left {comm}"),
            RankWait::Failed => format!("rank {r} failed"),
            RankWait::Running => format!("rank {r} is not blocked in {comm}"),
            RankWait::Stopped => format!("rank {r}'s process is stopped (SIGSTOP, or held by a debugger)"),
        });
    }
    let mut s = format!("wait-for graph of {comm}: {}", parts.join("; "));
    if let Some(cycle) = find_cycle(&edges) {
        let path: Vec<String> = cycle.iter().map(|r| r.to_string()).collect();
        s.push_str(&format!(": deadlock ({})", path.join(" → ")));
    }
    s
}

/// A cycle in the wait-for graph, as the ranks along it (first repeated at the end).
pub(crate) fn find_cycle(edges: &[Vec<usize>]) -> Option<Vec<usize>> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_round_trips() {
        let site = Site::caller();
        let body = WaitRecord::encode_body(7, "recv", site);
        let mut rec = [0u8; WAIT_LEN];
        rec[4..].copy_from_slice(&body);
        let w = WaitRecord::decode(WAIT_RECV, &rec);
        assert_eq!((w.kind, w.peer, w.op.as_str(), w.line), (WAIT_RECV, 7, "recv", site.0.line()));
        assert!(site.0.file().ends_with(&w.file));
    }

    #[test]
    fn the_graph_names_both_sites_and_the_cycle() {
        let rec = |kind, peer, line| WaitRecord { kind, peer, op: "recv".into(), file: "src/x.rs".into(), line };
        let g = describe_graph(
            "World",
            &[
                RankWait::Blocked { rec: rec(WAIT_RECV, 1, 12), on: vec![1] },
                RankWait::Blocked { rec: rec(WAIT_RECV, 0, 20), on: vec![0] },
                RankWait::Running,
            ],
        );
        assert!(g.contains("rank 0 waits in recv from rank 1 (src/x.rs:12)"), "{g}");
        assert!(g.contains("rank 1 waits in recv from rank 0 (src/x.rs:20)"), "{g}");
        assert!(g.ends_with(": deadlock (0 → 1 → 0)"), "{g}");
        let open =
            describe_graph("World", &[RankWait::Blocked { rec: rec(WAIT_RECV, 1, 3), on: vec![1] }, RankWait::Left]);
        assert!(!open.contains("deadlock") && open.contains("rank 1 has left World"), "{open}");
    }

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
