//! The environment contract (DESIGN.md), in one place: torchrun's, Slurm's and the MPI
//! launchers' variables (`OMPI_COMM_WORLD_{RANK,SIZE,LOCAL_RANK,LOCAL_SIZE}`,
//! `PMI_RANK`/`PMI_SIZE`, `SLURM_PROCID`/`SLURM_NTASKS`),
//! `DIST_*` for the job (`DIST_AGREEMENT`, `DIST_SHARE_GPU`, `DIST_NCCL_NATIVE` and `DIST_DETERMINISTIC` among them), and the shared-memory tuning knobs (`DIST_SPIN`, `DIST_ALGO`,
//! `DIST_CMA`, `DIST_CMA_MIN`, `DIST_CMA_P2P_MIN`, `DIST_SLOT_KIB`, `DIST_YIELD_US`, `DIST_PIN`), each parsed
//! here with an error naming the variable when its value is not understood.
//!
//! The launcher's own variables are read where they act, and listed here for the
//! record: `DIST_ENTRY` (the entry a rank runs), `DIST_LIST_ENTRIES`,
//! `DIST_RESOLVE_ENTRY` (queries a launcher asks a binary), `DIST_RESULTS` (publish each
//! rank's return value), `DIST_TEST_SEED` (the test macro's shared seed),
//! `DIST_NO_BUILD_WARNING` (silence the unoptimised-build warning), `DIST_EXIT_REPORT`
//! (each rank reports its exit code to the launcher's store: the mpirun path),
//! `DIST_MPIRUN` and `DIST_MPIRUN_ARGS` (the mpirun program and extra arguments the
//! launcher uses for the MPI backend), `DIST_LAUNCHER_ADDR` (the address ranks on other
//! hosts reach the launcher's store at).

use crate::error::{Error, Result};
use std::time::Duration;

/// Which backend moves the bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BackendChoice {
    /// Shared memory between processes on one machine (the default).
    Shm,
    /// NCCL on GPUs (needs the `nccl` feature).
    Nccl,
    /// MPI for host buffers, across hosts (needs the `mpi` feature); the default under
    /// mpirun/srun when no `MASTER_PORT` is set.
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

/// How ranks compare their ops under `DIST_DEBUG=check` (`DIST_AGREEMENT`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Agreement {
    /// Where the backend can (shm), the op records ride on its own barrier; elsewhere
    /// they are exchanged with one all-gather before each op. The default.
    Auto,
    /// Always the exchange above the backend, as a backend without shared memory does
    /// (to test that path, or compare its cost).
    Exchange,
}

/// What `init` read from the environment.
#[derive(Clone)]
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
    /// `DIST_JOB_ID` (dist's launchers set it), else what started the job names it
    /// (torchrun's run id, a Slurm step, a PMIx namespace, Open MPI's job id), else this
    /// process's own (`p<pid>`: no identity shared with the other ranks).
    pub job_id: String,
    /// `DIST_JOB_TOKEN`: the rendezvous secret (empty: no secret).
    pub token: String,
    /// `DIST_TIMEOUT` in seconds; default 300.
    pub timeout: Duration,
    /// `DIST_DEBUG`; default `check` in every build (`off` opts out).
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
    /// `DIST_SHARE_GPU=1` (NCCL backend): ranks may share a GPU, for testing multi-rank
    /// device code on fewer GPUs than ranks. Each rank tells NCCL it is a host of its own
    /// and NCCL moves the bytes over its socket transport on loopback: correct, slow.
    pub share_gpu: bool,
    /// `DIST_NCCL_NATIVE` (NCCL backend; default 1): gather, scatter and all-to-all of one
    /// block size use NCCL's own calls where every rank's NCCL has them (2.28+); `0`
    /// keeps them grouped sends and receives, as with older NCCL.
    pub nccl_native: bool,
    /// `DIST_DETERMINISTIC=1` (NCCL backend): device reductions the same bits in every run
    /// of a job of the same shape on the same machines: NCCL's ring algorithm and simple
    /// protocol, NVLink SHARP and CollNet off (`backend::nccl::env_defaults`). Host
    /// reductions are in rank order always.
    pub deterministic: bool,
    /// `DIST_AGREEMENT`: `auto` (default) or `exchange`.
    pub agreement: Agreement,
    /// The shared-memory backend's tuning knobs.
    pub tuning: Tuning,
    /// `DIST_HOST_ID`: this rank's host identity for the one-host check of the
    /// shared-memory backend (default: hostname and boot id).
    pub host_id: Option<String>,
    /// The MPI launcher that started this process ("mpirun", "srun", "mpiexec"), when
    /// the rank came from its variables (`OMPI_COMM_WORLD_RANK`, `PMI_RANK`,
    /// `SLURM_PROCID`, …) rather than torchrun's `RANK`.
    pub launcher: Option<&'static str>,
    /// `DIST_SIM_DEVICE=1` (only with the `sim-device` feature, for tests): the world's
    /// device side is the simulated device, so device-buffer ops run on CPU.
    pub sim_device: bool,
}

/// The longest `DIST_TIMEOUT` (deadlines are instants this far ahead, which must exist).
pub(crate) const MAX_TIMEOUT_SECS: f64 = 1e7;

/// Every field but the token, which is a secret: only whether one is set.
impl std::fmt::Debug for Env {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Env")
            .field("rank", &self.rank)
            .field("world_size", &self.world_size)
            .field("local_rank", &self.local_rank)
            .field("local_world_size", &self.local_world_size)
            .field("master_addr", &self.master_addr)
            .field("master_port", &self.master_port)
            .field("backend", &self.backend)
            .field("job_id", &self.job_id)
            .field("token", &if self.token.is_empty() { "(none)" } else { "(set, not shown)" })
            .field("timeout", &self.timeout)
            .field("debug", &self.debug)
            .field("store_external", &self.store_external)
            .field("trace", &self.trace)
            .field("gpus", &self.gpus)
            .field("rank_table", &self.rank_table)
            .field("share_gpu", &self.share_gpu)
            .field("nccl_native", &self.nccl_native)
            .field("deterministic", &self.deterministic)
            .field("agreement", &self.agreement)
            .field("tuning", &self.tuning)
            .field("host_id", &self.host_id)
            .field("launcher", &self.launcher)
            .field("sim_device", &self.sim_device)
            .finish()
    }
}

/// Tuning knobs of the shared-memory backend (docs/performance.md measures each).
/// `None`: the backend's default.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Tuning {
    /// `DIST_SPIN`: spin iterations before a waiter yields (default 1000 while ranks
    /// fit the cores, else 0).
    pub spin: Option<u32>,
    /// `DIST_ALGO`: a comma list of flat, pipeline, ring, cma, copy (or auto).
    pub algo: Option<String>,
    /// `DIST_CMA`: 1 forces single-copy reads, 0 turns them off.
    pub cma: Option<String>,
    /// `DIST_CMA_MIN`: smallest block read single-copy, in bytes.
    pub cma_min: Option<String>,
    /// `DIST_CMA_P2P_MIN`: smallest blocking send whose receiver reads it single-copy,
    /// in bytes.
    pub cma_p2p_min: Option<String>,
    /// `DIST_SLOT_KIB`: staging slot size in KiB (16 to 65536; default 256).
    pub slot_kib: Option<usize>,
    /// `DIST_YIELD_US`: how long a waiter yields before it sleeps (default 500 µs).
    pub yield_us: Option<u64>,
    /// `DIST_PIN`: `1` binds local rank r to one allowed CPU (round robin), `0` never;
    /// unset, ranks are bound only where they outnumber the cores (`init.rs`).
    pub pin: Option<bool>,
    /// `DIST_STASH_MIB`: how many MiB of messages that no receive has claimed yet a rank
    /// keeps per communicator before its senders wait (default 256).
    pub stash_mib: Option<usize>,
    /// `DIST_ISEND_MIB`: how many MiB of `isend` data a rank copies and keeps per peer
    /// while the peer's ring is full, before a further `isend` waits for the peer to
    /// read (default 256).
    pub isend_mib: Option<usize>,
}

impl Env {
    /// Where this rank's GPU comes from: the rank table, `DIST_GPUS`, or `LOCAL_RANK`.
    pub fn placement(&self) -> Result<crate::placement::Placement> {
        use crate::placement::{parse_gpus, Placement, RankTable};
        match (&self.rank_table, &self.gpus) {
            (Some(_), Some(_)) => Err(Error::Env("DIST_RANK_TABLE and DIST_GPUS are both set: use one".into())),
            (Some(path), None) => Ok(Placement::Table(RankTable::load(path, self.world_size)?)),
            (None, Some(g)) => Ok(Placement::Gpus(parse_gpus(g, self.share_gpu)?)),
            (None, None) if self.share_gpu => Ok(Placement::Shared),
            (None, None) => Ok(Placement::LocalRank),
        }
    }
}

fn var(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

/// `DIST_ISEND_MIB` in bytes (default 256 MiB): the copies of `isend` data a rank keeps
/// per peer before a further `isend` waits. Read once (validated with the rest of the
/// environment at init; shm takes it from `Tuning::isend_mib`).
#[cfg(feature = "mpi")]
pub(crate) fn isend_limit() -> u64 {
    static LIMIT: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    *LIMIT.get_or_init(|| {
        let mib = std::env::var("DIST_ISEND_MIB").ok().and_then(|v| v.trim().parse::<u64>().ok());
        mib.filter(|m| (1..=1 << 20).contains(m)).unwrap_or(256) << 20
    })
}

fn parse<T: std::str::FromStr>(name: &str, v: &str, what: &str) -> Result<T> {
    v.trim().parse().map_err(|_| Error::Env(format!("{name}={v:?} is not {what}")))
}

/// The job's identity from what started it: dist's launchers set `DIST_JOB_ID`; else
/// torchrun's run id (not its default `none`), a Slurm step (`SLURM_JOB_ID` and
/// `SLURM_STEP_ID`), a PMIx namespace (`PMIX_NAMESPACE`: Open MPI 5, `srun --mpi=pmix`)
/// or Open MPI 4's job id. `None` where nothing names the job (ranks started by hand).
pub(crate) fn job_identity(get: &impl Fn(&str) -> Option<String>) -> Option<String> {
    let get = |k: &str| get(k).map(|v| v.trim().to_string()).filter(|v| !v.is_empty());
    get("DIST_JOB_ID")
        .or_else(|| get("TORCHELASTIC_RUN_ID").filter(|v| v != "none"))
        .or_else(|| Some(format!("slurm-{}.{}", get("SLURM_JOB_ID")?, get("SLURM_STEP_ID")?)))
        .or_else(|| get("PMIX_NAMESPACE").map(|n| format!("pmix-{n}")))
        .or_else(|| get("OMPI_MCA_ess_base_jobid").map(|j| format!("ompi-{j}")))
}

/// How many nodes this Slurm step spans (`SLURM_STEP_NUM_NODES`, else the job's).
fn slurm_step_nodes(get: &impl Fn(&str) -> Option<String>) -> Option<usize> {
    ["SLURM_STEP_NUM_NODES", "SLURM_JOB_NUM_NODES", "SLURM_NNODES"]
        .iter()
        .find_map(|k| get(k))
        .and_then(|v| v.trim().parse().ok())
}

/// The rendezvous port of a one-node Slurm step: the first of the ports Slurm reserved
/// for the step (`SLURM_STEP_RESV_PORTS`, with `MpiParams=ports=` or `--resv-ports`),
/// else 10000–29999 (below Linux's ephemeral range) from the job and step ids, so the
/// steps of one allocation get their own.
fn slurm_step_port(get: &impl Fn(&str) -> Option<String>) -> u16 {
    if let Some(p) = get("SLURM_STEP_RESV_PORTS")
        .and_then(|v| v.split(['-', ',']).next().and_then(|p| p.trim().parse::<u16>().ok()))
        .filter(|&p| p > 0)
    {
        return p;
    }
    let id = format!("{}.{}", get("SLURM_JOB_ID").unwrap_or_default(), get("SLURM_STEP_ID").unwrap_or_default());
    // FNV-1a: the same on every rank of the step.
    let h = id.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ b as u64).wrapping_mul(0x0100_0000_01b3));
    10_000 + (h % 20_000) as u16
}

/// Which MPI-style launcher started this process, and its rank and size variables.
fn mpi_launcher(get: &impl Fn(&str) -> Option<String>) -> Option<(&'static str, &'static str, &'static str)> {
    [
        ("mpirun", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"),
        ("mpiexec", "PMI_RANK", "PMI_SIZE"),
        ("srun", "SLURM_PROCID", "SLURM_NTASKS"),
    ]
    .into_iter()
    .find(|(_, r, w)| get(r).is_some() && get(w).is_some())
}

impl Env {
    /// Reads the process environment.
    pub fn from_env() -> Result<Env> {
        Env::from_lookup(var)
    }

    /// Reads the contract through `get` (testable without touching the process env).
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Result<Env> {
        let (rank, world_size, launcher) = ranks(&get)?;
        let (local_rank, local_world_size) = local_ranks(&get, rank, world_size)?;
        let (backend, master_port) = backend_and_port(&get, launcher, world_size)?;
        check_mpi_variables(&get)?;
        Ok(Env {
            rank,
            world_size,
            local_rank,
            local_world_size,
            master_addr: get("MASTER_ADDR").unwrap_or_else(|| "127.0.0.1".into()),
            master_port,
            backend,
            job_id: job_identity(&get).unwrap_or_else(|| format!("p{}", std::process::id())),
            token: get("DIST_JOB_TOKEN").unwrap_or_default(),
            timeout: timeout(&get)?,
            debug: debug_level(&get)?,
            store_external: get("DIST_STORE_EXTERNAL").as_deref() == Some("1"),
            sim_device: get("DIST_SIM_DEVICE").as_deref() == Some("1"),
            host_id: get("DIST_HOST_ID").filter(|h| !h.is_empty()),
            launcher,
            trace: get("DIST_TRACE").filter(|d| !d.is_empty()).map(std::path::PathBuf::from),
            gpus: get("DIST_GPUS").filter(|d| !d.is_empty()),
            rank_table: get("DIST_RANK_TABLE").filter(|d| !d.is_empty()).map(std::path::PathBuf::from),
            share_gpu: flag(&get, "DIST_SHARE_GPU")?.unwrap_or(false),
            nccl_native: flag(&get, "DIST_NCCL_NATIVE")?.unwrap_or(true),
            deterministic: deterministic(&get)?,
            agreement: match get("DIST_AGREEMENT").as_deref().map(str::to_ascii_lowercase).as_deref() {
                None | Some("auto") => Agreement::Auto,
                Some("exchange") => Agreement::Exchange,
                Some(v) => return Err(Error::Env(format!("DIST_AGREEMENT={v:?} is not one of auto, exchange"))),
            },
            tuning: tuning(&get)?,
        })
    }
}

/// This rank's number, the world's size (each checked) and the MPI launcher that
/// started it, if any: from `RANK`/`WORLD_SIZE`, else the launcher's variables, else a
/// world of one.
fn ranks(get: &impl Fn(&str) -> Option<String>) -> Result<(usize, usize, Option<&'static str>)> {
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
        // Started by an MPI launcher (mpirun, mpiexec, srun): its variables.
        (None, None) => match mpi_launcher(&get) {
            Some((_, rv, wv)) => {
                let (r, w) = (get(rv).unwrap_or_default(), get(wv).unwrap_or_default());
                (parse(rv, &r, "a rank number")?, parse(wv, &w, "a positive count")?)
            }
            None => (0, 1),
        },
    };
    let launcher = if get("RANK").is_none() { mpi_launcher(&get).map(|l| l.0) } else { None };
    if world_size == 0 {
        return Err(Error::Env("WORLD_SIZE=0: a world needs at least one rank".into()));
    }
    if world_size > MAX_WORLD {
        return Err(Error::Env(format!("WORLD_SIZE={world_size} is larger than this backend supports ({MAX_WORLD})")));
    }
    if rank >= world_size {
        return Err(Error::Env(format!(
            "RANK={rank} is out of range for WORLD_SIZE={world_size} (ranks are 0..{world_size})"
        )));
    }
    Ok((rank, world_size, launcher))
}

/// This rank's number on its host and the number of ranks there (`LOCAL_RANK`, or an
/// MPI launcher's variables; the world's when none is set).
fn local_ranks(get: &impl Fn(&str) -> Option<String>, rank: usize, world_size: usize) -> Result<(usize, usize)> {
    let local_rank = match ["LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID"]
        .into_iter()
        .find_map(|k| get(k).map(|v| (k, v)))
    {
        Some((k, v)) => parse(k, &v, "a rank number")?,
        None => rank,
    };
    let local_world_size = match ["LOCAL_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS"]
        .into_iter()
        .find_map(|k| get(k).map(|v| (k, v)))
    {
        Some((k, v)) => parse(k, &v, "a positive count")?,
        None => world_size,
    };
    Ok((local_rank, local_world_size))
}

/// The backend (`DIST_BACKEND`, or what the launcher implies) and the rendezvous port.
fn backend_and_port(
    get: &impl Fn(&str) -> Option<String>,
    launcher: Option<&'static str>,
    world_size: usize,
) -> Result<(BackendChoice, Option<u16>)> {
    // A Slurm step on one node, in a build without the MPI backend: the ranks meet on
    // this host at a port derived from the job and step (two steps side by side in
    // one allocation get two ports), on shared memory. Across nodes, MPI as below.
    let slurm_here = launcher == Some("srun")
        && !cfg!(feature = "mpi")
        && get("MASTER_PORT").is_none()
        && get("DIST_BACKEND").is_none()
        && world_size > 1
        && slurm_step_nodes(&get) == Some(1)
        // A job step of srun's (a batch script's own process is not one: its ranks
        // would wait for peers nobody starts).
        && get("SLURM_STEP_ID").and_then(|v| v.trim().parse::<u32>().ok()).is_some_and(|id| id < 0xFFFF_FFF0);
    let backend = match get("DIST_BACKEND") {
        None if slurm_here => BackendChoice::Shm,
        // Under mpirun/srun without a rendezvous address, MPI is the engine.
        None if launcher.is_some() && get("MASTER_PORT").is_none() && world_size > 1 => BackendChoice::Mpi,
        None => BackendChoice::Shm,
        Some(v) => BackendChoice::parse(&v).map_err(|e| Error::Env(format!("DIST_BACKEND={e}")))?,
    };
    let master_port = match get("MASTER_PORT") {
        Some(v) => Some(parse::<u16>("MASTER_PORT", &v, "a TCP port (0-65535)")?),
        None if slurm_here => Some(slurm_step_port(&get)),
        None if backend == BackendChoice::Mpi => None,
        None if world_size > 1 => {
            return Err(Error::Env(format!(
                "WORLD_SIZE={world_size} but MASTER_PORT is not set: start ranks with `cargo spmd run -n {world_size}` \
                 or dist_runtime::launch, or set MASTER_ADDR and MASTER_PORT as torchrun does"
            )))
        }
        None => None,
    };
    Ok((backend, master_port))
}

/// `DIST_TIMEOUT`: the deadline of every wait (300 s when unset).
fn timeout(get: &impl Fn(&str) -> Option<String>) -> Result<Duration> {
    Ok(match get("DIST_TIMEOUT") {
        Some(v) => {
            let s: f64 = parse("DIST_TIMEOUT", &v, "a number of seconds")?;
            if !(s > 0.0 && s <= MAX_TIMEOUT_SECS) {
                return Err(Error::Env(format!(
                    "DIST_TIMEOUT={v:?} must be a positive number of seconds, at most {MAX_TIMEOUT_SECS:.0} (115 days)"
                )));
            }
            Duration::from_secs_f64(s)
        }
        None => Duration::from_secs(300),
    })
}

/// `DIST_DEBUG`: the run-time checks' level (`check` when unset).
fn debug_level(get: &impl Fn(&str) -> Option<String>) -> Result<DebugLevel> {
    Ok(match get("DIST_DEBUG").as_deref().map(str::to_ascii_lowercase).as_deref() {
        // On in every build: a check this cheap (docs/performance.md) must never be
        // the reason for a silent wrong answer.
        None => DebugLevel::Check,
        Some("off") | Some("0") => DebugLevel::Off,
        Some("check") | Some("1") => DebugLevel::Check,
        Some("detail") | Some("2") => DebugLevel::Detail,
        Some(other) => return Err(Error::Env(format!("DIST_DEBUG={other:?} is not one of off, check, detail"))),
    })
}

/// The MPI backend reads its two variables where it uses them; they are checked here,
/// so a wrong one stops every backend's init instead of being ignored.
fn check_mpi_variables(get: &impl Fn(&str) -> Option<String>) -> Result<()> {
    match get("DIST_MPI_COLL").as_deref().map(str::trim) {
        None | Some("" | "auto" | "mpi" | "own") => {}
        Some(v) => return Err(Error::Env(format!("DIST_MPI_COLL={v:?} is not one of auto, mpi, own"))),
    }
    if let Some(v) = get("DIST_MPI_MAX_COUNT") {
        let what = "a count of bytes per MPI call (1 to 2147483647)";
        let n = parse::<u64>("DIST_MPI_MAX_COUNT", &v, what)?;
        if !(1..=i32::MAX as u64).contains(&n) {
            return Err(Error::Env(format!("DIST_MPI_MAX_COUNT={n} is not {what}")));
        }
    }
    Ok(())
}

/// A 0/1 variable, if set.
fn flag(get: &impl Fn(&str) -> Option<String>, name: &str) -> Result<Option<bool>> {
    match get(name).as_deref() {
        None => Ok(None),
        Some("0") => Ok(Some(false)),
        Some("1") => Ok(Some(true)),
        Some(v) => Err(Error::Env(format!("{name}={v:?} is not 0 or 1"))),
    }
}

/// `DIST_DETERMINISTIC`: refused beside a setting of NCCL's own that reduces in no fixed
/// order (NVLink SHARP or CollNet: the switch or the network folds the values). An
/// empty variable is unset, as NCCL reads it.
fn deterministic(get: &impl Fn(&str) -> Option<String>) -> Result<bool> {
    if !flag(get, "DIST_DETERMINISTIC")?.unwrap_or(false) {
        return Ok(false);
    }
    let set = |k: &str| get(k).filter(|v| !v.trim().is_empty());
    // `NCCL_ALGO`: `;`-separated lists, each `function:` or not; a list starting with `^`
    // excludes (what it leaves is ring and tree, with NVLS and CollNet turned off below).
    let unordered = |t: &str| t.starts_with("nvls") || t.starts_with("collnet");
    let names = |algo: &str| {
        algo.split(';')
            .map(|seg| seg.rsplit(':').next().unwrap_or("").trim().to_ascii_lowercase())
            .filter(|list| !list.starts_with('^'))
            .flat_map(|list| list.split(',').map(|t| t.trim().to_string()).collect::<Vec<_>>())
            .find(|t| unordered(t))
    };
    let clash = match set("NCCL_ALGO").as_deref().and_then(|a| names(a).map(|t| (a.to_string(), t))) {
        Some((a, t)) => Some(format!("NCCL_ALGO={a} (which allows {t})")),
        None => ["NCCL_NVLS_ENABLE", "NCCL_COLLNET_ENABLE"]
            .into_iter()
            .find_map(|k| set(k).filter(|v| v.trim() != "0").map(|v| format!("{k}={v}"))),
    };
    match clash {
        Some(c) => Err(Error::Env(format!(
            "DIST_DETERMINISTIC=1 with {c}: NVLink SHARP and CollNet reduce in the switch or the network, in no \
             fixed order, so sums would not be the same bits in every run; unset it, or drop DIST_DETERMINISTIC"
        ))),
        None => Ok(true),
    }
}

/// The shm backend's tuning variables (`DIST_SPIN`, `DIST_SLOT_KIB`, `DIST_PIN`, …).
fn tuning(get: &impl Fn(&str) -> Option<String>) -> Result<Tuning> {
    // A size in MiB (1 to 1 TiB) from variable `name`, if set.
    let mib = |name: &str| -> Result<Option<usize>> {
        get(name)
            .map(|v| {
                let m = parse::<usize>(name, &v, "a size in MiB (1 to 1048576)")?;
                if (1..=1 << 20).contains(&m) {
                    Ok(m)
                } else {
                    Err(Error::Env(format!("{name}={m} is not a size in MiB (1 to 1048576)")))
                }
            })
            .transpose()
    };
    Ok(Tuning {
        spin: get("DIST_SPIN").map(|v| parse("DIST_SPIN", &v, "a number of spin iterations")).transpose()?,
        algo: get("DIST_ALGO"),
        cma: get("DIST_CMA"),
        cma_min: get("DIST_CMA_MIN"),
        cma_p2p_min: get("DIST_CMA_P2P_MIN"),
        slot_kib: get("DIST_SLOT_KIB")
            .map(|v| {
                let what = "a slot size in KiB (16 to 65536)";
                let k = parse::<usize>("DIST_SLOT_KIB", &v, what)?;
                if (16..=65536).contains(&k) {
                    Ok(k)
                } else {
                    Err(Error::Env(format!("DIST_SLOT_KIB={k} is not {what}")))
                }
            })
            .transpose()?,
        yield_us: get("DIST_YIELD_US").map(|v| parse("DIST_YIELD_US", &v, "a number of microseconds")).transpose()?,
        stash_mib: mib("DIST_STASH_MIB")?,
        isend_mib: mib("DIST_ISEND_MIB")?,
        pin: match get("DIST_PIN").as_deref() {
            None | Some("") => None,
            Some(_) => flag(get, "DIST_PIN")?,
        },
    })
}

/// The largest world the shm backend accepts.
pub const MAX_WORLD: usize = 1024;

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn env(pairs: &[(&str, &str)]) -> Result<Env> {
        let m: HashMap<String, String> = pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        Env::from_lookup(|k| m.get(k).cloned())
    }

    #[test]
    fn empty_env_is_world_of_one() {
        let e = env(&[]).unwrap();
        assert_eq!((e.rank, e.world_size, e.backend), (0, 1, BackendChoice::Shm));
        assert!(e.nccl_native && !env(&[("DIST_NCCL_NATIVE", "0")]).unwrap().nccl_native);
    }

    /// Checks are on in every build, release included; only `DIST_DEBUG=off` turns them off.
    #[test]
    fn checks_are_on_unless_turned_off() {
        assert_eq!(env(&[]).unwrap().debug, DebugLevel::Check);
        assert_eq!(env(&[("DIST_DEBUG", "off")]).unwrap().debug, DebugLevel::Off);
    }

    #[test]
    fn torchrun_vars() {
        let e = env(&[("RANK", "2"), ("WORLD_SIZE", "4"), ("MASTER_PORT", "29500"), ("LOCAL_RANK", "0")]).unwrap();
        assert_eq!((e.rank, e.world_size, e.local_rank, e.master_port), (2, 4, 0, Some(29500)));
    }

    #[test]
    fn the_job_identity_comes_from_what_started_the_job() {
        let id = |p: &[(&str, &str)]| env(p).unwrap().job_id;
        assert_eq!(id(&[("DIST_JOB_ID", "j1"), ("SLURM_JOB_ID", "7"), ("SLURM_STEP_ID", "0")]), "j1");
        assert_eq!(id(&[("TORCHELASTIC_RUN_ID", "run-9"), ("PMIX_NAMESPACE", "ns")]), "run-9");
        assert_eq!(id(&[("TORCHELASTIC_RUN_ID", "none"), ("SLURM_JOB_ID", "7"), ("SLURM_STEP_ID", "2")]), "slurm-7.2");
        // A Slurm job without a step (a batch script starting ranks by hand) names no job.
        assert!(id(&[("SLURM_JOB_ID", "7")]).starts_with('p'));
        assert_eq!(id(&[("PMIX_NAMESPACE", "prterun-x-1@1")]), "pmix-prterun-x-1@1");
        assert_eq!(id(&[("OMPI_MCA_ess_base_jobid", "59113473")]), "ompi-59113473");
        assert_eq!(id(&[]), format!("p{}", std::process::id()));
    }

    #[test]
    fn the_token_is_never_printed() {
        let e = env(&[("DIST_JOB_TOKEN", "s3cr3t-t0ken")]).unwrap();
        let shown = format!("{e:?}");
        assert!(!shown.contains("s3cr3t"), "{shown}");
        assert!(shown.contains("token: \"(set, not shown)\""), "{shown}");
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
        assert!(msg(&[("DIST_TIMEOUT", "1e30")]).contains("at most"), "{}", msg(&[("DIST_TIMEOUT", "1e30")]));
        assert!(msg(&[("DIST_TIMEOUT", "inf")]).contains("DIST_TIMEOUT"));
        assert!(msg(&[("DIST_DEBUG", "loud")]).contains("DIST_DEBUG"));
        assert!(msg(&[("DIST_SLOT_KIB", "big")]).contains("DIST_SLOT_KIB=\"big\""));
        for k in ["0", "8", "65537", "1000000"] {
            let m = msg(&[("DIST_SLOT_KIB", k)]);
            assert!(m.contains(&format!("DIST_SLOT_KIB={k} is not a slot size in KiB (16 to 65536)")), "{m}");
        }
        assert!(env(&[("DIST_SLOT_KIB", "16")]).is_ok() && env(&[("DIST_SLOT_KIB", "65536")]).is_ok());
        assert!(msg(&[("DIST_MPI_COLL", "fast")]).contains("DIST_MPI_COLL=\"fast\" is not one of auto, mpi, own"));
        assert!(env(&[("DIST_MPI_COLL", "own")]).is_ok() && env(&[("DIST_MPI_COLL", "mpi")]).is_ok());
        for v in ["0", "-1", "lots", "4294967296"] {
            let m = msg(&[("DIST_MPI_MAX_COUNT", v)]);
            assert!(m.contains("DIST_MPI_MAX_COUNT") && m.contains("1 to 2147483647"), "{m}");
        }
        assert!(env(&[("DIST_MPI_MAX_COUNT", "1000")]).is_ok());
        assert!(msg(&[("DIST_YIELD_US", "-3")]).contains("DIST_YIELD_US"));
        assert!(msg(&[("DIST_SPIN", "lots")]).contains("DIST_SPIN"));
        assert!(msg(&[("DIST_PIN", "yes")]).contains("DIST_PIN"));
        assert!(msg(&[("DIST_SHARE_GPU", "yes")]).contains("DIST_SHARE_GPU=\"yes\" is not 0 or 1"));
        assert!(msg(&[("DIST_NCCL_NATIVE", "on")]).contains("DIST_NCCL_NATIVE=\"on\" is not 0 or 1"));
        assert!(msg(&[("DIST_DETERMINISTIC", "1"), ("NCCL_NVLS_ENABLE", "1")]).contains("NCCL_NVLS_ENABLE=1"));
        assert!(msg(&[("DIST_DETERMINISTIC", "1"), ("NCCL_ALGO", "NVLS,Ring")]).contains("allows nvls"));
        assert!(
            msg(&[("DIST_DETERMINISTIC", "1"), ("NCCL_ALGO", "ring;allreduce:nvlstree")]).contains("allows nvlstree")
        );
        assert!(msg(&[("DIST_DETERMINISTIC", "1"), ("NCCL_ALGO", "allreduce:nvls;broadcast:^ring")]).contains("nvls"));
        assert!(msg(&[("DIST_DETERMINISTIC", "1"), ("NCCL_COLLNET_ENABLE", "2")]).contains("NCCL_COLLNET_ENABLE=2"));
        assert!(
            env(&[("DIST_DETERMINISTIC", "1"), ("NCCL_NVLS_ENABLE", ""), ("NCCL_ALGO", "")]).unwrap().deterministic
        );
        assert!(
            env(&[("DIST_DETERMINISTIC", "1"), ("NCCL_ALGO", "allreduce:^nvls,collnetdirect")]).unwrap().deterministic
        );
        assert!(env(&[("DIST_DETERMINISTIC", "1"), ("NCCL_ALGO", "^nvls")]).unwrap().deterministic);
        assert!(!env(&[("NCCL_NVLS_ENABLE", "1")]).unwrap().deterministic);
        assert!(msg(&[("DIST_AGREEMENT", "gossip")]).contains("DIST_AGREEMENT"));
        assert!(msg(&[("DIST_STASH_MIB", "0")]).contains("DIST_STASH_MIB=0 is not a size in MiB"));
        assert!(msg(&[("DIST_STASH_MIB", "lots")]).contains("DIST_STASH_MIB"));
        assert!(msg(&[("DIST_ISEND_MIB", "0")]).contains("DIST_ISEND_MIB=0 is not a size in MiB"));
    }

    /// Plain `srun` on one node, in a build without the MPI backend: shared memory, at a
    /// port from the job and step (another step, another port); across nodes, or with
    /// the MPI backend built in, MPI as before.
    #[test]
    fn one_slurm_node_meets_on_shared_memory() {
        let step = |id: &'static str, nodes: &'static str| {
            env(&[
                ("SLURM_PROCID", "1"),
                ("SLURM_NTASKS", "4"),
                ("SLURM_JOB_ID", "77"),
                ("SLURM_STEP_ID", id),
                ("SLURM_STEP_NUM_NODES", nodes),
            ])
            .unwrap()
        };
        let (a, b) = (step("0", "1"), step("1", "1"));
        if cfg!(feature = "mpi") {
            assert_eq!(a.backend, BackendChoice::Mpi);
        } else {
            assert_eq!(a.backend, BackendChoice::Shm);
            assert_eq!(a.master_addr, "127.0.0.1");
            let (pa, pb) = (a.master_port.unwrap(), b.master_port.unwrap());
            assert!((10_000..30_000).contains(&pa) && (10_000..30_000).contains(&pb));
            assert_ne!(pa, pb, "two steps of one allocation share a port");
            assert_ne!(a.job_id, b.job_id);
        }
        assert_eq!(step("0", "2").backend, BackendChoice::Mpi);
        // A batch script's own process (its step id is Slurm's batch step): not a step
        // of srun's, whose peers would never come.
        assert_eq!(step("4294967294", "1").backend, BackendChoice::Mpi);
        if !cfg!(feature = "mpi") {
            let resv = env(&[
                ("SLURM_PROCID", "0"),
                ("SLURM_NTASKS", "2"),
                ("SLURM_JOB_ID", "77"),
                ("SLURM_STEP_ID", "3"),
                ("SLURM_STEP_NUM_NODES", "1"),
                ("SLURM_STEP_RESV_PORTS", "12000-12003"),
            ])
            .unwrap();
            assert_eq!(resv.master_port, Some(12000));
        }
    }

    #[test]
    fn slurm_vars() {
        let e = env(&[("SLURM_PROCID", "1"), ("SLURM_NTASKS", "2"), ("MASTER_PORT", "5")]).unwrap();
        assert_eq!((e.rank, e.world_size), (1, 2));
    }
}
