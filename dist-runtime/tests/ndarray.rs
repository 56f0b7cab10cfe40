//! ndarray's arrays and views as buffers (feature `ndarray`): every kind of op on owned
//! arrays, views and shared arrays of several dimensions and element types, as real rank
//! processes at world sizes 1–4 (and 8 for the reductions), each against a serial
//! reference computed here; lengths 0 and ones that do not divide evenly; and every
//! layout that is not contiguous in row-major order refused with a typed error that
//! names the fix, on every op family, before anything moves.
//!
//! `cargo test -p dist-runtime --features ndarray --test ndarray`
// The compile-time check follows these entries' ranks and sizes, not ndarray's shapes:
// what it leaves to run time here is expected (its warnings are `deprecated` uses).
#![allow(deprecated)]

use dist_runtime::prelude::*;
use ndarray::{s, ArcArray, Array, Array1, Array2, Array3, ArrayD, IxDyn};

/// Rank `r`'s value at flat index `i` (small integers, so every sum is exact in floats).
fn gen(r: usize, i: usize) -> f64 {
    ((r * 7 + i * 3) % 11) as f64 - 5.0
}

fn matrix(r: usize, rows: usize, cols: usize) -> Array2<f64> {
    Array2::from_shape_fn((rows, cols), |(i, j)| gen(r, i * cols + j))
}

#[dist_runtime::test(ranks = [1, 2, 3, 4, 8], timeout = 120)]
fn all_reduce_of_owned_arrays_of_every_dimension(world: Comm<World>) {
    let (r, n) = (world.rank(), world.size());
    // 2-D, with a shape that is no multiple of the world size; and an empty one.
    for (rows, cols) in [(3, 5), (7, 1), (0, 4)] {
        let mut a = matrix(r, rows, cols);
        world.all_reduce(&mut a, ReduceOp::Sum).unwrap();
        let want = (0..n).map(|q| matrix(q, rows, cols)).fold(Array2::<f64>::zeros((rows, cols)), |acc, m| acc + m);
        assert_eq!(a, want, "all_reduce of a {rows}×{cols} array at n = {n}");
    }
    // 3-D f32 and a dynamic-dimension i64 array, with Max.
    let mut c = Array3::<f32>::from_shape_fn((2, 3, 4), |(i, j, k)| gen(r, i * 12 + j * 4 + k) as f32);
    world.all_reduce(&mut c, ReduceOp::Max).unwrap();
    let want = Array3::<f32>::from_shape_fn((2, 3, 4), |(i, j, k)| {
        (0..n).map(|q| gen(q, i * 12 + j * 4 + k) as f32).fold(f32::MIN, f32::max)
    });
    assert_eq!(c, want);
    let mut d = ArrayD::<i64>::from_shape_fn(IxDyn(&[2, 2, 2, 2]), |ix| (ix[0] * 8 + ix[3] + r) as i64);
    world.all_reduce(&mut d, ReduceOp::Sum).unwrap();
    let want = ArrayD::<i64>::from_shape_fn(IxDyn(&[2, 2, 2, 2]), |ix| {
        (0..n).map(|q| (ix[0] * 8 + ix[3] + q) as i64).sum::<i64>()
    });
    assert_eq!(d, want);
}

#[dist_runtime::test(ranks = [1, 2, 3, 4], timeout = 120)]
fn views_and_shared_arrays_are_buffers_in_place(world: Comm<World>) {
    let (r, n) = (world.rank(), world.size());
    // A row of a matrix is contiguous: broadcast into it, in place.
    let mut m = Array2::<f64>::zeros((3, 6));
    let root = n - 1;
    if r == root {
        m.row_mut(1).assign(&Array1::from_iter((0..6).map(|i| i as f64 * 1.5)));
    }
    world.broadcast(&mut m.row_mut(1), root).unwrap();
    assert_eq!(m.row(1), Array1::from_iter((0..6).map(|i| i as f64 * 1.5)));
    assert!(m.row(0).iter().chain(m.row(2).iter()).all(|&x| x == 0.0), "only the row was written");
    // A block of whole rows (`s![1..3, ..]`) is contiguous too.
    let mut big = matrix(r, 4, 5);
    world.all_reduce(&mut big.slice_mut(s![1..3, ..]), ReduceOp::Sum).unwrap();
    for i in 0..4 {
        for j in 0..5 {
            let own = gen(r, i * 5 + j);
            let sum: f64 = (0..n).map(|q| gen(q, i * 5 + j)).sum();
            assert_eq!(big[[i, j]], if (1..3).contains(&i) { sum } else { own }, "({i}, {j})");
        }
    }
    // An ArcArray (shared, copy-on-write): the reduction lands in this rank's copy only.
    let shared: ArcArray<f64, _> = matrix(r, 2, 3).into_shared();
    let mut mine = shared.clone();
    world.all_reduce(&mut mine, ReduceOp::Sum).unwrap();
    assert_eq!(shared, matrix(r, 2, 3), "the other handle still sees the rank's own values");
    let want = (0..n).map(|q| matrix(q, 2, 3)).fold(Array2::<f64>::zeros((2, 3)), |acc, m| acc + m);
    assert_eq!(mine, want);
}

#[dist_runtime::test(ranks = [1, 2, 3, 4], timeout = 120)]
fn gathers_scatters_and_all_to_all_take_arrays(world: Comm<World>) {
    let (r, n) = (world.rank(), world.size());
    // all_gather: each rank's 1-D block into one row per rank of a matrix.
    let mine = Array1::from_iter((0..5).map(|i| gen(r, i)));
    let mut all = Array2::<f64>::zeros((n, 5));
    world.all_gather(&mine, &mut all).unwrap();
    for q in 0..n {
        assert_eq!(all.row(q), Array1::from_iter((0..5).map(|i| gen(q, i))), "row {q}");
    }
    // all_gather_v with uneven counts (rank q sends q + 1 values, from a view).
    let counts: Vec<usize> = (0..n).map(|q| q + 1).collect();
    let src = Array1::from_iter((0..=r).map(|i| (r * 100 + i) as u32));
    let mut got = Array1::<u32>::zeros(counts.iter().sum::<usize>());
    world.all_gather_v(&src.view(), &mut got, &counts).unwrap();
    let want: Vec<u32> = (0..n).flat_map(|q| (0..=q).map(move |i| (q * 100 + i) as u32)).collect();
    assert_eq!(got.to_vec(), want);
    // scatter from the root's matrix (one row per rank) into each rank's array.
    let root = 0;
    let table = Array2::<i32>::from_shape_fn((n, 3), |(q, j)| (q * 10 + j) as i32);
    let mut row = Array1::<i32>::zeros(3);
    // (The root's `send` is a slice, as for every receive buffer type: `as_slice()`.)
    world.scatter((r == root).then_some(table.as_slice().expect("contiguous")), &mut row, root).unwrap();
    assert_eq!(row, Array1::from_iter((0..3).map(|j| (r * 10 + j) as i32)));
    // reduce_scatter: block q of every rank's array, summed, lands on rank q.
    let blocks = Array2::<f64>::from_shape_fn((n, 2), |(q, j)| gen(r, q * 2 + j));
    let mut part = Array1::<f64>::zeros(2);
    world.reduce_scatter(&blocks, &mut part, ReduceOp::Sum).unwrap();
    let want = Array1::from_iter((0..2).map(|j| (0..n).map(|p| gen(p, r * 2 + j)).sum::<f64>()));
    assert_eq!(part, want);
    // all_to_all: row q goes to rank q, row p of the result came from rank p.
    let out = Array2::<u8>::from_shape_fn((n, 4), |(q, j)| (r * 16 + q * 4 + j) as u8);
    let mut inbox = Array2::<u8>::zeros((n, 4));
    world.all_to_all(&out, &mut inbox).unwrap();
    for p in 0..n {
        assert_eq!(inbox.row(p), Array1::from_iter((0..4).map(|j| (p * 16 + r * 4 + j) as u8)));
    }
}

const T: Tag<f64> = Tag::new(7);

#[dist_runtime::test(ranks = [1, 2, 3, 4], timeout = 120)]
fn point_to_point_and_batches_take_arrays(world: Comm<World>) {
    let (r, n) = (world.rank(), world.size());
    let (next, prev) = ((r + 1) % n, (r + n - 1) % n);
    // A ring with blocking send/recv on 2-D arrays (even ranks send first).
    let out = matrix(r, 2, 3);
    let mut inn = Array2::<f64>::zeros((2, 3));
    if n > 1 {
        if r % 2 == 0 {
            world.send(next, T, &out).unwrap();
            world.recv(prev, T, &mut inn).unwrap();
        } else {
            world.recv(prev, T, &mut inn).unwrap();
            world.send(next, T, &out).unwrap();
        }
        assert_eq!(inn, matrix(prev, 2, 3));
    }
    // isend/irecv into a row view, and a batch into two halves of one array.
    let mut rows = Array2::<f64>::zeros((2, 3));
    {
        let mut halves = rows.view_mut();
        let (mut top, mut bottom) = halves.multi_slice_mut((s![0, ..], s![1, ..]));
        // (A view is a value: bind it, so it outlives the request that borrows it.)
        let (row0, row1) = (out.row(0), out.row(1));
        let recv = world.irecv(prev, T, &mut top).unwrap();
        let send = world.isend(next, T, &row0).unwrap();
        recv.wait().unwrap();
        send.wait().unwrap();
        world
            .batch(|b| {
                b.send(prev, T, &row1);
                b.recv(next, T, &mut bottom);
            })
            .unwrap();
    }
    assert_eq!(rows.row(0), matrix(prev, 2, 3).row(0));
    assert_eq!(rows.row(1), matrix(next, 2, 3).row(1));
    // Length 0.
    let empty = Array1::<f64>::zeros(0);
    let mut none = Array1::<f64>::zeros(0);
    world.sendrecv(next, T, &empty, prev, &mut none).unwrap();
}

/// Layouts that are not one contiguous run in row-major order (a column, a transpose, a
/// step) are refused on every family of op with the fix in the message, and the
/// communicator stays usable; the same data made contiguous goes through.
#[dist_runtime::test(ranks = [1, 2, 3], timeout = 120)]
fn layouts_that_are_not_contiguous_are_typed_errors_naming_the_fix(world: Comm<World>) {
    let (r, n) = (world.rank(), world.size());
    let (next, prev) = ((r + 1) % n, (r + n - 1) % n);
    let mut m = matrix(r, 4, 3);
    let expect = |e: dist_runtime::Error, op: &str| {
        let text = e.to_string();
        assert!(
            matches!(e, dist_runtime::Error::InvalidArgument { .. })
                && text.contains(op)
                && text.contains("as_standard_layout")
                && text.contains("strides"),
            "{op}: {text}"
        );
        // The caller's line, not the runtime's.
        assert!(text.contains("tests/ndarray.rs"), "{op}: the error names the caller's line: {text}");
    };
    expect(world.all_reduce(&mut m.column_mut(1), ReduceOp::Sum).unwrap_err(), "all_reduce");
    expect(world.broadcast(&mut m.slice_mut(s![..;2, ..]), 0).unwrap_err(), "broadcast");
    // An owned copy of a transpose keeps its column-major order: refused too.
    let mut t = m.t().to_owned();
    assert!(!t.is_standard_layout());
    expect(world.all_reduce(&mut t, ReduceOp::Sum).unwrap_err(), "all_reduce");
    let mut all = Array2::<f64>::zeros((n * 3, 4));
    expect(world.all_gather(&m.t(), &mut all).unwrap_err(), "all_gather");
    expect(world.send(next, T, &m.column(0)).unwrap_err(), "send");
    expect(world.isend(next, T, &m.column(0)).map(|_| ()).unwrap_err(), "isend");
    let mut col = m.column_mut(2);
    expect(world.recv(prev, T, &mut col).unwrap_err(), "recv");
    expect(world.irecv(prev, T, &mut col).map(|_| ()).unwrap_err(), "irecv");
    let col0 = m.column(0);
    expect(world.batch(|b| b.send(next, T, &col0)).unwrap_err(), "batch");
    // The communicator is still in step: the contiguous copy goes through.
    let mut fixed = m.t().as_standard_layout().into_owned();
    world.all_reduce(&mut fixed, ReduceOp::Sum).unwrap();
    let want = (0..n).map(|q| matrix(q, 4, 3).t().to_owned()).fold(Array2::<f64>::zeros((3, 4)), |acc, x| acc + x);
    assert_eq!(fixed, want);
    let _ = Array::<f64, _>::zeros(3);
}
