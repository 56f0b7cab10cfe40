//! The collectives on host buffers: barrier, broadcast, reduce, all_reduce, the gathers,
//! scatter, reduce_scatter and the all-to-alls.

use crate::backend::Bufs;
use crate::comm::{bytes, bytes_mut, hash_usizes, Comm};
use crate::dtype::Element;
use crate::error::{Error, Result};
use crate::group::Group;
use crate::op::{Op, OpKind};
use crate::reduce_op::ReduceOp;

impl<G: Group> Comm<G> {
    // ---------------------------------------------------------------- collectives

    /// Blocks until every rank of the communicator has called `barrier`.
    ///
    /// ```
    /// # use dist_runtime::prelude::*;
    /// # #[spmd]
    /// # fn demo(world: Comm<World>) -> dist_runtime::Result<()> {
    /// # let dir = std::env::temp_dir()
    /// #     .join(format!("dist-barrier-doctest-{}", std::os::unix::process::parent_id()));
    /// # std::fs::create_dir_all(&dir).unwrap();
    /// // Each rank leaves a file; past the barrier, every rank sees all of them.
    /// std::fs::write(dir.join(world.rank().to_string()), b"here").unwrap();
    /// world.barrier()?;
    /// assert_eq!(std::fs::read_dir(&dir).unwrap().count(), world.size());
    /// # world.barrier()?;
    /// # if world.rank() == 0 {
    /// #     std::fs::remove_dir_all(&dir).unwrap();
    /// # }
    /// # Ok(()) }
    /// # fn main() { dist_runtime::launch(3, demo).unwrap(); }
    /// ```
    #[track_caller]
    pub fn barrier(&self) -> Result<()> {
        self.inner.drain();
        self.run(&self.cx("barrier", Op::new(OpKind::Barrier)), Bufs::None)
    }

    /// Copies `buf` of rank `root` into `buf` of every rank. Every rank passes a buffer of
    /// the same length.
    ///
    /// ```
    /// # use dist_runtime::prelude::*;
    /// # #[spmd]
    /// # fn demo(world: Comm<World>) -> dist_runtime::Result<()> {
    /// let mut params = vec![0.0f32; 4];
    /// if world.rank() == 0 {
    ///     params = vec![1.0, 2.0, 3.0, 4.0];
    /// }
    /// world.broadcast(&mut params, 0)?;
    /// assert_eq!(params, [1.0, 2.0, 3.0, 4.0]);
    /// # Ok(()) }
    /// # fn main() { dist_runtime::launch(3, demo).unwrap(); }
    /// ```
    #[track_caller]
    pub fn broadcast<T: Element>(&self, buf: &mut [T], root: usize) -> Result<()> {
        self.check_rank("broadcast", "root", root)?;
        let fp = Op::new(OpKind::Broadcast).dtype(T::DTYPE).count(buf.len()).root(root);
        self.inner.drain();
        self.run(&self.cx("broadcast", fp), Bufs::InPlace(bytes_mut(buf)))
    }

    /// Reduces `buf` over all ranks into `buf` of `root`; other ranks' `buf` is unchanged.
    ///
    /// ```
    /// # use dist_runtime::prelude::*;
    /// # #[spmd]
    /// # fn demo(world: Comm<World>) -> dist_runtime::Result<()> {
    /// let (r, n) = (world.rank() as u64, world.size() as u64);
    /// let mut x = [r, 1];
    /// world.reduce(&mut x, ReduceOp::Sum, 0)?;
    /// if r == 0 {
    ///     assert_eq!(x, [n * (n - 1) / 2, n]); // 0 + 1 + … + (n-1), and n ones
    /// } else {
    ///     assert_eq!(x, [r, 1]); // unchanged
    /// }
    /// # Ok(()) }
    /// # fn main() { dist_runtime::launch(3, demo).unwrap(); }
    /// ```
    #[track_caller]
    pub fn reduce<T: Element>(&self, buf: &mut [T], op: ReduceOp, root: usize) -> Result<()> {
        self.check_rank("reduce", "root", root)?;
        op.validate(T::DTYPE, "reduce")?;
        let fp = Op::new(OpKind::Reduce).dtype(T::DTYPE).count(buf.len()).root(root).reduce(op);
        self.inner.drain();
        self.run(&self.cx("reduce", fp), Bufs::InPlace(bytes_mut(buf)))
    }

    /// Reduces `buf` over all ranks, element by element, leaving the result in every
    /// rank's `buf`. All ranks get bitwise-identical results.
    ///
    /// ```
    /// # use dist_runtime::prelude::*;
    /// # #[spmd]
    /// # fn demo(world: Comm<World>) -> dist_runtime::Result<()> {
    /// let mut grad = vec![world.rank() as f32; 1024];
    /// world.all_reduce(&mut grad, ReduceOp::Avg)?;
    /// // The mean of 0, 1, …, n-1 is (n-1)/2.
    /// let mean = (world.size() - 1) as f32 / 2.0;
    /// assert!(grad.iter().all(|&g| g == mean));
    /// # Ok(()) }
    /// # fn main() { dist_runtime::launch(3, demo).unwrap(); }
    /// ```
    #[track_caller]
    pub fn all_reduce<T: Element>(&self, buf: &mut [T], op: ReduceOp) -> Result<()> {
        op.validate(T::DTYPE, "all_reduce")?;
        let fp = Op::new(OpKind::AllReduce).dtype(T::DTYPE).count(buf.len()).reduce(op);
        self.inner.drain();
        self.run(&self.cx("all_reduce", fp), Bufs::InPlace(bytes_mut(buf)))
    }

    /// Concatenates every rank's `send` (all of the same length) into `recv`, in rank
    /// order, on every rank: `recv.len() == size() * send.len()`.
    ///
    /// ```
    /// # use dist_runtime::prelude::*;
    /// # #[spmd]
    /// # fn demo(world: Comm<World>) -> dist_runtime::Result<()> {
    /// let r = world.rank() as u32;
    /// let mut all = vec![0u32; 2 * world.size()];
    /// world.all_gather(&[r, 10 * r], &mut all)?;
    /// // [0, 0, 1, 10, 2, 20, …]
    /// let want: Vec<u32> = (0..world.size() as u32).flat_map(|j| [j, 10 * j]).collect();
    /// assert_eq!(all, want);
    /// # Ok(()) }
    /// # fn main() { dist_runtime::launch(3, demo).unwrap(); }
    /// ```
    #[track_caller]
    pub fn all_gather<T: Element>(&self, send: &[T], recv: &mut [T]) -> Result<()> {
        self.check_len("all_gather", "recv", recv.len(), send.len() * self.size(), "size() × send.len()")?;
        let counts = vec![send.len() * T::DTYPE.size(); self.size()];
        let fp = Op::new(OpKind::AllGather).dtype(T::DTYPE).count(send.len());
        self.inner.drain();
        self.run(
            &self.cx("all_gather", fp),
            Bufs::Gather { send: bytes(send), recv: Some(bytes_mut(recv)), counts: &counts },
        )
    }

    /// As [`all_gather`](Self::all_gather) with per-rank counts: rank j contributes
    /// `counts[j]` elements (its `send.len()`), placed after those of ranks `0..j`.
    /// Every rank passes the same `counts`.
    ///
    /// ```
    /// # use dist_runtime::prelude::*;
    /// # #[spmd]
    /// # fn demo(world: Comm<World>) -> dist_runtime::Result<()> {
    /// // Rank j contributes j + 1 copies of j.
    /// let counts: Vec<usize> = (0..world.size()).map(|j| j + 1).collect();
    /// let mine = vec![world.rank() as i32; world.rank() + 1];
    /// let mut all = vec![0i32; counts.iter().sum()];
    /// world.all_gather_v(&mine, &mut all, &counts)?;
    /// // [0, 1, 1, 2, 2, 2, …]
    /// let want: Vec<i32> = (0..world.size()).flat_map(|j| vec![j as i32; j + 1]).collect();
    /// assert_eq!(all, want);
    /// # Ok(()) }
    /// # fn main() { dist_runtime::launch(3, demo).unwrap(); }
    /// ```
    #[track_caller]
    pub fn all_gather_v<T: Element>(&self, send: &[T], recv: &mut [T], counts: &[usize]) -> Result<()> {
        self.check_counts("all_gather_v", counts)?;
        self.check_len("all_gather_v", "send", send.len(), counts[self.rank()], "counts[rank]")?;
        self.check_len("all_gather_v", "recv", recv.len(), counts.iter().sum(), "the sum of counts")?;
        let bc: Vec<usize> = counts.iter().map(|c| c * T::DTYPE.size()).collect();
        let fp = Op::new(OpKind::AllGather).dtype(T::DTYPE).count(counts.iter().sum()).extra(hash_usizes(counts));
        self.inner.drain();
        self.run(
            &self.cx("all_gather_v", fp),
            Bufs::Gather { send: bytes(send), recv: Some(bytes_mut(recv)), counts: &bc },
        )
    }

    /// Gathers every rank's `send` (all of the same length) into `recv` on `root`, in rank
    /// order. `root` passes `Some(recv)` with `size() * send.len()` elements; the others
    /// pass `None`.
    ///
    /// ```
    /// # use dist_runtime::prelude::*;
    /// # #[spmd]
    /// # fn demo(world: Comm<World>) -> dist_runtime::Result<()> {
    /// let root = world.size() - 1;
    /// let mine = [2 * world.rank() as u32];
    /// if world.rank() == root {
    ///     let mut all = vec![0u32; world.size()];
    ///     world.gather(&mine, Some(&mut all[..]), root)?;
    ///     assert_eq!(all, (0..world.size() as u32).map(|j| 2 * j).collect::<Vec<_>>());
    /// } else {
    ///     world.gather(&mine, None, root)?;
    /// }
    /// # Ok(()) }
    /// # fn main() { dist_runtime::launch(3, demo).unwrap(); }
    /// ```
    #[track_caller]
    pub fn gather<T: Element>(&self, send: &[T], recv: Option<&mut [T]>, root: usize) -> Result<()> {
        let counts = vec![send.len(); self.size()];
        self.gather_impl("gather", send, recv, &counts, root, false)
    }

    /// As [`gather`](Self::gather) with per-rank counts (the same `counts` on every rank).
    ///
    /// ```
    /// # use dist_runtime::prelude::*;
    /// # #[spmd]
    /// # fn demo(world: Comm<World>) -> dist_runtime::Result<()> {
    /// // Rank j sends j + 1 copies of j; the root gets them one rank after another.
    /// let root = 0;
    /// let counts: Vec<usize> = (1..=world.size()).collect();
    /// let mine = vec![world.rank() as u64; world.rank() + 1];
    /// if world.rank() == root {
    ///     let mut all = vec![0u64; counts.iter().sum()];
    ///     world.gather_v(&mine, Some(&mut all[..]), &counts, root)?;
    ///     let want: Vec<u64> = (0..world.size()).flat_map(|j| vec![j as u64; j + 1]).collect();
    ///     assert_eq!(all, want); // [0, 1, 1, 2, 2, 2, …]
    /// } else {
    ///     world.gather_v(&mine, None, &counts, root)?;
    /// }
    /// # Ok(()) }
    /// # fn main() { dist_runtime::launch(3, demo).unwrap(); }
    /// ```
    #[track_caller]
    pub fn gather_v<T: Element>(
        &self,
        send: &[T],
        recv: Option<&mut [T]>,
        counts: &[usize],
        root: usize,
    ) -> Result<()> {
        self.check_counts("gather_v", counts)?;
        self.gather_impl("gather_v", send, recv, counts, root, true)
    }

    #[track_caller]
    pub(crate) fn gather_impl<T: Element>(
        &self,
        op: &'static str,
        send: &[T],
        recv: Option<&mut [T]>,
        counts: &[usize],
        root: usize,
        v: bool,
    ) -> Result<()> {
        self.check_rank(op, "root", root)?;
        self.check_len(
            op,
            "send",
            send.len(),
            counts[self.rank()],
            if v { "counts[rank]" } else { "the same on every rank" },
        )?;
        match (&recv, self.rank() == root) {
            (None, true) => {
                return Err(Error::invalid(
                    op,
                    format!("root {root} must pass Some(recv) with {} elements", counts.iter().sum::<usize>()),
                ))
            }
            (Some(_), false) => {
                return Err(Error::invalid(
                    op,
                    format!("rank {} is not the root ({root}) and must pass None for recv", self.rank()),
                ))
            }
            (Some(r), true) => self.check_len(
                op,
                "recv",
                r.len(),
                counts.iter().sum(),
                if v { "the sum of counts" } else { "size() × send.len()" },
            )?,
            (None, false) => {}
        }
        let bc: Vec<usize> = counts.iter().map(|c| c * T::DTYPE.size()).collect();
        let mut fp = Op::new(OpKind::Gather).dtype(T::DTYPE).root(root);
        fp = if v { fp.count(counts.iter().sum()).extra(hash_usizes(counts)) } else { fp.count(send.len()) };
        self.inner.drain();
        self.inner
            .backend
            .run(&self.cx(op, fp), Bufs::Gather { send: bytes(send), recv: recv.map(bytes_mut), counts: &bc })
    }

    /// Splits `root`'s `send` (`size() * recv.len()` elements) into `size()` blocks and
    /// gives block j to rank j. `root` passes `Some(send)`; the others pass `None`.
    ///
    /// ```
    /// # use dist_runtime::prelude::*;
    /// # #[spmd]
    /// # fn demo(world: Comm<World>) -> dist_runtime::Result<()> {
    /// let root = 0;
    /// let data: Vec<i64> = (0..2 * world.size() as i64).collect();
    /// let send = if world.rank() == root { Some(&data[..]) } else { None };
    /// let mut mine = [0i64; 2];
    /// world.scatter(send, &mut mine, root)?;
    /// let r = world.rank() as i64;
    /// assert_eq!(mine, [2 * r, 2 * r + 1]);
    /// # Ok(()) }
    /// # fn main() { dist_runtime::launch(3, demo).unwrap(); }
    /// ```
    #[track_caller]
    pub fn scatter<T: Element>(&self, send: Option<&[T]>, recv: &mut [T], root: usize) -> Result<()> {
        self.check_rank("scatter", "root", root)?;
        match (&send, self.rank() == root) {
            (None, true) => {
                return Err(Error::invalid(
                    "scatter",
                    format!("root {root} must pass Some(send) with {} elements", recv.len() * self.size()),
                ))
            }
            (Some(_), false) => {
                return Err(Error::invalid(
                    "scatter",
                    format!("rank {} is not the root ({root}) and must pass None for send", self.rank()),
                ))
            }
            (Some(s), true) => {
                self.check_len("scatter", "send", s.len(), recv.len() * self.size(), "size() × recv.len()")?
            }
            (None, false) => {}
        }
        let fp = Op::new(OpKind::Scatter).dtype(T::DTYPE).count(recv.len()).root(root);
        self.inner.drain();
        self.run(&self.cx("scatter", fp), Bufs::Scatter { send: send.map(bytes), recv: bytes_mut(recv) })
    }

    /// Reduces `send` (`size()` blocks of `recv.len()` elements) over all ranks and gives
    /// rank j the reduction of block j.
    ///
    /// ```
    /// # use dist_runtime::prelude::*;
    /// # #[spmd]
    /// # fn demo(world: Comm<World>) -> dist_runtime::Result<()> {
    /// let (r, n) = (world.rank() as u64, world.size() as u64);
    /// // Block j of every rank's `send` is [r, j]; it sums to [0 + 1 + … + (n-1), n·j].
    /// let send: Vec<u64> = (0..n).flat_map(|j| [r, j]).collect();
    /// let mut mine = [0u64; 2];
    /// world.reduce_scatter(&send, &mut mine, ReduceOp::Sum)?;
    /// assert_eq!(mine, [n * (n - 1) / 2, n * r]);
    /// # Ok(()) }
    /// # fn main() { dist_runtime::launch(3, demo).unwrap(); }
    /// ```
    #[track_caller]
    pub fn reduce_scatter<T: Element>(&self, send: &[T], recv: &mut [T], op: ReduceOp) -> Result<()> {
        op.validate(T::DTYPE, "reduce_scatter")?;
        self.check_len("reduce_scatter", "send", send.len(), recv.len() * self.size(), "size() × recv.len()")?;
        let fp = Op::new(OpKind::ReduceScatter).dtype(T::DTYPE).count(recv.len()).reduce(op);
        self.inner.drain();
        self.inner
            .backend
            .run(&self.cx("reduce_scatter", fp), Bufs::ReduceScatter { send: bytes(send), recv: bytes_mut(recv) })
    }

    /// Sends block j of `send` to rank j and receives block i of `recv` from rank i; all
    /// blocks have `send.len() / size()` elements.
    ///
    /// ```
    /// # use dist_runtime::prelude::*;
    /// # #[spmd]
    /// # fn demo(world: Comm<World>) -> dist_runtime::Result<()> {
    /// let (r, n) = (world.rank() as u32, world.size() as u32);
    /// // Rank r sends 10·r + j to rank j …
    /// let send: Vec<u32> = (0..n).map(|j| 10 * r + j).collect();
    /// let mut recv = vec![0u32; n as usize];
    /// world.all_to_all(&send, &mut recv)?;
    /// // … so block i of `recv` is 10·i + r, from rank i.
    /// let want: Vec<u32> = (0..n).map(|i| 10 * i + r).collect();
    /// assert_eq!(recv, want);
    /// # Ok(()) }
    /// # fn main() { dist_runtime::launch(3, demo).unwrap(); }
    /// ```
    #[track_caller]
    pub fn all_to_all<T: Element>(&self, send: &[T], recv: &mut [T]) -> Result<()> {
        let n = self.size();
        if !send.len().is_multiple_of(n) {
            return Err(Error::invalid(
                "all_to_all",
                format!("send has {} elements, not a multiple of the communicator size {n}", send.len()),
            ));
        }
        self.check_len("all_to_all", "recv", recv.len(), send.len(), "the same as send")?;
        let counts = vec![send.len() / n * T::DTYPE.size(); n];
        let fp = Op::new(OpKind::AllToAll).dtype(T::DTYPE).count(send.len());
        self.inner.drain();
        self.run(
            &self.cx("all_to_all", fp),
            Bufs::AllToAll { send: bytes(send), send_counts: &counts, recv: bytes_mut(recv), recv_counts: &counts },
        )
    }

    /// All-to-all with per-pair counts: `send_counts[j]` elements go to rank j,
    /// `recv_counts[i]` come from rank i. What i sends to j must equal what j expects
    /// from i; that is checked across ranks, and a disagreement is an error on every rank.
    ///
    /// ```
    /// # use dist_runtime::prelude::*;
    /// # #[spmd]
    /// # fn demo(world: Comm<World>) -> dist_runtime::Result<()> {
    /// let (r, n) = (world.rank(), world.size());
    /// // Rank i sends i + j copies of 100·i + j to rank j (none from 0 to itself).
    /// let send_counts: Vec<usize> = (0..n).map(|j| r + j).collect();
    /// let recv_counts: Vec<usize> = (0..n).map(|i| i + r).collect();
    /// let send: Vec<u32> = (0..n).flat_map(|j| vec![(100 * r + j) as u32; r + j]).collect();
    /// let mut recv = vec![0u32; recv_counts.iter().sum()];
    /// world.all_to_all_v(&send, &send_counts, &mut recv, &recv_counts)?;
    /// let want: Vec<u32> = (0..n).flat_map(|i| vec![(100 * i + r) as u32; i + r]).collect();
    /// assert_eq!(recv, want);
    /// # Ok(()) }
    /// # fn main() { dist_runtime::launch(3, demo).unwrap(); }
    /// ```
    #[track_caller]
    pub fn all_to_all_v<T: Element>(
        &self,
        send: &[T],
        send_counts: &[usize],
        recv: &mut [T],
        recv_counts: &[usize],
    ) -> Result<()> {
        self.check_counts("all_to_all_v", send_counts)?;
        self.check_counts("all_to_all_v", recv_counts)?;
        self.check_len("all_to_all_v", "send", send.len(), send_counts.iter().sum(), "the sum of send_counts")?;
        self.check_len("all_to_all_v", "recv", recv.len(), recv_counts.iter().sum(), "the sum of recv_counts")?;
        let es = T::DTYPE.size();
        let sc: Vec<usize> = send_counts.iter().map(|c| c * es).collect();
        let rc: Vec<usize> = recv_counts.iter().map(|c| c * es).collect();
        let fp = Op::new(OpKind::AllToAll).dtype(T::DTYPE).varying();
        self.inner.drain();
        self.run(
            &self.cx("all_to_all_v", fp),
            Bufs::AllToAll { send: bytes(send), send_counts: &sc, recv: bytes_mut(recv), recv_counts: &rc },
        )
    }
}
