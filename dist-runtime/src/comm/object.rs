//! Collectives on serde values: each is a size exchange plus the byte collective.

use crate::comm::Comm;
use crate::error::{Error, Result};
use crate::group::Group;

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
}

pub(crate) fn encode<V: serde::Serialize>(op: &'static str, v: &V) -> Result<Vec<u8>> {
    bincode::serialize(v).map_err(|e| Error::Serde { op, msg: e.to_string() })
}

pub(crate) fn decode<V: serde::de::DeserializeOwned>(op: &'static str, b: &[u8]) -> Result<V> {
    bincode::deserialize(b).map_err(|e| Error::Serde { op, msg: e.to_string() })
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
