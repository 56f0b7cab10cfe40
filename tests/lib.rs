//! Helpers shared by the integration tests: deterministic per-rank data that every rank
//! can recompute for every other rank, and serial references for each reduction,
//! written independently of the runtime's kernels (but combining in rank order, the
//! order dist promises, so results compare bitwise).

use dist_runtime::{bf16, f16, Complex, Element, ReduceOp};

#[path = "device_suite.rs"]
pub mod device;

use proptest::strategy::{Strategy, ValueTree};
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};

/// An element type with the arithmetic the references need.
pub trait Num: Element + Copy {
    /// A deterministic value for (rank, index, salt); small so products stay finite-ish.
    fn gen(rank: usize, i: usize, salt: u64) -> Self;
    fn add(self, o: Self) -> Self;
    fn mul(self, o: Self) -> Self;
    fn max(self, o: Self) -> Self;
    fn min(self, o: Self) -> Self;
    /// Post-step of Avg (divide by n) and PreMulSum (multiply by s); floats only.
    fn avg(self, n: usize) -> Self;
    fn premul(self, s: f64) -> Self;
    /// Bitwise and, or, xor; integers only.
    fn bits(self, o: Self, op: ReduceOp) -> Self;
    /// The reduction of no values: what an exclusive scan gives rank 0.
    fn identity(op: ReduceOp) -> Self;
    const FLOAT: bool;
    /// A complex type (no order: Max and Min do not apply).
    const COMPLEX: bool = false;
    /// `bool` (no Avg).
    const BOOL: bool = false;
    /// The imaginary part, as f64 (0 for real types).
    fn im_f64(self) -> f64 {
        0.0
    }
    /// Unit roundoff of the type (0 for integers), for reductions in another order.
    const EPS: f64 = 0.0;
    fn to_f64(self) -> f64;
}

fn mix(rank: usize, i: usize, salt: u64) -> u64 {
    let mut x =
        (rank as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ (i as u64).wrapping_mul(0xC2B2_AE3D_27D4_EB4F) ^ salt;
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
    x ^= x >> 33;
    x
}

macro_rules! int_num {
    ($($t:ty),*) => {$(
        impl Num for $t {
            fn gen(rank: usize, i: usize, salt: u64) -> Self { mix(rank, i, salt) as $t }
            fn add(self, o: Self) -> Self { self.wrapping_add(o) }
            fn mul(self, o: Self) -> Self { self.wrapping_mul(o) }
            fn max(self, o: Self) -> Self { if o > self { o } else { self } }
            fn min(self, o: Self) -> Self { if o < self { o } else { self } }
            fn avg(self, n: usize) -> Self { ((self as i128) / (n as i128)) as $t }
            fn to_f64(self) -> f64 { self as f64 }
            fn premul(self, _: f64) -> Self { unreachable!() }
            fn bits(self, o: Self, op: ReduceOp) -> Self {
                match op { ReduceOp::BAnd => self & o, ReduceOp::BOr => self | o, _ => self ^ o }
            }
            fn identity(op: ReduceOp) -> Self {
                match op {
                    ReduceOp::Prod => 1,
                    ReduceOp::Max => <$t>::MIN,
                    ReduceOp::Min => <$t>::MAX,
                    ReduceOp::BAnd => <$t>::MAX | <$t>::MIN,
                    _ => 0,
                }
            }
            const FLOAT: bool = false;
        }
    )*};
}
int_num!(u8, i8, i16, u16, i32, u32, i64, u64);

macro_rules! float_num {
    ($($t:ty),*) => {$(
        impl Num for $t {
            fn gen(rank: usize, i: usize, salt: u64) -> Self { ((mix(rank, i, salt) % 2001) as f64 / 500.0 - 2.0) as $t }
            fn add(self, o: Self) -> Self { self + o }
            fn mul(self, o: Self) -> Self { self * o }
            fn max(self, o: Self) -> Self { if o > self { o } else { self } }
            fn min(self, o: Self) -> Self { if o < self { o } else { self } }
            fn avg(self, n: usize) -> Self { self / (n as $t) }
            fn premul(self, s: f64) -> Self { self * (s as $t) }
            fn bits(self, _: Self, _: ReduceOp) -> Self { unreachable!() }
            fn to_f64(self) -> f64 { self as f64 }
            fn identity(op: ReduceOp) -> Self {
                match op { ReduceOp::Prod => 1.0, ReduceOp::Max => <$t>::NEG_INFINITY, ReduceOp::Min => <$t>::INFINITY, _ => 0.0 }
            }
            const FLOAT: bool = true;
            const EPS: f64 = <$t>::EPSILON as f64;
        }
    )*};
}
float_num!(f32, f64);

macro_rules! half_num {
    ($($t:ty),*) => {$(
        impl Num for $t {
            fn gen(rank: usize, i: usize, salt: u64) -> Self { <$t>::from_f64((mix(rank, i, salt) % 2001) as f64 / 500.0 - 2.0) }
            fn add(self, o: Self) -> Self { self + o }
            fn mul(self, o: Self) -> Self { self * o }
            fn max(self, o: Self) -> Self { if o > self { o } else { self } }
            fn min(self, o: Self) -> Self { if o < self { o } else { self } }
            fn avg(self, n: usize) -> Self { self / <$t>::from_f64(n as f64) }
            fn premul(self, s: f64) -> Self { self * <$t>::from_f64(s) }
            fn bits(self, _: Self, _: ReduceOp) -> Self { unreachable!() }
            fn to_f64(self) -> f64 { <$t>::to_f64(self) }
            fn identity(op: ReduceOp) -> Self {
                <$t>::from_f64(match op { ReduceOp::Prod => 1.0, ReduceOp::Max => f64::NEG_INFINITY, ReduceOp::Min => f64::INFINITY, _ => 0.0 })
            }
            const FLOAT: bool = true;
            const EPS: f64 = <$t>::EPSILON.to_f64_const();
        }
    )*};
}
half_num!(f16, bf16);

macro_rules! complex_num {
    ($($t:ty),*) => {$(
        impl Num for Complex<$t> {
            fn gen(rank: usize, i: usize, salt: u64) -> Self {
                Complex::new(<$t as Num>::gen(rank, i, salt), <$t as Num>::gen(rank, i, salt ^ 0x5eed_cafe))
            }
            fn add(self, o: Self) -> Self { self + o }
            fn mul(self, o: Self) -> Self { self * o }
            fn max(self, _: Self) -> Self { unreachable!("complex numbers have no order") }
            fn min(self, _: Self) -> Self { unreachable!("complex numbers have no order") }
            fn avg(self, n: usize) -> Self { self / (n as $t) }
            fn premul(self, s: f64) -> Self { self * (s as $t) }
            fn bits(self, _: Self, _: ReduceOp) -> Self { unreachable!() }
            fn to_f64(self) -> f64 { self.re as f64 }
            fn im_f64(self) -> f64 { self.im as f64 }
            fn identity(op: ReduceOp) -> Self { Complex::new(if op == ReduceOp::Prod { 1.0 } else { 0.0 }, 0.0) }
            const FLOAT: bool = true;
            const COMPLEX: bool = true;
            const EPS: f64 = <$t>::EPSILON as f64;
        }
    )*};
}
complex_num!(f32, f64);

/// `bool`, as torch reduces it: Sum and Max are a logical or, Prod and Min a logical and.
impl Num for bool {
    fn gen(rank: usize, i: usize, salt: u64) -> Self {
        // Mostly true, so that ands are not all false at 8 ranks.
        !mix(rank, i, salt).is_multiple_of(5)
    }
    fn add(self, o: Self) -> Self {
        self | o
    }
    fn mul(self, o: Self) -> Self {
        self & o
    }
    fn max(self, o: Self) -> Self {
        self | o
    }
    fn min(self, o: Self) -> Self {
        self & o
    }
    fn avg(self, _: usize) -> Self {
        unreachable!("Avg is not defined on bool")
    }
    fn premul(self, _: f64) -> Self {
        unreachable!("PreMulSum is not defined on bool")
    }
    fn bits(self, o: Self, op: ReduceOp) -> Self {
        match op {
            ReduceOp::BAnd => self & o,
            ReduceOp::BOr => self | o,
            _ => self ^ o,
        }
    }
    fn identity(op: ReduceOp) -> Self {
        matches!(op, ReduceOp::Prod | ReduceOp::Min | ReduceOp::BAnd)
    }
    fn to_f64(self) -> f64 {
        f64::from(u8::from(self))
    }
    const FLOAT: bool = false;
    const BOOL: bool = true;
}

/// Rank `rank`'s input of `len` elements for case `salt`.
pub fn data<T: Num>(rank: usize, len: usize, salt: u64) -> Vec<T> {
    (0..len).map(|i| T::gen(rank, i, salt)).collect()
}

/// Serial reduction of `inputs` (one per rank) in rank order.
pub fn reduce_ref<T: Num>(inputs: &[Vec<T>], op: ReduceOp) -> Vec<T> {
    let n = inputs.len();
    let mut acc = inputs[0].clone();
    for inp in &inputs[1..] {
        for (a, &b) in acc.iter_mut().zip(inp) {
            *a = match op {
                ReduceOp::Sum | ReduceOp::Avg | ReduceOp::PreMulSum(_) => a.add(b),
                ReduceOp::Prod => a.mul(b),
                ReduceOp::Max => a.max(b),
                ReduceOp::Min => a.min(b),
                ReduceOp::BAnd | ReduceOp::BOr | ReduceOp::BXor => a.bits(b, op),
                ReduceOp::User(_) => unreachable!("the tests fold user reductions themselves"),
            };
        }
    }
    match op {
        ReduceOp::Avg => acc.iter_mut().for_each(|a| *a = a.avg(n)),
        ReduceOp::PreMulSum(s) => acc.iter_mut().for_each(|a| *a = a.premul(s)),
        _ => {}
    }
    acc
}

/// The ops that apply to `T`.
pub fn ops<T: Num>() -> Vec<ReduceOp> {
    if T::COMPLEX {
        return vec![ReduceOp::Sum, ReduceOp::Prod, ReduceOp::Avg, ReduceOp::PreMulSum(0.5)];
    }
    let mut v = vec![ReduceOp::Sum, ReduceOp::Prod, ReduceOp::Max, ReduceOp::Min];
    if T::FLOAT {
        v.push(ReduceOp::Avg);
        v.push(ReduceOp::PreMulSum(0.5));
    } else if T::BOOL {
        v.extend([ReduceOp::BAnd, ReduceOp::BOr, ReduceOp::BXor]);
    } else {
        v.extend([ReduceOp::Avg, ReduceOp::BAnd, ReduceOp::BOr, ReduceOp::BXor]);
    }
    v
}

/// Bitwise equality (NaN-safe), with a message naming the first differing index.
pub fn assert_same<T: Num>(what: &str, got: &[T], want: &[T]) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    let gb: &[u8] = bytemuck::cast_slice(got);
    let wb: &[u8] = bytemuck::cast_slice(want);
    if gb != wb {
        let i = got.iter().zip(want).position(|(a, b)| bytemuck::bytes_of(a) != bytemuck::bytes_of(b)).unwrap_or(0);
        panic!("{what}: element {i} is {:?}, expected {:?} (len {})", got[i], want[i], got.len());
    }
}

/// The result of a reduction over `n` ranks against the rank-order reference: bitwise
/// on shm (which reduces in rank order) and for integers, Max and Min everywhere; on
/// the MPI backend (`DIST_BACKEND=mpi`), whose library chooses the order in which float
/// sums and products associate, within the rounding of `n` terms of magnitude ≤ 16
/// (the inputs are in [-2, 2]).
pub fn assert_reduced<T: Num>(what: &str, got: &[T], want: &[T], op: ReduceOp, n: usize) {
    let reordered = std::env::var("DIST_BACKEND").is_ok_and(|b| b.eq_ignore_ascii_case("mpi"));
    if !(reordered && T::FLOAT && !matches!(op, ReduceOp::Max | ReduceOp::Min)) {
        return assert_same(what, got, want);
    }
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        for (g, w) in [(g.to_f64(), w.to_f64()), (g.im_f64(), w.im_f64())] {
            // A complex product's parts round like sums of two products.
            let tol = 2.0 * n as f64 * T::EPS * w.abs().max(16.0) * if T::COMPLEX { 4.0 } else { 1.0 };
            assert!((g - w).abs() <= tol, "{what}: element {i} is {g}, expected {w} within {tol} (len {})", got.len());
        }
    }
}

/// A proptest runner whose seed every rank shares (from `DIST_TEST_SEED`, which the
/// test harness sets for the job), so all ranks draw the same cases.
pub fn runner() -> TestRunner {
    let seed: u64 = std::env::var("DIST_TEST_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0x5eed);
    let mut bytes = [0u8; 32];
    bytes[..8].copy_from_slice(&seed.to_le_bytes());
    TestRunner::new_with_rng(Config::default(), TestRng::from_seed(RngAlgorithm::ChaCha, &bytes))
}

/// Draws one value of `s`.
pub fn draw<S: Strategy>(r: &mut TestRunner, s: S) -> S::Value {
    s.new_tree(r).expect("strategy").current()
}

/// Lengths to try: always 0, 1 and a non-multiple of typical sizes, then random ones,
/// then one that crosses the shm slot (pipelined path).
/// With `DIST_TEST_SHORT` set (the two-host run over TCP, where every byte is slow),
/// only the fixed short lengths; the full set runs on one host, on every backend.
pub fn lengths<T: Num>(r: &mut TestRunner, random: usize) -> Vec<usize> {
    let mut v = vec![0, 1, 7, 1001];
    if short() {
        return v;
    }
    for _ in 0..random {
        v.push(draw(r, 0usize..5000));
    }
    // > 256 KiB in bytes: more than one chunk of the slot.
    v.push((300 << 10) / std::mem::size_of::<T>() + 3);
    v
}

/// Whether `DIST_TEST_SHORT` asks for the short lengths only (see [`lengths`]).
pub fn short() -> bool {
    std::env::var_os("DIST_TEST_SHORT").is_some()
}

/// Calls `$f::<T>()` for every dtype.
#[macro_export]
macro_rules! for_all_dtypes {
    ($f:ident ( $($a:expr),* )) => {{
        $f::<u8>($($a),*); $f::<i8>($($a),*); $f::<i16>($($a),*); $f::<u16>($($a),*);
        $f::<i32>($($a),*); $f::<u32>($($a),*);
        $f::<i64>($($a),*); $f::<u64>($($a),*); $f::<dist_runtime::f16>($($a),*);
        $f::<dist_runtime::bf16>($($a),*); $f::<f32>($($a),*); $f::<f64>($($a),*);
        $f::<dist_runtime::Complex<f32>>($($a),*); $f::<dist_runtime::Complex<f64>>($($a),*);
        $f::<bool>($($a),*);
    }};
}

/// Launches `entry` once on each world size of `sizes` with `env` added (on the backend
/// `DIST_BACKEND` names), and asserts every run succeeds, naming the size and the
/// environment with the ranks' output when one fails.
pub fn launch_each(entry: &str, sizes: &[usize], env: &[(&str, &str)]) {
    for &n in sizes {
        let mut l =
            dist_runtime::Launch::entry(entry, n).unwrap().capture(true).timeout(std::time::Duration::from_secs(120));
        for (k, v) in env {
            l = l.env(k, v);
        }
        let r = l.run().unwrap();
        assert!(r.success(), "{entry} on {n} ranks with {env:?}:\n{}", r.summary());
    }
}
