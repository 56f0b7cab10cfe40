//! Reduction operators, as torch.distributed's `ReduceOp`.

use crate::dtype::DType;
use crate::error::{Error, Result};

/// How a reduction combines the ranks' values, element by element.
///
/// Integer reductions are exact (sums and products wrap modulo 2^bits, as in NCCL).
/// `Avg` and `PreMulSum` are defined on floating-point types only.
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
    /// Sum divided by the number of ranks in the communicator (floats only).
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
}

impl ReduceOp {
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
            ReduceOp::Avg | ReduceOp::PreMulSum(_) if !dtype.is_float() => Err(Error::invalid(
                op_name,
                format!(
                    "ReduceOp::{:?} is defined on floating-point types only, not {dtype}; \
                     use ReduceOp::Sum and divide, or convert to f32",
                    self
                ),
            )),
            op if op.is_bitwise() && dtype.is_float() => Err(Error::invalid(
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
            _ => "premulsum",
        }
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
        }
    }
}
