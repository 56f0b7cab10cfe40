//! NCCL's element types for dist's: what each op passes NCCL as its type and count.

use crate::dtype::DType;
use cudarc::nccl::sys;

/// NCCL's type of a dist element type (the same ten; `i16`/`u16`, which NCCL lacks,
/// travel as 16-bit words of another type, which ops that only move data never read —
/// `NcclComm::launch` refuses to reduce them).
pub(crate) fn nccl_type(d: DType) -> sys::ncclDataType_t {
    use sys::ncclDataType_t::*;
    match d {
        DType::I8 => ncclInt8,
        DType::U8 | DType::Bool => ncclUint8,
        DType::I32 => ncclInt32,
        DType::U32 => ncclUint32,
        DType::I64 => ncclInt64,
        DType::U64 => ncclUint64,
        DType::F16 => ncclFloat16,
        DType::BF16 => ncclBfloat16,
        DType::F32 => ncclFloat32,
        DType::F64 => ncclFloat64,
        DType::I16 | DType::U16 => ncclFloat16,
        // A complex number is a pair of floats: sums, averages and scalings of pairs are
        // those of the numbers; `launch` refuses the product.
        DType::C64 => ncclFloat32,
        DType::C128 => ncclFloat64,
    }
}

/// Bytes of one element of [`nccl_type`]`(d)`: counts passed to NCCL are in these.
pub(crate) fn nccl_size(d: DType) -> usize {
    match d {
        DType::C64 => 4,
        DType::C128 => 8,
        d => d.size(),
    }
}
