//! Checkpoints for jobs that restart after a failure (`cargo spmd run --max-restarts K`,
//! [`Launch::max_restarts`](crate::launch::Launch::max_restarts)): each rank saves its
//! state per step, and a restarted job resumes from the last step every rank saved.
//!
//! Each rank writes `DIR/step-<step>/rank-<r>-of-<n>` atomically (a temporary file, then
//! a rename, then the directory synced), so a file is either whole or absent whatever
//! the moment a rank dies. A step is complete when all `n` ranks' files are there; every
//! rank computes the same last complete step from the directory (on one host, or shared
//! storage), so no message is needed to agree on it, and the compile-time check sees
//! plain data. A rank deletes its own files of the steps before the last complete one,
//! so two steps stay on disk at most per rank.

use crate::error::{Error, Result};
use std::path::{Path, PathBuf};

/// One rank's checkpoints in a job directory.
#[derive(Clone, Debug)]
pub struct Checkpoint {
    dir: PathBuf,
    rank: usize,
    n: usize,
}

fn io(what: &str, path: &Path, e: std::io::Error) -> Error {
    Error::backend("checkpoint", format!("{what} {}: {e}", path.display()))
}

impl Checkpoint {
    /// Rank `rank` of `n`'s checkpoints under `dir` (created if missing). Pass the
    /// communicator's `rank()` and `size()`.
    ///
    /// ```
    /// use dist_runtime::checkpoint::Checkpoint;
    /// let dir = std::env::temp_dir().join(format!("dist-ckpt-doc-{}", std::process::id()));
    /// let ck = Checkpoint::new(&dir, 0, 1).unwrap();
    /// assert_eq!(ck.load::<Vec<f64>>().unwrap(), None); // nothing saved yet: start at 0
    /// ck.save(0, &vec![1.5, 2.5]).unwrap();
    /// ck.save(1, &vec![3.5]).unwrap();
    /// assert_eq!(ck.load::<Vec<f64>>().unwrap(), Some((1, vec![3.5])));
    /// std::fs::remove_dir_all(&dir).unwrap();
    /// ```
    pub fn new(dir: impl Into<PathBuf>, rank: usize, n: usize) -> Result<Checkpoint> {
        let dir = dir.into();
        if n == 0 || rank >= n {
            return Err(Error::invalid("Checkpoint::new", format!("rank {rank} of {n} ranks")));
        }
        std::fs::create_dir_all(&dir).map_err(|e| io("cannot create", &dir, e))?;
        Ok(Checkpoint { dir, rank, n })
    }

    fn file(&self, step: u64, rank: usize) -> PathBuf {
        self.dir.join(format!("step-{step:016}")).join(format!("rank-{rank}-of-{}", self.n))
    }

    /// Saves this rank's `state` as step `step` (steps increase). Returns once the file
    /// is on disk.
    pub fn save<T: serde::Serialize>(&self, step: u64, state: &T) -> Result<()> {
        let bytes =
            postcard::to_allocvec(state).map_err(|e| Error::Serde { op: "Checkpoint::save", msg: e.to_string() })?;
        let path = self.file(step, self.rank);
        let dir = path.parent().expect("a step directory");
        std::fs::create_dir_all(dir).map_err(|e| io("cannot create", dir, e))?;
        let tmp = dir.join(format!(".rank-{}-of-{}.tmp", self.rank, self.n));
        {
            use std::io::Write;
            let mut f = std::fs::File::create(&tmp).map_err(|e| io("cannot write", &tmp, e))?;
            f.write_all(&bytes).and_then(|_| f.sync_all()).map_err(|e| io("cannot write", &tmp, e))?;
        }
        std::fs::rename(&tmp, &path).map_err(|e| io("cannot rename into", &path, e))?;
        if let Ok(d) = std::fs::File::open(dir) {
            let _ = d.sync_all();
        }
        // Older steps than the last complete one are never loaded again: drop ours.
        if let Some(last) = self.last_complete()? {
            for s in self.steps()?.into_iter().filter(|&s| s < last) {
                let _ = std::fs::remove_file(self.file(s, self.rank));
                let _ = std::fs::remove_dir(self.dir.join(format!("step-{s:016}")));
            }
        }
        Ok(())
    }

    /// The steps with a directory, ascending.
    fn steps(&self) -> Result<Vec<u64>> {
        let rd = std::fs::read_dir(&self.dir).map_err(|e| io("cannot read", &self.dir, e))?;
        let mut steps: Vec<u64> =
            rd.filter_map(|e| e.ok()?.file_name().to_str()?.strip_prefix("step-")?.parse().ok()).collect();
        steps.sort_unstable();
        Ok(steps)
    }

    /// The last step every rank saved, if any.
    pub fn last_complete(&self) -> Result<Option<u64>> {
        Ok(self.steps()?.into_iter().rev().find(|&s| (0..self.n).all(|r| self.file(s, r).is_file())))
    }

    /// The last step every rank saved, and this rank's state at it; `None` when no
    /// step is complete (a first run). Every rank of a restarted job gets the same step.
    pub fn load<T: serde::de::DeserializeOwned>(&self) -> Result<Option<(u64, T)>> {
        let Some(step) = self.last_complete()? else {
            return Ok(None);
        };
        let path = self.file(step, self.rank);
        let bytes = std::fs::read(&path).map_err(|e| io("cannot read", &path, e))?;
        let state = postcard::from_bytes(&bytes)
            .map_err(|e| Error::Serde { op: "Checkpoint::load", msg: format!("{}: {e}", path.display()) })?;
        Ok(Some((step, state)))
    }
}

#[cfg(test)]
mod tests {
    use super::Checkpoint;

    fn dir(name: &str) -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!("dist-ckpt-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        d
    }

    #[test]
    fn a_step_counts_once_every_rank_saved_it() {
        let d = dir("complete");
        let (a, b) = (Checkpoint::new(&d, 0, 2).unwrap(), Checkpoint::new(&d, 1, 2).unwrap());
        a.save(0, &10u32).unwrap();
        assert_eq!(a.load::<u32>().unwrap(), None);
        b.save(0, &20u32).unwrap();
        a.save(1, &11u32).unwrap();
        // Step 1 has rank 0's file only: both load step 0, each its own state.
        assert_eq!(a.load::<u32>().unwrap(), Some((0, 10)));
        assert_eq!(b.load::<u32>().unwrap(), Some((0, 20)));
        b.save(1, &21u32).unwrap();
        a.save(2, &12u32).unwrap();
        assert_eq!(b.load::<u32>().unwrap(), Some((1, 21)));
        // Steps before the last complete one are gone from rank 0 (it saved after step 1
        // was complete); step 1 stays.
        assert!(!d.join("step-0000000000000000/rank-0-of-2").exists());
        assert!(d.join("step-0000000000000001/rank-0-of-2").exists());
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn another_world_size_or_a_bad_rank_is_refused() {
        let d = dir("size");
        assert!(Checkpoint::new(&d, 2, 2).is_err());
        let a = Checkpoint::new(&d, 0, 1).unwrap();
        a.save(3, &1u8).unwrap();
        // A job of 2 ranks finds no step complete for 2.
        assert_eq!(Checkpoint::new(&d, 0, 2).unwrap().load::<u8>().unwrap(), None);
        std::fs::remove_dir_all(&d).unwrap();
    }
}
