//! torchrun-style multi-node launch: one launcher per node (`--nnodes`, `--node-rank`,
//! `--nproc-per-node`, `--master-addr`, `--master-port`), each starting its node's ranks.
//! Node 0's launcher hosts the job's store at the master address; every launcher joins it
//! before starting a rank, checks that the nodes agree on the job's shape, tells the
//! others when one of its ranks fails (they stop theirs), and says when its ranks are
//! done (node 0 keeps the store up until every node has).

use crate::error::{Error, Result};
use crate::store::{Store, StoreServer};
use std::time::{Duration, Instant};

/// Where this launcher sits in a multi-node job.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Nodes {
    /// How many nodes (launchers) the job has.
    pub nnodes: usize,
    /// This launcher's node, `0..nnodes`; node 0 hosts the store.
    pub node_rank: usize,
    /// The address of node 0, as every node reaches it.
    pub master_addr: String,
    /// The store's port on node 0.
    pub master_port: u16,
}

impl Nodes {
    pub(crate) fn validate(&self) -> Result<()> {
        if self.nnodes == 0 {
            return Err(Error::invalid("launch", "--nnodes must be at least 1"));
        }
        if self.node_rank >= self.nnodes {
            return Err(Error::invalid(
                "launch",
                format!(
                    "--node-rank {} is out of range for --nnodes {} (use 0..{})",
                    self.node_rank, self.nnodes, self.nnodes
                ),
            ));
        }
        if self.master_port == 0 {
            return Err(Error::invalid(
                "launch",
                "--master-port 0: every node must name the same port, so pick one (e.g. 29500)",
            ));
        }
        if self.master_addr.trim().is_empty() {
            return Err(Error::invalid("launch", "--master-addr is empty: give node 0's address"));
        }
        Ok(())
    }

    /// The job's token: `DIST_JOB_TOKEN` when the user set one (the same on every node:
    /// strangers who do not know it are refused), else one derived from the job's
    /// address, which every node computes alike (it keeps out what is not a dist
    /// launcher of this address, not a stranger who knows it). The shape is checked
    /// after joining, so a mismatch is named rather than refused.
    pub(crate) fn token(&self, user: Option<String>) -> String {
        user.unwrap_or_else(|| {
            let s = format!("dist-nodes|{}|{}", self.master_addr, self.master_port);
            format!("{:016x}{:016x}", fnv(s.as_bytes(), 0), fnv(s.as_bytes(), 1))
        })
    }

    /// The job id, the same on every node (shared-memory names on a host derive from it),
    /// without revealing the token.
    pub(crate) fn job_id(&self, token: &str) -> String {
        format!("n{}x{:08x}", self.master_port, fnv(token.as_bytes(), 7) as u32)
    }
}

/// Node 0's store went away while this node waited on it.
fn lost(addr: &str, e: Error) -> Error {
    Error::invalid(
        "launch",
        format!(
            "lost the job's store at {addr} (node 0's launcher) while joining: {e}; node 0 stopped, and its output \
             says why"
        ),
    )
}

/// FNV-1a, seeded: a hash every node computes alike, whatever its Rust version.
pub(crate) fn fnv(data: &[u8], seed: u64) -> u64 {
    let mut h = 0xcbf2_9ce4_8422_2325u64 ^ seed.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    for &b in data {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// A launcher's link to the other nodes' launchers, through the job's store.
pub(crate) struct NodeLink {
    nodes: Nodes,
    /// Node 0's store server (kept alive until every node is done).
    _server: Option<StoreServer>,
    store: Store,
    /// Rendezvous and end-of-job bound.
    patience: Duration,
    last_poll: Instant,
}

impl NodeLink {
    /// Joins the job: node 0 binds the store, the others connect (retrying until
    /// `patience`: node 0 may start later). Claims this node rank, checks the nodes agree
    /// on the ranks per node, and returns once every node has joined, so no rank starts
    /// in a job that cannot form.
    pub(crate) fn join(nodes: &Nodes, nproc: usize, token: &str, patience: Duration) -> Result<NodeLink> {
        let addr = format!("{}:{}", nodes.master_addr, nodes.master_port);
        let server = if nodes.node_rank == 0 {
            Some(StoreServer::bind(addr.as_str(), token).map_err(|e| {
                Error::invalid(
                    "launch",
                    format!(
                        "node 0 hosts the job's store at --master-addr {addr}, and cannot: {e} (run --node-rank 0 on \
                         the host that address names)"
                    ),
                )
            })?)
        } else {
            None
        };
        let store = Store::connect(&addr, token, patience)?;
        if store.add(&format!("launch/claim/{}", nodes.node_rank), 1)? != 1 {
            return Err(Error::invalid(
                "launch",
                format!(
                    "another launcher already joined this job as --node-rank {}: give each node its own",
                    nodes.node_rank
                ),
            ));
        }
        let shape = format!("{} nodes x {nproc} ranks", nodes.nnodes);
        store.set(&format!("launch/shape/{}", nodes.node_rank), shape.as_bytes())?;
        store.add("launch/joined", 1)?;
        // Wait for every node, telling a node that never came from node 0's store going
        // away (its launcher stopped: its own error says why).
        let start = Instant::now();
        loop {
            let joined = store.add("launch/joined", 0).map_err(|e| lost(&addr, e))?;
            if joined >= nodes.nnodes as i64 {
                break;
            }
            if start.elapsed() >= patience {
                return Err(Error::invalid(
                    "launch",
                    format!(
                        "not every node joined the job at {addr} within {:.0}s ({joined} of {} did): start a launcher \
                         on each node with the same --master-addr/--master-port and its own --node-rank",
                        patience.as_secs_f64(),
                        nodes.nnodes
                    ),
                ));
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        let mut mismatch = None;
        for k in 0..nodes.nnodes {
            let theirs = store.get(&format!("launch/shape/{k}"), patience).map_err(|e| lost(&addr, e))?;
            let theirs = String::from_utf8_lossy(&theirs).into_owned();
            if theirs != shape {
                mismatch = Some(format!(
                    "the nodes disagree on the job's shape: node {k} launches {theirs}, this node (node {}) {shape}; \
                     give every node the same --nnodes and --nproc-per-node",
                    nodes.node_rank
                ));
                break;
            }
        }
        store.add("launch/checked", 1).map_err(|e| lost(&addr, e))?;
        if let Some(m) = mismatch {
            if server.is_some() {
                // Node 0 hosts the store: keep it up (bounded) until every node has read
                // the shapes, so each names the mismatch rather than a lost store.
                let _ = store.wait_count("launch/checked", nodes.nnodes as i64, patience.min(Duration::from_secs(10)));
            }
            return Err(Error::invalid("launch", m));
        }
        Ok(NodeLink { nodes: nodes.clone(), _server: server, store, patience, last_poll: Instant::now() })
    }

    /// Tells the other nodes that a rank of this node failed first here.
    pub(crate) fn report_failure(&self, what: &str) {
        let _ = self.store.set(&format!("launch/failed/{}", self.nodes.node_rank), what.as_bytes());
        let _ = self.store.add("launch/failures", 1);
    }

    /// A failure another node reported, if any (polled at most every 50 ms).
    pub(crate) fn remote_failure(&mut self) -> Option<String> {
        if self.last_poll.elapsed() < Duration::from_millis(50) {
            return None;
        }
        self.last_poll = Instant::now();
        if self.store.add("launch/failures", 0).ok()? == 0 {
            return None;
        }
        (0..self.nodes.nnodes).filter(|&k| k != self.nodes.node_rank).find_map(|k| {
            let v = self.store.get(&format!("launch/failed/{k}"), Duration::ZERO).ok()?;
            Some(format!("node {k}: {}", String::from_utf8_lossy(&v)))
        })
    }

    /// A key's value if set (no wait).
    pub(crate) fn get_now(&self, key: &str) -> Option<Vec<u8>> {
        self.store.get(key, Duration::ZERO).ok()
    }

    /// Says this node's ranks are done; node 0 then waits (bounded) for the others, whose
    /// ranks may still use the store it hosts.
    pub(crate) fn finish(&self) {
        let _ = self.store.add("launch/done", 1);
        if self.nodes.node_rank != 0 {
            return;
        }
        let start = Instant::now();
        let mut said = false;
        while start.elapsed() < self.patience {
            match self.store.add("launch/done", 0) {
                Ok(d) if d >= self.nodes.nnodes as i64 => return,
                Ok(_) => {}
                Err(_) => return,
            }
            if !said && start.elapsed() > Duration::from_secs(10) {
                said = true;
                eprintln!("launch: node 0's ranks are done; keeping the job's store up until the other nodes' are");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        eprintln!("launch: gave up waiting for the other nodes to finish after {:.0}s", self.patience.as_secs_f64());
    }
}
