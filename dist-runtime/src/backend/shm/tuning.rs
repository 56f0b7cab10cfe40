//! How the shared-memory backend runs, from the environment's tuning knobs
//! ([`Tuning`](crate::env::Tuning), parsed in `env.rs`): spin policy, algorithm
//! choices, slot size and yield budget.

use crate::env::{DebugLevel, Env};
use crate::error::{Error, Result};
use std::time::Duration;

/// Settings every backend object shares.
#[derive(Debug)]
pub(crate) struct Config {
    pub job_id: String,
    pub timeout: Duration,
    /// Op records ride on this backend's barriers and are compared there.
    pub check: bool,
    /// `DIST_DEBUG=detail`: the watchdog prints the wait-for graph of long waits.
    pub detail: bool,
    /// Blocking sends complete only once the matching receive is posted (NCCL's and
    /// `MPI_Ssend`'s semantics), so what would hang on a GPU cluster hangs here too,
    /// and is named by the deadlock detector: on unless `DIST_DEBUG=off`.
    pub rendezvous: bool,
    /// Spin iterations before sleeping: many when ranks fit the cores, none otherwise.
    pub spins: u32,
    /// More local ranks than cores.
    pub oversubscribed: bool,
    /// The cores this process may run on; with `oversubscribed` and no `DIST_SPIN`,
    /// waiters spin while no more ranks than this are awake (`sync::wait_on`), and
    /// yield or sleep otherwise.
    pub cores: usize,
    /// Whether the spin policy follows the ranks awake (above): oversubscribed and
    /// `DIST_SPIN` unset.
    pub adaptive_spin: bool,
    /// Algorithm choices (`DIST_ALGO`, `DIST_CMA`, `DIST_CMA_MIN`).
    pub algo: Algo,
    /// Staging slot size in bytes (`DIST_SLOT_KIB`).
    pub slot: usize,
    /// How long a waiter yields before it sleeps (`DIST_YIELD_US`).
    pub yield_budget: Duration,
    /// Bytes of unexpected messages (no receive posted) a rank stashes per communicator
    /// before it stops reading them, so their senders wait (`DIST_STASH_MIB`).
    pub stash_limit: u64,
    /// Bytes of `isend` data a rank copies per peer while that peer's ring is full, before
    /// a further `isend` to it waits for the peer to read (`DIST_ISEND_MIB`).
    pub isend_limit: u64,
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
    /// Smallest blocking send whose receiver reads it straight from the sender's buffer
    /// (`DIST_CMA_P2P_MIN`; `DIST_CMA=0` turns it off).
    pub cma_p2p_min: usize,
    /// all_reduce around a ring through the slots (for comparison; not bitwise equal to
    /// the rank-order fold for floats).
    pub ring: bool,
}

impl Algo {
    /// Default flat-path limit.
    pub const FLAT_MAX: usize = 16 << 10;
    /// Default smallest single-copy block of a collective (broadcast, gathers,
    /// all_to_all): at 2 ranks a read ties the copy through the slots up to 16 KiB blocks
    /// and is well ahead from 32 KiB (in cache) on (measured: docs/performance.md,
    /// "Figures behind code choices").
    pub const CMA_MIN: usize = 16 << 10;
    /// Default smallest single-copy blocking send.
    pub const CMA_P2P_MIN: usize = 8 << 10;

    pub(crate) fn parse(algo: Option<&str>, cma: Option<&str>, cma_min: Option<&str>) -> Result<Algo> {
        let bad = Error::Env;
        let mut a = Algo {
            flat_max: Self::FLAT_MAX,
            cma: None,
            cma_min: Self::CMA_MIN,
            cma_p2p_min: Self::CMA_P2P_MIN,
            ring: false,
        };
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
        let knobs = &env.tuning;
        let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
        let spins = match knobs.spin {
            Some(s) => s,
            None if env.local_world_size <= cores => 1_000,
            None => 0,
        };
        let mut algo = Algo::parse(knobs.algo.as_deref(), knobs.cma.as_deref(), knobs.cma_min.as_deref())?;
        if let Some(v) = knobs.cma_p2p_min.as_deref().filter(|v| !v.is_empty()) {
            algo.cma_p2p_min =
                v.parse().map_err(|_| Error::Env(format!("DIST_CMA_P2P_MIN={v:?}: expected a number of bytes")))?;
        }
        Ok(Config {
            job_id: env.job_id.clone(),
            timeout: env.timeout,
            // Under `DIST_AGREEMENT=exchange` the typed layer compares ops instead.
            check: env.debug != DebugLevel::Off && env.agreement == crate::env::Agreement::Auto,
            detail: env.debug == DebugLevel::Detail,
            rendezvous: env.debug != DebugLevel::Off,
            spins,
            oversubscribed: env.local_world_size > cores,
            cores,
            adaptive_spin: knobs.spin.is_none() && env.local_world_size > cores,
            algo,
            // 16 KiB to 64 MiB, whole pages; 128 KiB to 4 MiB measured no better than
            // the default (docs/performance.md).
            slot: knobs.slot_kib.map_or(256 << 10, |k| (k.clamp(16, 64 << 10) << 10) / 4096 * 4096),
            yield_budget: Duration::from_micros(knobs.yield_us.unwrap_or(500)),
            stash_limit: (knobs.stash_mib.unwrap_or(256) as u64) << 20,
            isend_limit: (knobs.isend_mib.unwrap_or(256) as u64) << 20,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn algo_choices_parse_and_bad_ones_are_errors() {
        let d = Algo::parse(None, None, None).unwrap();
        assert_eq!((d.flat_max, d.cma, d.cma_min), (Algo::FLAT_MAX, None, Algo::CMA_MIN));
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
            let e = Algo::parse(algo, cma, min).unwrap_err();
            // An environment error: it names the variable, never a line of dist's own.
            assert!(
                matches!(e, Error::Env(_)) && e.to_string().contains(want) && !e.to_string().contains(".rs"),
                "{e}"
            );
        }
    }

    #[test]
    fn knobs_reach_the_backend() {
        let env = Env::from_lookup(|k| match k {
            "DIST_SLOT_KIB" => Some("1000".into()),
            "DIST_YIELD_US" => Some("20".into()),
            "DIST_SPIN" => Some("7".into()),
            _ => None,
        })
        .unwrap();
        let c = Config::from_env(&env).unwrap();
        assert_eq!((c.slot, c.yield_budget, c.spins), (1000 << 10 & !4095, Duration::from_micros(20), 7));
        let d = Config::from_env(&Env::from_lookup(|_| None).unwrap()).unwrap();
        assert_eq!((d.slot, d.yield_budget), (256 << 10, Duration::from_micros(500)));
    }
}
