//! Element types and reductions on MPI: MPI's own datatypes and ops for the types it
//! has, user-defined ops (`MPI_Op_create`, over 16-bit words) for f16 and bf16 running
//! the same kernels as the shared-memory backend, and the post-steps of `Avg` and
//! `PreMulSum` (sum, then divide or scale, as on shm).

use super::call;
use crate::backend::reduce;
use crate::dtype::DType;
use crate::error::Result;
use crate::reduce_op::ReduceOp;
use mpi::ffi;
use std::ffi::{c_int, c_void};
use std::sync::OnceLock;

/// MPI's datatype for `d` (f16 and bf16 travel as 16-bit words, `Complex<f32>` as a
/// 64-bit word, `Complex<f64>` as a 16-byte contiguous type; all reduced by our kernels).
pub(super) fn datatype(d: DType) -> ffi::MPI_Datatype {
    // SAFETY: reading rsmpi's exported constants.
    unsafe {
        match d {
            DType::C64 => ffi::RSMPI_UINT64_T,
            DType::C128 => sixteen_bytes(),
            DType::U8 | DType::Bool => ffi::RSMPI_UINT8_T,
            DType::I8 => ffi::RSMPI_INT8_T,
            DType::I32 => ffi::RSMPI_INT32_T,
            DType::U32 => ffi::RSMPI_UINT32_T,
            DType::I64 => ffi::RSMPI_INT64_T,
            DType::U64 => ffi::RSMPI_UINT64_T,
            DType::I16 => ffi::RSMPI_INT16_T,
            DType::U16 => ffi::RSMPI_UINT16_T,
            DType::F16 | DType::BF16 => ffi::RSMPI_UINT16_T,
            DType::F32 => ffi::RSMPI_FLOAT,
            DType::F64 => ffi::RSMPI_DOUBLE,
        }
    }
}

/// A committed contiguous type of 16 bytes (one `Complex<f64>`), made once.
fn sixteen_bytes() -> ffi::MPI_Datatype {
    struct Type(ffi::MPI_Datatype);
    // SAFETY: a datatype handle is a plain value, used under the backend's lock.
    unsafe impl Send for Type {}
    // SAFETY: as above.
    unsafe impl Sync for Type {}
    static T: OnceLock<Type> = OnceLock::new();
    T.get_or_init(|| {
        // SAFETY: a placeholder, overwritten by MPI_Type_contiguous; MPI is initialized
        // (an op is running).
        let mut t: ffi::MPI_Datatype = unsafe { ffi::RSMPI_UINT8_T };
        // SAFETY: valid arguments; the type is committed before use and lives until
        // MPI_Finalize.
        unsafe {
            ffi::MPI_Type_contiguous(16, ffi::RSMPI_UINT8_T, &mut t);
            ffi::MPI_Type_commit(&mut t);
        }
        Type(t)
    })
    .0
}

/// Bytes, for the ops that only move data.
pub(super) fn bytes() -> ffi::MPI_Datatype {
    // SAFETY: reading rsmpi's exported constant.
    unsafe { ffi::RSMPI_UINT8_T }
}

/// The combining step of `op` (Avg and PreMulSum combine by summing).
fn combine(op: ReduceOp) -> ReduceOp {
    match op {
        ReduceOp::Avg | ReduceOp::PreMulSum(_) => ReduceOp::Sum,
        o => o,
    }
}

macro_rules! user_ops {
    ($($name:ident: $dt:ident, $op:ident;)*) => {
        $(
            /// An `MPI_User_function` reducing `*len` elements with the shm kernels.
            unsafe extern "C" fn $name(inv: *mut c_void, inout: *mut c_void, len: *mut c_int, _dt: *mut ffi::MPI_Datatype) {
                // SAFETY: MPI passes two buffers of `*len` elements of the type.
                unsafe {
                    let n = *len as usize * DType::$dt.size();
                    if n == 0 || inv.is_null() || inout.is_null() {
                        return; // Open MPI calls with no elements (and null buffers) in scans
                    }
                    let src = std::slice::from_raw_parts(inv as *const u8, n);
                    let acc = std::slice::from_raw_parts_mut(inout as *mut u8, n);
                    reduce::reduce_into(DType::$dt, ReduceOp::$op, acc, src);
                }
            }
        )*
        type UserFn = unsafe extern "C" fn(*mut c_void, *mut c_void, *mut c_int, *mut ffi::MPI_Datatype);
        /// The user-defined functions, in [`USER`]'s order.
        const USER_FNS: &[(DType, ReduceOp, UserFn)] = &[$((DType::$dt, ReduceOp::$op, $name)),*];
    };
}
// f16 and bf16, which MPI has no type for; 8- and 16-bit sums and products, which some
// builds of Open MPI 4.1 (its AVX op component) saturate instead of wrapping as Rust and
// shm do (seen: an i16 sum of 2 ranks gave 32767);
// float Max and Min, whose NaN handling MPI leaves to the order of the operands (ours:
// a NaN wins, the same on every rank and backend).
user_ops! {
    f16_sum: F16, Sum; f16_prod: F16, Prod; f16_max: F16, Max; f16_min: F16, Min;
    bf16_sum: BF16, Sum; bf16_prod: BF16, Prod; bf16_max: BF16, Max; bf16_min: BF16, Min;
    u8_sum: U8, Sum; u8_prod: U8, Prod; i8_sum: I8, Sum; i8_prod: I8, Prod;
    i16_sum: I16, Sum; i16_prod: I16, Prod; u16_sum: U16, Sum; u16_prod: U16, Prod;
    c64_sum: C64, Sum; c64_prod: C64, Prod; c128_sum: C128, Sum; c128_prod: C128, Prod;
    f32_max: F32, Max; f32_min: F32, Min; f64_max: F64, Max; f64_min: F64, Min;
}

/// The user-defined ops, created once (MPI ops live until MPI_Finalize).
struct UserOps(Vec<(DType, ReduceOp, ffi::MPI_Op)>);
// SAFETY: op handles are plain values, used under the backend's lock.
unsafe impl Send for UserOps {}
// SAFETY: as above.
unsafe impl Sync for UserOps {}

static USER_OPS: OnceLock<std::result::Result<UserOps, String>> = OnceLock::new();

fn user_ops() -> Result<&'static UserOps> {
    let ops = USER_OPS.get_or_init(|| {
        let mut out = Vec::new();
        for &(d, r, f) in USER_FNS {
            // SAFETY: a placeholder, overwritten by MPI_Op_create.
            let mut o: ffi::MPI_Op = unsafe { ffi::RSMPI_SUM };
            // SAFETY: `f` has MPI_User_function's signature; commutative.
            call("MPI_Op_create", || unsafe { ffi::MPI_Op_create(Some(f), 1, &mut o) }).map_err(|e| e.to_string())?;
            out.push((d, r, o));
        }
        Ok(UserOps(out))
    });
    ops.as_ref().map_err(|e| crate::error::Error::backend("mpi", e.clone()))
}

/// MPI's op combining elements of `d` for `op`: a user-defined one where MPI has none
/// (or a wrong one), else MPI's own.
pub(super) fn op(d: DType, op: ReduceOp) -> Result<ffi::MPI_Op> {
    // bool travels as bytes 0/1, combined bitwise (MPI_BOR/BAND/BXOR on MPI_UINT8_T).
    let c = if d == DType::Bool { op.on_bool() } else { combine(op) };
    if USER_FNS.iter().any(|&(ud, ur, _)| ud == d && ur == c) {
        let ops = user_ops()?;
        return Ok(ops.0.iter().find(|(ud, ur, _)| *ud == d && *ur == c).expect("created").2);
    }
    // SAFETY: reading rsmpi's exported constants.
    Ok(unsafe {
        match c {
            ReduceOp::Sum => ffi::RSMPI_SUM,
            ReduceOp::Prod => ffi::RSMPI_PROD,
            ReduceOp::Max => ffi::RSMPI_MAX,
            ReduceOp::BAnd => ffi::RSMPI_BAND,
            ReduceOp::BOr => ffi::RSMPI_BOR,
            ReduceOp::BXor => ffi::RSMPI_BXOR,
            ReduceOp::User(u) => {
                return Err(crate::error::Error::backend(
                    "mpi",
                    format!("internal error: the user reduction {:?} reached MPI's op table", u.name()),
                ))
            }
            _ => ffi::RSMPI_MIN,
        }
    })
}

/// The post-step of `op` on the combined result of `n` ranks.
pub(super) fn finish(d: DType, op: ReduceOp, n: usize, buf: &mut [u8]) {
    reduce::finish(d, op, n, buf)
}

/// A buffer's address for MPI; null when empty (an empty slice's dangling address is
/// 0x1, which Open MPI would read as MPI_IN_PLACE).
pub(super) fn ptr(b: &[u8]) -> *mut c_void {
    if b.is_empty() {
        std::ptr::null_mut()
    } else {
        b.as_ptr() as *mut c_void
    }
}

/// The tag of dist's own collective messages: the library's largest (`MPI_TAG_UB`, read
/// at init); `send`/`recv` refuse it on MPI.
pub(super) fn tag() -> c_int {
    super::TAG_UB.load(std::sync::atomic::Ordering::Relaxed)
}
