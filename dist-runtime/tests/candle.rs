//! candle's tensors on a communicator (feature `candle`): tensor collectives against
//! serial references; Megatron's column- and row-parallel layers whose gradients, from
//! `loss.backward()` on each rank, are the shards of the gradients one process computes
//! for the whole model; the data-parallel gradient all-reduce (in buckets) equal to the
//! gradient of the whole batch. Real rank processes at world sizes 1–4.
//!
//! `cargo test -p dist-runtime --features candle --test candle`
// Communicators passed into candle's code are beyond the compile-time check: what it
// leaves to run time here is expected (its warnings are `deprecated` uses).
#![allow(deprecated)]

use candle_core::{DType, Device, Tensor, Var};
use dist_runtime::candle::{
    all_reduce_grads, copy_to_group, gather_from_group, reduce_from_group, ColumnParallelLinear, RowParallelLinear,
    TensorComm,
};
use dist_runtime::prelude::*;

const CPU: Device = Device::Cpu;

/// A deterministic `rows × cols` matrix (every rank can make it), entries in [-1, 1].
fn mat(rows: usize, cols: usize, seed: u64) -> Tensor {
    let v: Vec<f64> = (0..rows * cols)
        .map(|i| {
            let h = (i as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ seed.wrapping_mul(0xBF58_476D_1CE4_E5B9);
            ((h >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
        })
        .collect();
    Tensor::from_vec(v, (rows, cols), &CPU).unwrap()
}

fn close(what: &str, got: &Tensor, want: &Tensor) {
    assert_eq!(got.dims(), want.dims(), "{what}: shapes");
    let diff = (got - want).unwrap().abs().unwrap().flatten_all().unwrap().max(0).unwrap().to_scalar::<f64>().unwrap();
    assert!(diff <= 1e-12, "{what}: differs by {diff:e}\n got {got}\nwant {want}");
}

#[dist_runtime::test(ranks = [1, 2, 3, 4], timeout = 120)]
fn tensor_collectives_match_serial_references(world: Comm<World>) {
    let (r, n) = (world.rank(), world.size());
    let mine = mat(3, 4, r as u64);
    // all_reduce, Sum and Max.
    let sum = world.all_reduce_tensor(&mine, ReduceOp::Sum).unwrap();
    let want = (1..n).fold(mat(3, 4, 0), |acc, q| (acc + mat(3, 4, q as u64)).unwrap());
    close("all_reduce sum", &sum, &want);
    let max = world.all_reduce_tensor(&mine, ReduceOp::Max).unwrap();
    let want = (1..n).fold(mat(3, 4, 0), |acc, q| acc.maximum(&mat(3, 4, q as u64)).unwrap());
    close("all_reduce max", &max, &want);
    // all_gather along the last dimension, rank order; a transposed (non-contiguous) input.
    let gathered = world.all_gather_tensor(&mine.t().unwrap()).unwrap();
    let parts: Vec<Tensor> = (0..n).map(|q| mat(3, 4, q as u64).t().unwrap()).collect();
    close("all_gather", &gathered, &Tensor::cat(&parts, 1).unwrap());
    // broadcast from the last rank; f32.
    let root = n - 1;
    let b = world.broadcast_tensor(&mine.to_dtype(DType::F32).unwrap(), root).unwrap();
    assert_eq!(
        b.to_vec2::<f32>().unwrap(),
        mat(3, 4, root as u64).to_dtype(DType::F32).unwrap().to_vec2::<f32>().unwrap()
    );
    // reduce_scatter along the first dimension: rows [2r, 2r+2) of the sum.
    let tall = mat(2 * n, 3, r as u64 + 10);
    let part = world.reduce_scatter_tensor(&tall, ReduceOp::Sum).unwrap();
    let total = (1..n).fold(mat(2 * n, 3, 10), |acc, q| (acc + mat(2 * n, 3, q as u64 + 10)).unwrap());
    close("reduce_scatter", &part, &total.narrow(0, 2 * r, 2).unwrap());
    // all_to_all: block q of the first dimension to rank q.
    let blocks = Tensor::from_vec((0..n * 2).map(|i| (r * 100 + i) as f64).collect::<Vec<_>>(), (n, 2), &CPU).unwrap();
    let got = world.all_to_all_tensor(&blocks).unwrap();
    let want: Vec<f64> = (0..n).flat_map(|q| [(q * 100 + r * 2) as f64, (q * 100 + r * 2 + 1) as f64]).collect();
    assert_eq!(got.flatten_all().unwrap().to_vec1::<f64>().unwrap(), want);
    // send/recv around a ring, f32, with a typed tag (even ranks send first).
    const T: Tag<f32> = Tag::new(3);
    let (next, prev) = ((r + 1) % n, (r + n - 1) % n);
    let out = mat(2, 3, 20 + r as u64).to_dtype(DType::F32).unwrap();
    if n > 1 {
        let inn = if r % 2 == 0 {
            world.send_tensor(next, T, &out).unwrap();
            world.recv_tensor(prev, T, (2, 3)).unwrap()
        } else {
            let got = world.recv_tensor(prev, T, (2, 3)).unwrap();
            world.send_tensor(next, T, &out).unwrap();
            got
        };
        let want = mat(2, 3, 20 + prev as u64).to_dtype(DType::F32).unwrap();
        assert_eq!(inn.to_vec2::<f32>().unwrap(), want.to_vec2::<f32>().unwrap());
        // The tag's element type must be the tensor's.
        let e = world.send_tensor(next, Tag::<f64>::new(4), &out).unwrap_err();
        assert!(e.to_string().contains("dtype") || e.to_string().contains("mismatch"), "{e}");
    }
    // An empty tensor.
    let empty = Tensor::zeros((0, 3), DType::F64, &CPU).unwrap();
    assert_eq!(world.all_reduce_tensor(&empty, ReduceOp::Sum).unwrap().dims(), &[0, 3]);
}

/// The rooted collectives, the prefix reductions and `sendrecv` on tensors, against
/// serial references: f64, f32, i64 and bf16; a root other than 0; a zero-size tensor.
#[dist_runtime::test(ranks = [1, 2, 3, 4], timeout = 120)]
fn rooted_and_prefix_tensor_ops_match_serial_references(world: Comm<World>) {
    let (r, n) = (world.rank(), world.size());
    let root = n / 2;
    let mine = mat(2, 3, r as u64 + 30);
    let all: Vec<Tensor> = (0..n).map(|q| mat(2, 3, q as u64 + 30)).collect();
    // reduce: the sum on the root only.
    let got = world.reduce_tensor(&mine, ReduceOp::Sum, root).unwrap();
    let sum = all[1..].iter().fold(all[0].clone(), |acc, t| (acc + t).unwrap());
    match got {
        Some(t) => {
            assert_eq!(r, root, "a reduce result off the root");
            close("reduce", &t, &sum);
        }
        None => assert_ne!(r, root, "no reduce result on the root"),
    }
    // scan and exscan in rank order; exscan's rank 0 holds Sum's identity.
    let scan = world.scan_tensor(&mine, ReduceOp::Sum).unwrap();
    let upto =
        |k: usize| all[..k].iter().fold(Tensor::zeros((2, 3), DType::F64, &CPU).unwrap(), |a, t| (a + t).unwrap());
    close("scan", &scan, &upto(r + 1));
    let ex = world.exscan_tensor(&mine, ReduceOp::Sum).unwrap();
    close("exscan", &ex, &upto(r));
    // scan of i64 by Max.
    let ints = Tensor::from_vec(vec![(r as i64 * 7) % 5, -(r as i64)], 2, &CPU).unwrap();
    let got = world.scan_tensor(&ints, ReduceOp::Max).unwrap().to_vec1::<i64>().unwrap();
    let want = [(0..=r).map(|q| (q as i64 * 7) % 5).max().unwrap(), 0];
    assert_eq!(got, want);
    // gather to the root as a list in rank order, f32.
    let f = mine.to_dtype(DType::F32).unwrap();
    match world.gather_tensor(&f, root).unwrap() {
        Some(list) => {
            assert_eq!(list.len(), n);
            for (q, t) in list.iter().enumerate() {
                assert_eq!(t.dims(), &[2, 3]);
                assert_eq!(t.to_vec2::<f32>().unwrap(), all[q].to_dtype(DType::F32).unwrap().to_vec2::<f32>().unwrap());
            }
        }
        None => assert_ne!(r, root),
    }
    // scatter from the root: part q is q's own matrix, bf16.
    let like = Tensor::zeros((3, 2), DType::BF16, &CPU).unwrap();
    let parts: Vec<Tensor> = (0..n).map(|q| mat(3, 2, q as u64 + 40).to_dtype(DType::BF16).unwrap()).collect();
    let part = world.scatter_tensor((r == root).then_some(&parts[..]), &like, root).unwrap();
    assert_eq!(part.dtype(), DType::BF16);
    let want = mat(3, 2, r as u64 + 40).to_dtype(DType::BF16).unwrap().to_dtype(DType::F64).unwrap();
    close("scatter", &part.to_dtype(DType::F64).unwrap(), &want);
    // The root's list must hold one part per rank of `like`'s shape: an error naming it.
    if r == root {
        let wrong = vec![Tensor::zeros((2, 2), DType::BF16, &CPU).unwrap(); n];
        let e = world.scatter_tensor(Some(&wrong), &like, root).unwrap_err().to_string();
        assert!(e.contains("part 0") && e.contains("[2, 2]"), "{e}");
    }
    // sendrecv: a ring shift of f64 rows.
    const S: Tag<f64> = Tag::new(5);
    let row = Tensor::from_vec(vec![r as f64, 1.5], 2, &CPU).unwrap();
    let got = world.sendrecv_tensor((r + 1) % n, S, &row, (r + n - 1) % n, 2).unwrap();
    assert_eq!(got.to_vec1::<f64>().unwrap(), [((r + n - 1) % n) as f64, 1.5]);
    // Zero elements.
    let empty = Tensor::zeros((0, 4), DType::F64, &CPU).unwrap();
    if let Some(list) = world.gather_tensor(&empty, root).unwrap() {
        assert!(list.iter().all(|t| t.dims() == [0, 4]) && list.len() == n);
    }
    assert_eq!(world.scan_tensor(&empty, ReduceOp::Sum).unwrap().dims(), &[0, 4]);
    // Different shapes of one element count on the ranks: a mismatch naming the shapes.
    if n > 1 {
        let t = if r == 0 { mat(2, 3, 1) } else { mat(3, 2, 1) };
        let e = world.reduce_tensor(&t, ReduceOp::Sum, 0).unwrap_err().to_string();
        assert!(e.contains("[2, 3]") && e.contains("[3, 2]"), "{e}");
    }
}

/// The two-layer MLP of Megatron's paper, `y = tanh(x·W1ᵀ + b1)·W2ᵀ + b2`, loss
/// `Σ y²`: on one process, and split over the group (W1 by output rows, W2 by input
/// columns). The loss, the input's gradient and every shard's gradient match.
#[dist_runtime::test(ranks = [1, 2, 3, 4], timeout = 120)]
fn megatron_layers_give_the_whole_models_gradients(world: Comm<World>) {
    let (r, n) = (world.rank(), world.size());
    let (batch, d, h) = (5, 6, 12); // h divides among 1, 2, 3, 4 ranks
    let (w1, b1) = (mat(h, d, 1), mat(1, h, 2).reshape(h).unwrap());
    let (w2, b2) = (mat(d, h, 3), mat(1, d, 4).reshape(d).unwrap());
    let x = mat(batch, d, 5);

    // One process, the whole model.
    let (sx, sw1, sb1, sw2, sb2) = (
        Var::from_tensor(&x).unwrap(),
        Var::from_tensor(&w1).unwrap(),
        Var::from_tensor(&b1).unwrap(),
        Var::from_tensor(&w2).unwrap(),
        Var::from_tensor(&b2).unwrap(),
    );
    let hidden = sx.matmul(&sw1.t().unwrap()).unwrap().broadcast_add(&sb1).unwrap().tanh().unwrap();
    let y = hidden.matmul(&sw2.t().unwrap()).unwrap().broadcast_add(&sb2).unwrap();
    let loss = y.sqr().unwrap().sum_all().unwrap();
    let serial = loss.backward().unwrap();

    // The same model split over the world.
    let col = ColumnParallelLinear::from_full(&w1, Some(&b1), &world, false).unwrap();
    let row = RowParallelLinear::from_full(&w2, Some(&b2), &world, true).unwrap();
    let px = Var::from_tensor(&x).unwrap();
    let py = row.forward(&col.forward(&px).unwrap().tanh().unwrap()).unwrap();
    let ploss = py.sqr().unwrap().sum_all().unwrap();
    close("loss", &ploss, &loss);
    close("output", &py, &y);
    let grads = ploss.backward().unwrap();
    let k = h / n;
    let (cw, cb) = (&col.vars()[0], &col.vars()[1]);
    let (rw, rb) = (&row.vars()[0], &row.vars()[1]);
    close("W1 shard", grads.get(cw).unwrap(), &serial.get(&sw1).unwrap().narrow(0, r * k, k).unwrap());
    close("b1 shard", grads.get(cb).unwrap(), &serial.get(&sb1).unwrap().narrow(0, r * k, k).unwrap());
    close("W2 shard", grads.get(rw).unwrap(), &serial.get(&sw2).unwrap().narrow(1, r * k, k).unwrap());
    close("b2", grads.get(rb).unwrap(), serial.get(&sb2).unwrap());
    // The input's gradient is the whole model's only because `f` sums it over the ranks.
    close("x", grads.get(&px).unwrap(), serial.get(&sx).unwrap());

    // gather_output: the column layer's output made whole on every rank, and its
    // gradient split back.
    let whole = ColumnParallelLinear::from_full(&w1, Some(&b1), &world, true).unwrap();
    let out = whole.forward(&x).unwrap();
    close("gathered output", &out, &x.matmul(&w1.t().unwrap()).unwrap().broadcast_add(&b1).unwrap());
    let g = out.sum_all().unwrap().backward().unwrap();
    let want = Tensor::ones((batch, h), DType::F64, &CPU).unwrap().t().unwrap().matmul(&x).unwrap();
    close("gathered W1 shard", g.get(&whole.vars()[0]).unwrap(), &want.narrow(0, r * k, k).unwrap());

    // The operators alone: g sums forward, f sums the gradient backward.
    let v = Var::from_tensor(&mat(2, 3, 40 + r as u64)).unwrap();
    let s = reduce_from_group(&copy_to_group(&v, &world).unwrap(), &world).unwrap();
    let total = (1..n).fold(mat(2, 3, 40), |acc, q| (acc + mat(2, 3, 40 + q as u64)).unwrap());
    close("g forward", &s, &total);
    let g = s.sum_all().unwrap().backward().unwrap();
    close("f backward", g.get(&v).unwrap(), &Tensor::full(n as f64, (2, 3), &CPU).unwrap());
    let cat = gather_from_group(&v, &world).unwrap();
    assert_eq!(cat.dims(), &[2, 3 * n]);
}

/// Data parallelism: each rank its own rows of the batch, the gradients averaged over
/// the world in small buckets (several in flight) equal the gradient of the mean of the
/// ranks' losses computed on one process.
#[dist_runtime::test(ranks = [1, 2, 3, 4], timeout = 120)]
fn data_parallel_gradients_are_the_whole_batchs(world: Comm<World>) {
    let (r, n) = (world.rank(), world.size());
    let (rows, d, h) = (3, 4, 5);
    let params = [mat(h, d, 7), mat(1, h, 8), mat(1, h, 9).reshape(h).unwrap()];
    let loss_of = |vars: &[Var], x: &Tensor| {
        let hid = x.matmul(&vars[0].t().unwrap()).unwrap().tanh().unwrap();
        let out = hid.matmul(&vars[1].t().unwrap()).unwrap();
        (out.sqr().unwrap().sum_all().unwrap() + vars[2].sum_all().unwrap()).unwrap()
    };
    let data = |q: usize| mat(rows, d, 100 + q as u64);

    let vars: Vec<Var> = params.iter().map(|p| Var::from_tensor(p).unwrap()).collect();
    let mut grads = loss_of(&vars, &data(r)).backward().unwrap();
    // 64-byte buckets: every variable in its own bucket or two, several in flight.
    all_reduce_grads(&world, &mut grads, &vars, true, 64).unwrap();

    let serial: Vec<Var> = params.iter().map(|p| Var::from_tensor(p).unwrap()).collect();
    let mean = (0..n)
        .map(|q| loss_of(&serial, &data(q)))
        .reduce(|a, b| (a + b).unwrap())
        .unwrap()
        .affine(1.0 / n as f64, 0.0)
        .unwrap();
    let want = mean.backward().unwrap();
    for (i, (v, s)) in vars.iter().zip(&serial).enumerate() {
        close(&format!("gradient {i}"), grads.get(v).unwrap(), want.get(s).unwrap());
    }

    // A variable the loss never reached is an error naming it, on every rank alike.
    let unused = Var::from_tensor(&mat(2, 2, 0)).unwrap();
    let mut g = loss_of(&vars, &data(r)).backward().unwrap();
    let e = all_reduce_grads(&world, &mut g, &[vars[0].clone(), unused], true, 1 << 20).unwrap_err();
    assert!(e.to_string().contains("variable 1") && e.to_string().contains("no gradient"), "{e}");
}

/// A tensor collective's error names the user's line (the call of `all_reduce_tensor`,
/// of a layer's `forward`), not dist's code that candle calls back into; tensors of one
/// element count but different shapes are a mismatch naming both shapes.
#[dist_runtime::test(ranks = [2], timeout = 120)]
fn tensor_errors_name_the_users_line(world: Comm<World>) {
    let t = mat(1, 2 + world.rank(), 7);
    let (e, line) = (world.all_reduce_tensor(&t, ReduceOp::Sum).unwrap_err().to_string(), line!());
    assert!(e.contains(&format!("tests/candle.rs:{line}")), "{e}");
    assert!(!e.lines().next().unwrap_or_default().contains("src/candle.rs"), "{e}");
    let x = mat(2, 3 + world.rank(), 8);
    let (e, line) = (reduce_from_group(&x, &world).unwrap_err().to_string(), line!());
    assert!(e.contains(&format!("tests/candle.rs:{line}")), "{e}");
    // The rooted ops name the caller too (a root out of range).
    let (e, line) = (world.reduce_tensor(&mat(1, 2, 7), ReduceOp::Sum, 5).unwrap_err().to_string(), line!());
    assert!(e.contains(&format!("tests/candle.rs:{line}")), "{e}");
    let (e, line) = (world.gather_tensor(&mat(1, 2, 7), 9).unwrap_err().to_string(), line!());
    assert!(e.contains(&format!("tests/candle.rs:{line}")), "{e}");
    // Six numbers on each rank, shaped 2 × 3 and 3 × 2: a mismatch naming both shapes.
    let t = if world.rank() == 0 { mat(2, 3, 9) } else { mat(3, 2, 9) };
    let e = world.all_reduce_tensor(&t, ReduceOp::Sum).unwrap_err().to_string();
    assert!(e.contains("shape [2, 3]") && e.contains("shape [3, 2]"), "{e}");
    // The same shape on every rank still reduces.
    let t = world.all_reduce_tensor(&mat(2, 3, 9), ReduceOp::Sum).unwrap();
    close("after a mismatch", &t, &(mat(2, 3, 9) * 2.0).unwrap());
}
