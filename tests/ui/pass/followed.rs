// Ordinary code the check follows whole under `strict`: a loop on a residual reduced over
// every rank with an early `break`, a command-line flag choosing how to communicate, a
// schedule of enum values from a helper, metrics in a BTreeMap reduced in key order, a
// builder from `#[derive(Default)]`, and neighbours from `bool::then`.
use dist_runtime::prelude::*;
use std::collections::BTreeMap;

const HALO: Tag<f64> = Tag::new(1);
const ACT: Tag<f32> = Tag::new(2);

fn residual(world: &Comm<World>, local: f64) -> dist_runtime::Result<f64> {
    let mut s = [local * local];
    world.all_reduce(&mut s, ReduceOp::Sum)?;
    Ok(s[0].sqrt())
}

#[spmd(sizes = 1..=4, strict)]
fn converged(world: Comm<World>) -> dist_runtime::Result<()> {
    let (r, n) = (world.rank(), world.size());
    let mut x = 1.0f64;
    for _ in 0..1000 {
        let mut ghost = [0.0];
        world.sendrecv((r + 1) % n, HALO, &[x], (r + n - 1) % n, &mut ghost)?;
        x = 0.5 * (x + ghost[0]);
        if residual(&world, x)? < 1e-8 {
            break;
        }
    }
    Ok(())
}

#[spmd(sizes = 1..=4, strict)]
fn flag_forms(world: Comm<World>) -> dist_runtime::Result<()> {
    let batched = std::env::args().any(|a| a == "--batched");
    let (r, n) = (world.rank(), world.size());
    let (next, prev) = ((r + 1) % n, (r + n - 1) % n);
    let mut kv = [0.0f32; 4];
    if batched {
        world.batch(|b| {
            b.send(next, ACT, &[1.0; 4]);
            b.recv(prev, ACT, &mut kv);
        })?;
    } else {
        world.sendrecv(next, ACT, &[1.0; 4], prev, &mut kv)?;
    }
    Ok(())
}

#[derive(Clone, Copy)]
enum Step {
    Recv,
    Compute(usize),
    Send,
}

fn schedule(stage: usize, stages: usize, micro: usize) -> Vec<Step> {
    let mut out = Vec::new();
    for mb in 0..micro {
        if stage > 0 {
            out.push(Step::Recv);
        }
        out.push(Step::Compute(mb));
        if stage + 1 < stages {
            out.push(Step::Send);
        }
    }
    out
}

#[spmd(sizes = 1..=4, strict)]
fn pipeline(world: Comm<World>) -> dist_runtime::Result<()> {
    let (s, n) = (world.rank(), world.size());
    let mut act = [0.0f32; 8];
    for step in schedule(s, n, 3) {
        match step {
            Step::Recv => world.recv(s - 1, ACT, &mut act)?,
            Step::Compute(mb) => act[0] += mb as f32,
            Step::Send => world.send(s + 1, ACT, &act)?,
        }
    }
    Ok(())
}

#[derive(Default)]
struct Metrics {
    entries: BTreeMap<&'static str, (f64, ReduceOp)>,
    every: usize,
}

impl Metrics {
    fn every(mut self, k: usize) -> Self {
        self.every = k;
        self
    }
    fn record(&mut self, name: &'static str, v: f64, op: ReduceOp) {
        self.entries.insert(name, (v, op));
    }
}

#[spmd(sizes = 1..=4, strict)]
fn metrics(world: Comm<World>) -> dist_runtime::Result<()> {
    let mut m = Metrics::default().every(2);
    m.record("loss", 0.5, ReduceOp::Sum);
    m.record("max_grad", 2.0, ReduceOp::Max);
    for step in 0..4 {
        if step % m.every == 0 {
            for (_, (value, op)) in m.entries.iter_mut() {
                let mut buf = [*value];
                world.all_reduce(&mut buf, *op)?;
                *value = buf[0];
            }
        }
    }
    Ok(())
}

#[spmd(sizes = 1..=6, strict)]
fn grid(world: Comm<World>) -> dist_runtime::Result<()> {
    let (r, n) = (world.rank(), world.size());
    let north = (r > 0).then(|| r - 1);
    let south = (r + 1 < n).then_some(r + 1);
    let mut ghost = [0.0f64];
    let mut reqs = Vec::new();
    if let Some(p) = north {
        reqs.push(world.irecv(p, HALO, &mut ghost)?);
    }
    if let Some(p) = south {
        reqs.push(world.isend(p, HALO, &[1.0])?);
    }
    dist_runtime::wait_all(reqs)?;
    Ok(())
}

fn main() {
    let _ = (converged, flag_forms, pipeline, metrics, grid);
}
