//! The store's server: accepts connections (this user's only, from this host), checks
//! the job token, and serves each client's requests on a thread of its own.

use super::*;

#[derive(Default)]
struct State {
    map: Mutex<HashMap<String, Vec<u8>>>,
    changed: Condvar,
    /// Set when the server stops: waiting requests end, connections close.
    stopped: std::sync::atomic::AtomicBool,
    /// Live connections (a clone each, to shut them down) and their threads.
    conns: Mutex<Vec<(TcpStream, std::thread::JoinHandle<()>)>>,
    /// Connections that have not presented the token yet, oldest first (id, a clone).
    pending: Mutex<std::collections::VecDeque<(u64, TcpStream)>>,
}

/// At most this many connections wait for their handshake at once (each has a thread
/// and a few seconds): a newcomer beyond it closes the oldest, so strangers cannot
/// exhaust the host's threads or file descriptors, nor keep a client out (a client
/// says hello at once).
const MAX_PENDING: usize = 64;
/// At most this many connections at once (every rank of the largest job a few times).
const MAX_CONNS: usize = 4 * crate::env::MAX_WORLD + 64;
/// How long a client has to present the token.
pub(super) const HANDSHAKE: Duration = Duration::from_secs(5);

/// A running store server. It serves until dropped; dropping it closes its socket and
/// every connection and joins its threads, so nothing of it outlives the job.
pub struct StoreServer {
    addr: SocketAddr,
    state: Arc<State>,
    /// The listening socket (a clone), shut down to stop the accept loop.
    listener: TcpListener,
    accept: Option<std::thread::JoinHandle<()>>,
}

impl StoreServer {
    /// Binds `addr` (use port 0 for any free port) and serves clients that present `token`.
    pub fn bind(addr: impl ToSocketAddrs + std::fmt::Debug, token: &str) -> Result<StoreServer> {
        let desc = format!("{addr:?}");
        let listener = TcpListener::bind(addr).map_err(|e| {
            let hint = if e.kind() == std::io::ErrorKind::AddrInUse {
                " (the port is in use: pick another MASTER_PORT, or let the launcher choose)"
            } else {
                ""
            };
            Error::store(format!("cannot listen on {desc}{hint}"), Some(e))
        })?;
        let addr = listener.local_addr().map_err(|e| Error::store("local_addr", Some(e)))?;
        let keep = listener.try_clone().map_err(|e| Error::store("cannot keep the listening socket", Some(e)))?;
        let state = Arc::new(State::default());
        let served = state.clone();
        let token = token.as_bytes().to_vec();
        let accept = std::thread::Builder::new()
            .name("dist-store".into())
            .spawn(move || accept_loop(listener, &served, &token))
            .map_err(|e| Error::store("cannot start the store thread", Some(e)))?;
        Ok(StoreServer { addr, state, listener: keep, accept: Some(accept) })
    }

    /// Reads a key directly from the server's table (the host's view, no network).
    pub fn get_local(&self, key: &str) -> Option<Vec<u8>> {
        self.state.map.lock().unwrap_or_else(|p| p.into_inner()).get(key).cloned()
    }

    /// The address clients connect to.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for StoreServer {
    fn drop(&mut self) {
        use std::os::fd::AsRawFd;
        use std::sync::atomic::Ordering::SeqCst;
        {
            // Under the table's lock, so a request about to wait for a key sees it.
            let _g = self.state.map.lock().unwrap_or_else(|p| p.into_inner());
            self.state.stopped.store(true, SeqCst);
        }
        // Shutting a listening socket down wakes the thread blocked in accept (Linux).
        // SAFETY: our own socket; shutdown has no memory effects.
        unsafe { libc::shutdown(self.listener.as_raw_fd(), libc::SHUT_RDWR) };
        if let Some(h) = self.accept.take() {
            let _ = h.join();
        }
        // Wake the requests waiting for a key, close every connection, join its thread.
        self.state.changed.notify_all();
        let conns = std::mem::take(&mut *self.state.conns.lock().unwrap_or_else(|p| p.into_inner()));
        for (c, _) in &conns {
            let _ = c.shutdown(std::net::Shutdown::Both);
        }
        for (_, h) in conns {
            let _ = h.join();
        }
    }
}

/// Accepts connections until the server stops: a thread each, within the caps; when the
/// process is out of file descriptors, waits instead of spinning.
fn accept_loop(listener: TcpListener, state: &Arc<State>, token: &[u8]) {
    use std::sync::atomic::Ordering::SeqCst;
    let mut warned = false;
    let mut next_id = 0u64;
    loop {
        let conn = match listener.accept() {
            Ok((c, _)) => c,
            Err(_) if state.stopped.load(SeqCst) => return,
            Err(e) => {
                // EMFILE/ENFILE and the like: the connection stays queued; try later.
                if !warned && matches!(e.raw_os_error(), Some(libc::EMFILE) | Some(libc::ENFILE)) {
                    warned = true;
                    eprintln!("dist store at {:?}: out of file descriptors; new clients wait", listener.local_addr());
                }
                std::thread::sleep(Duration::from_millis(50));
                continue;
            }
        };
        if state.stopped.load(SeqCst) {
            return;
        }
        if !same_user(&conn) {
            continue; // another local user: closed at once
        }
        let mut conns = state.conns.lock().unwrap_or_else(|p| p.into_inner());
        conns.retain(|(_, h)| !h.is_finished());
        if conns.len() >= MAX_CONNS {
            continue; // dropped: closed at once
        }
        let (Ok(keep), Ok(mark)) = (conn.try_clone(), conn.try_clone()) else { continue };
        next_id += 1;
        let id = next_id;
        {
            let mut pending = state.pending.lock().unwrap_or_else(|p| p.into_inner());
            if pending.len() >= MAX_PENDING {
                if let Some((_, oldest)) = pending.pop_front() {
                    let _ = oldest.shutdown(std::net::Shutdown::Both);
                }
            }
            pending.push_back((id, mark));
        }
        let st = state.clone();
        let token = token.to_vec();
        // (A small stack: a connection reads keys and values into the heap; one thread per
        // rank at the default 2 MiB is what a `ulimit -v` runs out of.)
        let spawned =
            std::thread::Builder::new().name("dist-store-conn".into()).stack_size(256 << 10).spawn(move || {
                let _ = serve(conn, id, &st, &token);
            });
        match spawned {
            Ok(h) => conns.push((keep, h)),
            Err(_) => state.pending.lock().unwrap_or_else(|p| p.into_inner()).retain(|(i, _)| *i != id),
        }
    }
}

/// Whether a connection may talk to this store: from another host (the token guards
/// those), or from this one by this user or root, whatever address it came through
/// (loopback, or one of the host's own interfaces: `MASTER_ADDR` on a host address).
/// Another local user is refused even before the token (a token-less job is then still
/// closed to them). A peer address this host can bind is this host's: its client socket
/// is looked up in the kernel's tables of TCP sockets (Linux `/proc/net/tcp` and
/// `/proc/net/tcp6`, where an IPv6 socket connected to an IPv4 address sits, mapped), and
/// one that is not found there is refused. Other peers are other hosts' (or other network
/// namespaces'), and the token guards them; their tables are not read.
pub(super) fn same_user(conn: &TcpStream) -> bool {
    let (Ok(peer), Ok(local)) = (conn.peer_addr(), conn.local_addr()) else { return false };
    let this_host = peer.ip().is_loopback() || std::net::UdpSocket::bind((peer.ip(), 0)).is_ok();
    if !this_host {
        return true;
    }
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    match local_peer_uid(peer, local) {
        Some(uid) => uid == me || uid == 0,
        // Tables that cannot be read (no /proc): the token still guards.
        None => std::fs::metadata("/proc/net/tcp").is_err(),
    }
}

/// The uid owning the socket at `peer` connected to `local`, if that socket is this
/// host's, from `/proc/net/tcp{,6}`: an IPv4 pair is looked for as IPv4, and mapped
/// (`::ffff:a.b.c.d`) in the IPv6 table; an IPv6 pair in the IPv6 table.
pub(super) fn local_peer_uid(peer: SocketAddr, local: SocketAddr) -> Option<u32> {
    let v4 = |a: SocketAddr| match a {
        SocketAddr::V6(v) => match v.ip().to_ipv4_mapped() {
            Some(ip) => SocketAddr::new(ip.into(), v.port()),
            None => a,
        },
        a => a,
    };
    let mapped = |a: SocketAddr| match a {
        SocketAddr::V4(v) => SocketAddr::new(v.ip().to_ipv6_mapped().into(), v.port()),
        a => a,
    };
    let hex = |a: SocketAddr| match a {
        SocketAddr::V4(v) => format!("{:08X}:{:04X}", u32::from_le_bytes(v.ip().octets()), v.port()),
        SocketAddr::V6(v) => {
            let o = v.ip().octets();
            let words: String =
                o.chunks(4).map(|c| format!("{:08X}", u32::from_le_bytes([c[0], c[1], c[2], c[3]]))).collect();
            format!("{words}:{:04X}", v.port())
        }
    };
    let find = |file: &str, peer: SocketAddr, local: SocketAddr| {
        let (want_local, want_remote) = (hex(peer), hex(local));
        std::fs::read_to_string(file).ok()?.lines().skip(1).find_map(|line| {
            let f: Vec<&str> = line.split_whitespace().collect();
            (f.len() > 7 && f[1].eq_ignore_ascii_case(&want_local) && f[2].eq_ignore_ascii_case(&want_remote))
                .then(|| f[7].parse().ok())
                .flatten()
        })
    };
    let (peer, local) = (v4(peer), v4(local));
    if peer.is_ipv4() {
        find("/proc/net/tcp", peer, local).or_else(|| find("/proc/net/tcp6", mapped(peer), mapped(local)))
    } else {
        find("/proc/net/tcp6", peer, local)
    }
}

type Halves = (BufReader<TcpStream>, BufWriter<TcpStream>);

/// The client's hello and token, within `HANDSHAKE`; `None` for a wrong token (told so).
fn handshake(conn: &TcpStream, token: &[u8]) -> std::io::Result<Option<Halves>> {
    conn.set_nodelay(true)?;
    // A stranger gets a few seconds to say hello, then is dropped.
    conn.set_read_timeout(Some(HANDSHAKE))?;
    conn.set_write_timeout(Some(HANDSHAKE))?;
    let mut r = BufReader::new(conn.try_clone()?);
    let mut w = BufWriter::new(conn.try_clone()?);
    let mut hello = [0u8; 8];
    r.read_exact(&mut hello)?;
    let presented = read_bytes(&mut r, MAX_TOKEN)?;
    // Compare without an early exit so timing doesn't leak the token.
    let ok = hello == *HELLO
        && presented.len() == token.len()
        && presented.iter().zip(token).fold(0u8, |a, (x, y)| a | (x ^ y)) == 0;
    w.write_all(&[ok as u8])?;
    w.flush()?;
    conn.set_write_timeout(None)?;
    Ok(ok.then_some((r, w)))
}

fn serve(conn: TcpStream, id: u64, state: &State, token: &[u8]) -> std::io::Result<()> {
    let shake = handshake(&conn, token);
    state.pending.lock().unwrap_or_else(|p| p.into_inner()).retain(|(i, _)| *i != id);
    let (mut r, mut w) = match shake? {
        Some(rw) => rw,
        None => return Ok(()),
    };
    conn.set_read_timeout(None)?;
    loop {
        let mut op = [0u8; 1];
        if r.read_exact(&mut op).is_err() {
            return Ok(()); // client gone
        }
        let key = String::from_utf8_lossy(&read_bytes(&mut r, 1 << 16)?).into_owned();
        match op[0] {
            OP_SET => {
                let val = read_bytes(&mut r, 64 << 20)?;
                state.map.lock().unwrap_or_else(|p| p.into_inner()).insert(key, val);
                state.changed.notify_all();
                w.write_all(&[1])?;
            }
            OP_GET => {
                if !serve_get(&mut r, &mut w, &key, state)? {
                    return Ok(());
                }
            }
            OP_ADD => {
                let mut d = [0u8; 8];
                r.read_exact(&mut d)?;
                let delta = i64::from_le_bytes(d);
                let mut map = state.map.lock().unwrap_or_else(|p| p.into_inner());
                let cur = map.get(&key).and_then(|v| v.as_slice().try_into().ok()).map(i64::from_le_bytes).unwrap_or(0);
                let new = cur.wrapping_add(delta);
                map.insert(key, new.to_le_bytes().to_vec());
                drop(map);
                state.changed.notify_all();
                w.write_all(&new.to_le_bytes())?;
            }
            OP_CAS => serve_compare_set(&mut r, &mut w, key, state)?,
            OP_DELETE => {
                let gone = state.map.lock().unwrap_or_else(|p| p.into_inner()).remove(&key).is_some();
                w.write_all(&[gone as u8])?;
            }
            OP_COUNT => {
                let n =
                    state.map.lock().unwrap_or_else(|p| p.into_inner()).keys().filter(|k| k.starts_with(&key)).count();
                w.write_all(&(n as u64).to_le_bytes())?;
            }
            OP_CHECK => {
                let n = read_u32(&mut r)? as usize;
                let mut keys = Vec::with_capacity(n.min(1 << 16));
                for _ in 0..n {
                    keys.push(String::from_utf8_lossy(&read_bytes(&mut r, 1 << 16)?).into_owned());
                }
                let map = state.map.lock().unwrap_or_else(|p| p.into_inner());
                w.write_all(&[keys.iter().all(|k| map.contains_key(k)) as u8])?;
            }
            _ => return Ok(()),
        }
        w.flush()?;
    }
}

/// `get` with a deadline: the value once some client sets the key, or a miss at the
/// deadline. `false` when the store stops meanwhile.
fn serve_get(r: &mut impl Read, w: &mut impl Write, key: &str, state: &State) -> std::io::Result<bool> {
    let mut t = [0u8; 8];
    r.read_exact(&mut t)?;
    let deadline = Instant::now() + Duration::from_millis(u64::from_le_bytes(t));
    let mut map = state.map.lock().unwrap_or_else(|p| p.into_inner());
    loop {
        if state.stopped.load(std::sync::atomic::Ordering::SeqCst) {
            return Ok(false);
        }
        if let Some(v) = map.get(key) {
            w.write_all(&[1])?;
            w.write_all(&(v.len() as u32).to_le_bytes())?;
            w.write_all(v)?;
            return Ok(true);
        }
        let now = Instant::now();
        if now >= deadline {
            w.write_all(&[0])?;
            return Ok(true);
        }
        map = state.changed.wait_timeout(map, deadline - now).unwrap_or_else(|p| p.into_inner()).0;
    }
}

/// torch's TCPStore.compare_set: set when the key holds `expected`, or is unset and
/// `expected` is empty; answer the value the key holds now (`expected` itself for an
/// unset key and a non-empty `expected`).
fn serve_compare_set(r: &mut impl Read, w: &mut impl Write, key: String, state: &State) -> std::io::Result<()> {
    let expected = read_bytes(r, 64 << 20)?;
    let desired = read_bytes(r, 64 << 20)?;
    let mut map = state.map.lock().unwrap_or_else(|p| p.into_inner());
    let now = match map.get(&key) {
        Some(cur) if *cur == expected => {
            map.insert(key, desired.clone());
            desired
        }
        Some(cur) => cur.clone(),
        None if expected.is_empty() => {
            map.insert(key, desired.clone());
            desired
        }
        None => expected,
    };
    drop(map);
    state.changed.notify_all();
    w.write_all(&(now.len() as u32).to_le_bytes())?;
    w.write_all(&now)
}
