//! Which GPU each rank uses: `LOCAL_RANK` by default, a list (`DIST_GPUS=0,2,4,6`, from
//! `cargo spmd run --gpus`), or a rank table file (`DIST_RANK_TABLE=FILE`, from
//! `--rank-table`); with `DIST_SHARE_GPU=1`, local ranks take the visible devices round
//! robin and `DIST_GPUS` may name a device twice. Pure logic, so it is tested without a GPU.
//!
//! The rank table is the seed's format:
//!
//! ```json
//! { "version": "1.0",
//!   "node_list": [ { "node_id": "0",
//!                    "device_list": [ { "device_id": "0", "rank": "0" },
//!                                     { "device_id": "1", "rank": "1" } ] } ] }
//! ```
//!
//! Numbers may be written as JSON numbers or numeric strings. Every rank of the job must
//! appear exactly once, and no device twice on one node.

use crate::error::{Error, Result};
use std::collections::{BTreeMap, HashSet};

/// A validated rank table: rank → (node index, device id).
#[derive(Debug, Clone, PartialEq)]
pub struct RankTable {
    devices: BTreeMap<usize, (usize, usize)>,
}

fn bad(msg: String) -> Error {
    Error::Env(format!("rank table: {msg}"))
}

fn number(v: &serde_json::Value, what: &str, at: &str) -> Result<usize> {
    match v {
        serde_json::Value::Number(n) => n.as_u64().map(|x| x as usize),
        serde_json::Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
    .ok_or_else(|| bad(format!("{at}: \"{what}\" must be a non-negative integer (or a string of one), not {v}")))
}

impl RankTable {
    /// Parses and validates a rank table for a job of `world_size` ranks.
    pub fn parse(json: &str, world_size: usize) -> Result<RankTable> {
        let doc: serde_json::Value = serde_json::from_str(json).map_err(|e| bad(format!("not valid JSON: {e}")))?;
        if doc.get("version").is_none() {
            return Err(bad("missing \"version\" (write \"version\": \"1.0\")".into()));
        }
        let nodes = doc
            .get("node_list")
            .and_then(|n| n.as_array())
            .ok_or_else(|| bad("missing \"node_list\": an array of nodes, each with a \"device_list\"".into()))?;
        let mut devices = BTreeMap::new();
        for (ni, node) in nodes.iter().enumerate() {
            let at = format!("node_list[{ni}]");
            let list = node
                .get("device_list")
                .and_then(|d| d.as_array())
                .ok_or_else(|| bad(format!("{at}: missing \"device_list\" array")))?;
            let mut seen = HashSet::new();
            for (di, d) in list.iter().enumerate() {
                let at = format!("{at}.device_list[{di}]");
                let dev = number(d.get("device_id").unwrap_or(&serde_json::Value::Null), "device_id", &at)?;
                let rank = number(d.get("rank").unwrap_or(&serde_json::Value::Null), "rank", &at)?;
                if !seen.insert(dev) {
                    return Err(bad(format!("{at}: device {dev} appears twice on node {ni}")));
                }
                if rank >= world_size {
                    return Err(bad(format!("{at}: rank {rank} is out of range for a job of {world_size} ranks")));
                }
                if let Some((n0, d0)) = devices.insert(rank, (ni, dev)) {
                    return Err(bad(format!("{at}: rank {rank} appears twice (also node {n0}, device {d0})")));
                }
            }
        }
        if let Some(missing) = (0..world_size).find(|r| !devices.contains_key(r)) {
            return Err(bad(format!("rank {missing} is missing: the table must list every rank 0..{world_size}")));
        }
        Ok(RankTable { devices })
    }

    /// Reads and validates `path`.
    pub fn load(path: &std::path::Path, world_size: usize) -> Result<RankTable> {
        let text = std::fs::read_to_string(path).map_err(|e| bad(format!("cannot read {}: {e}", path.display())))?;
        RankTable::parse(&text, world_size)
    }

    /// The device of `rank`.
    pub fn device(&self, rank: usize) -> Option<usize> {
        self.devices.get(&rank).map(|&(_, d)| d)
    }
}

/// Parses `DIST_GPUS` (`0,2,4,6`); a device may appear twice only where ranks may share
/// one (`DIST_SHARE_GPU=1`).
pub fn parse_gpus(s: &str, share: bool) -> Result<Vec<usize>> {
    let list: Vec<usize> = s
        .split(',')
        .map(str::trim)
        .filter(|x| !x.is_empty())
        .map(|x| x.parse().map_err(|_| Error::Env(format!("DIST_GPUS: {x:?} in {s:?} is not a device number"))))
        .collect::<Result<_>>()?;
    if list.is_empty() {
        return Err(Error::Env("DIST_GPUS: the list is empty".to_string()));
    }
    let mut seen = HashSet::new();
    if let Some(d) = list.iter().find(|d| !seen.insert(**d)).filter(|_| !share) {
        return Err(Error::Env(format!(
            "DIST_GPUS: device {d} appears twice in {s:?} (NCCL runs one rank per GPU; \
             DIST_SHARE_GPU=1 or `cargo spmd run --share-gpu` lets ranks share one, slowly, for tests)"
        )));
    }
    Ok(list)
}

/// Where a rank's device comes from.
#[derive(Debug, Clone, PartialEq)]
pub enum Placement {
    /// `LOCAL_RANK` is the device.
    LocalRank,
    /// `DIST_SHARE_GPU=1`: local rank r takes device r mod the visible count.
    Shared,
    /// The i-th local rank takes `gpus[i]`.
    Gpus(Vec<usize>),
    /// Rank → device from a table.
    Table(RankTable),
}

impl Placement {
    /// The device of (`rank`, `local_rank`) on a machine with `count` visible devices.
    pub fn device(&self, rank: usize, local_rank: usize, count: usize) -> Result<usize> {
        let (dev, from) = match self {
            Placement::LocalRank => (local_rank, "LOCAL_RANK".to_string()),
            Placement::Shared => (local_rank % count.max(1), "DIST_SHARE_GPU".to_string()),
            Placement::Gpus(g) => match g.get(local_rank) {
                Some(&d) => (d, "DIST_GPUS".to_string()),
                None => {
                    return Err(Error::Env(format!(
                        "local rank {local_rank} has no entry in DIST_GPUS={g:?} ({} devices for more ranks): \
                         list one device per local rank",
                        g.len()
                    )))
                }
            },
            Placement::Table(t) => match t.device(rank) {
                Some(d) => (d, "the rank table".to_string()),
                None => return Err(Error::Env(format!("rank {rank} is not in the rank table"))),
            },
        };
        if dev >= count {
            // Sharing helps only where the local rank picks the device.
            let share = if matches!(self, Placement::LocalRank) {
                "; DIST_SHARE_GPU=1 lets ranks share a GPU, slowly, for tests"
            } else {
                ""
            };
            return Err(Error::Env(format!(
                "rank {rank} is placed on device {dev} by {from}, but only {count} device(s) are visible \
                 (check CUDA_VISIBLE_DEVICES, --gpus or the rank table{share})"
            )));
        }
        Ok(dev)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TABLE: &str = r#"{ "version": "1.0", "node_list": [
        { "node_id": "0", "device_list": [ { "device_id": "0", "rank": "1" }, { "device_id": 3, "rank": 0 } ] } ] }"#;

    #[test]
    fn a_good_table_maps_ranks_to_devices() {
        let t = RankTable::parse(TABLE, 2).unwrap();
        assert_eq!((t.device(0), t.device(1), t.device(2)), (Some(3), Some(0), None));
        let p = Placement::Table(t);
        assert_eq!(p.device(0, 0, 4).unwrap(), 3);
        let e = p.device(0, 0, 2).unwrap_err().to_string();
        assert!(e.contains("device 3 by the rank table, but only 2 device(s) are visible"), "{e}");
    }

    #[test]
    fn bad_tables_are_clear_errors() {
        let cases = [
            ("{", "not valid JSON"),
            (r#"{"node_list": []}"#, "missing \"version\""),
            (r#"{"version": "1.0"}"#, "missing \"node_list\""),
            (r#"{"version": "1.0", "node_list": [{}]}"#, "node_list[0]: missing \"device_list\""),
            (
                r#"{"version":"1.0","node_list":[{"device_list":[{"device_id":0,"rank":0},{"device_id":0,"rank":1}]}]}"#,
                "device 0 appears twice on node 0",
            ),
            (
                r#"{"version":"1.0","node_list":[{"device_list":[{"device_id":0,"rank":0}]},{"device_list":[{"device_id":0,"rank":0}]}]}"#,
                "rank 0 appears twice",
            ),
            (r#"{"version":"1.0","node_list":[{"device_list":[{"device_id":0,"rank":0}]}]}"#, "rank 1 is missing"),
            (r#"{"version":"1.0","node_list":[{"device_list":[{"device_id":0,"rank":5}]}]}"#, "rank 5 is out of range"),
            (
                r#"{"version":"1.0","node_list":[{"device_list":[{"device_id":"x","rank":0}]}]}"#,
                "\"device_id\" must be",
            ),
        ];
        for (json, want) in cases {
            let e = RankTable::parse(json, 2).unwrap_err().to_string();
            assert!(e.contains(want), "{json}: {e}");
        }
    }

    #[test]
    fn gpu_lists_and_local_ranks() {
        assert_eq!(parse_gpus("0, 2,4,6", false).unwrap(), vec![0, 2, 4, 6]);
        assert!(parse_gpus("0,x", false).unwrap_err().to_string().contains("\"x\""));
        let e = parse_gpus("1,1", false).unwrap_err().to_string();
        assert!(e.contains("device 1 appears twice") && e.contains("DIST_SHARE_GPU=1"), "{e}");
        assert_eq!(parse_gpus("1,1", true).unwrap(), vec![1, 1]);
        assert!(parse_gpus("", false).is_err());
        let p = Placement::Gpus(vec![0, 2]);
        assert_eq!(p.device(5, 1, 4).unwrap(), 2);
        assert!(p.device(5, 2, 4).unwrap_err().to_string().contains("local rank 2 has no entry"));
        assert_eq!(Placement::LocalRank.device(3, 1, 2).unwrap(), 1);
        assert!(Placement::LocalRank.device(3, 2, 2).unwrap_err().to_string().contains("only 2 device(s)"));
        // Shared: round robin over the visible devices, never out of range.
        let shared: Vec<usize> = (0..5).map(|l| Placement::Shared.device(l, l, 2).unwrap()).collect();
        assert_eq!(shared, vec![0, 1, 0, 1, 0]);
    }
}
