//! The store's tests: client and server over loopback.

use super::server::{local_peer_uid, same_user, HANDSHAKE};
use super::*;

/// A server that answered the handshake and then stops answering (its process stopped,
/// or something that mimics the handshake): every request ends with an error saying
/// so, a `get` after its own timeout plus the reply bound, never a read forever.
#[test]
fn a_store_that_stops_answering_is_an_error_not_a_hang() {
    let mute = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = mute.local_addr().unwrap().to_string();
    let held = std::thread::spawn(move || {
        // Take the one connection's hello and say yes, then read and never answer.
        let (mut c, _) = mute.accept().unwrap();
        let mut hello = [0u8; 12];
        c.read_exact(&mut hello).unwrap();
        let len = u32::from_le_bytes(hello[8..].try_into().unwrap()) as usize;
        let mut token = vec![0u8; len];
        c.read_exact(&mut token).unwrap();
        c.write_all(&[1]).unwrap();
        c.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        let mut sink = [0u8; 256];
        while c.read(&mut sink).is_ok_and(|k| k > 0) {}
    });
    let store = Store::connect(&addr, "t", Duration::from_secs(5)).unwrap();
    let start = Instant::now();
    let e = store.set("k", b"v").unwrap_err().to_string();
    assert!(e.contains("did not answer within 1s"), "{e}");
    assert!(start.elapsed() < Duration::from_secs(5), "took {:?}", start.elapsed());
    let start = Instant::now();
    let e = store.get("k", Duration::from_millis(500)).unwrap_err().to_string();
    assert!(e.contains("did not answer within"), "{e}");
    assert!(start.elapsed() < Duration::from_secs(6), "took {:?}", start.elapsed());
    drop(store);
    held.join().unwrap();
}

/// Something else on MASTER_PORT that accepts and never answers: the rank's connect
/// ends at its deadline with an error that says so, instead of waiting forever.
#[test]
fn a_listener_that_never_answers_is_an_error_at_the_deadline() {
    let silent = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = silent.local_addr().unwrap().to_string();
    // Accept and hold every connection, never writing a byte.
    let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let stop = done.clone();
    let held = std::thread::spawn(move || {
        let mut kept = Vec::new();
        silent.set_nonblocking(true).unwrap();
        let start = Instant::now();
        while !stop.load(std::sync::atomic::Ordering::SeqCst) && start.elapsed() < Duration::from_secs(60) {
            if let Ok((c, _)) = silent.accept() {
                kept.push(c);
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    });
    let start = Instant::now();
    let r = Store::connect(&addr, "t", Duration::from_millis(800));
    let took = start.elapsed();
    done.store(true, std::sync::atomic::Ordering::SeqCst);
    held.join().unwrap();
    let e = r.err().expect("no store there");
    assert!(e.to_string().contains("never answered"), "{e}");
    // Bounded by the deadline (generously: this host may be loaded), not forever.
    assert!(took < Duration::from_secs(30), "took {took:?}");
}

/// A token longer than a store takes is refused at once, naming the variable.
#[test]
fn a_token_longer_than_the_store_takes_is_refused_at_once() {
    let srv = StoreServer::bind("127.0.0.1:0", "t").unwrap();
    let long = "x".repeat(MAX_TOKEN + 1);
    let start = Instant::now();
    let e = Store::connect(&srv.addr().to_string(), &long, Duration::from_secs(30)).err().expect("refused");
    assert!(e.to_string().contains("DIST_JOB_TOKEN"), "{e}");
    // At once, not at the 30 s deadline.
    assert!(start.elapsed() < Duration::from_secs(20));
}

#[test]
fn set_get_add_and_token() {
    let srv = StoreServer::bind("127.0.0.1:0", "secret").unwrap();
    let addr = srv.addr().to_string();
    let a = Store::connect(&addr, "secret", Duration::from_secs(5)).unwrap();
    a.set("k", b"v").unwrap();
    assert_eq!(a.get("k", Duration::from_secs(1)).unwrap(), b"v");
    assert_eq!(a.add("c", 2).unwrap(), 2);
    assert_eq!(a.add("c", 3).unwrap(), 5);
    assert!(a.get("missing", Duration::from_millis(50)).is_err());
    let bad = Store::connect(&addr, "wrong", Duration::from_secs(5));
    assert!(matches!(bad, Err(Error::Store { .. })), "stranger must be refused");
    // the job is undisturbed
    assert_eq!(a.get("k", Duration::from_secs(1)).unwrap(), b"v");
}

#[test]
fn compare_set_delete_count_check_as_torch() {
    let srv = StoreServer::bind("127.0.0.1:0", "t").unwrap();
    let a = Arc::new(Store::connect(&srv.addr().to_string(), "t", Duration::from_secs(5)).unwrap());
    // An unset key: set only when `expected` is empty; else `expected` comes back.
    assert_eq!(a.compare_set("k", b"x", b"y").unwrap(), b"x");
    assert!(!a.check(&["k"]).unwrap());
    assert_eq!(a.compare_set("k", b"", b"v1").unwrap(), b"v1");
    assert_eq!(a.compare_set("k", b"nope", b"v2").unwrap(), b"v1");
    assert_eq!(a.compare_set("k", b"v1", b"v2").unwrap(), b"v2");
    a.set("p/one", b"1").unwrap();
    a.set("p/two", b"2").unwrap();
    assert_eq!(a.num_keys().unwrap(), 3);
    assert_eq!(a.num_keys_with("p/").unwrap(), 2);
    assert!(a.check(&["k", "p/one"]).unwrap());
    assert!(a.check(&[]).unwrap());
    assert!(a.delete("p/one").unwrap());
    assert!(!a.delete("p/one").unwrap());
    assert!(!a.check(&["k", "p/one"]).unwrap());
    // A waiting get sees a key a compare_set made.
    let b = Store::connect(&srv.addr().to_string(), "t", Duration::from_secs(5)).unwrap();
    let w = std::thread::spawn(move || b.get("late", Duration::from_secs(30)));
    std::thread::sleep(Duration::from_millis(20));
    a.compare_set("late", b"", b"here").unwrap();
    assert_eq!(w.join().unwrap().unwrap(), b"here");
    let p = PrefixStore::new("p/", a.clone());
    assert_eq!(p.prefix(), "p");
    assert_eq!(p.num_keys().unwrap(), 1);
    assert!(p.wait(&["two"], Duration::from_secs(1)).is_ok());
    assert!(p.wait(&["three"], Duration::from_millis(30)).is_err());
}

/// The tests that count this process's fds and threads run one at a time.
static COUNTED: Mutex<()> = Mutex::new(());

fn fds_and_threads() -> (usize, usize) {
    let count = |d: &str| std::fs::read_dir(d).map(|r| r.count()).unwrap_or(0);
    (count("/proc/self/fd"), count("/proc/self/task"))
}

/// A dropped server leaves nothing: its socket, connections and threads are gone,
/// and a client waiting for a key is answered (an error), not left hanging.
#[test]
fn a_dropped_server_leaves_nothing_behind() {
    let _one = COUNTED.lock().unwrap_or_else(|p| p.into_inner());
    let before = fds_and_threads();
    for _ in 0..200 {
        let srv = StoreServer::bind("127.0.0.1:0", "t").unwrap();
        let addr = srv.addr().to_string();
        let c = Store::connect(&addr, "t", Duration::from_secs(5)).unwrap();
        c.set("k", b"v").unwrap();
        let waiter = std::thread::spawn(move || c.get("never", Duration::from_secs(60)).is_err());
        std::thread::sleep(Duration::from_millis(2));
        drop(srv);
        assert!(waiter.join().unwrap(), "the waiting get must end when the server goes");
        assert!(std::net::TcpStream::connect(&addr).is_err(), "the port must be closed");
    }
    let after = fds_and_threads();
    assert!(after.0 <= before.0 + 20 && after.1 <= before.1 + 20, "fds/threads {before:?} -> {after:?}");
}

/// Strangers that connect and say nothing cost at most MAX_PENDING threads for a few
/// seconds each; the job's clients are served meanwhile.
#[test]
fn idle_strangers_do_not_starve_the_job() {
    let _one = COUNTED.lock().unwrap_or_else(|p| p.into_inner());
    let srv = StoreServer::bind("127.0.0.1:0", "t").unwrap();
    let addr = srv.addr().to_string();
    let strangers: Vec<_> = (0..500).map(|_| std::net::TcpStream::connect(&addr).unwrap()).collect();
    std::thread::sleep(Duration::from_millis(200));
    let threads = fds_and_threads().1;
    assert!(threads < 200, "{threads} threads for 500 idle strangers");
    let start = Instant::now();
    let c = Store::connect(&addr, "t", Duration::from_secs(20)).unwrap();
    c.set("k", b"v").unwrap();
    assert_eq!(c.get("k", Duration::from_secs(1)).unwrap(), b"v");
    // Starved, the client would wait out a stranger's handshake (HANDSHAKE, 5 s) at
    // least; served, it takes milliseconds (seconds on a host busy with other jobs).
    assert!(start.elapsed() < HANDSHAKE, "took {:?}", start.elapsed());
    drop(strangers);
    let t = Instant::now();
    drop(srv);
    assert!(t.elapsed() < HANDSHAKE, "drop took {:?}", t.elapsed());
}

/// The client end of a loopback connection is found with its owner (this process's).
#[test]
fn a_loopback_peer_is_found_with_its_user() {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let c = std::net::TcpStream::connect(l.local_addr().unwrap()).unwrap();
    let (s, peer) = l.accept().unwrap();
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    assert_eq!(local_peer_uid(peer, s.local_addr().unwrap()), Some(me));
    assert!(same_user(&s));
    drop(c);
}

/// Another local user cannot talk to a job's store, token or not (run as root: the
/// client is a python3 process switched to `nobody`; skipped otherwise).
#[test]
fn another_local_user_is_refused() {
    use std::os::unix::process::CommandExt;
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 || std::process::Command::new("python3").arg("-V").output().is_err() {
        eprintln!("another_local_user_is_refused: needs root and python3; skipped");
        return;
    }
    // On loopback, and on this host's own address (`MASTER_ADDR` set to a host
    // interface), where there is one.
    let mut addrs = vec!["127.0.0.1".to_string()];
    if let Some(host) = host_address() {
        addrs.push(host);
    } else {
        eprintln!("another_local_user_is_refused: no host address besides loopback; checked on loopback only");
    }
    for ip in addrs {
        let srv = StoreServer::bind(format!("{ip}:0").as_str(), "").unwrap();
        let port = srv.addr().port();
        // An IPv4 socket, and an IPv6 one reaching the IPv4 listener mapped
        // (`::ffff:a.b.c.d`, listed in /proc/net/tcp6 only).
        let script = format!(
            "import socket,struct\nfor fam,a in ((socket.AF_INET,'{ip}'),(socket.AF_INET6,'::ffff:{ip}')):\n\
             \x20 s=socket.socket(fam)\n\x20 s.connect((a,{port}))\n\
             \x20 s.sendall(b'DISTSTR1'+struct.pack('<I',0))\n\x20 print('answer', s.recv(1))"
        );
        let mut cmd = std::process::Command::new("python3");
        cmd.args(["-c", &script]);
        // SAFETY: setgid/setuid are async-signal-safe.
        unsafe {
            cmd.pre_exec(|| {
                if libc::setgid(65534) != 0 || libc::setuid(65534) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let out = cmd.output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        // The server closed without answering: Python reads b'' (or the reset fails it).
        assert!(!text.contains("answer b'\\x"), "a stranger got an answer on {ip}: {text}");
        assert!(text.matches("answer b''").count() == 2 || !out.status.success(), "on {ip}: {text}");
        // The job's own user still gets in.
        let c = Store::connect(&srv.addr().to_string(), "", Duration::from_secs(5)).unwrap();
        c.set("k", b"v").unwrap();
    }
}

/// One of this host's IPv4 addresses other than loopback, if it has one.
fn host_address() -> Option<String> {
    let out = std::process::Command::new("hostname").arg("-I").output().ok()?;
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let ip = text.split_whitespace().find(|a| a.parse::<std::net::Ipv4Addr>().is_ok_and(|ip| !ip.is_loopback()))?;
    // Bindable here (not a leftover of another namespace).
    std::net::TcpListener::bind((ip, 0)).ok()?;
    Some(ip.to_string())
}

#[test]
fn blocking_get_sees_later_set() {
    let srv = StoreServer::bind("127.0.0.1:0", "t").unwrap();
    let addr = srv.addr().to_string();
    let addr2 = addr.clone();
    let h = std::thread::spawn(move || {
        let b = Store::connect(&addr2, "t", Duration::from_secs(5)).unwrap();
        b.get("late", Duration::from_secs(5)).unwrap()
    });
    std::thread::sleep(Duration::from_millis(50));
    Store::connect(&addr, "t", Duration::from_secs(5)).unwrap().set("late", b"x").unwrap();
    assert_eq!(h.join().unwrap(), b"x");
}

/// Another program on the port that answers the handshake with bytes of its own (a web
/// server's reply): an error at once that says so, not "refused this job token".
#[test]
fn a_listener_that_answers_garbage_is_named_as_another_program() {
    let other = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = other.local_addr().unwrap().to_string();
    let held = std::thread::spawn(move || {
        let (mut c, _) = other.accept().unwrap();
        let mut first = [0u8; 8];
        let _ = c.read_exact(&mut first);
        let _ = c.write_all(b"HTTP/1.1 400 Bad Request\r\n\r\n");
    });
    let start = Instant::now();
    let e = Store::connect(&addr, "t", Duration::from_secs(10)).err().expect("an error").to_string();
    assert!(e.contains("not as a dist store"), "{e}");
    assert!(!e.contains("token"), "{e}");
    assert!(start.elapsed() < Duration::from_secs(5), "took {:?}", start.elapsed());
    held.join().unwrap();
}
