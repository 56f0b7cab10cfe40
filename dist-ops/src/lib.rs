//! The one table of dist's communication operations: every method of `Comm<G>` that
//! communicates, with the roles of its arguments. The runtime (`dist-runtime`) and the
//! compile-time check (`dist-macros`) both read it, and a test in dist-runtime compares
//! it with `Comm`'s methods, so an op added to one and not the other fails the build's
//! tests instead of drifting.
#![deny(missing_docs)]

/// What an operation does, as the check sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Class {
    /// Every member of the communicator calls it, in the same order, agreeing on the
    /// arguments marked as roles.
    Collective,
    /// One rank to another, matched by (peer, tag) in posting order.
    PointToPoint,
    /// Collective creation of child communicators (`subgroup`, `subgroup_ordered`, `split`, `mesh2`, `mesh`,
    /// `submesh`, `mesh_group`, and `shrink`, among the live ranks).
    Group,
}

/// One operation and the roles of its arguments (indices count the method's arguments
/// after `self`, from 0).
#[derive(Clone, Copy, Debug)]
pub struct OpSpec {
    /// The method's name on `Comm<G>`.
    pub name: &'static str,
    /// What it does.
    pub class: Class,
    /// The collective kind every rank must agree on: an op and its `_v`, `_async` and
    /// object forms share one ("all_gather" for `all_gather_v`).
    pub kind: &'static str,
    /// Argument that is the root (communicator rank), if any.
    pub root: Option<usize>,
    /// Argument that is the `ReduceOp`, if any.
    pub reduce: Option<usize>,
    /// Arguments that are peers (communicator ranks): destination first.
    pub peers: &'static [usize],
    /// Argument that is the typed tag, if any.
    pub tag: Option<usize>,
    /// False for the forms that return a `Request` (`isend`, `irecv`, `*_async`).
    pub blocking: bool,
}

const fn coll(name: &'static str, kind: &'static str, root: Option<usize>, reduce: Option<usize>) -> OpSpec {
    OpSpec { name, class: Class::Collective, kind, root, reduce, peers: &[], tag: None, blocking: true }
}

const fn nonblocking(mut s: OpSpec) -> OpSpec {
    s.blocking = false;
    s
}

const fn p2p(name: &'static str, peers: &'static [usize], tag: Option<usize>, blocking: bool) -> OpSpec {
    OpSpec { name, class: Class::PointToPoint, kind: name, root: None, reduce: None, peers, tag, blocking }
}

const fn group(name: &'static str) -> OpSpec {
    OpSpec {
        name,
        class: Class::Group,
        kind: "communicator creation",
        root: None,
        reduce: None,
        peers: &[],
        tag: None,
        blocking: true,
    }
}

/// Every communicating method of `Comm<G>`.
pub const OPS: &[OpSpec] = &[
    coll("barrier", "barrier", None, None),
    coll("monitored_barrier", "barrier", None, None),
    coll("broadcast", "broadcast", Some(1), None),
    coll("reduce", "reduce", Some(2), Some(1)),
    coll("all_reduce", "all_reduce", None, Some(1)),
    coll("all_gather", "all_gather", None, None),
    coll("all_gather_v", "all_gather", None, None),
    coll("gather", "gather", Some(2), None),
    coll("gather_v", "gather", Some(3), None),
    coll("scatter", "scatter", Some(2), None),
    coll("reduce_scatter", "reduce_scatter", None, Some(2)),
    coll("all_to_all", "all_to_all", None, None),
    coll("all_to_all_v", "all_to_all", None, None),
    coll("scatter_v", "scatter", Some(3), None),
    coll("reduce_scatter_v", "reduce_scatter", None, Some(3)),
    coll("scan", "scan", None, Some(1)),
    coll("exscan", "exscan", None, Some(1)),
    coll("alloc", "alloc", None, None),
    coll("agree", "agree", None, None),
    coll("all_gather_object", "all_gather", None, None),
    coll("broadcast_object", "broadcast", Some(1), None),
    coll("gather_object", "gather", Some(1), None),
    coll("scatter_object", "scatter", Some(1), None),
    nonblocking(coll("all_reduce_async", "all_reduce", None, Some(1))),
    nonblocking(coll("broadcast_async", "broadcast", Some(1), None)),
    nonblocking(coll("all_gather_async", "all_gather", None, None)),
    nonblocking(coll("reduce_scatter_async", "reduce_scatter", None, Some(2))),
    nonblocking(coll("barrier_async", "barrier", None, None)),
    nonblocking(coll("reduce_async", "reduce", Some(2), Some(1))),
    nonblocking(coll("all_gather_v_async", "all_gather", None, None)),
    nonblocking(coll("gather_async", "gather", Some(2), None)),
    nonblocking(coll("gather_v_async", "gather", Some(3), None)),
    nonblocking(coll("scatter_async", "scatter", Some(2), None)),
    nonblocking(coll("all_to_all_async", "all_to_all", None, None)),
    nonblocking(coll("all_to_all_v_async", "all_to_all", None, None)),
    nonblocking(coll("scatter_v_async", "scatter", Some(3), None)),
    nonblocking(coll("reduce_scatter_v_async", "reduce_scatter", None, Some(3))),
    p2p("send", &[0], Some(1), true),
    p2p("recv", &[0], Some(1), true),
    p2p("sendrecv", &[0, 3], Some(1), true),
    p2p("sendrecv_replace", &[0, 3], Some(1), true),
    p2p("isend", &[0], Some(1), false),
    p2p("irecv", &[0], Some(1), false),
    p2p("recv_any", &[], Some(0), true),
    p2p("irecv_any", &[], Some(0), false),
    p2p("batch", &[], None, true),
    p2p("batch_async", &[], None, false),
    p2p("send_object", &[0], Some(1), true),
    p2p("recv_object", &[0], Some(1), true),
    group("subgroup"),
    group("subgroup_ordered"),
    group("split"),
    group("mesh2"),
    group("mesh"),
    group("submesh"),
    group("mesh_group"),
    group("shrink"),
];

/// A rank's coordinate in a row-major mesh of shape `dims` (torch's `DeviceMesh`
/// layout: the last dimension varies fastest, `rank = Σ coord[d] · Π dims[d+1..]`).
pub fn mesh_coordinate(dims: &[usize], rank: usize) -> Vec<usize> {
    let mut coord = vec![0; dims.len()];
    let mut r = rank;
    for d in (0..dims.len()).rev() {
        coord[d] = r % dims[d].max(1);
        r /= dims[d].max(1);
    }
    coord
}

/// The group of a row-major mesh of shape `dims` along the dimensions `along`
/// (increasing indices) that holds `rank`: every rank sharing its coordinates on the
/// other dimensions, in rank order (which is row-major order over `along`: torch's
/// `mesh[names]._flatten()`). Also returns the group's color: its index among the
/// groups of that layout, the same on every member.
pub fn mesh_group(dims: &[usize], along: &[usize], rank: usize) -> (Vec<usize>, usize) {
    let n: usize = dims.iter().product();
    let me = mesh_coordinate(dims, rank);
    let members = (0..n)
        .filter(|&r| {
            let c = mesh_coordinate(dims, r);
            (0..dims.len()).all(|d| along.contains(&d) || c[d] == me[d])
        })
        .collect();
    let color = (0..dims.len()).filter(|d| !along.contains(d)).fold(0, |acc, d| acc * dims[d] + me[d]);
    (members, color)
}

/// Why `dims`/`along` do not describe a mesh of `n` ranks, if they do not.
pub fn mesh_problem(dims: &[usize], along: &[usize], n: usize) -> Option<String> {
    if dims.is_empty() || dims.len() > 5 {
        return Some(format!("a mesh has 1 to 5 dimensions, not {}", dims.len()));
    }
    let total: usize = dims.iter().product();
    if dims.contains(&0) || total != n {
        let shape: Vec<String> = dims.iter().map(|d| d.to_string()).collect();
        return Some(format!("a mesh of {} needs {total} ranks, but the communicator has {n}", shape.join(" × ")));
    }
    if along.is_empty() || along.windows(2).any(|w| w[0] >= w[1]) || along.iter().any(|&d| d >= dims.len()) {
        return Some(format!(
            "the dimensions {along:?} are not increasing indices of a {}-D mesh (0..{})",
            dims.len(),
            dims.len()
        ));
    }
    None
}

/// The operation named `name`, if `Comm` has it.
pub fn find(name: &str) -> Option<&'static OpSpec> {
    OPS.iter().find(|o| o.name == name)
}

/// The non-blocking form of `name` (`all_reduce` → `all_reduce_async`), if there is one.
pub fn async_form(name: &str) -> Option<&'static OpSpec> {
    let spec = find(name)?;
    let want = format!("{name}_async");
    OPS.iter().find(|o| !o.blocking && o.class == spec.class && o.kind == spec.kind && o.name == want)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mesh_layout_is_row_major() {
        // (pp, dp, tp) = (2, 2, 2): rank = 4·pp + 2·dp + tp.
        let dims = [2, 2, 2];
        assert_eq!(mesh_coordinate(&dims, 6), vec![1, 1, 0]);
        assert_eq!(mesh_group(&dims, &[2], 6), (vec![6, 7], 3));
        assert_eq!(mesh_group(&dims, &[1], 6), (vec![4, 6], 2));
        assert_eq!(mesh_group(&dims, &[0], 6), (vec![2, 6], 2));
        assert_eq!(mesh_group(&dims, &[1, 2], 6), (vec![4, 5, 6, 7], 1));
        assert_eq!(mesh_group(&dims, &[0, 2], 5), (vec![0, 1, 4, 5], 0));
        assert_eq!(mesh_group(&[3], &[0], 2), (vec![0, 1, 2], 0));
        assert!(mesh_problem(&[2, 3], &[0, 1], 6).is_none());
        assert!(mesh_problem(&[2, 3], &[0, 1], 8).is_some());
        assert!(mesh_problem(&[2, 3], &[1, 0], 6).is_some());
        assert!(mesh_problem(&[2, 0], &[0], 0).is_some());
        assert!(mesh_problem(&[1; 6], &[0], 1).is_some());
    }

    #[test]
    fn names_are_unique_and_roles_are_consistent() {
        for (i, a) in OPS.iter().enumerate() {
            assert!(OPS[i + 1..].iter().all(|b| b.name != a.name), "{} twice", a.name);
            if a.class != Class::Collective {
                assert!(a.root.is_none() && a.reduce.is_none(), "{}", a.name);
            }
            if a.class == Class::PointToPoint && !a.name.starts_with("batch") {
                // A receive from any source has a tag and no peer.
                assert!(a.tag.is_some() && (!a.peers.is_empty() || a.name.ends_with("recv_any")), "{}", a.name);
            }
        }
        assert_eq!(async_form("all_reduce").map(|o| o.name), Some("all_reduce_async"));
        assert_eq!(async_form("broadcast").map(|o| o.name), Some("broadcast_async"));
        assert_eq!(async_form("all_gather_v").map(|o| o.name), Some("all_gather_v_async"));
        assert!(async_form("monitored_barrier").is_none());
        assert_eq!(find("reduce").and_then(|o| o.root), Some(2));
    }
}
