//! The rendezvous store: a small key-value server over TCP that ranks use to find each
//! other (segment addresses, NCCL unique ids). Rank 0 hosts it (or the launcher, which
//! outlives every rank); clients must present the job token before anything else, and a
//! client that doesn't is dropped without touching the job's state.
//!
//! Wire format: every request is `op: u8, key: u32-len bytes, …`; see `Op`. The client
//! ([`Store`], [`PrefixStore`]) is here, the server in `server.rs`, what a rank reports
//! to the launcher's store at its end (result, exit code, flight recorder) in
//! `report.rs`, the unit tests in `tests.rs`.

use crate::error::{Error, Result};
use std::collections::HashMap;
use std::io::{BufReader, BufWriter, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

const HELLO: &[u8; 8] = b"DISTSTR1";
const OP_SET: u8 = 1;
const OP_GET: u8 = 2;
const OP_ADD: u8 = 3;
const OP_CAS: u8 = 4;
const OP_DELETE: u8 = 5;
/// The number of keys starting with the request's key (a prefix; "" for all).
const OP_COUNT: u8 = 6;
/// Whether every key of a list is set (the request's key is unused).
const OP_CHECK: u8 = 7;

pub(crate) mod report;
mod server;
pub use server::StoreServer;

fn read_u32(r: &mut impl Read) -> std::io::Result<u32> {
    let mut b = [0u8; 4];
    r.read_exact(&mut b)?;
    Ok(u32::from_le_bytes(b))
}

fn read_bytes(r: &mut impl Read, max: usize) -> std::io::Result<Vec<u8>> {
    let n = read_u32(r)? as usize;
    if n > max {
        return Err(std::io::Error::new(std::io::ErrorKind::InvalidData, "oversized field"));
    }
    let mut v = vec![0u8; n];
    r.read_exact(&mut v)?;
    Ok(v)
}

/// The longest job token a store takes (`DIST_JOB_TOKEN`).
pub const MAX_TOKEN: usize = 4096;

/// How long a client waits for an answer the server owes at once (every request but a
/// `get`, whose own timeout comes first): generous for a loaded host, short of a hang.
const REPLY: Duration = if cfg!(test) { Duration::from_secs(1) } else { Duration::from_secs(30) };

/// A connection to the store.
pub struct Store {
    conn: Mutex<(BufReader<TcpStream>, BufWriter<TcpStream>)>,
    addr: String,
}

impl Store {
    /// Connects to `addr`, retrying until `timeout` (the host may not be up yet), and
    /// presents `token`.
    pub fn connect(addr: &str, token: &str, timeout: Duration) -> Result<Store> {
        if token.len() > MAX_TOKEN {
            return Err(Error::store(
                format!(
                    "the job token (DIST_JOB_TOKEN) is {} bytes; a store takes at most {MAX_TOKEN}: use a shorter one",
                    token.len()
                ),
                None,
            ));
        }
        let start = Instant::now();
        let mut silent = false;
        loop {
            let stream = loop {
                // Each attempt within what is left of `timeout` (a host that drops SYNs
                // would otherwise hold `connect` for the kernel's minutes).
                let left = timeout.saturating_sub(start.elapsed()).max(Duration::from_millis(10));
                let attempt = addr
                    .to_socket_addrs()
                    .and_then(|mut a| a.next().ok_or_else(|| std::io::Error::other("the address resolves to nothing")))
                    .and_then(|a| TcpStream::connect_timeout(&a, left));
                match attempt {
                    Ok(s) => break s,
                    Err(e) if start.elapsed() < timeout => {
                        let _ = e;
                        std::thread::sleep(Duration::from_millis(20));
                    }
                    Err(e) => {
                        return Err(Error::store(
                            format!(
                                "no store at {addr} after {:.0}s: is rank 0 running, and are MASTER_ADDR/MASTER_PORT the same on every rank?",
                                timeout.as_secs_f64()
                            ),
                            Some(e),
                        ))
                    }
                }
            };
            // The handshake within what is left too: a listener that accepts and never
            // answers (another program on MASTER_PORT) must not hold this rank forever.
            let left = timeout.saturating_sub(start.elapsed()).max(Duration::from_millis(10));
            match Store::hello(stream, addr, token, left) {
                Ok(Some(s)) => return Ok(s),
                Ok(None) => {
                    return Err(Error::store(
                        format!("the store at {addr} refused this job token (DIST_JOB_TOKEN differs)"),
                        None,
                    ))
                }
                Err(e) if e.kind() == std::io::ErrorKind::InvalidData => {
                    return Err(Error::store(
                        format!(
                            "something at {addr} answered the store's handshake, but not as a dist store: is \
                             another program listening on MASTER_PORT?"
                        ),
                        Some(e),
                    ))
                }
                // Closed before answering (a server shedding strangers, or going): again.
                Err(e) if start.elapsed() < timeout => {
                    silent |= matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut);
                    std::thread::sleep(Duration::from_millis(20))
                }
                Err(e)
                    if silent || matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) =>
                {
                    return Err(Error::store(
                        format!(
                            "something at {addr} accepted the connection but never answered the store's handshake \
                             within {:.0}s: is another program listening on MASTER_PORT?",
                            timeout.as_secs_f64()
                        ),
                        Some(e),
                    ))
                }
                Err(e) => return Err(Error::store(format!("talking to the store at {addr}"), Some(e))),
            }
        }
    }

    /// Presents the token on a fresh connection: the store, or `None` when refused.
    fn hello(stream: TcpStream, addr: &str, token: &str, within: Duration) -> std::io::Result<Option<Store>> {
        stream.set_nodelay(true)?;
        stream.set_read_timeout(Some(within))?;
        stream.set_write_timeout(Some(within))?;
        let mut r = BufReader::new(stream.try_clone()?);
        let mut w = BufWriter::new(stream);
        w.write_all(HELLO)?;
        w.write_all(&(token.len() as u32).to_le_bytes())?;
        w.write_all(token.as_bytes())?;
        w.flush()?;
        let mut ok = [0u8; 1];
        r.read_exact(&mut ok)?;
        // A dist store answers 1 (welcome) or 0 (another token); anything else is
        // another program on the port (a web server's "H").
        if ok[0] > 1 {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("it answered byte {:#04x}", ok[0]),
            ));
        }
        // Past the handshake, requests have their own deadlines (`get`'s timeout).
        r.get_ref().set_read_timeout(None)?;
        w.get_ref().set_write_timeout(None)?;
        Ok((ok[0] == 1).then(|| Store { conn: Mutex::new((r, w)), addr: addr.to_string() }))
    }

    fn io(&self, e: std::io::Error) -> Error {
        Error::store(format!("lost the store at {}", self.addr), Some(e))
    }

    /// One request and its answer, both bounded: `waits` is how long the server may hold
    /// the answer on purpose (a `get`'s own timeout), and past it plus [`REPLY`] a server
    /// that stopped answering (stopped, wedged, or something else on the port) is an
    /// error, never a rank blocked in a read forever.
    fn request(
        &self,
        op: u8,
        key: &str,
        tail: &[u8],
        waits: Duration,
        resp: impl FnOnce(&mut BufReader<TcpStream>) -> std::io::Result<Option<Vec<u8>>>,
    ) -> Result<Option<Vec<u8>>> {
        let mut g = self.conn.lock().unwrap_or_else(|p| p.into_inner());
        let (r, w) = &mut *g;
        let bound = waits.saturating_add(REPLY);
        let send = |w: &mut BufWriter<TcpStream>| -> std::io::Result<()> {
            w.get_ref().set_write_timeout(Some(bound))?;
            w.write_all(&[op])?;
            w.write_all(&(key.len() as u32).to_le_bytes())?;
            w.write_all(key.as_bytes())?;
            w.write_all(tail)?;
            w.flush()
        };
        let silent = |e: std::io::Error| match e.kind() {
            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut => Error::store(
                format!(
                    "the store at {} did not answer within {:.0}s (is rank 0's process stopped or wedged?)",
                    self.addr,
                    bound.as_secs_f64()
                ),
                Some(e),
            ),
            _ => self.io(e),
        };
        send(w).map_err(silent)?;
        r.get_ref().set_read_timeout(Some(bound)).map_err(|e| self.io(e))?;
        resp(r).map_err(silent)
    }

    /// Sets `key` to `val`.
    pub fn set(&self, key: &str, val: &[u8]) -> Result<()> {
        let mut tail = (val.len() as u32).to_le_bytes().to_vec();
        tail.extend_from_slice(val);
        self.request(OP_SET, key, &tail, Duration::ZERO, |r| {
            let mut b = [0u8; 1];
            r.read_exact(&mut b)?;
            Ok(None)
        })?;
        Ok(())
    }

    /// Waits up to `timeout` for `key` to be set and returns its value.
    pub fn get(&self, key: &str, timeout: Duration) -> Result<Vec<u8>> {
        self.get_within(key, timeout)?.ok_or_else(|| {
            Error::store(
                format!(
                    "timed out after {:.0}s waiting for {key:?}: a rank did not start or join",
                    timeout.as_secs_f64()
                ),
                None,
            )
        })
    }

    /// Waits up to `timeout` for `key`: its value, or `None` when the time ran out.
    pub(crate) fn get_within(&self, key: &str, timeout: Duration) -> Result<Option<Vec<u8>>> {
        let ms = timeout.as_millis().min(u64::MAX as u128) as u64;
        self.request(OP_GET, key, &ms.to_le_bytes(), timeout, |r| {
            let mut b = [0u8; 1];
            r.read_exact(&mut b)?;
            if b[0] == 0 {
                return Ok(None);
            }
            Ok(Some(read_bytes(r, 64 << 20)?))
        })
    }

    /// Adds `delta` to the integer at `key` (0 if unset) and returns the new value.
    pub fn add(&self, key: &str, delta: i64) -> Result<i64> {
        let v = self.request(OP_ADD, key, &delta.to_le_bytes(), Duration::ZERO, |r| {
            let mut b = [0u8; 8];
            r.read_exact(&mut b)?;
            Ok(Some(b.to_vec()))
        })?;
        Ok(i64::from_le_bytes(v.expect("add answers").try_into().expect("8 bytes")))
    }

    /// Sets `key` to `desired` if it holds `expected` (or is unset and `expected` is
    /// empty), atomically; returns the value it holds afterwards, as torch's
    /// `Store.compare_set` (for an unset key and a non-empty `expected`, `expected`).
    pub fn compare_set(&self, key: &str, expected: &[u8], desired: &[u8]) -> Result<Vec<u8>> {
        let mut tail = (expected.len() as u32).to_le_bytes().to_vec();
        tail.extend_from_slice(expected);
        tail.extend_from_slice(&(desired.len() as u32).to_le_bytes());
        tail.extend_from_slice(desired);
        let v = self.request(OP_CAS, key, &tail, Duration::ZERO, |r| Ok(Some(read_bytes(r, 64 << 20)?)))?;
        Ok(v.expect("compare_set answers"))
    }

    /// Removes `key`; whether it was set.
    pub fn delete(&self, key: &str) -> Result<bool> {
        let v = self.request(OP_DELETE, key, &[], Duration::ZERO, |r| {
            let mut b = [0u8; 1];
            r.read_exact(&mut b)?;
            Ok(Some(b.to_vec()))
        })?;
        Ok(v.expect("delete answers")[0] == 1)
    }

    /// How many keys are set whose names start with `prefix` ("" for all, including the
    /// job's own rendezvous keys when this is a job's store).
    pub fn num_keys_with(&self, prefix: &str) -> Result<usize> {
        let v = self.request(OP_COUNT, prefix, &[], Duration::ZERO, |r| {
            let mut b = [0u8; 8];
            r.read_exact(&mut b)?;
            Ok(Some(b.to_vec()))
        })?;
        Ok(u64::from_le_bytes(v.expect("count answers").try_into().expect("8 bytes")) as usize)
    }

    /// How many keys are set (torch's `num_keys`).
    pub fn num_keys(&self) -> Result<usize> {
        self.num_keys_with("")
    }

    /// Whether every key of `keys` is set, without waiting (torch's `check`).
    pub fn check(&self, keys: &[&str]) -> Result<bool> {
        let mut tail = (keys.len() as u32).to_le_bytes().to_vec();
        for k in keys {
            tail.extend_from_slice(&(k.len() as u32).to_le_bytes());
            tail.extend_from_slice(k.as_bytes());
        }
        let v = self.request(OP_CHECK, "", &tail, Duration::ZERO, |r| {
            let mut b = [0u8; 1];
            r.read_exact(&mut b)?;
            Ok(Some(b.to_vec()))
        })?;
        Ok(v.expect("check answers")[0] == 1)
    }

    /// Waits up to `timeout` until every key of `keys` is set (torch's `wait`).
    pub fn wait(&self, keys: &[&str], timeout: Duration) -> Result<()> {
        let start = Instant::now();
        for k in keys {
            self.get(k, timeout.saturating_sub(start.elapsed()))?;
        }
        Ok(())
    }

    /// Waits until the counter at `key` reaches at least `target`.
    pub fn wait_count(&self, key: &str, target: i64, timeout: Duration) -> Result<()> {
        let start = Instant::now();
        loop {
            if self.add(key, 0)? >= target {
                return Ok(());
            }
            if start.elapsed() >= timeout {
                return Err(Error::store(
                    format!("timed out after {:.0}s waiting for {target} ranks at {key:?}", timeout.as_secs_f64()),
                    None,
                ));
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }
}

/// A view of a [`Store`] under a key prefix (torch's `PrefixStore`): every key `k` is
/// `"{prefix}/{k}"` in the underlying store, so separate users of one store (libraries,
/// jobs, the rendezvous itself) cannot clobber each other's keys. Views nest.
///
/// ```
/// use dist_runtime::store::{PrefixStore, Store, StoreServer};
/// use std::{sync::Arc, time::Duration};
/// let server = StoreServer::bind("127.0.0.1:0", "token")?;
/// let store = Arc::new(Store::connect(&server.addr().to_string(), "token", Duration::from_secs(5))?);
/// let a = PrefixStore::new("trainer", store.clone());
/// let b = PrefixStore::new("eval", store.clone());
/// a.set("step", b"10")?;
/// b.set("step", b"3")?;
/// assert_eq!(a.get("step", Duration::from_secs(1))?, b"10");
/// assert_eq!(store.get("eval/step", Duration::from_secs(1))?, b"3");
/// // Leader election: the first compare_set wins.
/// assert_eq!(a.compare_set("leader", b"", b"rank 2")?, b"rank 2");
/// assert_eq!(a.compare_set("leader", b"", b"rank 5")?, b"rank 2");
/// assert_eq!((a.num_keys()?, store.num_keys()?), (2, 3));
/// assert!(a.check(&["step", "leader"])? && !a.check(&["epoch"])?);
/// assert!(a.delete("leader")? && !a.delete("leader")?);
/// let nested = a.with_prefix("opt");
/// assert_eq!(nested.add("lr_steps", 2)?, 2);
/// assert_eq!(store.add("trainer/opt/lr_steps", 0)?, 2);
/// # Ok::<(), dist_runtime::Error>(())
/// ```
#[derive(Clone)]
pub struct PrefixStore {
    prefix: String,
    store: Arc<Store>,
}

impl PrefixStore {
    /// The keys of `store` under `prefix`.
    pub fn new(prefix: &str, store: Arc<Store>) -> PrefixStore {
        PrefixStore { prefix: prefix.trim_end_matches('/').to_string(), store }
    }

    /// A view under `prefix` inside this one.
    pub fn with_prefix(&self, prefix: &str) -> PrefixStore {
        PrefixStore::new(&self.key(prefix), self.store.clone())
    }

    /// The key `k` of this view in the underlying store.
    pub fn key(&self, k: &str) -> String {
        format!("{}/{k}", self.prefix)
    }

    /// The prefix, without its trailing `/`.
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// As [`Store::set`].
    pub fn set(&self, key: &str, val: &[u8]) -> Result<()> {
        self.store.set(&self.key(key), val)
    }
    /// As [`Store::get`].
    pub fn get(&self, key: &str, timeout: Duration) -> Result<Vec<u8>> {
        self.store.get(&self.key(key), timeout)
    }
    /// As [`Store::add`].
    pub fn add(&self, key: &str, delta: i64) -> Result<i64> {
        self.store.add(&self.key(key), delta)
    }
    /// As [`Store::compare_set`].
    pub fn compare_set(&self, key: &str, expected: &[u8], desired: &[u8]) -> Result<Vec<u8>> {
        self.store.compare_set(&self.key(key), expected, desired)
    }
    /// As [`Store::delete`].
    pub fn delete(&self, key: &str) -> Result<bool> {
        self.store.delete(&self.key(key))
    }
    /// The keys set under this prefix (torch's `PrefixStore.num_keys` counts the whole
    /// store; this counts the view).
    pub fn num_keys(&self) -> Result<usize> {
        self.store.num_keys_with(&self.key(""))
    }
    /// As [`Store::check`].
    pub fn check(&self, keys: &[&str]) -> Result<bool> {
        let full: Vec<String> = keys.iter().map(|k| self.key(k)).collect();
        self.store.check(&full.iter().map(String::as_str).collect::<Vec<_>>())
    }
    /// As [`Store::wait`].
    pub fn wait(&self, keys: &[&str], timeout: Duration) -> Result<()> {
        let full: Vec<String> = keys.iter().map(|k| self.key(k)).collect();
        self.store.wait(&full.iter().map(String::as_str).collect::<Vec<_>>(), timeout)
    }
}

/// The job's own store, under the prefix `user` (the rendezvous keeps its keys
/// elsewhere), for a program's own coordination: flags, counters, leader election,
/// torch's `dist.distributed_c10d._get_default_store()` made public. Each call opens a
/// connection (keep the result). A one-rank job has no rendezvous store: it gets one of
/// its own in this process. A job `mpirun` started without `MASTER_ADDR`/`MASTER_PORT`
/// has none: an error says so.
///
/// ```
/// # use dist_runtime::prelude::*;
/// # #[spmd]
/// # fn demo(world: Comm<World>) -> dist_runtime::Result<()> {
/// let store = dist_runtime::store::job_store()?;
/// // Every rank counts itself in; the last one to arrive learns it is last.
/// let arrived = store.add("arrived", 1)?;
/// if arrived == world.size() as i64 {
///     store.set("all here", b"yes")?;
/// }
/// store.wait(&["all here"], std::time::Duration::from_secs(60))?;
/// # Ok(()) }
/// # fn main() { dist_runtime::launch(3, demo).unwrap(); }
/// ```
pub fn job_store() -> Result<PrefixStore> {
    let env = crate::env::Env::from_env()?;
    let store = match env.master_port {
        Some(port) if env.world_size > 1 => {
            Store::connect(&format!("{}:{port}", env.master_addr), &env.token, env.timeout)?
        }
        None if env.world_size > 1 => {
            return Err(Error::store(
                "this job has no rendezvous store (started by mpirun or srun without MASTER_ADDR and \
                 MASTER_PORT): set both to run one, or start a StoreServer yourself",
                None,
            ))
        }
        _ => {
            static LOCAL: std::sync::OnceLock<StoreServer> = std::sync::OnceLock::new();
            let srv = match LOCAL.get() {
                Some(s) => s,
                None => {
                    let s = StoreServer::bind("127.0.0.1:0", &env.token)?;
                    LOCAL.get_or_init(|| s)
                }
            };
            Store::connect(&srv.addr().to_string(), &env.token, env.timeout)?
        }
    };
    Ok(PrefixStore::new("user", Arc::new(store)))
}

#[cfg(test)]
mod tests;
