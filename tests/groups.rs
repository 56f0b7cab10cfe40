//! Subgroups, split and meshes: membership, rank numbering, collectives and p2p inside.

use dist_runtime::prelude::*;

dist_runtime::group!(Half);
dist_runtime::group!(Parity);
dist_runtime::group!(Dp);
dist_runtime::group!(Tp);
dist_runtime::group!(Inner);

#[dist_runtime::test(ranks = [1, 2, 3, 4, 8])]
fn subgroups_of_each_half(world: Comm<World>) {
    let (n, me) = (world.size(), world.rank());
    let first: Vec<usize> = (0..n.div_ceil(2)).collect();
    let second: Vec<usize> = (n.div_ceil(2)..n).collect();
    let g1 = world.subgroup::<Half>(&first).unwrap();
    let g2 = if second.is_empty() { None } else { world.subgroup::<Half>(&second).unwrap() };
    let (mine, members) = if me < first.len() { (g1.expect("member"), &first) } else { (g2.expect("member"), &second) };
    assert_eq!(mine.size(), members.len());
    assert_eq!(mine.members()[mine.rank()], me);
    let mut s = [me as u64];
    mine.all_reduce(&mut s, ReduceOp::Sum).unwrap();
    assert_eq!(s[0], members.iter().map(|&r| r as u64).sum::<u64>());
    // share both sums with everyone: MAX over the world of (my half's sum in its slot)
    let mut both = [0u64; 2];
    both[usize::from(me >= first.len())] = s[0];
    world.all_reduce(&mut both, ReduceOp::Max).unwrap();
    assert_eq!(both[0], first.iter().map(|&r| r as u64).sum::<u64>());
    assert_eq!(both[1], second.iter().map(|&r| r as u64).sum::<u64>());
}

/// `subgroup` numbers its members by rank, whatever the list's order (torch's
/// `new_group`); `subgroup_ordered` keeps the list's order. Both are checked through what
/// a program sees: the gather order and the broadcast root, against a serial reference.
#[dist_runtime::test(ranks = [1, 2, 3, 4, 8])]
fn subgroup_sorts_like_new_group_and_subgroup_ordered_keeps_the_list(world: Comm<World>) {
    let (n, me) = (world.size(), world.rank());
    // Every other rank, listed from the highest down: [n-1, n-3, ...].
    let listed: Vec<usize> = (0..n).rev().step_by(2).collect();
    let mut sorted = listed.clone();
    sorted.sort_unstable();
    for (ordered, want) in [(false, &sorted), (true, &listed)] {
        let g = if ordered {
            world.subgroup_ordered::<Half>(&listed).unwrap()
        } else {
            world.subgroup::<Half>(&listed).unwrap()
        };
        let Some(g) = g else {
            assert!(!listed.contains(&me));
            continue;
        };
        assert_eq!(g.members(), &want[..], "ordered={ordered}");
        assert_eq!(want[g.rank()], me);
        let mut all = vec![0u32; g.size()];
        g.all_gather(&[me as u32], &mut all).unwrap();
        assert_eq!(all, want.iter().map(|&r| r as u32).collect::<Vec<_>>(), "ordered={ordered}");
        let mut x = [me as u32];
        g.broadcast(&mut x, 0).unwrap();
        assert_eq!(x[0] as usize, want[0], "ordered={ordered}: root 0 is {}", want[0]);
    }
}

#[dist_runtime::test(ranks = [1, 2, 3, 4, 8])]
fn split_by_parity_ordered_by_key(world: Comm<World>) {
    let (n, me) = (world.size(), world.rank());
    // key reverses the order inside each color
    let g = world.split::<Parity>((me % 2) as u32, -(me as i64)).unwrap();
    let want: Vec<usize> = (0..n).rev().filter(|r| r % 2 == me % 2).collect();
    assert_eq!(g.members(), &want[..]);
    let mut x = vec![me as i32; 3];
    g.broadcast(&mut x, 0).unwrap();
    assert_eq!(x, vec![want[0] as i32; 3]);
    // p2p inside the group uses group ranks
    const T: Tag<u64> = Tag::new(5);
    let (gr, gn) = (g.rank(), g.size());
    let mut got = [0u64];
    g.sendrecv((gr + 1) % gn, T, &[me as u64], (gr + gn - 1) % gn, &mut got).unwrap();
    assert_eq!(got[0], want[(gr + gn - 1) % gn] as u64);
}

#[dist_runtime::test(ranks = [1, 2, 4, 8])]
fn mesh2_dp_by_tp(world: Comm<World>) {
    let (n, me) = (world.size(), world.rank());
    let dp_size = if n >= 2 { 2 } else { 1 };
    let tp_size = n / dp_size;
    let (dp, tp): (Comm<Dp>, Comm<Tp>) = world.mesh2(dp_size, tp_size).unwrap();
    assert_eq!((dp.size(), tp.size()), (dp_size, tp_size));
    let (i, j) = (me / tp_size, me % tp_size);
    assert_eq!(tp.members(), &(0..tp_size).map(|y| i * tp_size + y).collect::<Vec<_>>()[..]);
    assert_eq!(dp.members(), &(0..dp_size).map(|x| x * tp_size + j).collect::<Vec<_>>()[..]);
    // tp: all_gather of world ranks = the row; dp: all_reduce of world ranks = column sum
    let mut row = vec![0u32; tp_size];
    tp.all_gather(&[me as u32], &mut row).unwrap();
    assert_eq!(row, tp.members().iter().map(|&r| r as u32).collect::<Vec<_>>());
    let mut col = [me as u32];
    dp.all_reduce(&mut col, ReduceOp::Sum).unwrap();
    assert_eq!(col[0], dp.members().iter().map(|&r| r as u32).sum::<u32>());
    // a subgroup of a subgroup
    let inner = tp.subgroup::<Inner>(&[0]).unwrap();
    assert_eq!(inner.is_some(), tp.rank() == 0);
    if let Some(inner) = inner {
        assert_eq!(inner.members(), &[me]);
        inner.barrier().unwrap();
    }
}

/// World and group ranks translate both ways on a nested mesh; a non-member is an error
/// naming the group and the caller's line.
#[dist_runtime::test(ranks = [1, 2, 3, 4, 8])]
fn world_and_group_ranks_translate(world: Comm<World>) {
    let n = world.size();
    let tp_size = if n.is_multiple_of(2) { 2 } else { 1 };
    let (dp, tp): (Comm<Dp>, Comm<Tp>) = world.mesh2(n / tp_size, tp_size).unwrap();
    for c in [dp.members().to_vec(), tp.members().to_vec()] {
        assert!(c.contains(&world.rank()));
    }
    assert_eq!(tp.world_rank(), world.rank());
    assert_eq!(dp.world_rank(), world.rank());
    for r in 0..tp.size() {
        let w = tp.world_rank_of(r).unwrap();
        assert_eq!(w, world.rank() / tp_size * tp_size + r);
        assert_eq!(tp.group_rank_of(w).unwrap(), r);
    }
    let outside = (0..n).find(|w| !dp.members().contains(w));
    if let Some(w) = outside {
        let e = dp.group_rank_of(w).unwrap_err().to_string();
        assert!(e.contains(&format!("world rank {w} is not a member of Dp{{")), "{e}");
        assert!(e.contains("groups.rs"), "the error names the caller's line: {e}");
    }
    assert!(tp.world_rank_of(tp.size()).is_err());
}

/// `Comm` is a cheap handle: clones run ops on the same communicator, in one order, and
/// `init()` inside an entry returns the same world instead of joining again (a world of
/// one is trivially the same).
#[dist_runtime::test(ranks = [1, 2, 3, 4])]
fn clones_and_init_share_the_communicator(world: Comm<World>) {
    struct Layer {
        tp: Comm<World>,
    }
    let layer = Layer { tp: world.clone() };
    let again = dist_runtime::init().unwrap();
    assert_eq!((again.rank(), again.size()), (world.rank(), world.size()));
    let mut a = [world.rank() as u32];
    layer.tp.all_reduce(&mut a, ReduceOp::Sum).unwrap();
    let mut b = [1u32];
    again.all_reduce(&mut b, ReduceOp::Sum).unwrap();
    world.barrier().unwrap();
    let n = world.size() as u32;
    assert_eq!((a[0], b[0]), (n * (n - 1) / 2, n));
    // In a multi-rank job, asking for another identity is an error, not a second join.
    if world.size() == 1 {
        return;
    }
    let mut env = dist_runtime::Env::from_env().unwrap();
    env.rank = (env.rank + 1) % 2;
    env.world_size = 2 + world.size();
    let e = dist_runtime::init_with(env).unwrap_err().to_string();
    assert!(e.contains("already joined its job as rank"), "{e}");
}

dist_runtime::group!(Pp);
dist_runtime::group!(Cp);
dist_runtime::group!(Ep);
dist_runtime::group!(DpCp);

/// Every factorisation of n into 1..=5 dimensions (each ≥ 1), as the shapes to try.
fn shapes(n: usize) -> Vec<Vec<usize>> {
    let divs: Vec<usize> = (1..=n).filter(|&d| n.is_multiple_of(d)).collect();
    let mut out: Vec<Vec<usize>> = vec![vec![n]];
    for &a in &divs {
        out.push(vec![a, n / a]);
        for &b in divs.iter().filter(|&&b| (n / a).is_multiple_of(b)) {
            out.push(vec![a, b, n / a / b]);
        }
    }
    out.push(vec![1, n, 1, 1]);
    out.push(vec![n, 1, 1, 1, 1]);
    if n == 8 {
        out.push(vec![2, 2, 1, 2]);
        out.push(vec![2, 1, 2, 1, 2]);
    }
    out
}

/// The serial reference of a mesh group: the ranks whose coordinates (computed here by
/// nested loops in row-major order) agree with `me`'s outside `along`.
fn reference_group(dims: &[usize], along: &[usize], me: usize) -> Vec<usize> {
    let mut coords: Vec<Vec<usize>> = vec![vec![]];
    for &d in dims {
        coords = coords.into_iter().flat_map(|c| (0..d).map(move |x| [c.clone(), vec![x]].concat())).collect();
    }
    (0..coords.len())
        .filter(|&r| (0..dims.len()).all(|d| along.contains(&d) || coords[r][d] == coords[me][d]))
        .collect()
}

/// Checks a mesh communicator against the reference: members, rank, and a sum and a
/// gather through it.
fn check_group<G: Group>(c: &Comm<G>, dims: &[usize], along: &[usize], me: usize) {
    let want = reference_group(dims, along, me);
    assert_eq!(c.members(), &want[..], "dims {dims:?} along {along:?}");
    assert_eq!(want[c.rank()], me);
    let mut s = [me as u64 + 1];
    c.all_reduce(&mut s, ReduceOp::Sum).unwrap();
    assert_eq!(s[0], want.iter().map(|&r| r as u64 + 1).sum::<u64>());
    let mut all = vec![0u32; c.size()];
    c.all_gather(&[me as u32], &mut all).unwrap();
    assert_eq!(all, want.iter().map(|&r| r as u32).collect::<Vec<_>>());
}

/// `mesh` at 1 to 5 dimensions over every shape of each world size: each dimension's
/// communicator, the coordinate, sub-meshes and flattened groups, against a serial
/// reference of torch's row-major `DeviceMesh` layout.
#[dist_runtime::test(ranks = [1, 2, 3, 4, 8])]
fn n_d_meshes_match_the_row_major_reference(world: Comm<World>) {
    let (n, me) = (world.size(), world.rank());
    for dims in shapes(n) {
        let coord = world.mesh_coordinate(&dims).unwrap();
        let mut r = 0;
        for (d, c) in dims.iter().zip(&coord) {
            r = r * d + c;
        }
        assert_eq!(r, me, "coordinate {coord:?} of rank {me} in {dims:?}");
        match dims.len() {
            1 => {
                let (a,) = world.mesh::<(Dp,)>([dims[0]]).unwrap();
                check_group(&a, &dims, &[0], me);
            }
            2 => {
                let (a, b) = world.mesh::<(Dp, Tp)>([dims[0], dims[1]]).unwrap();
                check_group(&a, &dims, &[0], me);
                check_group(&b, &dims, &[1], me);
            }
            3 => {
                let (p, d, t) = world.mesh::<(Pp, Dp, Tp)>([dims[0], dims[1], dims[2]]).unwrap();
                check_group(&p, &dims, &[0], me);
                check_group(&d, &dims, &[1], me);
                check_group(&t, &dims, &[2], me);
                let (d2, t2) = world.submesh::<(Dp, Tp)>(&dims, [1, 2]).unwrap();
                check_group(&d2, &dims, &[1], me);
                check_group(&t2, &dims, &[2], me);
                let pt = world.mesh_group::<DpCp>(&dims, &[0, 2]).unwrap();
                check_group(&pt, &dims, &[0, 2], me);
            }
            4 => {
                let (p, d, c, t) = world.mesh::<(Pp, Dp, Cp, Tp)>([dims[0], dims[1], dims[2], dims[3]]).unwrap();
                for (i, g) in [p.members(), d.members(), c.members(), t.members()].into_iter().enumerate() {
                    assert_eq!(g, &reference_group(&dims, &[i], me)[..]);
                }
                check_group(&c, &dims, &[2], me);
                let dpcp = world.mesh_group::<DpCp>(&dims, &[1, 2]).unwrap();
                check_group(&dpcp, &dims, &[1, 2], me);
            }
            _ => {
                let (p, d, c, e, t) =
                    world.mesh::<(Pp, Dp, Cp, Ep, Tp)>([dims[0], dims[1], dims[2], dims[3], dims[4]]).unwrap();
                check_group(&p, &dims, &[0], me);
                check_group(&t, &dims, &[4], me);
                for (i, g) in [d.members(), c.members(), e.members()].into_iter().enumerate() {
                    assert_eq!(g, &reference_group(&dims, &[i + 1], me)[..]);
                }
            }
        }
    }
}

fn refused<T>(r: dist_runtime::Result<T>, why: &str) -> String {
    match r {
        Ok(_) => panic!("accepted a mesh with {why}"),
        Err(e) => e.to_string(),
    }
}

/// Shapes that do not describe the communicator are errors on every rank, before any
/// communication, naming the shape.
#[dist_runtime::test(ranks = [2, 3])]
fn a_mesh_of_the_wrong_shape_is_an_error(world: Comm<World>) {
    let n = world.size();
    let e = refused(world.mesh::<(Dp, Tp)>([n, 2]), "too many ranks");
    assert!(e.contains(&format!("needs {} ranks", 2 * n)) && e.contains(&format!("has {n}")), "{e}");
    let e = refused(world.mesh::<(Dp, Tp)>([0, n]), "zero");
    assert!(e.contains("needs 0 ranks"), "{e}");
    let e = refused(world.mesh_group::<DpCp>(&[1, n], &[1, 0]), "not increasing");
    assert!(e.contains("not increasing"), "{e}");
    let e = refused(world.submesh::<(Dp,)>(&[1, n], [2]), "no such dimension");
    assert!(e.contains("dimension 2"), "{e}");
    assert!(world.mesh_coordinate(&[n, 2]).is_err());
    // The communicator still works.
    let (d, t) = world.mesh::<(Dp, Tp)>([1, n]).unwrap();
    assert_eq!((d.size(), t.size()), (1, n));
}

/// The job's store, as a program uses it: every rank sees the same keys; one leader
/// wins a compare_set race; counters add up; the rendezvous's own keys stay out of view.
#[dist_runtime::test(ranks = [1, 2, 3, 4, 8])]
fn the_job_store_is_shared_by_its_ranks(world: Comm<World>) {
    let (n, me) = (world.size(), world.rank());
    let store = dist_runtime::store::job_store().unwrap();
    let won = store.compare_set("leader", b"", me.to_string().as_bytes()).unwrap();
    let leader: usize = String::from_utf8(won).unwrap().parse().unwrap();
    assert!(leader < n);
    assert!(store.add("count", 1 + me as i64).unwrap() >= 1);
    world.barrier().unwrap();
    assert_eq!(store.add("count", 0).unwrap(), (n * (n + 1) / 2) as i64);
    // Every rank agrees on the leader.
    let mut all = vec![0u64; n];
    world.all_gather(&[leader as u64], &mut all).unwrap();
    assert!(all.iter().all(|&l| l == leader as u64), "{all:?}");
    // Only this program's keys are in view.
    assert_eq!(store.num_keys().unwrap(), 2);
    assert!(store.check(&["leader", "count"]).unwrap());
    world.barrier().unwrap();
    if me == leader {
        assert!(store.delete("leader").unwrap());
    }
    world.barrier().unwrap();
    assert!(!store.check(&["leader"]).unwrap());
}

/// A helper that takes `&Comm<Tp>`, as a tensor-parallel layer's would.
fn tp_sum(tp: &Comm<Tp>) -> u64 {
    let mut x = [tp.rank() as u64 + 1];
    tp.all_reduce(&mut x, ReduceOp::Sum).unwrap();
    x[0]
}

/// A distributed test can take the typed communicator its helper needs: every rank of
/// the world, numbered as the world, as a communicator of its own.
#[dist_runtime::test(ranks = [1, 2, 3, 4])]
fn a_test_takes_the_typed_communicator_its_helper_needs(tp: Comm<Tp>) {
    let n = tp.size() as u64;
    assert_eq!(tp.rank(), tp.world_rank());
    assert_eq!(tp_sum(&tp), n * (n + 1) / 2);
    assert_eq!(tp.members().to_vec(), (0..tp.size()).collect::<Vec<_>>());
}
