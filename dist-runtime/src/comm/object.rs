//! Collectives on serde values: each is a size exchange plus the byte collective. Values
//! are encoded with postcard (compact; integers as variable-length, so a large array of
//! integers encodes several times slower than it copies: send arrays with the typed ops,
//! which never encode). Every rank runs the same program, so the format is private to it.

use crate::comm::Comm;
use crate::error::{Error, Result};
use crate::group::Group;
use crate::tag::Tag;

impl<G: Group> Comm<G> {
    // ---------------------------------------------------------------- objects

    /// Gathers a serialisable value from every rank, on every rank (torch's
    /// `all_gather_object`).
    ///
    /// ```
    /// # use dist_runtime::prelude::*;
    /// # #[spmd]
    /// # fn demo(world: Comm<World>) -> dist_runtime::Result<()> {
    /// let mine = (world.rank(), "x".repeat(world.rank()));
    /// let all = world.all_gather_object(&mine)?;
    /// // [(0, ""), (1, "x"), (2, "xx"), …]
    /// let want: Vec<(usize, String)> = (0..world.size()).map(|j| (j, "x".repeat(j))).collect();
    /// assert_eq!(all, want);
    /// # Ok(()) }
    /// # fn main() { dist_runtime::launch(3, demo).unwrap(); }
    /// ```
    #[track_caller]
    pub fn all_gather_object<V: serde::Serialize + serde::de::DeserializeOwned>(&self, value: &V) -> Result<Vec<V>> {
        let mine = encode("all_gather_object", value)?;
        let mut lens = vec![0u64; self.size()];
        self.all_gather(&[mine.len() as u64], &mut lens)?;
        let counts: Vec<usize> = lens.iter().map(|&l| l as usize).collect();
        let mut all = vec![0u8; counts.iter().sum()];
        self.all_gather_v(&mine, &mut all, &counts)?;
        split_decode("all_gather_object", &all, &counts)
    }

    /// Sends `root`'s value to every rank. `root` passes `Some(value)`, the others `None`;
    /// every rank gets the value back.
    ///
    /// ```
    /// # use dist_runtime::prelude::*;
    /// # #[spmd]
    /// # fn demo(world: Comm<World>) -> dist_runtime::Result<()> {
    /// let root = world.size() - 1;
    /// let value = (world.rank() == root).then(|| (String::from("adamw"), 3e-4f64));
    /// let (opt, lr) = world.broadcast_object(value, root)?;
    /// assert_eq!((opt.as_str(), lr), ("adamw", 3e-4));
    /// # Ok(()) }
    /// # fn main() { dist_runtime::launch(3, demo).unwrap(); }
    /// ```
    #[track_caller]
    pub fn broadcast_object<V: serde::Serialize + serde::de::DeserializeOwned>(
        &self,
        value: Option<V>,
        root: usize,
    ) -> Result<V> {
        self.check_rank("broadcast_object", "root", root)?;
        let mut data = match (value, self.rank() == root) {
            (Some(v), true) => encode("broadcast_object", &v)?,
            (None, true) => {
                return Err(Error::invalid("broadcast_object", format!("root {root} must pass Some(value)")))
            }
            (Some(_), false) => {
                return Err(Error::invalid(
                    "broadcast_object",
                    format!("rank {} is not the root ({root}) and must pass None", self.rank()),
                ))
            }
            (None, false) => Vec::new(),
        };
        let mut len = [data.len() as u64];
        self.broadcast(&mut len, root)?;
        data.resize(len[0] as usize, 0);
        self.broadcast(&mut data, root)?;
        decode("broadcast_object", &data)
    }

    /// Gathers a serialisable value from every rank on `root` (`Some(values)` there,
    /// `None` elsewhere).
    ///
    /// ```
    /// # use dist_runtime::prelude::*;
    /// # #[spmd]
    /// # fn demo(world: Comm<World>) -> dist_runtime::Result<()> {
    /// let root = 0;
    /// let got = world.gather_object(&vec![world.rank(); world.rank()], root)?;
    /// if world.rank() == root {
    ///     // [[], [1], [2, 2], …]
    ///     let want: Vec<Vec<usize>> = (0..world.size()).map(|j| vec![j; j]).collect();
    ///     assert_eq!(got, Some(want));
    /// } else {
    ///     assert_eq!(got, None);
    /// }
    /// # Ok(()) }
    /// # fn main() { dist_runtime::launch(3, demo).unwrap(); }
    /// ```
    #[track_caller]
    pub fn gather_object<V: serde::Serialize + serde::de::DeserializeOwned>(
        &self,
        value: &V,
        root: usize,
    ) -> Result<Option<Vec<V>>> {
        self.check_rank("gather_object", "root", root)?;
        let mine = encode("gather_object", value)?;
        let mut lens = vec![0u64; self.size()];
        self.all_gather(&[mine.len() as u64], &mut lens)?;
        let counts: Vec<usize> = lens.iter().map(|&l| l as usize).collect();
        if self.rank() == root {
            let mut all = vec![0u8; counts.iter().sum()];
            self.gather_v(&mine, Some(&mut all), &counts, root)?;
            Ok(Some(split_decode("gather_object", &all, &counts)?))
        } else {
            self.gather_v(&mine, None, &counts, root)?;
            Ok(None)
        }
    }

    /// Gives block j of `root`'s values to rank j (torch's `scatter_object_list`):
    /// `root` passes `Some` of exactly `size()` values, the others `None`; every rank
    /// gets its own value back.
    ///
    /// ```
    /// # use dist_runtime::prelude::*;
    /// # #[spmd]
    /// # fn demo(world: Comm<World>) -> dist_runtime::Result<()> {
    /// // The root hands each rank its shard of the work: a list of file names.
    /// let plan: Vec<Vec<String>> =
    ///     (0..world.size()).map(|j| (0..j).map(|k| format!("part-{j}-{k}")).collect()).collect();
    /// let mine: Vec<String> = world.scatter_object((world.rank() == 0).then_some(&plan[..]), 0)?;
    /// assert_eq!(mine.len(), world.rank());
    /// assert!(mine.iter().all(|f| f.starts_with(&format!("part-{}-", world.rank()))));
    /// # Ok(()) }
    /// # fn main() { dist_runtime::launch(3, demo).unwrap(); }
    /// ```
    #[track_caller]
    pub fn scatter_object<V: serde::Serialize + serde::de::DeserializeOwned>(
        &self,
        values: Option<&[V]>,
        root: usize,
    ) -> Result<V> {
        const OP: &str = "scatter_object";
        self.check_rank(OP, "root", root)?;
        let n = self.size();
        let (data, lens) = match (values, self.rank() == root) {
            (Some(vs), true) if vs.len() == n => {
                let parts = vs.iter().map(|v| encode(OP, v)).collect::<Result<Vec<_>>>()?;
                let lens: Vec<u64> = parts.iter().map(|p| p.len() as u64).collect();
                (parts.concat(), lens)
            }
            (Some(vs), true) => {
                return Err(Error::invalid(
                    OP,
                    format!("root {root} passed {} values; give one per rank ({n})", vs.len()),
                ))
            }
            (None, true) => return Err(Error::invalid(OP, format!("root {root} must pass Some(values)"))),
            (Some(_), false) => {
                return Err(Error::invalid(
                    OP,
                    format!("rank {} is not the root ({root}) and must pass None", self.rank()),
                ))
            }
            (None, false) => (Vec::new(), vec![0; n]),
        };
        let mut lens_all = lens;
        self.broadcast(&mut lens_all, root)?;
        let counts: Vec<usize> = lens_all.iter().map(|&l| l as usize).collect();
        let mut mine = vec![0u8; counts[self.rank()]];
        let send = (self.rank() == root).then_some(&data[..]);
        self.scatter_v(send, &mut mine, &counts, root)?;
        decode(OP, &mine)
    }

    // ---------------------------------------------------------------- object p2p

    /// Sends a serialisable value to rank `dst` (torch's `send_object_list`); the tag
    /// names the value's type, so only a [`recv_object`](Self::recv_object) of the same
    /// type matches it. Blocking as [`send`](Self::send): returns once the value may
    /// be reused.
    ///
    /// ```
    /// # use dist_runtime::prelude::*;
    /// #[derive(serde::Serialize, serde::Deserialize, PartialEq, Debug)]
    /// struct Batch {
    ///     step: u64,
    ///     tokens: Vec<u32>,
    /// }
    /// const BATCH: Tag<Batch> = Tag::new(7);
    /// # #[spmd]
    /// # fn demo(world: Comm<World>) -> dist_runtime::Result<()> {
    /// let (r, n) = (world.rank(), world.size());
    /// if r == 0 {
    ///     for dst in 1..n {
    ///         world.send_object(dst, BATCH, &Batch { step: 3, tokens: vec![dst as u32; dst] })?;
    ///     }
    /// } else {
    ///     let b: Batch = world.recv_object(0, BATCH)?;
    ///     assert_eq!(b, Batch { step: 3, tokens: vec![r as u32; r] });
    /// }
    /// # Ok(()) }
    /// # fn main() { dist_runtime::launch(3, demo).unwrap(); }
    /// ```
    #[track_caller]
    pub fn send_object<V: serde::Serialize>(&self, dst: usize, tag: Tag<V>, value: &V) -> Result<()> {
        self.check_rank("send_object", "destination", dst)?;
        let data = encode("send_object", value)?;
        let site = crate::error::Site::caller();
        self.recorded("send_object", site, || {
            let b = &self.inner.backend;
            b.send(site, dst, tag.id(), crate::dtype::DType::U64, &(data.len() as u64).to_ne_bytes())?;
            b.send(site, dst, tag.id(), crate::dtype::DType::U8, &data)
        })
    }

    /// Receives a value [`send_object`](Self::send_object) sent from rank `src` with
    /// `tag` (see there for an example).
    #[track_caller]
    pub fn recv_object<V: serde::de::DeserializeOwned>(&self, src: usize, tag: Tag<V>) -> Result<V> {
        self.check_rank("recv_object", "source", src)?;
        let site = crate::error::Site::caller();
        let data = self.recorded("recv_object", site, || {
            let b = &self.inner.backend;
            let mut len = [0u8; 8];
            b.recv(site, src, tag.id(), crate::dtype::DType::U64, &mut len)?;
            let mut data = vec![0u8; u64::from_ne_bytes(len) as usize];
            b.recv(site, src, tag.id(), crate::dtype::DType::U8, &mut data)?;
            Ok(data)
        })?;
        decode("recv_object", &data)
    }
}

pub(crate) fn encode<V: serde::Serialize>(op: &'static str, v: &V) -> Result<Vec<u8>> {
    postcard::to_allocvec(v).map_err(|e| Error::Serde { op, msg: e.to_string() })
}

pub(crate) fn decode<V: serde::de::DeserializeOwned>(op: &'static str, b: &[u8]) -> Result<V> {
    postcard::from_bytes(b).map_err(|e| Error::Serde { op, msg: e.to_string() })
}

pub(crate) fn split_decode<V: serde::de::DeserializeOwned>(
    op: &'static str,
    all: &[u8],
    counts: &[usize],
) -> Result<Vec<V>> {
    let mut out = Vec::with_capacity(counts.len());
    let mut at = 0;
    for &c in counts {
        out.push(decode(op, &all[at..at + c])?);
        at += c;
    }
    Ok(out)
}
