//! Reduction operators, as torch.distributed's `ReduceOp`.

use crate::dtype::{DType, Element};
use crate::error::{Error, Result};

/// How a reduction combines the ranks' values, element by element.
///
/// Integer reductions are exact (sums and products wrap modulo 2^bits, as in NCCL).
/// `PreMulSum` is defined on floating-point types only; `Avg` on integers truncates, as NCCL's.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ReduceOp {
    /// Sum over ranks.
    Sum,
    /// Product over ranks.
    Prod,
    /// Maximum over ranks. On floats a NaN wins (as `torch.maximum`): an element is NaN
    /// wherever any rank's is, the same on every rank, on shm and MPI (NCCL applies its
    /// own max).
    Max,
    /// Minimum over ranks; a NaN wins, as for [`Max`](ReduceOp::Max).
    Min,
    /// Sum divided by the number of ranks in the communicator. On integers, as NCCL's
    /// `ncclAvg`: the sum (wrapping, as `Sum`) divided by the count, truncated toward
    /// zero.
    Avg,
    /// Sum multiplied by a scalar: `s * Σ x_r` (floats only; torch's `_make_nccl_premul_sum`).
    PreMulSum(f64),
    /// Bitwise AND over ranks (integers only; torch's `ReduceOp.BAND`, MPI's `MPI_BAND`).
    #[doc(alias = "BAND")]
    BAnd,
    /// Bitwise OR over ranks (integers only; torch's `ReduceOp.BOR`).
    #[doc(alias = "BOR")]
    BOr,
    /// Bitwise XOR over ranks (integers only; torch's `ReduceOp.BXOR`).
    #[doc(alias = "BXOR")]
    BXor,
    /// A reduction of your own (MPI's `MPI_Op_create`): made by
    /// [`ReduceOp::user`].
    User(UserReduce),
}

/// A user-defined reduction: a named function `f(acc, x)` that folds `x` into `acc`
/// element by element, for one element type. See [`ReduceOp::user`].
#[derive(Clone, Copy)]
pub struct UserReduce {
    name: &'static str,
    dtype: DType,
    /// Elements per item: `f` always sees whole items.
    width: usize,
    /// The user's `fn(&mut [T], &[T])`, as an address (a `ReduceOp` is `Send`).
    f: usize,
    /// Calls `f` on byte slices holding elements of `dtype`.
    apply: fn(usize, &mut [u8], &[u8]),
}

impl UserReduce {
    /// The name it was given.
    pub fn name(&self) -> &'static str {
        self.name
    }
    /// The element type it combines.
    pub fn dtype(&self) -> DType {
        self.dtype
    }
    /// `acc ⊕= src` over elements of its type (both aligned, of equal length).
    pub(crate) fn apply(&self, acc: &mut [u8], src: &[u8]) {
        (self.apply)(self.f, acc, src)
    }
}

fn apply_typed<T: Element>(f: usize, acc: &mut [u8], src: &[u8]) {
    // SAFETY: `f` was made from a `fn(&mut [T], &[T])` by `ReduceOp::user::<T>`, the only
    // place that pairs it with this `apply_typed::<T>`.
    let f: fn(&mut [T], &[T]) = unsafe { std::mem::transmute::<usize, fn(&mut [T], &[T])>(f) };
    f(crate::dtype::from_bytes_mut(acc), crate::dtype::from_bytes(src))
}

impl PartialEq for UserReduce {
    fn eq(&self, o: &Self) -> bool {
        self.name == o.name && self.dtype == o.dtype && self.width == o.width && self.f == o.f
    }
}

impl std::fmt::Debug for UserReduce {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "User({:?} on {})", self.name, self.dtype)
    }
}

impl ReduceOp {
    /// A reduction of your own: `f(acc, x)` folds the values `x` of one rank into the
    /// running result `acc`, element by element (both slices have the same length; the
    /// fold may go by pairs or blocks, e.g. a (value, index) argmax over `[f32; 2]`
    /// pairs laid out flat). `f` must be associative; it need not be commutative:
    /// every reducing op applies it in rank order, `((x₀ ⊕ x₁) ⊕ x₂) ⊕ …`, so the
    /// result is bitwise the same on every rank and every run. `name` identifies it
    /// across ranks (the run-time check compares it, with the type).
    ///
    /// It runs in every reducing op on host buffers: `all_reduce`, `reduce`,
    /// `reduce_scatter(_v)`, `scan`, `exscan` (whose rank 0 keeps its buffer: a user
    /// reduction has no known identity) and their `_async` forms. On the shared-memory
    /// backend it runs in the same pipeline as the built-in ops; on MPI every
    /// contribution is gathered and folded locally (MPI cannot call Rust functions on
    /// its own buffers without a registry of datatypes); NCCL cannot run it on device
    /// buffers (an error says so).
    ///
    /// ```
    /// # use dist_runtime::prelude::*;
    /// // The value of largest magnitude, sign kept; on a tie the lower rank's wins.
    /// fn abs_max(acc: &mut [f32], x: &[f32]) {
    ///     for (a, b) in acc.iter_mut().zip(x) {
    ///         if b.abs() > a.abs() {
    ///             *a = *b;
    ///         }
    ///     }
    /// }
    /// # #[spmd(ranks = 4)]
    /// # fn demo(world: Comm<World>) -> dist_runtime::Result<()> {
    /// // Ranks 0..4 hold 1, -2, 2, -1: -2 (rank 1) and 2 (rank 2) tie, rank 1 wins.
    /// let mut x = [[1.0f32, -2.0, 2.0, -1.0][world.rank()]];
    /// world.all_reduce(&mut x, ReduceOp::user("abs_max", abs_max))?;
    /// assert_eq!(x, [-2.0]);
    /// # Ok(()) }
    /// # fn main() { dist_runtime::launch(4, demo).unwrap(); }
    /// ```
    pub fn user<T: Element>(name: &'static str, f: fn(&mut [T], &[T])) -> ReduceOp {
        ReduceOp::user_items(name, 1, f)
    }

    /// As [`user`](Self::user), for items of `width` elements laid out flat (a
    /// (value, index) pair is `width` 2, as MPI's `MAXLOC`): `f` only ever sees whole
    /// items, and every buffer (and every block of a reduce-scatter) must hold a whole
    /// number of them.
    ///
    /// ```
    /// # use dist_runtime::prelude::*;
    /// // Keep the (score, rank) pair with the highest score; ties go to the lower rank.
    /// fn best(acc: &mut [f64], x: &[f64]) {
    ///     for (a, b) in acc.chunks_exact_mut(2).zip(x.chunks_exact(2)) {
    ///         if b[0] > a[0] {
    ///             a.copy_from_slice(b);
    ///         }
    ///     }
    /// }
    /// # #[spmd(ranks = 4)]
    /// # fn demo(world: Comm<World>) -> dist_runtime::Result<()> {
    /// let r = world.rank() as f64;
    /// let mut top = [(r - 1.0).abs(), r]; // ranks 0 and 2 tie at 1.0
    /// world.all_reduce(&mut top, ReduceOp::user_items("best", 2, best))?;
    /// assert_eq!(top, [2.0, 3.0]); // rank 3's |3 - 1|
    /// # Ok(()) }
    /// # fn main() { dist_runtime::launch(4, demo).unwrap(); }
    /// ```
    pub fn user_items<T: Element>(name: &'static str, width: usize, f: fn(&mut [T], &[T])) -> ReduceOp {
        ReduceOp::User(UserReduce {
            name,
            dtype: T::DTYPE,
            width: width.max(1),
            f: f as usize,
            apply: apply_typed::<T>,
        })
    }

    /// The bitwise op that `self` is on `bool` values (0 or 1), as torch defines them:
    /// Sum and Max are a logical or, Prod and Min a logical and. Backends reduce `bool`
    /// as bytes with it.
    pub(crate) fn on_bool(self) -> ReduceOp {
        match self {
            ReduceOp::Sum | ReduceOp::Max => ReduceOp::BOr,
            ReduceOp::Prod | ReduceOp::Min => ReduceOp::BAnd,
            o => o,
        }
    }

    /// Elements per item: what a backend may never cut (1 but for user reductions).
    pub(crate) fn width(&self) -> usize {
        match self {
            ReduceOp::User(u) => u.width,
            _ => 1,
        }
    }

    /// Checks that `len` elements (the buffer `what` of `op_name`) are whole items.
    #[track_caller]
    pub(crate) fn check_items(&self, op_name: &'static str, what: &str, len: usize) -> Result<()> {
        let w = self.width();
        if len.is_multiple_of(w) {
            return Ok(());
        }
        Err(Error::invalid(
            op_name,
            format!(
                "{what} holds {len} elements, not a whole number of items of {w} (the user reduction {:?} \
                 combines whole items)",
                self.name()
            ),
        ))
    }

    /// Short name, for messages and benchmark tables.
    pub fn name(&self) -> &'static str {
        match self {
            ReduceOp::Sum => "sum",
            ReduceOp::Prod => "prod",
            ReduceOp::Max => "max",
            ReduceOp::Min => "min",
            ReduceOp::Avg => "avg",
            ReduceOp::PreMulSum(_) => "premulsum",
            ReduceOp::BAnd => "band",
            ReduceOp::BOr => "bor",
            ReduceOp::BXor => "bxor",
            ReduceOp::User(u) => u.name,
        }
    }

    /// Whether this is a bitwise op (integers only).
    pub(crate) fn is_bitwise(&self) -> bool {
        matches!(self, ReduceOp::BAnd | ReduceOp::BOr | ReduceOp::BXor)
    }

    /// Checks that the op applies to `dtype`.
    #[track_caller]
    pub(crate) fn validate(&self, dtype: DType, op_name: &'static str) -> Result<()> {
        match self {
            ReduceOp::PreMulSum(_) if !dtype.is_float() && !dtype.is_complex() => Err(Error::invalid(
                op_name,
                format!(
                    "ReduceOp::{:?} is defined on floating-point types only, not {dtype}; \
                     use ReduceOp::Sum and divide, or convert to f32",
                    self
                ),
            )),
            ReduceOp::Avg | ReduceOp::PreMulSum(_) if dtype == DType::Bool => Err(Error::invalid(
                op_name,
                format!(
                    "ReduceOp::{self:?} is not defined on bool (as torch); use Sum or Max for a logical or, Prod or \
                     Min for a logical and, or count in an integer type"
                ),
            )),
            ReduceOp::Max | ReduceOp::Min if dtype.is_complex() => Err(Error::invalid(
                op_name,
                format!(
                    "ReduceOp::{self:?} needs an order, and {dtype} has none; reduce the magnitudes (a float \
                     buffer), or use a user reduction"
                ),
            )),
            op if op.is_bitwise() && (dtype.is_float() || dtype.is_complex()) => Err(Error::invalid(
                op_name,
                format!(
                    "ReduceOp::{:?} is defined on integer types only, not {dtype}; reinterpret the bits as an \
                     integer type of the same width (bytemuck::cast_slice) to combine them bitwise",
                    self
                ),
            )),
            ReduceOp::PreMulSum(s) if !s.is_finite() => {
                Err(Error::invalid(op_name, format!("ReduceOp::PreMulSum scalar must be finite, got {s}")))
            }
            ReduceOp::User(u) if u.dtype != dtype => Err(Error::invalid(
                op_name,
                format!("the user reduction {:?} combines {} values, but the buffer holds {dtype}", u.name, u.dtype),
            )),
            _ => Ok(()),
        }
    }

    /// The name of the op a [`code`](Self::code) stands for.
    pub(crate) fn name_of_code(code: u64) -> &'static str {
        match code {
            1 => "sum",
            2 => "prod",
            3 => "max",
            4 => "min",
            5 => "avg",
            7 => "band",
            8 => "bor",
            9 => "bxor",
            c if c & 0xff == 0x0a && c >> 63 == 1 => "a user reduction",
            _ => "premulsum",
        }
    }

    /// The scale of the `PreMulSum` whose [`code`](Self::code) is `code`.
    pub(crate) fn premul_scale_of_code(code: u64) -> f64 {
        f64::from_bits((code ^ 6).rotate_right(8))
    }

    /// A stable code for fingerprints (bit pattern of the scalar included).
    pub(crate) fn code(&self) -> u64 {
        match self {
            ReduceOp::Sum => 1,
            ReduceOp::Prod => 2,
            ReduceOp::Max => 3,
            ReduceOp::Min => 4,
            ReduceOp::Avg => 5,
            ReduceOp::BAnd => 7,
            ReduceOp::BOr => 8,
            ReduceOp::BXor => 9,
            ReduceOp::PreMulSum(s) => 6 ^ s.to_bits().rotate_left(8),
            // Its name and type (its address differs from process to process).
            ReduceOp::User(u) => {
                let mut h: u64 = 0xcbf2_9ce4_8422_2325 ^ u.dtype as u64 ^ (u.width as u64) << 8;
                for b in u.name.bytes() {
                    h = (h ^ b as u64).wrapping_mul(0x100_0000_01b3);
                }
                (h << 8) | (1 << 63) | 0x0a
            }
        }
    }
}
