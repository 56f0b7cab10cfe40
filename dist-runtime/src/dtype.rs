//! Element types a communicator moves (the reduction kernels over their bytes are in
//! `backend/reduce.rs`).
//!
//! Backends see only bytes plus a [`DType`]; [`Element`] ties a Rust type to its tag so
//! the typed face (`Comm<G>`) can hand bytes down without ever guessing a layout.

use half::{bf16, f16};
use num_complex::Complex;

/// The element types a communicator moves: NCCL's ten, which every backend supports,
/// and `i16`/`u16` (torch's `int16`/`uint16`), which NCCL moves but cannot reduce, and
/// the complex types (torch's `complex64`/`complex128`), which NCCL sums as pairs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum DType {
    /// `u8`
    U8 = 1,
    /// `i8`
    I8 = 2,
    /// `i32`
    I32 = 3,
    /// `u32`
    U32 = 4,
    /// `i64`
    I64 = 5,
    /// `u64`
    U64 = 6,
    /// `half::f16`
    F16 = 7,
    /// `half::bf16`
    BF16 = 8,
    /// `f32`
    F32 = 9,
    /// `f64`
    F64 = 10,
    /// `i16`
    I16 = 11,
    /// `u16`
    U16 = 12,
    /// `Complex<f32>` (torch's `complex64`)
    C64 = 13,
    /// `Complex<f64>` (torch's `complex128`)
    C128 = 14,
    /// `bool` (one byte, 0 or 1): Sum and Max are a logical or, Prod and Min a logical
    /// and, as torch defines them; BAnd, BOr, BXor too
    Bool = 15,
}

/// A message of `len` bytes of `dtype` (when known), in the receiver's terms: "8 × f32, 32
/// bytes", or "32 bytes of an unknown type" for a type the header does not name.
pub(crate) fn sent_as(dtype: Option<DType>, len: usize) -> String {
    match dtype {
        Some(d) if len.is_multiple_of(d.size()) => format!("{} × {}, {len} bytes", len / d.size(), d.name()),
        Some(d) => format!("{len} bytes of {}", d.name()),
        None => format!("{len} bytes of an unknown type"),
    }
}

impl DType {
    /// Size of one element in bytes.
    pub const fn size(self) -> usize {
        match self {
            DType::U8 | DType::I8 | DType::Bool => 1,
            DType::F16 | DType::BF16 | DType::I16 | DType::U16 => 2,
            DType::I32 | DType::U32 | DType::F32 => 4,
            DType::I64 | DType::U64 | DType::F64 | DType::C64 => 8,
            DType::C128 => 16,
        }
    }

    /// Whether the type is a floating-point type (where `Avg` and `PreMulSum` apply).
    pub const fn is_float(self) -> bool {
        matches!(self, DType::F16 | DType::BF16 | DType::F32 | DType::F64)
    }

    /// Whether the type is a complex type (`Sum`, `Prod`, `Avg`, `PreMulSum` apply;
    /// complex numbers have no order).
    pub const fn is_complex(self) -> bool {
        matches!(self, DType::C64 | DType::C128)
    }

    /// The Rust name of the type, for messages.
    pub const fn name(self) -> &'static str {
        match self {
            DType::U8 => "u8",
            DType::I8 => "i8",
            DType::I32 => "i32",
            DType::U32 => "u32",
            DType::I64 => "i64",
            DType::U64 => "u64",
            DType::F16 => "f16",
            DType::BF16 => "bf16",
            DType::F32 => "f32",
            DType::F64 => "f64",
            DType::I16 => "i16",
            DType::U16 => "u16",
            DType::C64 => "Complex<f32>",
            DType::C128 => "Complex<f64>",
            DType::Bool => "bool",
        }
    }

    pub(crate) fn from_u8(v: u8) -> Option<DType> {
        Some(match v {
            1 => DType::U8,
            2 => DType::I8,
            3 => DType::I32,
            4 => DType::U32,
            5 => DType::I64,
            6 => DType::U64,
            7 => DType::F16,
            8 => DType::BF16,
            9 => DType::F32,
            10 => DType::F64,
            11 => DType::I16,
            12 => DType::U16,
            13 => DType::C64,
            14 => DType::C128,
            15 => DType::Bool,
            _ => return None,
        })
    }
}

impl std::fmt::Display for DType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

mod sealed {
    pub trait Sealed {}
}

/// A type that can travel through a communicator: plain bytes, no padding, a [`DType`] tag.
///
/// Sealed: implemented for `u8, i8, i16, u16, i32, u32, i64, u64, f16, bf16, f32, f64`,
/// `bool` and `Complex<f32>`, `Complex<f64>` (re-exported as [`Complex`](crate::Complex)).
///
/// Every type but `bool` is [`bytemuck::Pod`] (any bytes are a value); a `bool` buffer
/// is only ever written with bytes that came from `bool`s (the types of both ends agree,
/// checked) or with the result of a logical reduction of them, so it holds 0 or 1.
pub trait Element:
    bytemuck::NoUninit + Copy + PartialEq + std::fmt::Debug + Send + Sync + 'static + sealed::Sealed
{
    /// The tag backends see.
    const DTYPE: DType;
}

macro_rules! element {
    ($($t:ty => $d:ident),* $(,)?) => {$(
        impl sealed::Sealed for $t {}
        impl Element for $t { const DTYPE: DType = DType::$d; }
    )*};
}
element!(u8 => U8, i8 => I8, i32 => I32, u32 => U32, i64 => I64, u64 => U64,
         f16 => F16, bf16 => BF16, f32 => F32, f64 => F64, i16 => I16, u16 => U16,
         Complex<f32> => C64, Complex<f64> => C128, bool => Bool);

/// The bytes of a slice of elements.
pub(crate) fn as_bytes<T: Element>(s: &[T]) -> &[u8] {
    bytemuck::cast_slice(s)
}

/// The bytes of a mutable slice of elements, for a backend to write.
pub(crate) fn as_bytes_mut<T: Element>(s: &mut [T]) -> &mut [u8] {
    let n = std::mem::size_of_val(s);
    // SAFETY: `T` has no padding and no uninitialised bytes (`NoUninit`), so its bytes
    // are initialised `u8`s; the length is the slice's size in bytes and `u8` has
    // alignment 1. What is written through the view is a value of `T`: every `Element`
    // but `bool` accepts any bytes, and a `bool` buffer receives only bytes of `bool`s
    // (both ends' types agree) or a logical reduction of them (0 or 1; `reduce_into`).
    unsafe { std::slice::from_raw_parts_mut(s.as_mut_ptr().cast::<u8>(), n) }
}

/// Elements viewed from aligned bytes (a user reduction's arguments).
pub(crate) fn from_bytes<T: Element>(b: &[u8]) -> &[T] {
    assert!(b.len().is_multiple_of(size_of::<T>()) && (b.as_ptr() as usize).is_multiple_of(align_of::<T>()));
    // SAFETY: aligned and a whole number of `T`s (checked); the bytes are values of `T`
    // (they came from buffers of `T`, see `as_bytes_mut`).
    unsafe { std::slice::from_raw_parts(b.as_ptr().cast::<T>(), b.len() / size_of::<T>()) }
}

/// Mutable elements viewed from aligned bytes (a user reduction's accumulator).
pub(crate) fn from_bytes_mut<T: Element>(b: &mut [u8]) -> &mut [T] {
    assert!(b.len().is_multiple_of(size_of::<T>()) && (b.as_ptr() as usize).is_multiple_of(align_of::<T>()));
    // SAFETY: as `from_bytes`, and the view is exclusive.
    unsafe { std::slice::from_raw_parts_mut(b.as_mut_ptr().cast::<T>(), b.len() / size_of::<T>()) }
}
