//! Joining the job: read the environment, meet at the store, build the world.

use crate::backend::shm::tuning::Config;
use crate::backend::shm::ShmComm;
use crate::backend::trace::{Traced, Tracer};
use crate::backend::Backend;
#[cfg(any(feature = "nccl", feature = "sim-device"))]
use crate::comm::device::DeviceSide;
use crate::comm::Comm;
use crate::env::{BackendChoice, Env};
use crate::error::{Error, Result};
use crate::group::World;
use crate::store::{Store, StoreServer};
use std::sync::Arc;

/// Joins the job described by the environment (torchrun's `RANK`, `WORLD_SIZE`,
/// `MASTER_ADDR`, `MASTER_PORT`, … and `DIST_*`; see [`Env`]) and returns the world
/// communicator. With none of those variables set, this process is a world of one.
///
/// ```
/// let world = dist_runtime::init()?;
/// assert_eq!((world.rank(), world.size()), (0, 1));
/// # Ok::<(), dist_runtime::Error>(())
/// ```
pub fn init() -> Result<Comm<World>> {
    init_with(Env::from_env()?)
}

/// The multi-rank world this process joined: calling [`init`] again returns it.
struct Joined {
    world: std::sync::Weak<crate::comm::Inner>,
    rank: usize,
    size: usize,
}

static JOINED: std::sync::Mutex<Option<Joined>> = std::sync::Mutex::new(None);

/// As [`init`], from an explicit [`Env`].
///
/// A process joins a multi-rank job once: while a `Comm<World>` of such a job is alive
/// in this process (inside an `#[spmd]` entry, say), `init` returns another handle to it
/// (a [`Clone`] of the same communicator) instead of joining again, and asking for
/// another rank or size is an error; once it is dropped, joining again is an error too
/// (its peers have moved on). A world of one (no job variables set) has no peers, so
/// each `init` of one is a fresh, independent world, as before.
pub fn init_with(env: Env) -> Result<Comm<World>> {
    let mut joined = JOINED.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(j) = &*joined {
        match j.world.upgrade() {
            Some(inner) if (j.rank, j.size) == (env.rank, env.world_size) => return Ok(Comm::from_inner(inner)),
            Some(_) => {
                return Err(Error::Env(format!(
                    "this process already joined its job as rank {} of {}, and init now asks for rank {} of {}: \
                     a process is one rank of one job (call init once, or clone the world communicator)",
                    j.rank, j.size, env.rank, env.world_size
                )))
            }
            None => {
                return Err(Error::Env(format!(
                    "this process was rank {} of a {}-rank job whose world communicator is already dropped: \
                     its peers have moved on, so it cannot join again (keep the world alive, or clone it)",
                    j.rank, j.size
                )))
            }
        }
    }
    if env.world_size == 1 {
        drop(joined);
        return join(env);
    }
    // Held through the rendezvous: a second thread's `init` waits and gets this world.
    let world = join(env)?;
    *joined = Some(Joined { world: std::sync::Arc::downgrade(&world.inner), rank: world.rank(), size: world.size() });
    Ok(world)
}

/// The world this process joined last (a world of one included), while it lives.
static LAST_WORLD: std::sync::Mutex<Option<std::sync::Weak<crate::comm::Inner>>> = std::sync::Mutex::new(None);

/// Whether this process has a world communicator alive: inside an `#[spmd]` entry, or
/// after [`init`] while its world (or a clone) is kept (torch's `dist.is_initialized()`).
///
/// ```
/// assert!(!dist_runtime::is_initialized());
/// let world = dist_runtime::init()?;
/// assert!(dist_runtime::is_initialized());
/// drop(world);
/// assert!(!dist_runtime::is_initialized());
/// # Ok::<(), dist_runtime::Error>(())
/// ```
pub fn is_initialized() -> bool {
    LAST_WORLD.lock().unwrap_or_else(|p| p.into_inner()).as_ref().is_some_and(|w| w.strong_count() > 0)
}

/// Whether `backend` can run in this build on this machine, and if not, why (torch's
/// `is_nccl_available`/`is_mpi_available`, with the reason): `shm` always can; `mpi` when
/// built with the `mpi` feature; `nccl` when built with the `nccl` feature and the CUDA
/// driver, NCCL 2.18+ and a GPU are found (probed without starting anything); `auto`
/// always can (it falls back to shm).
///
/// ```
/// use dist_runtime::{backend_available, BackendChoice};
/// assert!(backend_available(BackendChoice::Shm).is_ok());
/// if let Err(why) = backend_available(BackendChoice::Nccl) {
///     println!("no NCCL here: {why}");
/// }
/// ```
pub fn backend_available(backend: BackendChoice) -> Result<()> {
    match backend {
        BackendChoice::Shm | BackendChoice::Auto => Ok(()),
        #[cfg(feature = "mpi")]
        BackendChoice::Mpi => Ok(()),
        #[cfg(not(feature = "mpi"))]
        BackendChoice::Mpi => Err(Error::backend(
            "mpi",
            "this build of dist-runtime has no `mpi` feature: build with `--features dist-runtime/mpi` (needs an \
             MPI library and libclang)",
        )),
        #[cfg(feature = "nccl")]
        BackendChoice::Nccl => crate::backend::nccl::probe().map(|_| ()),
        #[cfg(not(feature = "nccl"))]
        BackendChoice::Nccl => Err(Error::backend(
            "nccl",
            "this build of dist-runtime has no `nccl` feature: build with `--features dist-runtime/nccl`",
        )),
    }
}

/// `backend_available(backend).is_ok()`.
pub fn is_available(backend: BackendChoice) -> bool {
    backend_available(backend).is_ok()
}

/// Joins for real: store, backends, world.
fn join(env: Env) -> Result<Comm<World>> {
    let world = join_any(env)?;
    *LAST_WORLD.lock().unwrap_or_else(|p| p.into_inner()) = Some(std::sync::Arc::downgrade(&world.inner));
    Ok(world)
}

fn join_any(env: Env) -> Result<Comm<World>> {
    // Which device side: decided before the rendezvous, so a missing driver or library
    // is an error at once, naming what is missing (probing never panics).
    let device: Option<usize> = match env.backend {
        BackendChoice::Shm => None,
        BackendChoice::Mpi => return join_mpi(env),
        #[cfg(not(feature = "nccl"))]
        BackendChoice::Auto => None,
        #[cfg(not(feature = "nccl"))]
        BackendChoice::Nccl => {
            return Err(Error::backend(
                "nccl",
                "DIST_BACKEND=nccl, but this build of dist-runtime has no `nccl` feature: \
                 build with `--features dist-runtime/nccl`, or use DIST_BACKEND=shm",
            ))
        }
        #[cfg(feature = "nccl")]
        BackendChoice::Nccl => {
            let count = nccl_probe(&env)?;
            Some(env.placement()?.device(env.rank, env.local_rank, count)?)
        }
        #[cfg(feature = "nccl")]
        BackendChoice::Auto => match nccl_probe(&env) {
            Ok(count) => Some(env.placement()?.device(env.rank, env.local_rank, count)?),
            Err(_) => None,
        },
    };
    let cfg = Arc::new(Config::from_env(&env)?);
    // By default only where the CPUs this process may use are fewer than the host's
    // ranks (a CPU quota that makes the job oversubscribed on many allowed CPUs is left
    // to the kernel: bound ranks alone on their CPUs would each spin through the quota).
    if env.tuning.pin.unwrap_or(cfg.oversubscribed && crate::sys::allowed_cpus().len() < env.local_world_size) {
        crate::sys::pin_to_core(env.local_rank, &env.job_id);
    }
    let (store, keep): (Option<Arc<Store>>, Option<Box<dyn std::any::Any + Send + Sync>>) = if env.world_size > 1 {
        let port = env.master_port.expect("validated by Env");
        let addr = format!("{}:{}", env.master_addr, port);
        let server = if env.rank == 0 && !env.store_external {
            Some(Arc::new(StoreServer::bind(addr.as_str(), &env.token).inspect_err(|_| second_rank_zero(&env, &addr))?))
        } else {
            None
        };
        if let Some(server) = &server {
            watch_for_conflict(Arc::downgrade(server));
        }
        let store = Store::connect(&addr, &env.token, env.timeout)?;
        claim_rank(&store, &env, &addr)?;
        (Some(Arc::new(store)), server.map(|s| Box::new(s) as Box<dyn std::any::Any + Send + Sync>))
    } else {
        (None, None)
    };
    if let Some(s) = &store {
        one_host(s, &env)?;
    }
    let ready = store.clone();
    let mut backend: Box<dyn Backend> = Box::new(ShmComm::connect(
        crate::backend::shm::WORLD_ID,
        "World",
        env.rank,
        env.world_size,
        (0..env.world_size).collect(),
        cfg,
        store,
    )?);
    if let Some(dir) = &env.trace {
        backend = Box::new(Traced::new(backend, Tracer::open(dir, env.rank)?, "World".into()));
    }
    let world: Comm<World> = Comm::from_backend(
        Arc::from(backend),
        "World".into(),
        (0..env.world_size).collect(),
        env.debug != crate::env::DebugLevel::Off,
        keep,
    );
    let world = attach_device(world, device, &env)?;
    // The job is formed once every rank counted itself here: from then on a fault-tolerant
    // launcher lets the survivors of a rank's death go on (before, nobody could).
    if let Some(s) = ready {
        s.add(READY, 1)?;
    }
    Ok(world)
}

/// The store key counting the ranks whose world is made (`init`): a fault-tolerant
/// launcher survives a rank's death only once it reads the whole job there.
pub(crate) const READY: &str = "ready";

/// Sets NCCL's variables for this rank (`backend::nccl::env_defaults`), then probes the
/// driver, the library and the devices. Ranks join from a constructor before `main`, so
/// no other thread of the process reads the environment yet.
#[cfg(feature = "nccl")]
fn nccl_probe(env: &Env) -> Result<usize> {
    crate::backend::nccl::env_defaults(env.share_gpu, env.deterministic);
    crate::backend::nccl::probe()
}

/// The world's device side: NCCL when built and every rank found a device, else the
/// simulated one where asked for (tests), else none.
fn attach_device(world: Comm<World>, device: Option<usize>, env: &Env) -> Result<Comm<World>> {
    #[cfg(feature = "nccl")]
    let (world, nccl) = with_nccl(world, device, env)?;
    #[cfg(feature = "nccl")]
    if nccl {
        return Ok(world);
    }
    #[cfg(not(feature = "nccl"))]
    let _ = device;
    with_sim_device(world, env)
}

/// The NCCL device side, when this rank found a device: every rank must agree (with
/// `auto`, or under MPI, one rank without a GPU means none uses NCCL), or the first
/// device collective would hang. The unique id goes from rank 0 to all over the world's
/// host side. Returns the world, and whether it got a device side.
#[cfg(feature = "nccl")]
fn with_nccl(world: Comm<World>, device: Option<usize>, env: &Env) -> Result<(Comm<World>, bool)> {
    // With the device, whether this rank's NCCL has its own gather, scatter and
    // all-to-all: NCCL's calls are used only where every rank's is (the other ranks'
    // grouped sends would never match them).
    let native = device.is_some() && env.nccl_native && crate::backend::nccl::native_collectives();
    // And whether it pinned NCCL's algorithm (`DIST_DETERMINISTIC`): NCCL needs the
    // same on every rank.
    let det = env.deterministic;
    let mut all = [device.is_some() as u8, native as u8, det as u8, !det as u8];
    world.all_reduce(&mut all, crate::reduce_op::ReduceOp::Min)?;
    if env.backend == BackendChoice::Nccl && all[0] == 0 {
        return Err(Error::backend("nccl", "DIST_BACKEND=nccl, but another rank could not start NCCL (see its error)"));
    }
    if all[0] == 1 && all[2] == 0 && all[3] == 0 {
        return Err(Error::backend(
            "nccl",
            format!(
                "DIST_DETERMINISTIC is {} on this rank and not on another: NCCL needs one algorithm on every rank; \
                 set it for the whole job",
                if det { "1" } else { "unset" }
            ),
        ));
    }
    let (Some(dev), 1) = (device, all[0]) else { return Ok((world, false)) };
    let share = |id: &mut [u8; 128]| world.broadcast(&mut id[..], 0);
    let nccl = crate::backend::nccl::NcclComm::world(dev, env.rank, env.world_size, &share, env.timeout, all[1] == 1)?;
    let side = DeviceSide { dev: Arc::new(nccl), timeout: env.timeout };
    Ok((world.with_device(Some(side)), true))
}

/// `DIST_SIM_DEVICE=1` (feature `sim-device`, tests only): the world's device side is the
/// simulated device, a host communicator of its own run in stream order.
fn with_sim_device(world: Comm<World>, env: &Env) -> Result<Comm<World>> {
    #[cfg(feature = "sim-device")]
    if env.sim_device {
        let all: Vec<usize> = (0..world.size()).collect();
        let cx = crate::op::Op::new(crate::op::OpKind::CommCreate).extra(crate::op::hash_usizes(&all));
        let host = world.create_child(&cx, "SimDevice", &all)?.expect("every rank is a member");
        let dev = crate::backend::sim::SimDevice::new(host)?;
        let side = DeviceSide { dev: Arc::new(dev), timeout: env.timeout };
        return Ok(world.with_device(Some(side)));
    }
    let _ = env;
    Ok(world)
}

/// Each rank joins a store once: a second process claiming the same rank means two jobs
/// share the address (torchrun-style jobs without a token on one port), and it stops
/// here, saying so, instead of merging the jobs.
fn claim_rank(store: &Store, env: &Env, addr: &str) -> Result<()> {
    let refused = |e: Error| {
        // A rank of another job: it must not report its failure into this job's store.
        REFUSED.store(true, std::sync::atomic::Ordering::SeqCst);
        Err(e)
    };
    // A job identity every rank shares (the launcher's DIST_JOB_ID, torchrun's run id, a
    // Slurm step, a PMIx namespace: `env::job_identity`): the first rank at the store
    // records it; a rank of another job stops at once, before it writes a key, whichever
    // job came first.
    if env.job_id != format!("p{}", std::process::id()) {
        let theirs = store.compare_set("claim/job", b"", env.job_id.as_bytes())?;
        if theirs != env.job_id.as_bytes() {
            return refused(Error::Env(format!(
                "the store at {addr} belongs to job {:?}, and this rank (rank {}) is of job {:?}: two jobs share \
                 MASTER_ADDR:MASTER_PORT. Give each job its own MASTER_PORT (or a secret DIST_JOB_TOKEN per job, \
                 which also keeps other users out)",
                String::from_utf8_lossy(&theirs),
                env.rank,
                env.job_id
            )));
        }
    }
    // Every rank of a job has one world size: the first to join records it, and a rank
    // started with another stops at once, naming both (its failure goes into the store,
    // where the ranks waiting for it read it), instead of failing later at a segment laid
    // out for another size while its peers wait out their deadline.
    let size = env.world_size.to_string();
    let theirs = store.compare_set("claim/size", b"", size.as_bytes())?;
    if theirs != size.as_bytes() {
        return Err(Error::Env(format!(
            "this rank (rank {}) was started with WORLD_SIZE={size}, and the job at {addr} has WORLD_SIZE={} (set by \
             the first rank to join): start every rank with the same WORLD_SIZE (or, if that is another job, give \
             each job its own MASTER_PORT)",
            env.rank,
            String::from_utf8_lossy(&theirs)
        )));
    }
    if store.add(&format!("claim/rank/{}", env.rank), 1)? == 1 {
        return Ok(());
    }
    let msg = format!(
        "another process already joined the job at {addr} as rank {}: two jobs share MASTER_ADDR:MASTER_PORT. \
         Give each job its own MASTER_PORT (or a secret DIST_JOB_TOKEN per job, which also keeps other users out)",
        env.rank
    );
    let conflict = format!(
        "two processes claimed rank {} at {addr} (the second, pid {}, was refused): two jobs share \
         MASTER_ADDR:MASTER_PORT, and this job may hold a rank of the other. Give each job its own MASTER_PORT (or a \
         DIST_JOB_ID or secret DIST_JOB_TOKEN per job)",
        env.rank,
        std::process::id()
    );
    let _ = store.compare_set(CONFLICT, b"", conflict.as_bytes());
    refused(Error::Env(msg))
}

/// The store key that says two jobs share the store's address (ranks started by hand
/// with no identity, on one `MASTER_PORT`): written by a rank refused its number
/// ([`claim_rank`]) or by a second rank 0 that found the port taken
/// ([`second_rank_zero`]). Ranks still joining stop on it ([`get_watching`]); rank 0's
/// process, which hosts the store, marks the job failed with it ([`watch_for_conflict`]),
/// so every rank of both jobs ends with an error instead of a merged job's wrong answer.
const CONFLICT: &str = "conflict";

/// Writes [`CONFLICT`] (best effort, within 2 s) into the store at `addr`.
fn tell_conflict(addr: &str, token: &str, msg: &str) {
    if let Ok(store) = Store::connect(addr, token, std::time::Duration::from_secs(2)) {
        let _ = store.compare_set(CONFLICT, b"", msg.as_bytes());
    }
}

/// Rank 0 could not host the store because its port is taken: where this job has no
/// identity and what holds the port is a dist store, that store is another job's rank
/// 0, and ranks of the two jobs may be mixing there: say so in it.
fn second_rank_zero(env: &Env, addr: &str) {
    if env.job_id == format!("p{}", std::process::id()) {
        let msg = format!(
            "two jobs share MASTER_ADDR:MASTER_PORT ({addr}): a second rank 0 (pid {}) found the store's port taken, \
             so ranks of the two jobs may have joined each other. Give each job its own MASTER_PORT (or a DIST_JOB_ID \
             or secret DIST_JOB_TOKEN per job)",
            std::process::id()
        );
        tell_conflict(addr, &env.token, &msg);
    }
}

/// In rank 0's process, which hosts the store: once [`CONFLICT`] is set, every op of
/// this process fails with it, and this rank is marked failed with it (as soon as its
/// world communicator exists to carry the mark), so every rank of the job, running or
/// still joining, stops naming it. Polls every 50 ms until the store is dropped.
fn watch_for_conflict(server: std::sync::Weak<StoreServer>) {
    let _ = std::thread::Builder::new().name("dist-conflict".into()).spawn(move || loop {
        std::thread::sleep(std::time::Duration::from_millis(50));
        let Some(server) = server.upgrade() else { return };
        if let Some(msg) = server.get_local(CONFLICT) {
            let msg = String::from_utf8_lossy(&msg);
            crate::verify::failure::poison(&msg);
            if crate::verify::failure::mark_failed(&msg) {
                return;
            }
        }
    });
}

/// Set when this process was refused as a rank of another job ([`claim_rank`]).
static REFUSED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// This host's identity: `DIST_HOST_ID`, else the hostname and the kernel's boot id
/// (distinct hosts differ in one or the other; containers with their own hostname
/// count as hosts of their own).
fn host_identity(env: &Env) -> String {
    if let Some(h) = &env.host_id {
        return h.clone();
    }
    let read = |p: &str| std::fs::read_to_string(p).map(|s| s.trim().to_string()).unwrap_or_default();
    format!("{} (boot {})", read("/proc/sys/kernel/hostname"), read("/proc/sys/kernel/random/boot_id"))
}

/// The store key under which rank `r` publishes its host as it joins (read by
/// [`one_host`], and by the launcher to count the ranks that joined).
pub(crate) fn host_key(r: usize) -> String {
    format!("host/{r}")
}

/// The shared-memory backend joins ranks of one host: every rank publishes its host at
/// the rendezvous and compares (rank 0 with everyone, the others with rank 0), so a job
/// spanning hosts stops here with one error naming them, instead of failing to open a
/// peer's segment on another machine.
fn one_host(store: &Store, env: &Env) -> Result<()> {
    let me = host_identity(env);
    // The store is this job's (torchrun-style ranks started by hand share no job id).
    let verdict = "host/verdict".to_string();
    store.set(&host_key(env.rank), me.as_bytes())?;
    // Rank 0 compares every rank's host with its own and publishes the verdict, so every
    // rank (those on rank 0's host too) stops with the same message.
    let msg = if env.rank == 0 {
        let mut hosts: Vec<(String, Vec<usize>)> = vec![(me.clone(), vec![0])];
        for r in 1..env.world_size {
            let h = String::from_utf8_lossy(&get_watching(store, &host_key(r), env)?).into_owned();
            match hosts.iter_mut().find(|(x, _)| *x == h) {
                Some((_, ranks)) => ranks.push(r),
                None => hosts.push((h, vec![r])),
            }
        }
        let msg = if hosts.len() == 1 {
            String::new()
        } else {
            let list: Vec<String> = hosts
                .iter()
                .map(|(h, rs)| format!("{} {} on {h}", if rs.len() == 1 { "rank" } else { "ranks" }, ranges(rs)))
                .collect();
            format!(
                "this job spans {} hosts ({}); the shared-memory backend joins the ranks of one host only. For host \
                 buffers across hosts build with `--features dist-runtime/mpi` and start the job with mpirun (or \
                 srun --mpi=pmix)",
                hosts.len(),
                list.join("; ")
            )
        };
        store.set(&verdict, msg.as_bytes())?;
        if !msg.is_empty() {
            // The store may live in this process (torchrun style), and goes with it: keep
            // it until every rank has read the verdict (bounded), so each names the hosts
            // rather than reporting a lost store.
            let grace = env.timeout.min(std::time::Duration::from_secs(10));
            for r in 1..env.world_size {
                let _ = store.get(&format!("host/seen/{r}"), grace);
            }
        }
        msg
    } else {
        let msg = String::from_utf8_lossy(&get_watching(store, &verdict, env)?).into_owned();
        if !msg.is_empty() {
            // (Rank 0 leaves, and its store with it, as soon as the server has this key:
            // the set's reply may be lost with it, and the verdict is what this rank says.
            // Propagating that loss gave "lost the store" instead of the hosts.)
            let _ = store.set(&format!("host/seen/{}", env.rank), b"1");
        }
        msg
    };
    if msg.is_empty() {
        Ok(())
    } else {
        Err(Error::backend("shm", msg))
    }
}

/// The store key a rank that could not join the job writes its error under.
fn failed_key(rank: &str) -> String {
    format!("fail/{rank}")
}

/// `store.get(key)` under the job's deadline, watching for ranks that could not join
/// ([`report_init_failure`]): one is an error naming it and its own error, at once,
/// instead of a timeout at the deadline.
fn get_watching(store: &Store, key: &str, env: &Env) -> Result<Vec<u8>> {
    let start = std::time::Instant::now();
    loop {
        let left = env.timeout.saturating_sub(start.elapsed());
        if let Some(v) = store.get_within(key, left.min(std::time::Duration::from_millis(100)))? {
            return Ok(v);
        }
        if store.check(&[CONFLICT])? {
            let why = String::from_utf8_lossy(&store.get(CONFLICT, left)?).into_owned();
            return Err(Error::Env(why));
        }
        if store.num_keys_with("fail/")? > 0 {
            for r in 0..env.world_size {
                let k = failed_key(&r.to_string());
                if store.check(&[&k])? {
                    let why = String::from_utf8_lossy(&store.get(&k, left)?).into_owned();
                    return Err(Error::backend("shm", format!("rank {r} could not join the job: {why}")));
                }
            }
        }
        if start.elapsed() >= env.timeout {
            if let Some(v) = store.get_within(key, std::time::Duration::ZERO)? {
                return Ok(v);
            }
            // Name the ranks that never arrived (their host key is what a joining rank
            // writes first), not just the key this rank waited for.
            let mut missing = Vec::new();
            for r in 0..env.world_size {
                if !store.check(&[&host_key(r)])? {
                    missing.push(r);
                }
            }
            let who = match missing.as_slice() {
                [] => format!("a rank (waiting for {key:?})"),
                [r] => format!("rank {r}"),
                rs => format!("ranks {}", rs.iter().map(|r| r.to_string()).collect::<Vec<_>>().join(", ")),
            };
            return Err(Error::store(
                format!(
                    "{who} of {} never joined the job at {}:{} within {:.0}s (DIST_TIMEOUT): not started, or \
                     started with another MASTER_ADDR, MASTER_PORT or WORLD_SIZE, or unable to reach this address",
                    env.world_size,
                    env.master_addr,
                    env.master_port.map_or("?".to_string(), |p| p.to_string()),
                    env.timeout.as_secs_f64()
                ),
                None,
            ));
        }
    }
}

/// Called by a rank that could not join the job, after it printed its error: where the
/// job's store is reachable (ranks started by hand, torchrun style: `MASTER_ADDR`,
/// `MASTER_PORT`, `WORLD_SIZE` > 1), it writes its error there within 2 s, so the ranks
/// waiting for it at the rendezvous stop at once naming it ([`get_watching`]) instead of
/// at their deadline. Best effort: a rank that cannot reach the store says nothing more.
pub(crate) fn report_init_failure(rank: &str, msg: &str) {
    if REFUSED.load(std::sync::atomic::Ordering::SeqCst) {
        return;
    }
    let get = |k: &str| std::env::var(k).ok().map(|v| v.trim().to_string()).filter(|v| !v.is_empty());
    let (Some(port), Some(size)) = (get("MASTER_PORT"), get("WORLD_SIZE")) else { return };
    if size.parse::<usize>().map_or(true, |n| n < 2) || rank.parse::<usize>().is_err() || port.parse::<u16>().is_err() {
        return;
    }
    let addr = format!("{}:{port}", get("MASTER_ADDR").unwrap_or_else(|| "127.0.0.1".into()));
    let token = get("DIST_JOB_TOKEN").unwrap_or_default();
    // Rank 0 hosts the store unless it is external: failing, it has none to tell (and a
    // store on its port is another job's).
    if rank == "0" && get("DIST_STORE_EXTERNAL").as_deref() != Some("1") {
        return;
    }
    let Ok(store) = Store::connect(&addr, &token, std::time::Duration::from_secs(2)) else { return };
    // With a job identity, only into this job's store (as `claim_rank` checks).
    let job = crate::env::job_identity(&|k| std::env::var(k).ok());
    if let Some(job) = job {
        if store.compare_set("claim/job", b"", job.as_bytes()).map_or(true, |theirs| theirs != job.as_bytes()) {
            return;
        }
    }
    let _ = store.set(&failed_key(rank), msg.as_bytes());
}

/// "0-3, 6" for sorted ranks.
fn ranges(rs: &[usize]) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < rs.len() {
        let mut j = i;
        while j + 1 < rs.len() && rs[j + 1] == rs[j] + 1 {
            j += 1;
        }
        out.push(if i == j { rs[i].to_string() } else { format!("{}-{}", rs[i], rs[j]) });
        i = j + 1;
    }
    out.join(", ")
}

/// Joins through MPI: the world is MPI's (no rendezvous store; mpirun or srun started
/// the ranks), host buffers move over MPI, on one host or across hosts.
#[cfg(feature = "mpi")]
fn join_mpi(env: Env) -> Result<Comm<World>> {
    // The shared-memory knobs do not apply, but a misspelt one is still an error.
    Config::from_env(&env)?;
    let expect = env.launcher.map(|_| (env.rank, env.world_size));
    if env.share_gpu && env.local_world_size < env.world_size {
        return Err(Error::Env(format!(
            "DIST_SHARE_GPU=1 lets the ranks of one host share its GPUs, but this job has {} ranks of which {} \
             are on this host: unset it for jobs across hosts",
            env.world_size, env.local_world_size
        )));
    }
    // NCCL's variables before MPI starts: its progress threads read the environment
    // without Rust's lock, and an MPI built with NCCL support may load NCCL itself.
    #[cfg(feature = "nccl")]
    crate::backend::nccl::env_defaults(env.share_gpu, env.deterministic);
    let mpi = crate::backend::mpi::MpiComm::world(expect, env.timeout)?;
    let (rank, size) = (mpi.rank(), mpi.size());
    let mut backend: Box<dyn Backend> = Box::new(mpi);
    if let Some(dir) = &env.trace {
        backend = Box::new(Traced::new(backend, Tracer::open(dir, rank)?, "World".into()));
    }
    let world = Comm::from_backend(
        Arc::from(backend),
        "World".into(),
        (0..size).collect(),
        env.debug != crate::env::DebugLevel::Off,
        None,
    );
    // Device buffers over NCCL (its own transports across hosts) when built with the
    // feature and every rank sees a GPU; host buffers stay on MPI.
    #[cfg(feature = "nccl")]
    let device = match crate::backend::nccl::probe() {
        Ok(count) => Some(env.placement()?.device(env.rank, env.local_rank, count)?),
        Err(_) => None,
    };
    #[cfg(not(feature = "nccl"))]
    let device = None;
    attach_device(world, device, &env)
}

/// Without the `mpi` feature: one clear error, naming how the job was started.
#[cfg(not(feature = "mpi"))]
fn join_mpi(env: Env) -> Result<Comm<World>> {
    let how = match (std::env::var("DIST_BACKEND").ok().filter(|v| !v.trim().is_empty()), env.launcher) {
        (Some(v), _) => format!("DIST_BACKEND={v} needs"),
        (None, Some(l)) => {
            format!("this process was started by {l} as rank {} of {}, which needs", env.rank, env.world_size)
        }
        (None, None) => "DIST_BACKEND=mpi needs".into(),
    };
    Err(Error::backend(
        "mpi",
        format!(
            "{how} the MPI backend, and this build of dist-runtime has no `mpi` feature: build with \
             `--features dist-runtime/mpi` (needs an MPI library and libclang, e.g. apt install libopenmpi-dev \
             libclang-dev), or start the job with `cargo spmd run` (shared memory, one host)"
        ),
    ))
}
