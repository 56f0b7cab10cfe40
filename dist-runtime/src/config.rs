//! The environment contract (DESIGN.md): torchrun's and Slurm's variables plus `DIST_*`.

use crate::error::{Error, Result};
use std::time::Duration;

/// Which backend moves the bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BackendChoice {
    /// Shared memory between processes on one machine (the default).
    Shm,
    /// NCCL on GPUs (needs the `nccl` feature).
    Nccl,
    /// MPI for CPU clusters (not built yet).
    Mpi,
    /// NCCL when built and a GPU is visible, else shm.
    Auto,
}

impl BackendChoice {
    /// Parses a `DIST_BACKEND` value (`shm`, `nccl`, `mpi`, `auto`; any case). The error
    /// quotes the value and names the valid ones.
    pub fn parse(v: &str) -> std::result::Result<BackendChoice, String> {
        match v.trim().to_ascii_lowercase().as_str() {
            "shm" => Ok(BackendChoice::Shm),
            "nccl" => Ok(BackendChoice::Nccl),
            "mpi" => Ok(BackendChoice::Mpi),
            "auto" => Ok(BackendChoice::Auto),
            _ => Err(format!("{v:?} is not one of shm, nccl, mpi, auto")),
        }
    }

    /// The name `DIST_BACKEND` takes for this choice.
    pub fn name(self) -> &'static str {
        match self {
            BackendChoice::Shm => "shm",
            BackendChoice::Nccl => "nccl",
            BackendChoice::Mpi => "mpi",
            BackendChoice::Auto => "auto",
        }
    }
}

/// How much checking collectives do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DebugLevel {
    /// No cross-rank checks: nothing on the fast path.
    Off,
    /// Every collective's fingerprint is compared across ranks.
    Check,
    /// As `Check`, plus more detail in reports.
    Detail,
}

/// What `init` read from the environment.
#[derive(Clone, Debug)]
pub struct Env {
    /// `RANK` (or `SLURM_PROCID`).
    pub rank: usize,
    /// `WORLD_SIZE` (or `SLURM_NTASKS`).
    pub world_size: usize,
    /// `LOCAL_RANK` (or `SLURM_LOCALID`); defaults to `rank`.
    pub local_rank: usize,
    /// `LOCAL_WORLD_SIZE`; defaults to `world_size`.
    pub local_world_size: usize,
    /// `MASTER_ADDR`; defaults to 127.0.0.1.
    pub master_addr: String,
    /// `MASTER_PORT`; required when `world_size > 1`.
    pub master_port: Option<u16>,
    /// `DIST_BACKEND`.
    pub backend: BackendChoice,
    /// `DIST_JOB_ID`.
    pub job_id: String,
    /// `DIST_JOB_TOKEN`: the rendezvous secret (empty: no secret).
    pub token: String,
    /// `DIST_TIMEOUT` in seconds; default 300.
    pub timeout: Duration,
    /// `DIST_DEBUG`; default `check` in debug builds, `off` in release builds.
    pub debug: DebugLevel,
    /// `DIST_STORE_EXTERNAL=1`: a launcher hosts the store, rank 0 must not.
    pub store_external: bool,
    /// `DIST_TRACE=DIR`: write each op as a Chrome trace event to `DIR/rank-<r>.jsonl`
    /// (merge with `cargo spmd trace DIR`).
    pub trace: Option<std::path::PathBuf>,
    /// `DIST_GPUS=0,2,4,6`: the device of each local rank (NCCL backend).
    pub gpus: Option<String>,
    /// `DIST_RANK_TABLE=FILE`: a rank table mapping ranks to devices (NCCL backend).
    pub rank_table: Option<std::path::PathBuf>,
}

impl Env {
    /// Where this rank's GPU comes from: the rank table, `DIST_GPUS`, or `LOCAL_RANK`.
    pub fn placement(&self) -> Result<crate::placement::Placement> {
        use crate::placement::{parse_gpus, Placement, RankTable};
        match (&self.rank_table, &self.gpus) {
            (Some(_), Some(_)) => Err(Error::Env("DIST_RANK_TABLE and DIST_GPUS are both set: use one".into())),
            (Some(path), None) => Ok(Placement::Table(RankTable::load(path, self.world_size)?)),
            (None, Some(g)) => Ok(Placement::Gpus(parse_gpus(g)?)),
            (None, None) => Ok(Placement::LocalRank),
        }
    }
}

fn var(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

fn parse<T: std::str::FromStr>(name: &str, v: &str, what: &str) -> Result<T> {
    v.trim().parse().map_err(|_| Error::Env(format!("{name}={v:?} is not {what}")))
}

impl Env {
    /// Reads the process environment.
    pub fn from_env() -> Result<Env> {
        Env::from_lookup(var)
    }

    /// Reads the contract through `get` (testable without touching the process env).
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Result<Env> {
        let (rank, world_size) = match (get("RANK"), get("WORLD_SIZE")) {
            (Some(r), Some(w)) => {
                (parse::<usize>("RANK", &r, "a rank number")?, parse::<usize>("WORLD_SIZE", &w, "a positive count")?)
            }
            (Some(_), None) => {
                return Err(Error::Env(
                    "RANK is set but WORLD_SIZE is not; set both (or neither, for a world of one)".into(),
                ))
            }
            (None, Some(_)) => {
                return Err(Error::Env(
                    "WORLD_SIZE is set but RANK is not; set both (or neither, for a world of one)".into(),
                ))
            }
            (None, None) => match (get("SLURM_PROCID"), get("SLURM_NTASKS")) {
                (Some(r), Some(w)) => {
                    (parse("SLURM_PROCID", &r, "a rank number")?, parse("SLURM_NTASKS", &w, "a positive count")?)
                }
                _ => (0, 1),
            },
        };
        if world_size == 0 {
            return Err(Error::Env("WORLD_SIZE=0: a world needs at least one rank".into()));
        }
        if world_size > MAX_WORLD {
            return Err(Error::Env(format!(
                "WORLD_SIZE={world_size} is larger than this backend supports ({MAX_WORLD})"
            )));
        }
        if rank >= world_size {
            return Err(Error::Env(format!(
                "RANK={rank} is out of range for WORLD_SIZE={world_size} (ranks are 0..{world_size})"
            )));
        }
        let local_rank = match get("LOCAL_RANK").or_else(|| get("SLURM_LOCALID")) {
            Some(v) => parse("LOCAL_RANK", &v, "a rank number")?,
            None => rank,
        };
        let local_world_size = match get("LOCAL_WORLD_SIZE") {
            Some(v) => parse("LOCAL_WORLD_SIZE", &v, "a positive count")?,
            None => world_size,
        };
        let master_port = match get("MASTER_PORT") {
            Some(v) => Some(parse::<u16>("MASTER_PORT", &v, "a TCP port (0-65535)")?),
            None if world_size > 1 => {
                return Err(Error::Env(format!(
                    "WORLD_SIZE={world_size} but MASTER_PORT is not set: start ranks with `cargo spmd run -n {world_size}` \
                     or dist_runtime::launch, or set MASTER_ADDR and MASTER_PORT as torchrun does"
                )))
            }
            None => None,
        };
        let backend = match get("DIST_BACKEND") {
            None => BackendChoice::Shm,
            Some(v) => BackendChoice::parse(&v).map_err(|e| Error::Env(format!("DIST_BACKEND={e}")))?,
        };
        let timeout = match get("DIST_TIMEOUT") {
            Some(v) => {
                let s: f64 = parse("DIST_TIMEOUT", &v, "a number of seconds")?;
                if !(s > 0.0 && s.is_finite()) {
                    return Err(Error::Env(format!("DIST_TIMEOUT={v:?} must be a positive number of seconds")));
                }
                Duration::from_secs_f64(s)
            }
            None => Duration::from_secs(300),
        };
        let debug = match get("DIST_DEBUG").as_deref().map(str::to_ascii_lowercase).as_deref() {
            None => {
                if cfg!(debug_assertions) {
                    DebugLevel::Check
                } else {
                    DebugLevel::Off
                }
            }
            Some("off") | Some("0") => DebugLevel::Off,
            Some("check") | Some("1") => DebugLevel::Check,
            Some("detail") | Some("2") => DebugLevel::Detail,
            Some(other) => return Err(Error::Env(format!("DIST_DEBUG={other:?} is not one of off, check, detail"))),
        };
        Ok(Env {
            rank,
            world_size,
            local_rank,
            local_world_size,
            master_addr: get("MASTER_ADDR").unwrap_or_else(|| "127.0.0.1".into()),
            master_port,
            backend,
            job_id: get("DIST_JOB_ID").unwrap_or_else(|| format!("p{}", std::process::id())),
            token: get("DIST_JOB_TOKEN").unwrap_or_default(),
            timeout,
            debug,
            store_external: get("DIST_STORE_EXTERNAL").as_deref() == Some("1"),
            trace: get("DIST_TRACE").filter(|d| !d.is_empty()).map(std::path::PathBuf::from),
            gpus: get("DIST_GPUS").filter(|d| !d.is_empty()),
            rank_table: get("DIST_RANK_TABLE").filter(|d| !d.is_empty()).map(std::path::PathBuf::from),
        })
    }
}

/// The largest world the shm backend accepts.
pub const MAX_WORLD: usize = 1024;

/// Settings every backend object shares.
#[derive(Debug)]
pub(crate) struct Config {
    pub job_id: String,
    pub timeout: Duration,
    pub check: bool,
    /// `DIST_DEBUG=detail`: the watchdog prints the wait-for graph of long waits.
    pub detail: bool,
    /// Spin iterations before sleeping: many when ranks fit the cores, none otherwise.
    pub spins: u32,
    /// More local ranks than cores.
    pub oversubscribed: bool,
    /// Algorithm choices (`DIST_ALGO`, `DIST_CMA`, `DIST_CMA_MIN`).
    pub algo: Algo,
}

/// Which shared-memory algorithm each op takes: by size by default, or as `DIST_ALGO`
/// says (the `NCCL_ALGO` of dist). `DIST_ALGO` is a comma list of
/// - `flat`: all_reduce/reduce use the flat path (every rank reads every rank's slot)
///   whenever the message fits a slot, instead of only up to 16 KiB;
/// - `pipeline`: they always use the pipelined reduce-scatter + all-gather;
/// - `ring`: all_reduce goes around a ring (for comparison; floats round in ring order);
/// - `cma`: gathers and all_to_all read peers' buffers directly (single copy) at every
///   size, where the kernel allows it;
/// - `copy`: they never do, and always copy through the segment.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Algo {
    /// Largest all_reduce/reduce that takes the flat path (bytes; capped by the slot).
    pub flat_max: usize,
    /// Single-copy reads: `Some(true)` forced on, `Some(false)` off, `None` automatic
    /// (on while ranks ≤ cores).
    pub cma: Option<bool>,
    /// Smallest block that uses a single-copy read.
    pub cma_min: usize,
    /// all_reduce around a ring through the slots (for comparison; not bitwise equal to
    /// the rank-order fold for floats).
    pub ring: bool,
}

impl Algo {
    /// Default flat-path limit.
    pub const FLAT_MAX: usize = 16 << 10;

    pub(crate) fn parse(algo: Option<&str>, cma: Option<&str>, cma_min: Option<&str>) -> Result<Algo> {
        let bad = |what: String| Error::invalid("init", what);
        let mut a = Algo { flat_max: Self::FLAT_MAX, cma: None, cma_min: 512 << 10, ring: false };
        match cma {
            None | Some("") => {}
            Some("1") => a.cma = Some(true),
            Some("0") => a.cma = Some(false),
            Some(v) => return Err(bad(format!("DIST_CMA={v:?}: expected 1 (force single-copy reads) or 0 (off)"))),
        }
        if let Some(v) = cma_min.filter(|v| !v.is_empty()) {
            a.cma_min = v.parse().map_err(|_| bad(format!("DIST_CMA_MIN={v:?}: expected a number of bytes")))?;
        }
        let mut seen: Vec<&str> = Vec::new();
        for t in algo.unwrap_or("").split(',').map(str::trim).filter(|t| !t.is_empty()) {
            let t = match t.to_ascii_lowercase().as_str() {
                "auto" => continue,
                "flat" => "flat",
                "pipeline" | "rsag" => "pipeline",
                "cma" | "single-copy" => "cma",
                "copy" => "copy",
                "ring" => "ring",
                _ => {
                    return Err(bad(format!(
                        "DIST_ALGO={:?}: unknown algorithm {t:?}; expected a comma list of flat, pipeline, ring, cma, \
                         copy (or auto)",
                        algo.unwrap_or("")
                    )))
                }
            };
            for (x, y) in [("flat", "pipeline"), ("cma", "copy"), ("ring", "flat"), ("ring", "pipeline")] {
                if (t == x && seen.contains(&y)) || (t == y && seen.contains(&x)) {
                    return Err(bad(format!("DIST_ALGO: {x} and {y} exclude each other")));
                }
            }
            seen.push(t);
            match t {
                "flat" => a.flat_max = usize::MAX,
                "pipeline" => a.flat_max = 0,
                "ring" => a.ring = true,
                "cma" => {
                    a.cma = Some(true);
                    a.cma_min = 1;
                }
                _ => a.cma = Some(false),
            }
        }
        Ok(a)
    }
}

impl Config {
    pub(crate) fn from_env(env: &Env) -> Result<Config> {
        let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
        let spins = match var("DIST_SPIN").and_then(|v| v.parse().ok()) {
            Some(s) => s,
            None if env.local_world_size <= cores => 1_000,
            None => 0,
        };
        let algo =
            Algo::parse(var("DIST_ALGO").as_deref(), var("DIST_CMA").as_deref(), var("DIST_CMA_MIN").as_deref())?;
        Ok(Config {
            job_id: env.job_id.clone(),
            timeout: env.timeout,
            check: env.debug != DebugLevel::Off,
            detail: env.debug == DebugLevel::Detail,
            spins,
            oversubscribed: env.local_world_size > cores,
            algo,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn env(pairs: &[(&str, &str)]) -> Result<Env> {
        let m: HashMap<String, String> = pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        Env::from_lookup(|k| m.get(k).cloned())
    }

    #[test]
    fn algo_choices_parse_and_bad_ones_are_errors() {
        let d = Algo::parse(None, None, None).unwrap();
        assert_eq!((d.flat_max, d.cma, d.cma_min), (Algo::FLAT_MAX, None, 512 << 10));
        let a = Algo::parse(Some("flat, cma"), None, None).unwrap();
        assert_eq!((a.flat_max, a.cma, a.cma_min), (usize::MAX, Some(true), 1));
        let a = Algo::parse(Some("pipeline,copy"), Some("1"), Some("4096")).unwrap();
        assert_eq!((a.flat_max, a.cma, a.cma_min), (0, Some(false), 4096));
        assert_eq!(Algo::parse(Some("auto"), Some("0"), None).unwrap().cma, Some(false));
        for (algo, cma, min, want) in [
            (Some("tree"), None, None, "unknown algorithm \"tree\""),
            (Some("ring,flat"), None, None, "ring and flat exclude each other"),
            (Some("flat,pipeline"), None, None, "flat and pipeline exclude each other"),
            (Some("copy,cma"), None, None, "cma and copy exclude each other"),
            (None, Some("yes"), None, "DIST_CMA=\"yes\""),
            (None, None, Some("1M"), "DIST_CMA_MIN=\"1M\""),
        ] {
            let e = Algo::parse(algo, cma, min).unwrap_err().to_string();
            assert!(e.contains(want), "{e}");
        }
    }

    #[test]
    fn empty_env_is_world_of_one() {
        let e = env(&[]).unwrap();
        assert_eq!((e.rank, e.world_size, e.backend), (0, 1, BackendChoice::Shm));
    }

    #[test]
    fn torchrun_vars() {
        let e = env(&[("RANK", "2"), ("WORLD_SIZE", "4"), ("MASTER_PORT", "29500"), ("LOCAL_RANK", "0")]).unwrap();
        assert_eq!((e.rank, e.world_size, e.local_rank, e.master_port), (2, 4, 0, Some(29500)));
    }

    #[test]
    fn bad_values_are_named() {
        let msg = |p: &[(&str, &str)]| env(p).unwrap_err().to_string();
        assert!(msg(&[("RANK", "4"), ("WORLD_SIZE", "4"), ("MASTER_PORT", "1")]).contains("RANK=4 is out of range"));
        assert!(msg(&[("RANK", "x"), ("WORLD_SIZE", "4")]).contains("RANK=\"x\""));
        assert!(msg(&[("RANK", "0"), ("WORLD_SIZE", "0")]).contains("WORLD_SIZE=0"));
        assert!(msg(&[("RANK", "0"), ("WORLD_SIZE", "2")]).contains("MASTER_PORT is not set"));
        assert!(msg(&[("RANK", "0")]).contains("WORLD_SIZE is not"));
        assert!(msg(&[("MASTER_PORT", "99999"), ("RANK", "0"), ("WORLD_SIZE", "2")]).contains("MASTER_PORT"));
        assert!(msg(&[("DIST_BACKEND", "gloo")]).contains("DIST_BACKEND"));
        assert!(msg(&[("DIST_TIMEOUT", "-1")]).contains("DIST_TIMEOUT"));
        assert!(msg(&[("DIST_DEBUG", "loud")]).contains("DIST_DEBUG"));
    }

    #[test]
    fn slurm_vars() {
        let e = env(&[("SLURM_PROCID", "1"), ("SLURM_NTASKS", "2"), ("MASTER_PORT", "5")]).unwrap();
        assert_eq!((e.rank, e.world_size), (1, 2));
    }
}
