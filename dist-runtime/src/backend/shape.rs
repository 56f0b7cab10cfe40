//! The buffers of one op by shape: one type, [`Shape`], for every place an op's buffers
//! travel. What a buffer *is* depends on the place, and is the [`Side`] parameter:
//!
//! - [`Bufs`]: the host backends' view, borrowed bytes (`&[u8]`, `&mut [u8]`) with byte
//!   counts per rank;
//! - [`DevBufs`]: the device's view, addresses ([`DevPtr`]), and the one shape only a
//!   device has, a group of sends and receives (NCCL's group calls);
//! - [`Layout`]: the shape alone with its counts, which the typed layer builds once per
//!   call and fills with host bytes or device addresses ([`Layout::host`],
//!   [`Layout::device`]); the non-blocking worker and the simulated device keep it while
//!   they hold copies of the buffers.
//!
//! A new collective of a new shape adds one variant here; one of an existing shape adds
//! nothing.

use crate::backend::DevPtr;
use crate::dtype::DType;
use crate::error::{Error, Result};
use std::marker::PhantomData;

/// What a buffer, a list of counts and a device group are in one place an op's buffers
/// travel (see the module's text).
pub(crate) trait Side {
    /// A buffer the op reads.
    type Send;
    /// A buffer the op writes (or, in place, reads and writes).
    type Recv;
    /// Byte counts per rank.
    type Counts;
    /// A group of sends and receives posted together (the device's; none on the host).
    type Group;
}

/// The buffers of one op, by shape. Counts are in bytes, already validated.
pub(crate) enum Shape<S: Side> {
    /// `barrier`.
    None,
    /// `broadcast`, `reduce`, `all_reduce`, scans: in place (a reduce leaves non-roots'
    /// as is).
    InPlace(S::Recv),
    /// `gather(_v)` (`recv` on the root only) and `all_gather(_v)` (`recv` everywhere):
    /// `counts[j]` bytes from rank j land at offset `Σ_{i<j} counts[i]` of `recv`.
    Gather { send: S::Send, recv: Option<S::Recv>, counts: S::Counts },
    /// `scatter(_v)`: the root's `send` holds `size` blocks, block j of `counts[j]`
    /// bytes at offset `Σ_{i<j} counts[i]`, for rank j (`recv.len() == counts[rank]`).
    Scatter { send: Option<S::Send>, recv: S::Recv, counts: S::Counts },
    /// `reduce_scatter(_v)`: `send` holds `size` blocks laid out as `Scatter`'s; rank j
    /// gets the reduction of block j (`recv.len() == counts[rank]`).
    ReduceScatter { send: S::Send, recv: S::Recv, counts: S::Counts },
    /// `all_to_all(_v)`: block j of `send` (`send_counts[j]` bytes) goes to rank j; block
    /// i of `recv` (`recv_counts[i]` bytes) comes from rank i.
    AllToAll { send: S::Send, send_counts: S::Counts, recv: S::Recv, recv_counts: S::Counts },
    /// Sends and receives posted as one group (`send`, `recv` and `batch` on the device).
    /// Messages between two ranks match in posting order: device p2p has no tags.
    Group(S::Group),
}

/// Nothing: the host has no grouped form (its `batch` posts each send and receive).
pub(crate) enum NoGroup {}

/// The host backends' side: borrowed bytes.
pub(crate) struct Host<'a>(PhantomData<&'a mut [u8]>);

impl<'a> Side for Host<'a> {
    type Send = &'a [u8];
    type Recv = &'a mut [u8];
    type Counts = &'a [usize];
    type Group = NoGroup;
}

/// The device's side: addresses on the device.
pub(crate) struct Dev;

impl Side for Dev {
    type Send = DevPtr;
    type Recv = DevPtr;
    type Counts = Vec<usize>;
    type Group = Vec<DevP2p>;
}

/// The shape alone: where the buffers go, not what they are.
pub(crate) struct Plan;

impl Side for Plan {
    type Send = ();
    type Recv = ();
    type Counts = Vec<usize>;
    /// Each entry: whether it sends, the peer, the element type.
    type Group = Vec<(bool, usize, DType)>;
}

/// The buffers of a host op.
pub(crate) type Bufs<'a> = Shape<Host<'a>>;
/// The buffers of a device op.
pub(crate) type DevBufs = Shape<Dev>;
/// The shape of an op without its buffers.
pub(crate) type Layout = Shape<Plan>;

/// One send or receive of a device [`Shape::Group`].
#[derive(Clone, Copy, Debug)]
#[cfg_attr(not(any(feature = "sim-device", feature = "nccl")), allow(dead_code))]
pub(crate) struct DevP2p {
    pub(crate) send: bool,
    pub(crate) peer: usize,
    pub(crate) dtype: DType,
    pub(crate) buf: DevPtr,
}

impl Bufs<'_> {
    /// Bytes this rank contributes (for traces).
    pub(crate) fn bytes(&self) -> usize {
        match self {
            Shape::None => 0,
            Shape::InPlace(b) => b.len(),
            Shape::Gather { send, .. } | Shape::ReduceScatter { send, .. } | Shape::AllToAll { send, .. } => send.len(),
            Shape::Scatter { recv, .. } => recv.len(),
            Shape::Group(never) => match *never {},
        }
    }
}

impl Layout {
    /// Whether the op reads a buffer of this rank's besides the one it writes (`send`).
    #[cfg_attr(not(feature = "sim-device"), allow(dead_code))]
    pub(crate) fn reads(&self) -> bool {
        match self {
            Shape::None | Shape::InPlace(()) | Shape::Group(_) => false,
            Shape::Scatter { send, .. } => send.is_some(),
            Shape::Gather { .. } | Shape::ReduceScatter { .. } | Shape::AllToAll { .. } => true,
        }
    }

    /// The host backends' view: this shape over `send` and `recv`, which the typed layer
    /// passes where the shape takes them (`send` where it [`reads`](Self::reads) one).
    /// A device group has no host form.
    pub(crate) fn host<'b>(&'b self, send: Option<&'b [u8]>, recv: Option<&'b mut [u8]>) -> Result<Bufs<'b>> {
        let none: &'b [u8] = &[];
        Ok(match self {
            Shape::None => Shape::None,
            Shape::InPlace(()) => Shape::InPlace(recv.unwrap_or_default()),
            Shape::Gather { counts, .. } => Shape::Gather { send: send.unwrap_or(none), recv, counts },
            Shape::Scatter { counts, .. } => Shape::Scatter { send, recv: recv.unwrap_or_default(), counts },
            Shape::ReduceScatter { counts, .. } => {
                Shape::ReduceScatter { send: send.unwrap_or(none), recv: recv.unwrap_or_default(), counts }
            }
            Shape::AllToAll { send_counts, recv_counts, .. } => {
                Shape::AllToAll { send: send.unwrap_or(none), send_counts, recv: recv.unwrap_or_default(), recv_counts }
            }
            Shape::Group(_) => return Err(Error::backend("comm", "internal error: a device group on the host")),
        })
    }

    /// The device's view: this shape over `send` and `recv` (as [`host`](Self::host)).
    /// A device group's addresses come with it (`group`).
    #[cfg_attr(not(any(feature = "sim-device", feature = "nccl")), allow(dead_code))]
    pub(crate) fn device(self, send: Option<DevPtr>, recv: Option<DevPtr>, group: Vec<DevPtr>) -> Result<DevBufs> {
        let missing = || Error::backend("comm", "internal error: a device op without its buffer");
        Ok(match self {
            Shape::None => Shape::None,
            Shape::InPlace(()) => Shape::InPlace(recv.ok_or_else(missing)?),
            Shape::Gather { counts, .. } => Shape::Gather { send: send.ok_or_else(missing)?, recv, counts },
            Shape::Scatter { counts, .. } => Shape::Scatter { send, recv: recv.ok_or_else(missing)?, counts },
            Shape::ReduceScatter { counts, .. } => {
                Shape::ReduceScatter { send: send.ok_or_else(missing)?, recv: recv.ok_or_else(missing)?, counts }
            }
            Shape::AllToAll { send_counts, recv_counts, .. } => Shape::AllToAll {
                send: send.ok_or_else(missing)?,
                send_counts,
                recv: recv.ok_or_else(missing)?,
                recv_counts,
            },
            Shape::Group(ops) if ops.len() == group.len() => Shape::Group(
                ops.into_iter()
                    .zip(group)
                    .map(|((send, peer, dtype), buf)| DevP2p { send, peer, dtype, buf })
                    .collect(),
            ),
            Shape::Group(_) => return Err(missing()),
        })
    }
}

impl DevBufs {
    /// The shape without its addresses, and the addresses: the one it reads, the one it
    /// writes, a group's in posting order.
    #[cfg_attr(not(feature = "sim-device"), allow(dead_code))]
    pub(crate) fn into_parts(self) -> (Layout, Option<DevPtr>, Option<DevPtr>, Vec<DevPtr>) {
        match self {
            Shape::None => (Shape::None, None, None, Vec::new()),
            Shape::InPlace(b) => (Shape::InPlace(()), None, Some(b), Vec::new()),
            Shape::Gather { send, recv, counts } => {
                (Shape::Gather { send: (), recv: recv.map(|_| ()), counts }, Some(send), recv, Vec::new())
            }
            Shape::Scatter { send, recv, counts } => {
                (Shape::Scatter { send: send.map(|_| ()), recv: (), counts }, send, Some(recv), Vec::new())
            }
            Shape::ReduceScatter { send, recv, counts } => {
                (Shape::ReduceScatter { send: (), recv: (), counts }, Some(send), Some(recv), Vec::new())
            }
            Shape::AllToAll { send, send_counts, recv, recv_counts } => {
                (Shape::AllToAll { send: (), send_counts, recv: (), recv_counts }, Some(send), Some(recv), Vec::new())
            }
            Shape::Group(ops) => (
                Shape::Group(ops.iter().map(|q| (q.send, q.peer, q.dtype)).collect()),
                None,
                None,
                ops.iter().map(|q| q.buf).collect(),
            ),
        }
    }
}
