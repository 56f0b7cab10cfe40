//! Monoids that can travel: an associative `combine` with an identity, and a flat
//! `u64` encoding so one tag type carries every kind of value.

use dist_runtime::prelude::*;
use std::fmt::Debug;

pub trait Monoid: Clone + Debug + PartialEq {
    /// Words in the encoding.
    const WORDS: usize;
    fn identity() -> Self;
    /// `self` then `rhs`: need not commute.
    fn combine(&self, rhs: &Self) -> Self;
    fn to_words(&self) -> Vec<u64>;
    fn from_words(w: &[u64]) -> Self;

    /// The runtime's own exclusive scan of one value per rank, where it has one.
    fn builtin_exscan<G: Group>(_comm: &Comm<G>, _x: &Self) -> dist_runtime::Result<Option<Self>> { Ok(None) }
}

/// Wrapping sum of `i64`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Sum(pub i64);

impl Monoid for Sum {
    const WORDS: usize = 1;
    fn identity() -> Self { Sum(0) }
    fn combine(&self, rhs: &Self) -> Self { Sum(self.0.wrapping_add(rhs.0)) }
    fn to_words(&self) -> Vec<u64> { vec![self.0 as u64] }
    fn from_words(w: &[u64]) -> Self { Sum(w[0] as i64) }
    fn builtin_exscan<G: Group>(comm: &Comm<G>, x: &Self) -> dist_runtime::Result<Option<Self>> {
        let mut buf = [x.0];
        comm.exscan(&mut buf, ReduceOp::Sum)?;
        Ok(Some(Sum(buf[0])))
    }
}

/// Maximum of `f64`, identity −∞.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Max(pub f64);

impl Monoid for Max {
    const WORDS: usize = 1;
    fn identity() -> Self { Max(f64::NEG_INFINITY) }
    fn combine(&self, rhs: &Self) -> Self { Max(self.0.max(rhs.0)) }
    fn to_words(&self) -> Vec<u64> { vec![self.0.to_bits()] }
    fn from_words(w: &[u64]) -> Self { Max(f64::from_bits(w[0])) }
    fn builtin_exscan<G: Group>(comm: &Comm<G>, x: &Self) -> dist_runtime::Result<Option<Self>> {
        let mut buf = [x.0];
        comm.exscan(&mut buf, ReduceOp::Max)?;
        Ok(Some(Max(buf[0])))
    }
}

/// The affine map `v ↦ a·v + b` over integers mod 2^64; `f.combine(g)` applies `f`
/// first, then `g`. Exact, associative and not commutative.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Affine {
    pub a: u64,
    pub b: u64,
}

/// `acc ⊕= x` for flat `[a, b]` pairs, in rank order: the user op the runtime folds.
fn compose_pairs(acc: &mut [u64], x: &[u64]) {
    for (f, g) in acc.chunks_exact_mut(2).zip(x.chunks_exact(2)) {
        let h = Affine { a: f[0], b: f[1] }.combine(&Affine { a: g[0], b: g[1] });
        f.copy_from_slice(&[h.a, h.b]);
    }
}

impl Monoid for Affine {
    const WORDS: usize = 2;
    fn identity() -> Self { Affine { a: 1, b: 0 } }
    fn combine(&self, g: &Self) -> Self {
        // g(f(v)) = g.a·(f.a·v + f.b) + g.b
        Affine { a: g.a.wrapping_mul(self.a), b: g.a.wrapping_mul(self.b).wrapping_add(g.b) }
    }
    fn to_words(&self) -> Vec<u64> { vec![self.a, self.b] }
    fn from_words(w: &[u64]) -> Self { Affine { a: w[0], b: w[1] } }
    fn builtin_exscan<G: Group>(comm: &Comm<G>, x: &Self) -> dist_runtime::Result<Option<Self>> {
        let mut buf = [x.a, x.b];
        comm.exscan(&mut buf, ReduceOp::user_items("affine_compose", 2, compose_pairs))?;
        // A user op has no identity: rank 0 keeps its own buffer.
        Ok(Some(if comm.rank() == 0 { Affine::identity() } else { Affine::from_words(&buf) }))
    }
}
