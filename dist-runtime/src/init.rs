//! Joining the job: read the environment, meet at the store, build the world.

use crate::backend::shm::ShmComm;
use crate::backend::trace::{Traced, Tracer};
use crate::backend::Backend;
use crate::comm::Comm;
use crate::config::{BackendChoice, Config, Env};
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

/// As [`init`], from an explicit [`Env`].
pub fn init_with(env: Env) -> Result<Comm<World>> {
    match env.backend {
        BackendChoice::Shm | BackendChoice::Auto => {}
        BackendChoice::Nccl => {
            return Err(Error::backend(
                "nccl",
                "DIST_BACKEND=nccl, but this build of dist-runtime has no `nccl` feature: \
                 build with `--features dist-runtime/nccl`, or use DIST_BACKEND=shm",
            ))
        }
        BackendChoice::Mpi => {
            return Err(Error::backend("mpi", "DIST_BACKEND=mpi is not available in this build; use DIST_BACKEND=shm"))
        }
    }
    let cfg = Arc::new(Config::from_env(&env)?);
    let (store, keep): (Option<Arc<Store>>, Option<Box<dyn std::any::Any + Send + Sync>>) = if env.world_size > 1 {
        let port = env.master_port.expect("validated by Env");
        let addr = format!("{}:{}", env.master_addr, port);
        let server = if env.rank == 0 && !env.store_external {
            Some(StoreServer::bind(addr.as_str(), &env.token)?)
        } else {
            None
        };
        let store = Store::connect(&addr, &env.token, env.timeout)?;
        (Some(Arc::new(store)), server.map(|s| Box::new(s) as Box<dyn std::any::Any + Send + Sync>))
    } else {
        (None, None)
    };
    let mut backend: Box<dyn Backend> = Box::new(ShmComm::connect("w", "World", env.rank, env.world_size, cfg, store)?);
    if let Some(dir) = &env.trace {
        backend = Box::new(Traced::new(backend, Tracer::open(dir, env.rank)?, "World".into()));
    }
    Ok(Comm::from_backend(Arc::from(backend), "World".into(), (0..env.world_size).collect(), keep))
}
