//! Buffers: what a `Comm<G>` op takes, host or device memory alike (as rsmpi's
//! `Buffer`). [`Buf<T>`] is a readable buffer of `T`, [`BufMut<T>`] a writable one.
//!
//! Host memory: `[T]`, `Vec<T>`, `[T; N]`, `Box<[T]>` and references to them; with the
//! `ndarray` feature, ndarray's arrays and views (contiguous in row-major order, else a
//! typed error naming the fix). With the `nccl` feature, device memory: cudarc's `CudaSlice<T>`, `CudaView<T>` (read) and
//! `CudaViewMut<T>`. Every op looks at where its buffers live: host buffers go to the
//! host backend (shared memory), device buffers to the device backend (NCCL), through
//! the same argument checks and the same `Op`, so the same cross-rank checks apply.
//!
//! The traits are sealed: the runtime must know how to reach the bytes.

use crate::backend::DevPtr;
use crate::dtype::Element;
use crate::error::{Error, Result};
use std::marker::PhantomData;

mod sealed {
    pub trait Sealed {}
}

/// A buffer of `T` an op reads: host memory (`[T]`, `Vec<T>`, `[T; N]`, `Box<[T]>`) or,
/// with the `nccl` feature, device memory (`CudaSlice<T>`, `CudaView<T>`, `CudaViewMut<T>`).
///
/// ```
/// # use dist_runtime::prelude::*;
/// # #[spmd(ranks = 3)]
/// # fn demo(world: Comm<World>) -> dist_runtime::Result<()> {
/// // A Vec, an array and a slice are all buffers of u32.
/// let v = vec![world.rank() as u32; 2];
/// let mut all = [0u32; 6];
/// world.all_gather(&v, &mut all)?;
/// world.all_gather(&v[..], &mut all[..])?;
/// assert_eq!(all, [0, 0, 1, 1, 2, 2]);
/// # Ok(()) }
/// # fn main() { dist_runtime::launch(3, demo).unwrap(); }
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a buffer of `{T}`",
    label = "expected a buffer of `{T}` elements here",
    note = "buffers are `[T]`, `Vec<T>`, `[T; N]` or `Box<[T]>` on the host (with the `ndarray` feature, \
            ndarray's arrays and views; with the `nccl` feature, cudarc's `CudaSlice<T>` and views on the \
            device), of one of the element types u8, i8, i32, \
            u32, i64, u64, f16, bf16, f32, f64; a typed tag `Tag<T>` fixes `T` for the buffers it travels with"
)]
pub trait Buf<T: Element>: sealed::Sealed {
    /// The buffer type an op's other side takes when it is optional (`gather`'s `recv`
    /// on the root, `scatter`'s `send`): a slice for host memory.
    type Like: BufMut<T> + ?Sized;
    /// Number of elements.
    fn elems(&self) -> usize;
    #[doc(hidden)]
    fn view(&self) -> View<'_, T>;
}

/// A buffer of `T` an op writes (see [`Buf`]).
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a writable buffer of `{T}`",
    label = "expected a writable buffer of `{T}` elements here (`&mut`)",
    note = "writable buffers are `[T]`, `Vec<T>`, `[T; N]` or `Box<[T]>` on the host (with the `ndarray` \
            feature, ndarray's arrays and views; with the `nccl` feature, cudarc's `CudaSlice<T>` and \
            `CudaViewMut<T>`), passed as `&mut`; a typed tag `Tag<T>` fixes `T` for the buffers it travels with"
)]
pub trait BufMut<T: Element>: Buf<T> {
    #[doc(hidden)]
    fn view_mut(&mut self) -> ViewMut<'_, T>;
}

/// Where a buffer's elements are. Not a public API.
#[doc(hidden)]
pub enum View<'a, T> {
    Host(&'a [T]),
    Device(DevRef<'a>),
    /// Host memory that is not one run of elements in order (an ndarray view with
    /// strides): every op refuses it ([`Strided::error`]).
    Strided(Strided),
}

/// Where a writable buffer's elements are. Not a public API.
#[doc(hidden)]
pub enum ViewMut<'a, T> {
    Host(&'a mut [T]),
    Device(DevRef<'a>),
    /// See [`View::Strided`].
    Strided(Strided),
}

/// The layout of an array whose elements are not one contiguous run in row-major order
/// (a column of a matrix, a transpose, a slice with a step). Not a public API.
#[doc(hidden)]
#[derive(Clone, Debug)]
pub struct Strided {
    pub(crate) shape: Vec<usize>,
    pub(crate) strides: Vec<isize>,
}

impl Strided {
    /// The typed error an op gives for such a buffer, naming the fix, at the caller's line.
    #[track_caller]
    pub(crate) fn error(&self, op: &'static str) -> Error {
        self.error_at(op, crate::error::Site::caller())
    }

    /// [`Strided::error`] at `site` (the user's call an op recorded).
    pub(crate) fn error_at(&self, op: &'static str, site: crate::error::Site) -> Error {
        Error::invalid_at(
            op,
            site,
            format!(
                "an array of shape {:?} with strides {:?} is not one contiguous run of elements in row-major order \
                 (a column, a transpose, a slice with a step): ops read and write memory as it lies. Send \
                 `a.as_standard_layout()` (a contiguous copy where needed); receive into a contiguous array \
                 (`Array::zeros(shape)`) and `.assign()` it to the view",
                self.shape, self.strides
            ),
        )
    }
}

/// Device memory before it is resolved on a communicator's stream. Not a public API.
#[doc(hidden)]
pub struct DevRef<'a> {
    pub(crate) mem: DevMem<'a>,
    /// Bytes.
    pub(crate) bytes: usize,
}

pub(crate) enum DevMem<'a> {
    /// Host memory standing in for device memory (the test double, `testing::SimBuf`).
    #[cfg(feature = "sim-device")]
    Sim(*mut u8, PhantomData<&'a mut [u8]>),
    /// Without a device feature there is no device memory.
    #[cfg(not(any(feature = "sim-device", feature = "nccl")))]
    #[allow(dead_code)]
    Never(std::convert::Infallible, PhantomData<&'a ()>),
    #[cfg(feature = "nccl")]
    Cuda(&'a dyn crate::backend::nccl::CudaRead),
    #[cfg(feature = "nccl")]
    CudaMut(&'a mut dyn crate::backend::nccl::CudaWrite),
}

/// Keeps what resolving a device buffer borrowed until the op is enqueued (cudarc's
/// stream-order records: the buffer's next user waits for this op).
pub(crate) enum Guard<'a> {
    #[cfg_attr(not(feature = "sim-device"), allow(dead_code))]
    None,
    #[cfg(feature = "nccl")]
    Cuda(#[allow(dead_code)] cudarc::driver::SyncOnDrop<'a>),
    #[allow(dead_code)]
    Marker(PhantomData<&'a ()>),
}

impl<'a> DevRef<'a> {
    /// The address of this buffer on `dev`, or an error when it lives elsewhere (a
    /// simulated buffer on an NCCL communicator, another GPU).
    #[cfg_attr(not(any(feature = "sim-device", feature = "nccl")), allow(unused_variables))]
    pub(crate) fn resolve<'s>(
        self,
        dev: &'s dyn crate::backend::Device,
        op: &'static str,
    ) -> Result<(DevPtr, Guard<'s>)>
    where
        'a: 's,
    {
        let bytes = self.bytes;
        match self.mem {
            #[cfg(not(any(feature = "sim-device", feature = "nccl")))]
            DevMem::Never(never, _) => match never {},
            #[cfg(feature = "sim-device")]
            DevMem::Sim(p, _) => {
                if dev.kind() != "sim" {
                    return Err(Error::invalid(
                        op,
                        format!("a simulated device buffer (testing::SimBuf) on a {} communicator", dev.kind()),
                    ));
                }
                Ok((DevPtr { addr: p as u64, bytes }, Guard::None))
            }
            #[cfg(feature = "nccl")]
            DevMem::Cuda(c) => {
                let s = dev.cuda_stream(op)?;
                c.check_device(s, op)?;
                let (addr, g) = c.read_ptr(s);
                Ok((DevPtr { addr, bytes }, Guard::Cuda(g)))
            }
            #[cfg(feature = "nccl")]
            DevMem::CudaMut(c) => {
                let s = dev.cuda_stream(op)?;
                c.check_device(s, op)?;
                let (addr, g) = c.write_ptr(s);
                Ok((DevPtr { addr, bytes }, Guard::Cuda(g)))
            }
        }
    }
}

// ---------------------------------------------------------------- host memory

macro_rules! host {
    ($(impl[$($g:tt)*] $t:ty;)*) => {$(
        impl<$($g)*> sealed::Sealed for $t {}
        impl<$($g)*> Buf<T> for $t {
            type Like = [T];
            fn elems(&self) -> usize {
                self.len()
            }
            fn view(&self) -> View<'_, T> {
                View::Host(&self[..])
            }
        }
        impl<$($g)*> BufMut<T> for $t {
            fn view_mut(&mut self) -> ViewMut<'_, T> {
                ViewMut::Host(&mut self[..])
            }
        }
    )*};
}
host! {
    impl[T: Element] [T];
    impl[T: Element] Vec<T>;
    impl[T: Element, const N: usize] [T; N];
    impl[T: Element] Box<[T]>;
}

impl<X: ?Sized + sealed::Sealed> sealed::Sealed for &X {}
impl<X: ?Sized + sealed::Sealed> sealed::Sealed for &mut X {}

impl<T: Element, X: Buf<T> + ?Sized> Buf<T> for &X {
    type Like = X::Like;
    fn elems(&self) -> usize {
        (**self).elems()
    }
    fn view(&self) -> View<'_, T> {
        (**self).view()
    }
}
impl<T: Element, X: Buf<T> + ?Sized> Buf<T> for &mut X {
    type Like = X::Like;
    fn elems(&self) -> usize {
        (**self).elems()
    }
    fn view(&self) -> View<'_, T> {
        (**self).view()
    }
}
impl<T: Element, X: BufMut<T> + ?Sized> BufMut<T> for &mut X {
    fn view_mut(&mut self) -> ViewMut<'_, T> {
        (**self).view_mut()
    }
}

// ---------------------------------------------------------------- ndarray

/// With the `ndarray` feature: ndarray's arrays and views of any dimension are buffers of
/// their elements, read and written in place where they are contiguous in row-major
/// order (`Array`, `ArcArray`, `ArrayView`, `ArrayViewMut`, `CowArray`, a row of a
/// matrix); any other layout (a column, a transpose, a step) is a typed error naming the
/// fix, never a silent reordering.
#[cfg(feature = "ndarray")]
mod nd {
    use super::*;
    use ndarray::{ArrayBase, Data, DataMut, Dimension, RawData};

    fn strided<S: RawData, D: Dimension>(a: &ArrayBase<S, D>) -> Strided {
        Strided { shape: a.shape().to_vec(), strides: a.strides().to_vec() }
    }

    impl<S: RawData, D: Dimension> sealed::Sealed for ArrayBase<S, D> {}

    impl<T: Element, S: Data<Elem = T>, D: Dimension> Buf<T> for ArrayBase<S, D> {
        type Like = [T];
        fn elems(&self) -> usize {
            self.len()
        }
        fn view(&self) -> View<'_, T> {
            match self.as_slice() {
                Some(s) => View::Host(s),
                None => View::Strided(strided(self)),
            }
        }
    }

    impl<T: Element, S: DataMut<Elem = T>, D: Dimension> BufMut<T> for ArrayBase<S, D> {
        fn view_mut(&mut self) -> ViewMut<'_, T> {
            if self.is_standard_layout() {
                ViewMut::Host(self.as_slice_mut().expect("a standard layout is one slice"))
            } else {
                ViewMut::Strided(strided(self))
            }
        }
    }
}

// ---------------------------------------------------------------- memory a communicator allocated

/// `len` elements of `T` allocated by a communicator for its ops ([`Comm::alloc`]): a
/// slice like any other (it derefs to `[T]`), whose collectives on the shared-memory
/// backend read every rank's buffer in place instead of copying it through the staging
/// slots — MPI's `MPI_Win_allocate_shared`, torch's symmetric memory.
///
/// On the `shm` backend it is a memory file every rank of the communicator maps (read
/// only on peers); on other backends it is heap memory and ops treat it as any host
/// buffer ([`zero_copy`](SharedBuf::zero_copy) says which). Dropping it is local: each
/// rank frees its own view, and the memory goes when the last view does.
///
/// [`Comm::alloc`]: crate::Comm::alloc
pub struct SharedBuf<T: Element> {
    mem: Box<dyn crate::backend::SharedMem>,
    len: usize,
    _t: PhantomData<T>,
}

impl<T: Element> SharedBuf<T> {
    pub(crate) fn new(mem: Box<dyn crate::backend::SharedMem>, len: usize) -> SharedBuf<T> {
        debug_assert!(mem.bytes() == len * std::mem::size_of::<T>());
        debug_assert!((mem.ptr() as usize).is_multiple_of(std::mem::align_of::<T>()));
        SharedBuf { mem, len, _t: PhantomData }
    }

    /// Whether the communicator's collectives read this buffer in place on every rank
    /// (true on the `shm` backend for a non-empty buffer; false where it is heap memory).
    pub fn zero_copy(&self) -> bool {
        self.mem.zero_copy()
    }
}

impl<T: Element> std::ops::Deref for SharedBuf<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        // SAFETY: `len` initialized (zeroed: a valid value of every element type) and
        // aligned elements, owned by `mem` for as long as `self`; peers only read them.
        unsafe { std::slice::from_raw_parts(self.mem.ptr() as *const T, self.len) }
    }
}

impl<T: Element> std::ops::DerefMut for SharedBuf<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        // SAFETY: as in `deref`; `&mut self` makes this the only reference in this process.
        unsafe { std::slice::from_raw_parts_mut(self.mem.ptr() as *mut T, self.len) }
    }
}

impl<T: Element> std::fmt::Debug for SharedBuf<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedBuf").field("len", &self.len).field("zero_copy", &self.zero_copy()).finish()
    }
}

impl<T: Element> sealed::Sealed for SharedBuf<T> {}
impl<T: Element> Buf<T> for SharedBuf<T> {
    type Like = [T];
    fn elems(&self) -> usize {
        self.len
    }
    fn view(&self) -> View<'_, T> {
        View::Host(&self[..])
    }
}
impl<T: Element> BufMut<T> for SharedBuf<T> {
    fn view_mut(&mut self) -> ViewMut<'_, T> {
        ViewMut::Host(&mut self[..])
    }
}

// ---------------------------------------------------------------- the test double

/// Host memory that ops treat as device memory, on a communicator whose device side is
/// the simulated device (`DIST_SIM_DEVICE=1`, feature `sim-device`): the device path
/// (stream order, completion events, deadlines, cross-rank checks) runs on CPU-only
/// machines, which is how it is tested. Not for programs.
#[cfg(feature = "sim-device")]
#[derive(Clone, Debug, PartialEq)]
pub struct SimBuf<T: Element>(pub Vec<T>);

#[cfg(feature = "sim-device")]
impl<T: Element> sealed::Sealed for SimBuf<T> {}

#[cfg(feature = "sim-device")]
impl<T: Element> Buf<T> for SimBuf<T> {
    type Like = SimBuf<T>;
    fn elems(&self) -> usize {
        self.0.len()
    }
    fn view(&self) -> View<'_, T> {
        View::Device(DevRef {
            mem: DevMem::Sim(self.0.as_ptr() as *mut u8, PhantomData),
            bytes: std::mem::size_of_val(&self.0[..]),
        })
    }
}

#[cfg(feature = "sim-device")]
impl<T: Element> BufMut<T> for SimBuf<T> {
    fn view_mut(&mut self) -> ViewMut<'_, T> {
        ViewMut::Device(DevRef {
            mem: DevMem::Sim(self.0.as_mut_ptr() as *mut u8, PhantomData),
            bytes: std::mem::size_of_val(&self.0[..]),
        })
    }
}

// ---------------------------------------------------------------- device memory (NCCL)

#[cfg(feature = "nccl")]
mod cuda {
    use super::*;
    use crate::backend::nccl::{CudaRead, CudaWrite};
    use cudarc::driver::{CudaSlice, CudaView, CudaViewMut, DeviceRepr, DeviceSlice};

    fn dev<T>(mem: DevMem<'_>, n: usize) -> DevRef<'_> {
        DevRef { mem, bytes: n * std::mem::size_of::<T>() }
    }

    macro_rules! read {
        ($(impl[$($g:tt)*] $t:ty;)*) => {$(
            impl<$($g)*> sealed::Sealed for $t {}
            impl<$($g)*> Buf<T> for $t {
                type Like = CudaSlice<T>;
                fn elems(&self) -> usize {
                    DeviceSlice::len(self)
                }
                fn view(&self) -> View<'_, T> {
                    View::Device(dev::<T>(DevMem::Cuda(self as &dyn CudaRead), DeviceSlice::len(self)))
                }
            }
        )*};
    }
    read! {
        impl[T: Element + DeviceRepr] CudaSlice<T>;
        impl['a, T: Element + DeviceRepr] CudaView<'a, T>;
        impl['a, T: Element + DeviceRepr] CudaViewMut<'a, T>;
    }

    impl<T: Element + DeviceRepr> BufMut<T> for CudaSlice<T> {
        fn view_mut(&mut self) -> ViewMut<'_, T> {
            let n = DeviceSlice::len(self);
            ViewMut::Device(dev::<T>(DevMem::CudaMut(self as &mut dyn CudaWrite), n))
        }
    }
    impl<T: Element + DeviceRepr> BufMut<T> for CudaViewMut<'_, T> {
        fn view_mut(&mut self) -> ViewMut<'_, T> {
            let n = DeviceSlice::len(self);
            ViewMut::Device(dev::<T>(DevMem::CudaMut(self as &mut dyn CudaWrite), n))
        }
    }
}

// ---------------------------------------------------------------- resolving one op's buffers

/// The error for an op whose buffers live in different places.
pub(crate) fn mixed(op: &'static str) -> Error {
    Error::invalid(
        op,
        "its buffers live in different places (one in host memory, one in device memory): \
         the buffers of one op are all host buffers or all device buffers",
    )
}
