//! candle's tensors on a communicator, and the autograd-aware pieces of data- and
//! tensor-parallel training (feature `candle`, CPU tensors).
//!
//! - [`TensorComm`]: every collective and the blocking point-to-point ops on a
//!   [`Tensor`], on any `Comm<G>` (`all_reduce`, `reduce`, `broadcast`, `all_gather`,
//!   `gather`, `scatter`, `reduce_scatter`, `all_to_all`, `scan`, `exscan`, `send`,
//!   `recv`, `sendrecv`), returning new tensors (candle's storage is immutable: one copy
//!   out); the tensor's memory is read in place where it is contiguous.
//! - Megatron's conjugate operators as candle ops with a backward pass:
//!   [`copy_to_group`] (`f`: identity forward, all-reduce of the gradient backward),
//!   [`reduce_from_group`] (`g`: all-reduce forward, identity backward),
//!   [`gather_from_group`] (all-gather along the last dimension forward, this rank's
//!   slice of the gradient backward), [`scatter_to_group`] (its conjugate).
//! - [`ColumnParallelLinear`] and [`RowParallelLinear`]: Megatron's tensor-parallel pair,
//!   built from the full weight each rank can make, holding this rank's shard as a
//!   [`Var`]; their forward calls the operators above, so `loss.backward()` computes
//!   the shards' gradients of the full model.
//! - [`all_reduce_grads`]: the data-parallel gradient all-reduce over a [`GradStore`], in
//!   buckets with several in flight (candle computes every gradient in one `backward()`
//!   call and has no per-parameter hook, so buckets overlap each other, not the backward
//!   pass).
//!
//! Every collective here is a `Comm` op like any other: checked across ranks, named by
//! the deadlock detector, bounded by the deadline. Ranks must build the same graph so that
//! the backward pass reaches the same collectives in the same order (candle's backward
//! visits the graph in a fixed order). Errors from dist come back as candle errors whose
//! message is dist's.
//!
//! Why candle: its CUDA storage is cudarc 0.19's `CudaSlice`, the same cudarc dist's NCCL
//! backend is built on (docs/design.md), so device tensors can join later without a
//! second binding of CUDA; burn's backends wrap their own.

use crate::comm::Comm;
use crate::dtype::Element;
use crate::group::Group;
use crate::reduce_op::ReduceOp;
use crate::tag::Tag;
use candle_core::backend::BackendStorage;
use candle_core::backprop::GradStore;
use candle_core::{CpuStorage, CustomOp1, DType, Layout, Result, Shape, Tensor, Var};

/// dist's error as candle's.
fn err(e: crate::error::Error) -> candle_core::Error {
    candle_core::Error::msg(e)
}

/// Runs `$body` with `$v: Vec<T>` holding the contiguous elements of a CPU storage, and
/// wraps the `Vec<T>` it returns back into the storage of the same dtype.
macro_rules! with_elems {
    ($storage:expr, $layout:expr, |$v:ident| $body:expr) => {{
        let (a, b) = $layout
            .contiguous_offsets()
            .ok_or_else(|| candle_core::Error::msg("dist: a tensor that is not contiguous (call .contiguous())"))?;
        match $storage {
            CpuStorage::U8(s) => CpuStorage::U8({
                let $v = &s[a..b];
                $body
            }),
            CpuStorage::U32(s) => CpuStorage::U32({
                let $v = &s[a..b];
                $body
            }),
            CpuStorage::I16(s) => CpuStorage::I16({
                let $v = &s[a..b];
                $body
            }),
            CpuStorage::I32(s) => CpuStorage::I32({
                let $v = &s[a..b];
                $body
            }),
            CpuStorage::I64(s) => CpuStorage::I64({
                let $v = &s[a..b];
                $body
            }),
            CpuStorage::BF16(s) => CpuStorage::BF16({
                let $v = &s[a..b];
                $body
            }),
            CpuStorage::F16(s) => CpuStorage::F16({
                let $v = &s[a..b];
                $body
            }),
            CpuStorage::F32(s) => CpuStorage::F32({
                let $v = &s[a..b];
                $body
            }),
            CpuStorage::F64(s) => CpuStorage::F64({
                let $v = &s[a..b];
                $body
            }),
            other => candle_core::bail!("dist: no dist element type for candle's {:?}", other.dtype()),
        }
    }};
}

/// What one of the ops below does to the elements of the tensor it is given.
#[derive(Clone, Copy, Debug)]
enum Kind {
    AllReduce(ReduceOp),
    /// All-gather along the last dimension.
    Gather,
    /// This rank's block of the last dimension.
    Split,
    Broadcast(usize),
    /// Reduce-scatter along the first dimension.
    ReduceScatter(ReduceOp),
    /// All-to-all of the blocks of the first dimension.
    AllToAll,
}

/// What the backward pass of an op does to the gradient of its result.
#[derive(Clone, Copy, Debug)]
enum Back {
    /// Passes it on unchanged.
    Identity,
    /// Runs this collective on it.
    Coll(Kind),
}

/// A collective on a communicator, as a candle op (`bwd` says what its gradient is).
struct CollOp<G: Group> {
    comm: Comm<G>,
    /// The user's call that made it: the site its errors and records name.
    at: &'static std::panic::Location<'static>,
    kind: Kind,
    /// The backward pass: `None` for ops with no gradient (plain collectives on tensors).
    bwd: Option<Back>,
}

impl<G: Group> CollOp<G> {
    fn shape_out(&self, shape: &Shape) -> Result<Shape> {
        let n = self.comm.size();
        let mut dims = shape.dims().to_vec();
        match self.kind {
            Kind::Gather => {
                let last = dims.last_mut().ok_or_else(|| candle_core::Error::msg("dist: gather of a scalar"))?;
                *last *= n;
            }
            Kind::Split => {
                let last = dims.last_mut().ok_or_else(|| candle_core::Error::msg("dist: split of a scalar"))?;
                if !last.is_multiple_of(n) {
                    candle_core::bail!(
                        "dist: the last dimension ({}) does not divide among the {n} ranks of the group",
                        *last
                    );
                }
                *last /= n;
            }
            Kind::AllToAll => {
                let first = *dims.first().ok_or_else(|| candle_core::Error::msg("dist: all_to_all of a scalar"))?;
                if !first.is_multiple_of(n) {
                    candle_core::bail!(
                        "dist: the first dimension ({first}) does not divide among the {n} ranks of the group"
                    );
                }
            }
            Kind::ReduceScatter(_) => {
                let first =
                    dims.first_mut().ok_or_else(|| candle_core::Error::msg("dist: reduce_scatter of a scalar"))?;
                if !first.is_multiple_of(n) {
                    candle_core::bail!(
                        "dist: the first dimension ({}) does not divide among the {n} ranks of the group",
                        *first
                    );
                }
                *first /= n;
            }
            Kind::AllReduce(_) | Kind::Broadcast(_) => {}
        }
        Ok(Shape::from(dims))
    }

    /// The op on a contiguous run of elements of a tensor of `shape`.
    fn run<T: crate::dtype::Element + Copy + Default>(&self, x: &[T], shape: &Shape) -> Result<Vec<T>> {
        let _at = crate::error::CallerAt::new(self.at);
        // (Every rank passes a tensor of one shape: compared with the op, not just its
        // element count.)
        let _shape = crate::op::TensorShape::new(shape.dims());
        let (n, me) = (self.comm.size(), self.comm.rank());
        let last = shape.dims().last().copied().unwrap_or(1);
        Ok(match self.kind {
            Kind::AllReduce(op) => {
                let mut v = x.to_vec();
                self.comm.all_reduce(&mut v, op).map_err(err)?;
                v
            }
            Kind::Broadcast(root) => {
                let mut v = x.to_vec();
                self.comm.broadcast(&mut v, root).map_err(err)?;
                v
            }
            Kind::Gather => {
                // Gathered rank-major, then interleaved so each row holds every rank's
                // block of its last dimension in rank order.
                let mut all = vec![T::default(); x.len() * n];
                self.comm.all_gather(x, &mut all).map_err(err)?;
                let rows = x.len().checked_div(last).unwrap_or(0);
                let mut out = Vec::with_capacity(all.len());
                for r in 0..rows {
                    for q in 0..n {
                        let base = q * x.len() + r * last;
                        out.extend_from_slice(&all[base..base + last]);
                    }
                }
                out
            }
            Kind::Split => {
                let w = last / n;
                x.chunks(last.max(1)).flat_map(|row| row[me * w..(me + 1) * w].iter().copied()).collect()
            }
            Kind::ReduceScatter(op) => {
                let mut out = vec![T::default(); x.len() / n];
                self.comm.reduce_scatter(x, &mut out, op).map_err(err)?;
                out
            }
            Kind::AllToAll => {
                let mut out = vec![T::default(); x.len()];
                self.comm.all_to_all(x, &mut out).map_err(err)?;
                out
            }
        })
    }
}

impl<G: Group> CustomOp1 for CollOp<G> {
    fn name(&self) -> &'static str {
        match self.kind {
            Kind::AllReduce(_) => "dist-all-reduce",
            Kind::Gather => "dist-all-gather",
            Kind::Split => "dist-split",
            Kind::Broadcast(_) => "dist-broadcast",
            Kind::ReduceScatter(_) => "dist-reduce-scatter",
            Kind::AllToAll => "dist-all-to-all",
        }
    }

    fn cpu_fwd(&self, storage: &CpuStorage, layout: &Layout) -> Result<(CpuStorage, Shape)> {
        let shape = layout.shape();
        let out = with_elems!(storage, layout, |v| self.run(v, shape)?);
        Ok((out, self.shape_out(shape)?))
    }

    fn bwd(&self, _arg: &Tensor, _res: &Tensor, grad_res: &Tensor) -> Result<Option<Tensor>> {
        Ok(Some(match self.bwd {
            None => candle_core::bail!("dist: {} has no gradient (use the autograd-aware operators)", self.name()),
            Some(Back::Identity) => grad_res.clone(),
            Some(Back::Coll(kind)) => grad_res.contiguous()?.apply_op1_no_bwd(&CollOp {
                comm: self.comm.clone(),
                at: self.at,
                kind,
                bwd: None,
            })?,
        }))
    }
}

/// Collectives on candle tensors (CPU), as methods of every communicator: each returns a
/// new tensor and records no gradient (for training, see [`copy_to_group`] and the
/// operators beside it).
pub trait TensorComm {
    /// `all_reduce` of the tensor's elements.
    fn all_reduce_tensor(&self, t: &Tensor, op: ReduceOp) -> Result<Tensor>;
    /// Every rank's tensor concatenated along the last dimension, in rank order.
    fn all_gather_tensor(&self, t: &Tensor) -> Result<Tensor>;
    /// The root's tensor on every rank (every rank passes one of the same shape).
    fn broadcast_tensor(&self, t: &Tensor, root: usize) -> Result<Tensor>;
    /// The reduction of every rank's tensor, block `r` of its first dimension on rank `r`.
    fn reduce_scatter_tensor(&self, t: &Tensor, op: ReduceOp) -> Result<Tensor>;
    /// Block `q` of the first dimension to rank `q`; the result holds, in rank order, the
    /// block every rank sent this one (the same shape as `t`).
    fn all_to_all_tensor(&self, t: &Tensor) -> Result<Tensor>;
    /// Sends the tensor's elements (of the tag's element type, which must be its dtype).
    fn send_tensor<T: Element + candle_core::WithDType>(&self, dst: usize, tag: Tag<T>, t: &Tensor) -> Result<()>;
    /// Receives a tensor of `shape` sent with `tag` by `src` (`send_tensor`).
    fn recv_tensor<T: Element + candle_core::WithDType>(
        &self,
        src: usize,
        tag: Tag<T>,
        shape: impl Into<Shape>,
    ) -> Result<Tensor>;
    /// The reduction of every rank's tensor, on `root` (`Some`); `None` on the others.
    fn reduce_tensor(&self, t: &Tensor, op: ReduceOp, root: usize) -> Result<Option<Tensor>>;
    /// Inclusive prefix reduction: rank `r` gets the reduction of ranks `0..=r`'s tensors.
    fn scan_tensor(&self, t: &Tensor, op: ReduceOp) -> Result<Tensor>;
    /// Exclusive prefix reduction: rank `r` gets the reduction of ranks `0..r`'s tensors,
    /// rank 0 the identity of `op` (as [`Comm::exscan`]).
    fn exscan_tensor(&self, t: &Tensor, op: ReduceOp) -> Result<Tensor>;
    /// Every rank's tensor (one shape on every rank), as a list in rank order on `root`
    /// (torch's `gather_list`); `None` on the others.
    fn gather_tensor(&self, t: &Tensor, root: usize) -> Result<Option<Vec<Tensor>>>;
    /// Tensor `r` of the root's `parts` on rank `r` (torch's `scatter_list`): every rank
    /// passes `like`, a tensor of the shape and dtype of its part (torch's output
    /// tensor); `parts` is read on the root only, where it must hold one tensor of that
    /// shape and dtype per rank.
    fn scatter_tensor(&self, parts: Option<&[Tensor]>, like: &Tensor, root: usize) -> Result<Tensor>;
    /// Sends `t` to `dst` and receives a tensor of `shape` from `src` in one step (both
    /// with `tag`, whose element type is the tensors' dtype): a ring shift with no order
    /// to get right.
    fn sendrecv_tensor<T: Element + candle_core::WithDType>(
        &self,
        dst: usize,
        tag: Tag<T>,
        t: &Tensor,
        src: usize,
        shape: impl Into<Shape>,
    ) -> Result<Tensor>;
}

/// Runs `$f::<T>(args)` with `T` the dist element type of candle's dtype `$dt`.
macro_rules! by_dtype {
    ($dt:expr, $f:ident($($a:expr),*)) => {
        match $dt {
            DType::U8 => $f::<u8, _>($($a),*),
            DType::U32 => $f::<u32, _>($($a),*),
            DType::I16 => $f::<i16, _>($($a),*),
            DType::I32 => $f::<i32, _>($($a),*),
            DType::I64 => $f::<i64, _>($($a),*),
            DType::BF16 => $f::<half::bf16, _>($($a),*),
            DType::F16 => $f::<half::f16, _>($($a),*),
            DType::F32 => $f::<f32, _>($($a),*),
            DType::F64 => $f::<f64, _>($($a),*),
            other => candle_core::bail!("dist: no dist element type for candle's {other:?}"),
        }
    };
}

/// The tensor's elements in row-major order (one copy out of candle's storage).
fn elems<T: candle_core::WithDType>(t: &Tensor) -> Result<Vec<T>> {
    t.flatten_all()?.to_vec1::<T>()
}

/// The prefix reductions and the reduce to a root: one buffer of the tensor's elements,
/// in place.
#[track_caller]
fn reduce_like<T: Element + candle_core::WithDType, G: Group>(
    comm: &Comm<G>,
    t: &Tensor,
    op: ReduceOp,
    how: Prefix,
) -> Result<Option<Tensor>> {
    let _shape = crate::op::TensorShape::new(t.dims());
    let mut v = elems::<T>(t)?;
    match how {
        Prefix::Reduce(root) => {
            comm.reduce(&mut v, op, root).map_err(err)?;
            if comm.rank() != root {
                return Ok(None);
            }
        }
        Prefix::Inclusive => comm.scan(&mut v, op).map_err(err)?,
        Prefix::Exclusive => comm.exscan(&mut v, op).map_err(err)?,
    }
    Tensor::from_vec(v, t.shape(), t.device()).map(Some)
}

/// Which of the reductions [`reduce_like`] runs.
#[derive(Clone, Copy)]
enum Prefix {
    Reduce(usize),
    Inclusive,
    Exclusive,
}

#[track_caller]
fn gather_to<T: Element + candle_core::WithDType, G: Group>(
    comm: &Comm<G>,
    t: &Tensor,
    root: usize,
) -> Result<Option<Vec<Tensor>>> {
    let _shape = crate::op::TensorShape::new(t.dims());
    let v = elems::<T>(t)?;
    let here = comm.rank() == root;
    let mut all = if here { vec![T::from_f64(0.0); v.len() * comm.size()] } else { Vec::new() };
    comm.gather(&v[..], here.then_some(&mut all[..]), root).map_err(err)?;
    if !here {
        return Ok(None);
    }
    (0..comm.size())
        .map(|q| Tensor::from_slice(&all[q * v.len()..(q + 1) * v.len()], t.shape(), t.device()))
        .collect::<Result<Vec<_>>>()
        .map(Some)
}

#[track_caller]
fn scatter_from<T: Element + candle_core::WithDType, G: Group>(
    comm: &Comm<G>,
    parts: Option<&[Tensor]>,
    like: &Tensor,
    root: usize,
) -> Result<Tensor> {
    let _shape = crate::op::TensorShape::new(like.dims());
    let n = comm.size();
    let mut all = Vec::new();
    if comm.rank() == root {
        let parts = parts.ok_or_else(|| candle_core::Error::msg("dist: scatter_tensor: the root passes no parts"))?;
        if parts.len() != n {
            candle_core::bail!("dist: scatter_tensor: the root passes {} parts for {n} ranks", parts.len());
        }
        for (q, p) in parts.iter().enumerate() {
            if p.dims() != like.dims() || p.dtype() != like.dtype() {
                candle_core::bail!(
                    "dist: scatter_tensor: part {q} is {:?} {:?}, but each rank's part is {:?} {:?} (`like`)",
                    p.dims(),
                    p.dtype(),
                    like.dims(),
                    like.dtype()
                );
            }
            all.extend(elems::<T>(p)?);
        }
    }
    let mut mine = vec![T::from_f64(0.0); like.elem_count()];
    comm.scatter((comm.rank() == root).then_some(&all[..]), &mut mine[..], root).map_err(err)?;
    Tensor::from_vec(mine, like.shape(), like.device())
}

impl<G: Group> TensorComm for Comm<G> {
    #[track_caller]
    fn all_reduce_tensor(&self, t: &Tensor, op: ReduceOp) -> Result<Tensor> {
        t.contiguous()?.apply_op1_no_bwd(&CollOp {
            comm: self.clone(),
            at: std::panic::Location::caller(),
            kind: Kind::AllReduce(op),
            bwd: None,
        })
    }
    #[track_caller]
    fn all_gather_tensor(&self, t: &Tensor) -> Result<Tensor> {
        t.contiguous()?.apply_op1_no_bwd(&CollOp {
            comm: self.clone(),
            at: std::panic::Location::caller(),
            kind: Kind::Gather,
            bwd: None,
        })
    }
    #[track_caller]
    fn broadcast_tensor(&self, t: &Tensor, root: usize) -> Result<Tensor> {
        t.contiguous()?.apply_op1_no_bwd(&CollOp {
            comm: self.clone(),
            at: std::panic::Location::caller(),
            kind: Kind::Broadcast(root),
            bwd: None,
        })
    }
    #[track_caller]
    fn reduce_scatter_tensor(&self, t: &Tensor, op: ReduceOp) -> Result<Tensor> {
        t.contiguous()?.apply_op1_no_bwd(&CollOp {
            comm: self.clone(),
            at: std::panic::Location::caller(),
            kind: Kind::ReduceScatter(op),
            bwd: None,
        })
    }
    #[track_caller]
    fn all_to_all_tensor(&self, t: &Tensor) -> Result<Tensor> {
        t.contiguous()?.apply_op1_no_bwd(&CollOp {
            comm: self.clone(),
            at: std::panic::Location::caller(),
            kind: Kind::AllToAll,
            bwd: None,
        })
    }
    #[track_caller]
    fn send_tensor<T: Element + candle_core::WithDType>(&self, dst: usize, tag: Tag<T>, t: &Tensor) -> Result<()> {
        let v = elems::<T>(t)?;
        self.send(dst, tag, &v).map_err(err)
    }
    #[track_caller]
    fn recv_tensor<T: Element + candle_core::WithDType>(
        &self,
        src: usize,
        tag: Tag<T>,
        shape: impl Into<Shape>,
    ) -> Result<Tensor> {
        let shape = shape.into();
        let mut v = vec![T::from_f64(0.0); shape.elem_count()];
        self.recv(src, tag, &mut v).map_err(err)?;
        Tensor::from_vec(v, shape, &candle_core::Device::Cpu)
    }
    #[track_caller]
    fn reduce_tensor(&self, t: &Tensor, op: ReduceOp, root: usize) -> Result<Option<Tensor>> {
        by_dtype!(t.dtype(), reduce_like(self, t, op, Prefix::Reduce(root)))
    }
    #[track_caller]
    fn scan_tensor(&self, t: &Tensor, op: ReduceOp) -> Result<Tensor> {
        by_dtype!(t.dtype(), reduce_like(self, t, op, Prefix::Inclusive)).map(|t| t.expect("every rank's"))
    }
    #[track_caller]
    fn exscan_tensor(&self, t: &Tensor, op: ReduceOp) -> Result<Tensor> {
        by_dtype!(t.dtype(), reduce_like(self, t, op, Prefix::Exclusive)).map(|t| t.expect("every rank's"))
    }
    #[track_caller]
    fn gather_tensor(&self, t: &Tensor, root: usize) -> Result<Option<Vec<Tensor>>> {
        by_dtype!(t.dtype(), gather_to(self, t, root))
    }
    #[track_caller]
    fn scatter_tensor(&self, parts: Option<&[Tensor]>, like: &Tensor, root: usize) -> Result<Tensor> {
        by_dtype!(like.dtype(), scatter_from(self, parts, like, root))
    }
    #[track_caller]
    fn sendrecv_tensor<T: Element + candle_core::WithDType>(
        &self,
        dst: usize,
        tag: Tag<T>,
        t: &Tensor,
        src: usize,
        shape: impl Into<Shape>,
    ) -> Result<Tensor> {
        let shape = shape.into();
        let out = elems::<T>(t)?;
        let mut v = vec![T::from_f64(0.0); shape.elem_count()];
        self.sendrecv(dst, tag, &out, src, &mut v).map_err(err)?;
        Tensor::from_vec(v, shape, t.device())
    }
}

#[track_caller]
fn op<G: Group>(x: &Tensor, comm: &Comm<G>, kind: Kind, bwd: Back) -> Result<Tensor> {
    let at = std::panic::Location::caller();
    x.contiguous()?.apply_op1(CollOp { comm: comm.clone(), at, kind, bwd: Some(bwd) })
}

/// Megatron's `f`: the identity forward; backward, the gradient summed over the group.
/// Put it where a replicated activation enters the tensor-parallel region (the input of
/// a column-parallel layer), so every rank's contribution to its gradient is counted.
#[track_caller]
pub fn copy_to_group<G: Group>(x: &Tensor, comm: &Comm<G>) -> Result<Tensor> {
    let at = std::panic::Location::caller();
    x.contiguous()?.apply_op1(Identity { comm: comm.clone(), at })
}

/// The identity forward of [`copy_to_group`], whose backward all-reduces the gradient.
struct Identity<G: Group> {
    comm: Comm<G>,
    at: &'static std::panic::Location<'static>,
}

impl<G: Group> CustomOp1 for Identity<G> {
    fn name(&self) -> &'static str {
        "dist-copy-to-group"
    }
    fn cpu_fwd(&self, storage: &CpuStorage, layout: &Layout) -> Result<(CpuStorage, Shape)> {
        let out = with_elems!(storage, layout, |v| v.to_vec());
        Ok((out, layout.shape().clone()))
    }
    fn bwd(&self, _arg: &Tensor, _res: &Tensor, grad_res: &Tensor) -> Result<Option<Tensor>> {
        let sum = CollOp { comm: self.comm.clone(), at: self.at, kind: Kind::AllReduce(ReduceOp::Sum), bwd: None };
        Ok(Some(grad_res.contiguous()?.apply_op1_no_bwd(&sum)?))
    }
}

/// Megatron's `g`: the sum over the group forward (the partial products of a
/// row-parallel layer); backward, the identity.
#[track_caller]
pub fn reduce_from_group<G: Group>(x: &Tensor, comm: &Comm<G>) -> Result<Tensor> {
    op(x, comm, Kind::AllReduce(ReduceOp::Sum), Back::Identity)
}

/// Every rank's tensor concatenated along the last dimension (a column-parallel layer's
/// output made whole); backward, this rank's block of the gradient.
#[track_caller]
pub fn gather_from_group<G: Group>(x: &Tensor, comm: &Comm<G>) -> Result<Tensor> {
    op(x, comm, Kind::Gather, Back::Coll(Kind::Split))
}

/// This rank's block of the last dimension (a replicated activation entering a
/// row-parallel layer whose input is split); backward, the blocks gathered.
#[track_caller]
pub fn scatter_to_group<G: Group>(x: &Tensor, comm: &Comm<G>) -> Result<Tensor> {
    op(x, comm, Kind::Split, Back::Coll(Kind::Gather))
}

/// Rows `[r·k, (r+1)·k)` of `t` along `dim` for rank `r` of `n`, `k = len / n`: an error
/// naming the sizes where they do not divide.
fn shard(t: &Tensor, dim: usize, rank: usize, n: usize, what: &str) -> Result<Tensor> {
    let len = t.dims()[dim];
    if !len.is_multiple_of(n) {
        candle_core::bail!("dist: {what} has {len} along dimension {dim}, which does not divide among {n} ranks");
    }
    t.narrow(dim, rank * (len / n), len / n)?.contiguous()
}

/// A linear layer `y = x·Wᵀ + b` whose output features are split over the group: rank
/// `r` holds rows `r·k..(r+1)·k` of `W` (`out × in`) and of `b`, and computes that block
/// of `y` (Megatron's `ColumnParallelLinear`). Its input passes through
/// [`copy_to_group`], so the input's gradient is the whole model's; with
/// `gather_output`, the output is made whole by [`gather_from_group`].
pub struct ColumnParallelLinear<G: Group> {
    weight: Var,
    bias: Option<Var>,
    comm: Comm<G>,
    gather_output: bool,
}

impl<G: Group> ColumnParallelLinear<G> {
    /// This rank's shard of the full weight (`out × in`) and bias (`out`), which every
    /// rank computes alike (from a seed, a checkpoint). `out` must divide among the ranks.
    #[track_caller]
    pub fn from_full(weight: &Tensor, bias: Option<&Tensor>, comm: &Comm<G>, gather_output: bool) -> Result<Self> {
        let (r, n) = (comm.rank(), comm.size());
        let weight = Var::from_tensor(&shard(weight, 0, r, n, "the weight's output features")?)?;
        let bias = bias.map(|b| shard(b, 0, r, n, "the bias").and_then(|b| Var::from_tensor(&b))).transpose()?;
        Ok(ColumnParallelLinear { weight, bias, comm: comm.clone(), gather_output })
    }

    /// `x` (`… × in`, the same on every rank of the group) → this rank's block of `y`,
    /// or all of `y` with `gather_output`.
    #[track_caller]
    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let x = copy_to_group(x, &self.comm)?;
        let y = x.broadcast_matmul(&self.weight.as_tensor().t()?)?;
        let y = match &self.bias {
            Some(b) => y.broadcast_add(b.as_tensor())?,
            None => y,
        };
        if self.gather_output {
            gather_from_group(&y, &self.comm)
        } else {
            Ok(y)
        }
    }

    /// The weight's shard, then the bias's: the variables an optimizer updates.
    pub fn vars(&self) -> Vec<Var> {
        std::iter::once(self.weight.clone()).chain(self.bias.clone()).collect()
    }
}

/// A linear layer `y = x·Wᵀ + b` whose input features are split over the group: rank `r`
/// holds columns `r·k..(r+1)·k` of `W` (`out × in`) and computes a partial `y` from its
/// block of `x`; the partials are summed by [`reduce_from_group`] and the bias added once
/// (Megatron's `RowParallelLinear`). With `input_is_parallel` false, `x` is whole and
/// this rank's block is taken with [`scatter_to_group`].
pub struct RowParallelLinear<G: Group> {
    weight: Var,
    bias: Option<Var>,
    comm: Comm<G>,
    input_is_parallel: bool,
}

impl<G: Group> RowParallelLinear<G> {
    /// This rank's shard of the full weight (`out × in`); the bias (`out`) whole on
    /// every rank. `in` must divide among the ranks.
    #[track_caller]
    pub fn from_full(weight: &Tensor, bias: Option<&Tensor>, comm: &Comm<G>, input_is_parallel: bool) -> Result<Self> {
        let (r, n) = (comm.rank(), comm.size());
        let weight = Var::from_tensor(&shard(weight, 1, r, n, "the weight's input features")?)?;
        let bias = bias.map(Var::from_tensor).transpose()?;
        Ok(RowParallelLinear { weight, bias, comm: comm.clone(), input_is_parallel })
    }

    /// `x` (this rank's block of the input features, or all of them) → `y`, the same on
    /// every rank of the group.
    #[track_caller]
    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let x = if self.input_is_parallel { x.clone() } else { scatter_to_group(x, &self.comm)? };
        let partial = x.broadcast_matmul(&self.weight.as_tensor().t()?)?;
        let y = reduce_from_group(&partial, &self.comm)?;
        match &self.bias {
            Some(b) => y.broadcast_add(b.as_tensor()),
            None => Ok(y),
        }
    }

    /// The weight's shard, then the bias: the variables an optimizer updates.
    pub fn vars(&self) -> Vec<Var> {
        std::iter::once(self.weight.clone()).chain(self.bias.clone()).collect()
    }
}

/// The data-parallel step's gradient exchange: every gradient of `vars` in `grads`
/// summed (or, with `average`, averaged) over `comm`, in place in `grads`. Gradients are
/// packed into buckets of about `bucket_bytes` (per dtype, in the order of `vars`, which
/// must be the same on every rank) and each bucket's all-reduce is started before the
/// previous one is waited on. A variable without a gradient is an error naming it: every
/// rank must contribute to every bucket alike (torch's `find_unused_parameters` is not
/// modelled: give such a variable a zero gradient).
#[track_caller]
pub fn all_reduce_grads<G: Group>(
    comm: &Comm<G>,
    grads: &mut GradStore,
    vars: &[Var],
    average: bool,
    bucket_bytes: usize,
) -> Result<()> {
    let n = comm.size() as f64;
    // (var index, elements) per bucket; f32 and f64 gradients travel apart.
    let mut buckets: Vec<(DType, Vec<usize>)> = Vec::new();
    let mut bytes = 0usize;
    for (i, v) in vars.iter().enumerate() {
        let g = grads.get(v.as_tensor()).ok_or_else(|| {
            candle_core::Error::msg(format!(
                "dist: variable {i} (shape {:?}) has no gradient: every rank must reduce every variable",
                v.dims()
            ))
        })?;
        let dt = g.dtype();
        if !matches!(dt, DType::F32 | DType::F64) {
            candle_core::bail!("dist: gradients of {dt:?} are not reduced (f32 and f64 are)");
        }
        let size = g.elem_count() * dt.size_in_bytes();
        match buckets.last_mut() {
            Some((d, ids)) if *d == dt && bytes + size <= bucket_bytes.max(1) => ids.push(i),
            _ => {
                buckets.push((dt, vec![i]));
                bytes = 0;
            }
        }
        bytes += size;
    }
    // Flatten every bucket first (the buffers must outlive their requests), then start
    // one all-reduce per bucket, waiting on each while the next ones are in flight.
    let mut flat32: Vec<Vec<f32>> = Vec::new();
    let mut flat64: Vec<Vec<f64>> = Vec::new();
    for (dt, ids) in &buckets {
        let parts = ids.iter().map(|&i| grads.get(vars[i].as_tensor()).expect("checked").flatten_all());
        let cat = Tensor::cat(&parts.collect::<Result<Vec<_>>>()?, 0)?;
        match dt {
            DType::F32 => flat32.push(cat.to_vec1::<f32>()?),
            _ => flat64.push(cat.to_vec1::<f64>()?),
        }
    }
    {
        let mut reqs = Vec::new();
        for b in flat32.iter_mut() {
            reqs.push(comm.all_reduce_async(b, ReduceOp::Sum).map_err(err)?);
        }
        for b in flat64.iter_mut() {
            reqs.push(comm.all_reduce_async(b, ReduceOp::Sum).map_err(err)?);
        }
        for r in reqs {
            r.wait().map_err(err)?;
        }
    }
    let scale = if average { 1.0 / n } else { 1.0 };
    let (mut k32, mut k64) = (0, 0);
    for (dt, ids) in &buckets {
        let flat = match dt {
            DType::F32 => {
                k32 += 1;
                Tensor::from_slice(&flat32[k32 - 1], flat32[k32 - 1].len(), &candle_core::Device::Cpu)?
            }
            _ => {
                k64 += 1;
                Tensor::from_slice(&flat64[k64 - 1], flat64[k64 - 1].len(), &candle_core::Device::Cpu)?
            }
        };
        let mut at = 0;
        for &i in ids {
            let t = vars[i].as_tensor();
            let len = t.elem_count();
            let g = flat.narrow(0, at, len)?.reshape(t.shape())?.affine(scale, 0.0)?;
            grads.insert(t, g);
            at += len;
        }
    }
    Ok(())
}
