//! Reduction kernels over bytes: `acc ⊕= src` element by element for a [`DType`] and a
//! [`ReduceOp`], and the post-step of `Avg`/`PreMulSum`. Every backend that reduces on
//! the host uses these, so every backend combines values the same way.

use crate::dtype::DType;
use crate::reduce_op::ReduceOp;
use half::{bf16, f16};
use num_complex::Complex;

/// Arithmetic used by the reduction kernels; integer ops wrap (exact modulo 2^bits, as NCCL).
trait Arith: Copy {
    /// The order Max and Min use (never asked of complex numbers: validated).
    fn greater(self, o: Self) -> bool;
    fn less(self, o: Self) -> bool;
    fn add(self, o: Self) -> Self;
    fn mul(self, o: Self) -> Self;
    /// Multiply by a host scalar (PreMulSum) and divide by a count (Avg); floats only.
    fn scale(self, s: f64) -> Self;
    fn div_n(self, n: usize) -> Self;
    /// Bitwise and, or, xor; integers only.
    fn band(self, o: Self) -> Self;
    fn bor(self, o: Self) -> Self;
    fn bxor(self, o: Self) -> Self;
    /// Whether this is a NaN (never, for integers).
    fn nan(self) -> bool {
        false
    }
}

macro_rules! arith_int {
    ($($t:ty),*) => {$(
        impl Arith for $t {
            #[inline(always)] fn greater(self, o: Self) -> bool { self > o }
            #[inline(always)] fn less(self, o: Self) -> bool { self < o }
            #[inline(always)] fn add(self, o: Self) -> Self { self.wrapping_add(o) }
            #[inline(always)] fn mul(self, o: Self) -> Self { self.wrapping_mul(o) }
            fn scale(self, _: f64) -> Self { unreachable!("validated: PreMulSum is float-only") }
            // NCCL's ncclAvg on integers: the (wrapping) sum divided by n, truncated.
            fn div_n(self, n: usize) -> Self { ((self as i128) / (n as i128)) as $t }
            #[inline(always)] fn band(self, o: Self) -> Self { self & o }
            #[inline(always)] fn bor(self, o: Self) -> Self { self | o }
            #[inline(always)] fn bxor(self, o: Self) -> Self { self ^ o }
        }
    )*};
}
arith_int!(u8, i8, i16, u16, i32, u32, i64, u64);

macro_rules! arith_float {
    ($($t:ty),*) => {$(
        impl Arith for $t {
            #[inline(always)] fn greater(self, o: Self) -> bool { self > o }
            #[inline(always)] fn less(self, o: Self) -> bool { self < o }
            #[inline(always)] fn add(self, o: Self) -> Self { self + o }
            #[inline(always)] fn mul(self, o: Self) -> Self { self * o }
            #[inline(always)] fn scale(self, s: f64) -> Self { self * (s as $t) }
            #[inline(always)] fn div_n(self, n: usize) -> Self { self / (n as $t) }
            #[inline(always)] fn nan(self) -> bool { self.is_nan() }
            fn band(self, _: Self) -> Self { unreachable!("validated: bitwise ops are integer-only") }
            fn bor(self, _: Self) -> Self { unreachable!("validated: bitwise ops are integer-only") }
            fn bxor(self, _: Self) -> Self { unreachable!("validated: bitwise ops are integer-only") }
        }
    )*};
}
arith_float!(f32, f64);

macro_rules! arith_half {
    ($($t:ty),*) => {$(
        impl Arith for $t {
            #[inline(always)] fn greater(self, o: Self) -> bool { self > o }
            #[inline(always)] fn less(self, o: Self) -> bool { self < o }
            #[inline(always)] fn add(self, o: Self) -> Self { self + o }
            #[inline(always)] fn mul(self, o: Self) -> Self { self * o }
            #[inline(always)] fn scale(self, s: f64) -> Self { self * <$t>::from_f64(s) }
            #[inline(always)] fn div_n(self, n: usize) -> Self { self / <$t>::from_f64(n as f64) }
            #[inline(always)] fn nan(self) -> bool { self.is_nan() }
            fn band(self, _: Self) -> Self { unreachable!("validated: bitwise ops are integer-only") }
            fn bor(self, _: Self) -> Self { unreachable!("validated: bitwise ops are integer-only") }
            fn bxor(self, _: Self) -> Self { unreachable!("validated: bitwise ops are integer-only") }
        }
    )*};
}
arith_half!(f16, bf16);

macro_rules! arith_complex {
    ($($t:ty),*) => {$(
        impl Arith for Complex<$t> {
            fn greater(self, _: Self) -> bool { unreachable!("validated: complex numbers have no order") }
            fn less(self, _: Self) -> bool { unreachable!("validated: complex numbers have no order") }
            #[inline(always)] fn add(self, o: Self) -> Self { self + o }
            #[inline(always)] fn mul(self, o: Self) -> Self { self * o }
            #[inline(always)] fn scale(self, s: f64) -> Self { self * (s as $t) }
            #[inline(always)] fn div_n(self, n: usize) -> Self { self / (n as $t) }
            #[inline(always)] fn nan(self) -> bool { self.re.is_nan() || self.im.is_nan() }
            fn band(self, _: Self) -> Self { unreachable!("validated: bitwise ops are integer-only") }
            fn bor(self, _: Self) -> Self { unreachable!("validated: bitwise ops are integer-only") }
            fn bxor(self, _: Self) -> Self { unreachable!("validated: bitwise ops are integer-only") }
        }
        impl Identity for Complex<$t> {
            fn identity(op: ReduceOp) -> Self {
                Complex::new(if op == ReduceOp::Prod { 1.0 } else { 0.0 }, 0.0)
            }
        }
    )*};
}
arith_complex!(f32, f64);

#[inline(always)]
fn combine<T: Arith>(op: ReduceOp, a: T, b: T) -> T {
    match op {
        // Avg and PreMulSum accumulate as a sum; `finish` applies the scale once.
        ReduceOp::Sum | ReduceOp::Avg | ReduceOp::PreMulSum(_) => a.add(b),
        ReduceOp::Prod => a.mul(b),
        ReduceOp::BAnd => a.band(b),
        ReduceOp::BOr => a.bor(b),
        ReduceOp::BXor => a.bxor(b),
        ReduceOp::User(_) => unreachable!("user reductions run their own function (reduce_into)"),
        // A NaN wins (as torch.maximum/minimum): the result is NaN wherever any rank has
        // one, whatever the order ranks combine in, so it is the same on every rank.
        ReduceOp::Max => {
            if b.greater(a) || b.nan() {
                b
            } else {
                a
            }
        }
        ReduceOp::Min => {
            if b.less(a) || b.nan() {
                b
            } else {
                a
            }
        }
    }
}

fn reduce_typed<T: Arith + bytemuck::Pod>(op: ReduceOp, acc: &mut [u8], src: &[u8]) {
    let acc: &mut [T] = bytemuck::cast_slice_mut(acc);
    let src: &[T] = bytemuck::cast_slice(src);
    debug_assert_eq!(acc.len(), src.len());
    // Specialise the hot ops so the loop body is a single vectorisable operation.
    match op {
        ReduceOp::Sum | ReduceOp::Avg | ReduceOp::PreMulSum(_) => {
            for (a, b) in acc.iter_mut().zip(src) {
                *a = a.add(*b);
            }
        }
        _ => {
            for (a, b) in acc.iter_mut().zip(src) {
                *a = combine(op, *a, *b);
            }
        }
    }
}

/// `acc ⊕= src` with each result also stored in `out`: one pass where a fold's last
/// step and a copy of its result took two.
fn reduce_copy_typed<T: Arith + bytemuck::Pod>(op: ReduceOp, acc: &mut [u8], src: &[u8], out: &mut [u8]) {
    let acc: &mut [T] = bytemuck::cast_slice_mut(acc);
    let src: &[T] = bytemuck::cast_slice(src);
    let out: &mut [T] = bytemuck::cast_slice_mut(out);
    debug_assert!(acc.len() == src.len() && acc.len() == out.len());
    match op {
        ReduceOp::Sum => {
            for ((a, b), o) in acc.iter_mut().zip(src).zip(out.iter_mut()) {
                let v = a.add(*b);
                *a = v;
                *o = v;
            }
        }
        _ => {
            for ((a, b), o) in acc.iter_mut().zip(src).zip(out.iter_mut()) {
                let v = combine(op, *a, *b);
                *a = v;
                *o = v;
            }
        }
    }
}

fn finish_typed<T: Arith + bytemuck::Pod>(op: ReduceOp, n: usize, acc: &mut [u8]) {
    let acc: &mut [T] = bytemuck::cast_slice_mut(acc);
    match op {
        ReduceOp::Avg => acc.iter_mut().for_each(|a| *a = a.div_n(n)),
        ReduceOp::PreMulSum(s) => acc.iter_mut().for_each(|a| *a = a.scale(s)),
        _ => {}
    }
}

macro_rules! dispatch {
    ($dtype:expr, $f:ident, $($args:expr),*) => {
        match $dtype {
            DType::U8 => $f::<u8>($($args),*),
            DType::I8 => $f::<i8>($($args),*),
            DType::I32 => $f::<i32>($($args),*),
            DType::U32 => $f::<u32>($($args),*),
            DType::I64 => $f::<i64>($($args),*),
            DType::U64 => $f::<u64>($($args),*),
            DType::I16 => $f::<i16>($($args),*),
            DType::U16 => $f::<u16>($($args),*),
            DType::C64 => $f::<Complex<f32>>($($args),*),
            DType::C128 => $f::<Complex<f64>>($($args),*),
            DType::F16 => $f::<f16>($($args),*),
            DType::BF16 => $f::<bf16>($($args),*),
            DType::F32 => $f::<f32>($($args),*),
            DType::F64 => $f::<f64>($($args),*),
            DType::Bool => unreachable!("bool is reduced as u8 (ReduceOp::on_bool)"),
        }
    };
}

/// The identity of `op` for `Self` (what an exclusive scan leaves on rank 0).
trait Identity: Sized {
    fn identity(op: ReduceOp) -> Self;
}

macro_rules! identity_int {
    ($($t:ty),*) => {$(
        impl Identity for $t {
            fn identity(op: ReduceOp) -> Self {
                match op {
                    ReduceOp::Prod => 1,
                    ReduceOp::Max => <$t>::MIN,
                    ReduceOp::Min => <$t>::MAX,
                    ReduceOp::BAnd => !0,
                    _ => 0,
                }
            }
        }
    )*};
}
identity_int!(u8, i8, i16, u16, i32, u32, i64, u64);

macro_rules! identity_float {
    ($($t:ty: $one:expr, $zero:expr),*) => {$(
        impl Identity for $t {
            fn identity(op: ReduceOp) -> Self {
                match op {
                    ReduceOp::Prod => $one,
                    ReduceOp::Max => <$t>::NEG_INFINITY,
                    ReduceOp::Min => <$t>::INFINITY,
                    _ => $zero,
                }
            }
        }
    )*};
}
identity_float!(f32: 1.0, 0.0, f64: 1.0, 0.0, f16: f16::ONE, f16::ZERO, bf16: bf16::ONE, bf16::ZERO);

fn identity_typed<T: Identity + bytemuck::Pod>(op: ReduceOp, buf: &mut [u8]) {
    let v = T::identity(op);
    bytemuck::cast_slice_mut::<u8, T>(buf).iter_mut().for_each(|x| *x = v);
}

/// Fills `buf` with the identity of `op` (0 for sums, 1 for products, the lowest value
/// for Max, the highest for Min, all ones for BAnd): the result of a reduction over no
/// rank, which an exclusive scan gives rank 0. A user reduction has no known identity:
/// `buf` is left as it is.
pub(crate) fn identity(dtype: DType, op: ReduceOp, buf: &mut [u8]) {
    if let ReduceOp::User(_) = op {
        return;
    }
    if dtype == DType::Bool {
        return buf.fill(u8::from(op.on_bool() == ReduceOp::BAnd));
    }
    dispatch!(dtype, identity_typed, op, buf)
}

/// Whether `a ⊕ b` and `b ⊕ a` are the same value for `op`, so a rank may fold its own
/// contribution out of rank order: the built-in arithmetic and bitwise ops (IEEE addition
/// and multiplication commute; where two ranks hold NaN in one element, which NaN's
/// payload survives may differ from the staging path's). Not Max and Min on floats
/// (which of +0 and −0 wins depends on the order), nor a user reduction.
pub(crate) fn commutes(dtype: DType, op: ReduceOp) -> bool {
    let float = matches!(dtype, DType::F16 | DType::BF16 | DType::F32 | DType::F64 | DType::C64 | DType::C128);
    match op {
        ReduceOp::User(_) => false,
        ReduceOp::Max | ReduceOp::Min => !float,
        _ => true,
    }
}

/// `acc[i] = acc[i] ⊕ src[i]` over elements of `dtype`. Both slices hold whole elements
/// and are aligned for `dtype` (the backends guarantee it).
pub(crate) fn reduce_into(dtype: DType, op: ReduceOp, acc: &mut [u8], src: &[u8]) {
    if let ReduceOp::User(u) = op {
        return u.apply(acc, src);
    }
    if dtype == DType::Bool {
        // 0 or 1 in, 0 or 1 out: a bool buffer never holds another byte.
        return reduce_typed::<u8>(op.on_bool(), acc, src);
    }
    dispatch!(dtype, reduce_typed, op, acc, src)
}

/// `out` = the contributions `parts` (each `out.len()` bytes, in rank order) folded left
/// to right, then the post-step of `op` over their count: the fold every rank that holds
/// all contributions runs, so all of them get the same bits.
pub(crate) fn fold_in_order<'a>(dtype: DType, op: ReduceOp, out: &mut [u8], parts: impl IntoIterator<Item = &'a [u8]>) {
    let mut n = 0;
    for p in parts {
        if n == 0 {
            out.copy_from_slice(p);
        } else {
            reduce_into(dtype, op, out, p);
        }
        n += 1;
    }
    finish(dtype, op, n, out);
}

/// The last step of a fold over `n` contributions: `acc ⊕= src`, the post-step of `op`
/// (`finish`), and the result copied to `out` as well (in one pass over the three
/// slices where there is no post-step and the op is built in). `out` must be aligned for
/// `dtype` like the others.
pub(crate) fn fold_last(dtype: DType, op: ReduceOp, n: usize, acc: &mut [u8], src: &[u8], out: &mut [u8]) {
    let post = matches!(op, ReduceOp::Avg | ReduceOp::PreMulSum(_));
    if post || matches!(op, ReduceOp::User(_)) {
        reduce_into(dtype, op, acc, src);
        finish(dtype, op, n, acc);
        return out.copy_from_slice(acc);
    }
    if dtype == DType::Bool {
        return reduce_copy_typed::<u8>(op.on_bool(), acc, src, out);
    }
    dispatch!(dtype, reduce_copy_typed, op, acc, src, out)
}

/// Applies the post-step of `op` once all `n` contributions are combined
/// (division for `Avg`, scaling for `PreMulSum`; nothing otherwise).
pub(crate) fn finish(dtype: DType, op: ReduceOp, n: usize, acc: &mut [u8]) {
    if matches!(op, ReduceOp::Avg | ReduceOp::PreMulSum(_)) && dtype != DType::Bool {
        dispatch!(dtype, finish_typed, op, n, acc)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn int_sum_wraps_and_max_min() {
        let mut a = [250u8, 1, 7];
        reduce_into(DType::U8, ReduceOp::Sum, &mut a, &[10, 2, 0]);
        assert_eq!(a, [4, 3, 7]);
        let mut a = [-5i32, 9];
        reduce_into(DType::I32, ReduceOp::Max, bytemuck::cast_slice_mut(&mut a), bytemuck::cast_slice(&[3i32, 2]));
        assert_eq!(a, [3, 9]);
        reduce_into(DType::I32, ReduceOp::Min, bytemuck::cast_slice_mut(&mut a), bytemuck::cast_slice(&[4i32, -1]));
        assert_eq!(a, [3, -1]);
    }

    /// A NaN wins Max and Min in either operand position, so the order ranks combine
    /// in cannot change the result.
    #[test]
    fn nan_wins_max_and_min_in_any_order() {
        for op in [ReduceOp::Max, ReduceOp::Min] {
            let mut a = [f32::NAN, 1.0, 2.0];
            reduce_into(
                DType::F32,
                op,
                bytemuck::cast_slice_mut(&mut a),
                bytemuck::cast_slice(&[1.0f32, f32::NAN, 3.0]),
            );
            assert!(a[0].is_nan() && a[1].is_nan(), "{op:?}: {a:?}");
            assert_eq!(a[2], if op == ReduceOp::Max { 3.0 } else { 2.0 });
            let mut h = [bf16::from_f32(1.0)];
            reduce_into(DType::BF16, op, bytemuck::cast_slice_mut(&mut h), bytemuck::cast_slice(&[bf16::NAN]));
            assert!(h[0].is_nan());
        }
    }

    /// `fold_last` gives `acc` and `out` what a fold, `finish` and a copy give.
    #[test]
    fn fold_last_matches_fold_finish_and_copy() {
        let ops =
            [ReduceOp::Sum, ReduceOp::Prod, ReduceOp::Max, ReduceOp::Min, ReduceOp::Avg, ReduceOp::PreMulSum(0.5)];
        for op in ops {
            let a0 = [1.5f32, -0.0, 7.25, f32::NAN, 3.0];
            let src = [2.0f32, 0.0, -1.0, 1.0, f32::INFINITY];
            let (mut want, mut acc, mut out) = (a0, a0, [9.0f32; 5]);
            let bytes = |x: &mut [f32; 5]| bytemuck::cast_slice_mut::<f32, u8>(x).to_vec();
            reduce_into(DType::F32, op, bytemuck::cast_slice_mut(&mut want), bytemuck::cast_slice(&src));
            finish(DType::F32, op, 3, bytemuck::cast_slice_mut(&mut want));
            fold_last(
                DType::F32,
                op,
                3,
                bytemuck::cast_slice_mut(&mut acc),
                bytemuck::cast_slice(&src),
                bytemuck::cast_slice_mut(&mut out),
            );
            assert_eq!(bytes(&mut acc), bytes(&mut want), "{op:?}");
            assert_eq!(bytes(&mut out), bytes(&mut want), "{op:?}");
        }
        let (mut acc, mut out) = ([250u8, 1], [0u8; 2]);
        fold_last(DType::U8, ReduceOp::Sum, 2, &mut acc, &[10, 2], &mut out);
        assert_eq!((acc, out), ([4, 3], [4, 3]));
        // bool (Max is OR), an integer Avg (truncating), a complex product
        let (mut acc, mut out) = ([0u8, 1, 0], [7u8; 3]);
        fold_last(DType::Bool, ReduceOp::Max, 2, &mut acc, &[0, 0, 1], &mut out);
        assert_eq!((acc, out), ([0, 1, 1], [0, 1, 1]));
        let (mut acc, mut out) = ([7i32, -7], [0i32; 2]);
        let (a, o) = (bytemuck::cast_slice_mut(&mut acc), bytemuck::cast_slice_mut(&mut out));
        fold_last(DType::I32, ReduceOp::Avg, 2, a, bytemuck::cast_slice(&[2i32, 0]), o);
        assert_eq!((acc, out), ([4, -3], [4, -3]));
        let z = |re: f32, im: f32| Complex::new(re, im);
        let (mut acc, mut out) = ([z(1.0, 2.0)], [z(0.0, 0.0)]);
        let (a, o) = (bytemuck::cast_slice_mut(&mut acc), bytemuck::cast_slice_mut(&mut out));
        fold_last(DType::C64, ReduceOp::Prod, 2, a, bytemuck::cast_slice(&[z(3.0, -1.0)]), o);
        assert_eq!((acc[0], out[0]), (z(5.0, 5.0), z(5.0, 5.0)));
    }

    #[test]
    fn avg_and_premul_finish() {
        let mut a = [1.0f32, 2.0];
        reduce_into(DType::F32, ReduceOp::Avg, bytemuck::cast_slice_mut(&mut a), bytemuck::cast_slice(&[3.0f32, 4.0]));
        finish(DType::F32, ReduceOp::Avg, 2, bytemuck::cast_slice_mut(&mut a));
        assert_eq!(a, [2.0, 3.0]);
        let mut h = [f16::from_f32(1.5)];
        finish(DType::F16, ReduceOp::PreMulSum(2.0), 1, bytemuck::cast_slice_mut(&mut h));
        assert_eq!(h[0], f16::from_f32(3.0));
    }
}
