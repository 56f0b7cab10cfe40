//! The device side of a communicator, in the typed layer: every op given device buffers
//! (cudarc's with `nccl`, the simulated device's in tests) builds the same `Op` as on the
//! host, is compared across ranks through the host backend under `DIST_DEBUG=check`, is
//! enqueued on the communicator's [`Device`], and its wait is bounded by `DIST_TIMEOUT`.

use crate::backend::{Completion, DevBufs, Device, Layout, Shape};
use crate::buffer::DevRef;
use crate::comm::Comm;
use crate::dtype::DType;
use crate::error::{Error, Result, Site};
use crate::group::Group;
use crate::op::Op;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A communicator's device side and the deadline of a wait on it.
pub(crate) struct DeviceSide {
    pub(crate) dev: Arc<dyn Device>,
    pub(crate) timeout: Duration,
}

/// A device op in flight: its completion, and what to say if it never comes.
pub(crate) struct DeviceWork {
    done: Box<dyn Completion>,
    op: &'static str,
    site: Site,
    comm: String,
    timeout: Duration,
    dev: Arc<dyn Device>,
}

impl DeviceWork {
    /// Blocks the host until the op has completed on the device, or fails with
    /// `Error::Timeout` naming the op, its call site and the communicator once
    /// `DIST_TIMEOUT` has passed (a device collective completes only once every member
    /// has made the matching call: one that never does hangs it). A timed-out device is
    /// aborted: it refuses further ops, and NCCL's communicator is aborted, not finalized.
    pub(crate) fn wait(mut self) -> Result<()> {
        let start = Instant::now();
        let mut nap = Duration::from_micros(1);
        loop {
            match self.done.done() {
                Ok(true) => return self.done.finish(),
                Ok(false) => {}
                Err(e) => {
                    // A failed device op leaves the communicator in an unknown state
                    // (NCCL's asynchronous errors): abort it, as after a timeout.
                    self.dev.abort();
                    return Err(e);
                }
            }
            if start.elapsed() >= self.timeout {
                self.dev.abort();
                return Err(Error::Timeout {
                    op: self.op,
                    comm: self.comm.clone(),
                    waiting_for: format!(
                        "the device to finish {} (a device op completes only once every member of {} has made \
                         the matching call: one that never does hangs it); the communicator's device side is \
                         aborted",
                        self.op, self.comm
                    ),
                    secs: self.timeout.as_secs_f64(),
                    site: self.site,
                });
            }
            // Spin for the first microseconds (short ops), then back off to 200 µs.
            if start.elapsed() > Duration::from_micros(50) {
                std::thread::sleep(nap);
                nap = (nap * 2).min(Duration::from_micros(200));
            } else {
                std::hint::spin_loop();
            }
        }
    }

    /// Whether the op has completed on the device, without blocking (an error aborts the
    /// device side, as in `wait`). The deadline is `wait`'s: a request only tested is
    /// never timed out.
    /// Its deadline (`DIST_TIMEOUT`, or the communicator's).
    pub(crate) fn timeout(&self) -> Duration {
        self.timeout
    }

    pub(crate) fn test(&mut self) -> Result<bool> {
        match self.done.done() {
            Ok(true) => self.done.finish().map(|()| true),
            Ok(false) => Ok(false),
            Err(e) => {
                self.dev.abort();
                Err(e)
            }
        }
    }

    /// Makes `stream` wait (on the GPU) for the op, without blocking the host.
    #[cfg(feature = "nccl")]
    pub(crate) fn stream_wait(self, stream: &cudarc::driver::CudaStream) -> Result<()> {
        match self.done.event() {
            Some(ev) => stream.wait(ev).map_err(|e| crate::backend::nccl::fail("cuStreamWaitEvent", e)),
            None => self.wait(),
        }
    }
}

impl<G: Group> Comm<G> {
    /// The device side, or an error naming `op` and saying how to get one.
    pub(crate) fn device_side(&self, op: &'static str) -> Result<&DeviceSide> {
        self.inner.device.as_ref().ok_or_else(|| {
            Error::invalid(
                op,
                format!(
                    "device buffers, but {} has no device side: start the job with DIST_BACKEND=nccl (or auto, \
                     on a machine with a GPU) and build with the `nccl` feature",
                    self.name()
                ),
            )
        })
    }

    /// Enqueues `op` on the device. A collective (`agree`) is first compared across ranks
    /// through the host backend under `DIST_DEBUG=check`, as a host op is, so a mismatch
    /// is `Error::Mismatch` naming both call sites instead of a hung kernel.
    pub(crate) fn device_run(&self, op: &Op, dtype: DType, bufs: DevBufs, agree: bool) -> Result<DeviceWork> {
        let side = self.device_side(op.name)?;
        if side.dev.broken() {
            return Err(Error::backend(
                side.dev.kind(),
                format!(
                    "{} at {} on {}: an earlier device op of this communicator timed out, so its device side \
                     was aborted",
                    op.name,
                    op.site,
                    self.name()
                ),
            ));
        }
        if agree && self.inner.check {
            // The record exchange runs on the host backend, after queued host work.
            self.inner.drain();
            crate::comm::exchange(&self.inner, op)?;
        }
        // NCCL's deadline on connecting peers comes back from the device without the
        // communicator's name: it is this one.
        let done = side.dev.enqueue(op, dtype, bufs).map_err(|e| match e {
            Error::Timeout { op, comm, waiting_for, secs, site } if comm.is_empty() => {
                Error::Timeout { op, comm: self.name().to_string(), waiting_for, secs, site }
            }
            e => e,
        })?;
        Ok(DeviceWork {
            done,
            op: op.name,
            site: op.site,
            comm: self.name().to_string(),
            timeout: side.timeout,
            dev: side.dev.clone(),
        })
    }

    /// Resolves `refs` on the device side (a collective's `[send, recv]`, each where
    /// `layout` takes one; a group's buffers in posting order), fills `layout` with their
    /// addresses, and enqueues it ([`device_run`](Self::device_run)); cudarc's stream
    /// records on the buffers are kept until the op is enqueued.
    pub(crate) fn device_call(
        &self,
        op: &Op,
        dtype: DType,
        refs: Vec<Option<DevRef<'_>>>,
        layout: Layout,
        agree: bool,
    ) -> Result<DeviceWork> {
        let side = self.device_side(op.name)?;
        let mut guards = Vec::with_capacity(refs.len());
        let mut ptrs = vec![None; refs.len()];
        for (slot, r) in ptrs.iter_mut().zip(refs) {
            if let Some(r) = r {
                let (p, g) = r.resolve(&*side.dev, op.name)?;
                *slot = Some(p);
                guards.push(g);
            }
        }
        // Recorded as posted (the device completes it; its wait is the request's).
        let bufs = match layout {
            Shape::Group(_) => layout.device(None, None, ptrs.into_iter().flatten().collect()),
            _ => {
                let mut p = ptrs.into_iter();
                layout.device(p.next().flatten(), p.next().flatten(), Vec::new())
            }
        };
        let work = bufs.and_then(|b| self.recorded_as(true, op.name, op.site, || self.device_run(op, dtype, b, agree)));
        drop(guards);
        work
    }

    /// Sends and receives on device buffers, posted as one group (`(is_send, peer,
    /// dtype, buffer)`); not compared across ranks (point-to-point is not collective).
    #[track_caller]
    pub(crate) fn p2p_device(
        &self,
        name: &'static str,
        ops: Vec<(bool, usize, DType, DevRef<'_>)>,
    ) -> Result<DeviceWork> {
        let op = Op::new(crate::op::OpKind::P2p).named(name);
        let kinds: Vec<(bool, usize, DType)> = ops.iter().map(|(s, p, d, _)| (*s, *p, *d)).collect();
        let refs = ops.into_iter().map(|(_, _, _, r)| Some(r)).collect();
        let dtype = kinds.first().map_or(DType::U8, |k| k.2);
        self.device_call(&op, dtype, refs, Shape::Group(kinds), false)
    }

    /// Which device side this communicator has: `Some("nccl")` in a job started with
    /// the NCCL backend, `None` on host-only jobs (device buffers are then an error).
    ///
    /// ```
    /// # use dist_runtime::prelude::*;
    /// # #[spmd]
    /// # fn demo(world: Comm<World>) -> dist_runtime::Result<()> {
    /// assert_eq!(world.device_kind(), None); // the shared-memory backend has no device side
    /// # Ok(()) }
    /// # fn main() { dist_runtime::launch(2, demo).unwrap(); }
    /// ```
    pub fn device_kind(&self) -> Option<&'static str> {
        self.inner.device.as_ref().map(|d| d.dev.kind())
    }

    /// The CUDA stream this communicator's device ops are enqueued on, in call order (to
    /// allocate and fill buffers on, or to order other work after). An error unless the
    /// job runs the NCCL backend.
    #[cfg(feature = "nccl")]
    pub fn stream(&self) -> Result<Arc<cudarc::driver::CudaStream>> {
        self.device_side("stream")?.dev.cuda_stream("stream").cloned()
    }
}
