//! Communicators as the check sees them, and how they are made: `subgroup`, `split` and the meshes
//! each post a collective on the parent and give the new communicators, their members,
//! and the partition of the world they leave (what a reduction over one of them keeps
//! the same within each part).

use super::super::trace::call_name;
use super::super::trace::Ev;
use super::*;
use quote::ToTokens;
use std::collections::HashMap;
use syn::{Expr, ExprMethodCall};

/// A communicator as one rank sees it.
#[derive(Clone, Debug)]
pub struct CommInst {
    /// Identity shared by every member: parent key, creation index, and the color/part.
    pub key: String,
    /// The group marker's name (`World`, `Tp`), for messages.
    pub group: String,
    /// World ranks of the members in rank order; `None` while a split is unresolved.
    pub members: Option<Vec<usize>>,
    /// Communicators created from this one so far.
    pub(super) children: usize,
    /// Collectives called on it so far (a step of what makes group-uniform data's recipe).
    pub(super) colls: u64,
    /// The groups the call that made it split its parent into, on every rank: each world
    /// rank's group (world ranks, sorted), empty where unknown (a rank outside the
    /// parent, a split not resolved yet). What a reduction over it leaves is the same
    /// within each group ([`Groups`]).
    pub groups: Option<Groups>,
}

/// A partition of the world's ranks into groups, as a call that makes communicators
/// made it: `of[w]` is world rank `w`'s group (an index into `lists`, `u32::MAX` where
/// unknown: a rank outside the parent, a split not resolved yet); `lists` holds each
/// group's world ranks, sorted.
#[derive(Debug, PartialEq)]
pub struct Partition {
    pub of: Vec<u32>,
    pub lists: Vec<Vec<usize>>,
}

/// Shared: every rank of one check that makes the same call gets the same partition.
pub type Groups = std::rc::Rc<Partition>;

impl Partition {
    /// World rank `w`'s group, where known.
    pub fn group(&self, w: usize) -> Option<&[usize]> {
        let g = *self.of.get(w)?;
        self.lists.get(g as usize).map(|v| v.as_slice())
    }
}

thread_local! {
    /// Partitions by (world size, parent key, creation index, which communicator of the
    /// call): computed once per check, whichever rank makes the call first.
    static PARTITIONS: std::cell::RefCell<HashMap<(usize, String, usize, usize), Groups>> = Default::default();
}

/// Forgets the partitions (between checks: a split's table changes between passes).
pub(super) fn reset_partitions() {
    PARTITIONS.with(|p| p.borrow_mut().clear());
}

/// The partition of `parent` (world ranks) a call made, given each member's group
/// (by its local rank), cached under `key`.
/// (`None` for `key`: not cached, as a split's, whose colors may change with the
/// inputs' sample at one world size.)
fn groups_of(
    size: usize,
    key: Option<(String, usize, usize)>,
    parent: &[usize],
    index: impl Fn(usize) -> Option<i128>,
) -> Groups {
    let full = key.map(|k| (size, k.0, k.1, k.2));
    if let Some(g) = full.as_ref().and_then(|f| PARTITIONS.with(|p| p.borrow().get(f).cloned())) {
        return g;
    }
    let mut of = vec![u32::MAX; size];
    let mut lists: Vec<Vec<usize>> = Vec::new();
    let mut ids: HashMap<i128, u32> = HashMap::new();
    for (local, &w) in parent.iter().enumerate() {
        if let (Some(g), true) = (index(local), w < size) {
            let id = *ids.entry(g).or_insert_with(|| {
                lists.push(Vec::new());
                (lists.len() - 1) as u32
            });
            lists[id as usize].push(w);
            of[w] = id;
        }
    }
    lists.iter_mut().for_each(|l| l.sort_unstable());
    let g = std::rc::Rc::new(Partition { of, lists });
    if let Some(f) = full {
        PARTITIONS.with(|p| p.borrow_mut().insert(f, g.clone()));
    }
    g
}

/// One `split` call seen on this rank: (parent key, creation index), this rank's number
/// in the parent, and its (color, key).
pub type SplitSeen = ((String, usize), usize, (i128, i128));

/// What each rank passed to each `split`: `(parent key, creation index)` → per parent
/// rank, (color, key).
pub type Splits = HashMap<(String, usize), HashMap<usize, (i128, i128)>>;

impl<'a> Interp<'a> {
    /// `subgroup`, `split`, `mesh2`: a collective on the parent plus the new communicators.
    pub(super) fn create(&mut self, e: &'a Expr, mc: &'a ExprMethodCall, c: usize, m: &str, args: &[V<'a>]) -> R<'a> {
        // The markers: `mesh2::<Dp, Tp>`, or a tuple `mesh::<(Pp, Dp, Tp)>`.
        let groups: Vec<String> = mc
            .turbofish
            .as_ref()
            .map(|t| {
                t.args
                    .iter()
                    .flat_map(|a| match a {
                        syn::GenericArgument::Type(syn::Type::Tuple(tt)) => {
                            tt.elems.iter().map(|x| x.to_token_stream().to_string()).collect::<Vec<_>>()
                        }
                        a => vec![a.to_token_stream().to_string()],
                    })
                    .collect()
            })
            .unwrap_or_default();
        let k = self.comms[c].children;
        self.comms[c].children += 1;
        let parent = self.comms[c].key.clone();
        let Some(pmembers) = self.comms[c].members.clone() else {
            self.needs_another_pass = true;
            return Ok(V::Opaque { comm: true, fp: 0 });
        };
        let my_local = pmembers.iter().position(|&w| w == self.rank).expect("member");
        let id = self.fresh_id();
        self.events.push(Ev::Coll {
            id,
            comm: parent.clone(),
            group: self.comms[c].group.clone(),
            members: pmembers.clone(),
            kind: call_name(m),
            root: None,
            op: None,
            len: None,
            root_data: None,
            unproven: None,
            counts: None,
            a2a: None,
            site: self.site(e),
        });
        self.events.push(Ev::Wait { ids: vec![id], site: self.site(e), call: call_name(m) });
        let cx = Creation { groups, k, parent, pmembers, my_local };
        match m {
            "subgroup" | "subgroup_ordered" => self.create_subgroup(e, mc, c, m, args, &cx),
            "split" => self.create_split(e, args, &cx),
            // In the run the check proves no rank dies: the live ranks are all of them.
            "shrink" => {
                let g = self.comms[c].group.clone();
                Ok(self.new_comm(format!("{}/{}:shrink", cx.parent, cx.k), g, Some(cx.pmembers.clone()), None))
            }
            "mesh" | "submesh" | "mesh_group" => self.create_mesh(e, m, args, &cx),
            _ => self.create_mesh2(e, args, &cx),
        }
    }

    /// A new communicator of `members` (world ranks), keyed `key`, of group `g`.
    fn new_comm(&mut self, key: String, g: String, members: Option<Vec<usize>>, groups: Option<Groups>) -> V<'a> {
        self.comms.push(CommInst { key, group: g, members, children: 0, colls: 0, groups });
        V::Comm(self.comms.len() - 1)
    }

    /// `subgroup(ranks)` / `subgroup_ordered(ranks)`: `Some` of the new communicator on
    /// the ranks in the list, `None` elsewhere.
    fn create_subgroup(
        &mut self,
        e: &'a Expr,
        mc: &'a ExprMethodCall,
        c: usize,
        m: &str,
        args: &[V<'a>],
        cx: &Creation,
    ) -> R<'a> {
        let Creation { k, parent, pmembers, my_local, .. } = cx;
        let (k, my_local, size) = (*k, *my_local, self.size);
        let Some(mut ranks) = args.first().and_then(int_list) else {
            return Err(undecidable(&mc.args[0], "a subgroup rank list that depends on data"));
        };
        for &r in &ranks {
            self.check_peer(e, c, r, "subgroup rank", &mc.args[0])?;
        }
        let mut seen = std::collections::HashSet::new();
        if let Some(d) = ranks.iter().find(|r| !seen.insert(**r)) {
            return Err(Flow::Stop(Stop::Invalid {
                site: self.site(e),
                msg: format!("rank {d} appears twice in the subgroup list {ranks:?} at world size {}", self.size),
            }));
        }
        if m == "subgroup" {
            // torch's `new_group` order: by rank, whatever the list's order.
            ranks.sort_unstable();
        }
        if !ranks.contains(&(my_local as i128)) {
            return Ok(V::Opt(None));
        }
        let members: Vec<usize> = ranks.iter().map(|&r| pmembers[r as usize]).collect();
        // (Keyed by the list: ranks outside it make the call too.)
        let groups = groups_of(size, Some((format!("{parent}:{members:?}"), k, 0)), &members, |_| Some(0));
        let v = self.new_comm(format!("{parent}/{k}:sub{members:?}"), cx.group(0), Some(members), Some(groups));
        Ok(V::Opt(Some(Box::new(v))))
    }

    /// `split(color, key)`: the ranks of this rank's color, ordered by key (known once a
    /// pass has seen every member's color).
    fn create_split(&mut self, e: &'a Expr, args: &[V<'a>], cx: &Creation) -> R<'a> {
        let Creation { k, parent, pmembers, my_local, .. } = cx;
        let (k, my_local, size) = (*k, *my_local, self.size);
        let (Some(V::Int(color)), Some(V::Int(key))) = (args.first(), args.get(1)) else {
            return Err(undecidable(e, "a split color or key that depends on data"));
        };
        self.splits_out.push(((parent.clone(), k), my_local, (*color, *key)));
        let members = self.splits_in.get(&(parent.clone(), k)).and_then(|t| {
            if t.len() != pmembers.len() {
                return None;
            }
            let mut same: Vec<usize> = (0..pmembers.len()).filter(|r| t[r].0 == *color).collect();
            same.sort_by_key(|r| (t[r].1, *r));
            Some(same.into_iter().map(|r| pmembers[r]).collect::<Vec<_>>())
        });
        if members.is_none() {
            self.needs_another_pass = true;
        }
        let groups = self
            .splits_in
            .get(&(parent.clone(), k))
            .filter(|t| t.len() == pmembers.len())
            .map(|t| groups_of(size, None, pmembers, |r| t.get(&r).map(|x| x.0)));
        Ok(self.new_comm(format!("{parent}/{k}:c{color}"), cx.group(0), members, groups))
    }

    /// `mesh(dims)`, `submesh(dims, along)`, `mesh_group(dims, along)`: the groups of an
    /// n-D mesh along each dimension asked for.
    fn create_mesh(&mut self, e: &'a Expr, m: &str, args: &[V<'a>], cx: &Creation) -> R<'a> {
        let Creation { k, parent, pmembers, my_local, .. } = cx;
        let (k, my_local, size) = (*k, *my_local, self.size);
        let dims = args.first().and_then(int_list);
        let along: Option<Vec<Vec<i128>>> = match m {
            "mesh" => dims.as_ref().map(|d| (0..d.len() as i128).map(|i| vec![i]).collect()),
            "submesh" => args.get(1).and_then(int_list).map(|a| a.into_iter().map(|i| vec![i]).collect()),
            _ => args.get(1).and_then(int_list).map(|a| vec![a]),
        };
        let (Some(dims), Some(along)) = (dims, along) else {
            return Err(undecidable(e, "mesh dimensions that depend on data"));
        };
        let dims: Vec<usize> = dims.iter().map(|&d| d.max(0) as usize).collect();
        let mut out = Vec::new();
        for (i, a) in along.iter().enumerate() {
            let a: Vec<usize> = a.iter().map(|&d| d.max(0) as usize).collect();
            if let Some(p) = dist_ops::mesh_problem(&dims, &a, pmembers.len()) {
                return Err(Flow::Stop(Stop::Invalid {
                    site: self.site(e),
                    msg: format!("{p} at world size {}; {MESH_FIX} #[spmd(sizes = A..=B)]", self.size),
                }));
            }
            let (local, color) = dist_ops::mesh_group(&dims, &a, my_local);
            let members: Vec<usize> = local.iter().map(|&r| pmembers[r]).collect();
            let groups = groups_of(size, Some((format!("{parent}{dims:?}{a:?}{pmembers:?}"), k, i)), pmembers, |r| {
                let c = dist_ops::mesh_coordinate(&dims, r);
                Some((0..dims.len()).filter(|d| !a.contains(d)).fold(0, |acc, d| acc * dims[d] + c[d]) as i128)
            });
            out.push(self.new_comm(format!("{parent}/{k}:m{a:?}c{color}"), cx.group(i), Some(members), Some(groups)));
        }
        Ok(if m == "mesh_group" { out.pop().expect("one group") } else { V::Tuple(out) })
    }

    /// `mesh2(a, b)`: the columns and rows of an `a × b` grid.
    fn create_mesh2(&mut self, e: &'a Expr, args: &[V<'a>], cx: &Creation) -> R<'a> {
        let Creation { k, parent, pmembers, my_local, .. } = cx;
        let (k, my_local, size) = (*k, *my_local, self.size);
        let (Some(V::Int(a)), Some(V::Int(b))) = (args.first(), args.get(1)) else {
            return Err(undecidable(e, "mesh dimensions that depend on data"));
        };
        let (a, b) = (*a, *b);
        if a <= 0 || b <= 0 || (a * b) as usize != pmembers.len() {
            return Err(Flow::Stop(Stop::Invalid {
                site: self.site(e),
                msg: format!(
                    "a mesh of {a} × {b} needs {} ranks, but the communicator has {} at world size {}; \
                     {MESH_FIX} #[spmd(ranks = {})]",
                    a * b,
                    pmembers.len(),
                    self.size,
                    a * b
                ),
            }));
        }
        let (a, b) = (a as usize, b as usize);
        let (i, j) = (my_local / b, my_local % b);
        let col: Vec<usize> = (0..a).map(|x| pmembers[x * b + j]).collect();
        let row: Vec<usize> = (0..b).map(|y| pmembers[i * b + y]).collect();
        let cols =
            groups_of(size, Some((format!("{parent}{a}x{b}{pmembers:?}"), k, 0)), pmembers, |r| Some((r % b) as i128));
        let rows =
            groups_of(size, Some((format!("{parent}{a}x{b}{pmembers:?}"), k, 1)), pmembers, |r| Some((r / b) as i128));
        let ca = self.new_comm(format!("{parent}/{k}:c{j}"), cx.group(0), Some(col), Some(cols));
        let cb = self.new_comm(format!("{parent}/{k}:r{i}"), cx.group(1), Some(row), Some(rows));
        Ok(V::Tuple(vec![ca, cb]))
    }
    // ------------------------------------------------------------ macros
}

/// What creating a communicator knows before its kind is looked at: the group markers
/// of the call, the parent's count of children so far, its key and members (world
/// ranks), and this rank's place among them.
pub(super) struct Creation {
    groups: Vec<String>,
    k: usize,
    parent: String,
    pmembers: Vec<usize>,
    my_local: usize,
}

impl Creation {
    /// The group marker at position `i` (`mesh2::<Dp, Tp>`: `Dp`, `Tp`).
    fn group(&self, i: usize) -> String {
        self.groups.get(i).cloned().unwrap_or_else(|| "?".into())
    }
}

/// The fix a mesh that does not fit its communicator suggests: dimensions given on the
/// command line are checked against the size before the mesh is made.
const MESH_FIX: &str = "derive the dimensions from `size()`, or check dimensions read from the program's \
                        inputs against `size()` before making the mesh (an `Err` there makes that size one the \
                        program does not support, which the check accepts), or pin the size with";
