//! Whether NCCL can run here: driver, library, version and devices, probed without
//! anything that could panic in the dynamic loader.

use super::fail;
use crate::error::{Error, Result};
use cudarc::driver::CudaContext;
use cudarc::nccl::result;

/// Oldest NCCL dist runs on (`NCCL_VERSION_CODE` of 2.18.0).
const MIN_NCCL: i32 = 21800;

/// Checks, without panicking, that the CUDA driver and NCCL can be loaded and a GPU is
/// visible; returns the number of visible devices.
pub fn probe() -> Result<usize> {
    // SAFETY: both only try to dlopen the library's candidate names.
    if !unsafe { cudarc::driver::sys::is_culib_present() } {
        return Err(Error::backend(
            "nccl",
            "the NCCL backend needs the CUDA driver library (libcuda.so.1), which could not be loaded: install \
             the NVIDIA driver (or run where one is), or use DIST_BACKEND=shm",
        ));
    }
    // SAFETY: both only try to dlopen the library's candidate names.
    if !unsafe { cudarc::nccl::sys::is_culib_present() } {
        // cudarc opens NCCL by its development name (`libnccl.so`); the runtime package
        // and the pip wheels ship only `libnccl.so.2`.
        return Err(Error::backend(
            "nccl",
            match runtime_nccl_path() {
                Some(path) => format!(
                    "NCCL is here ({path}), but only under its runtime name libnccl.so.2, and dist's bindings \
                     (cudarc) load it as libnccl.so: install the development package (Debian/Ubuntu: libnccl-dev), \
                     or link it: `mkdir -p ~/.local/lib/nccl && ln -sf {path} ~/.local/lib/nccl/libnccl.so` and \
                     add ~/.local/lib/nccl to LD_LIBRARY_PATH; or use DIST_BACKEND=shm"
                ),
                None => "the NCCL backend needs libnccl.so, which could not be loaded: install NCCL (Debian/Ubuntu: \
                         libnccl-dev; or the nvidia-nccl-cu12 wheel, linking its lib/libnccl.so.2 as libnccl.so) and \
                         put its directory on LD_LIBRARY_PATH, or use DIST_BACKEND=shm"
                    .to_string(),
            },
        ));
    }
    // The bindings are NCCL 2.30's; dist calls ncclCommSplit (2.18) and ncclCommFinalize
    // (2.14), which an older library lacks (the loader would panic on the missing symbol).
    let v = result::get_nccl_version().map_err(|e| fail("ncclGetVersion", e))?;
    if v < MIN_NCCL {
        return Err(Error::backend(
            "nccl",
            format!(
                "the loaded libnccl is version {}.{}.{}, but dist needs NCCL 2.18 or newer (ncclCommSplit, \
                 ncclCommFinalize): install a newer NCCL, or use DIST_BACKEND=shm",
                v / 10000,
                v / 100 % 100,
                v % 100
            ),
        ));
    }
    let n = CudaContext::device_count().map_err(|e| {
        Error::backend(
            "nccl",
            format!("the CUDA driver loaded but found no usable device ({e:?}); use DIST_BACKEND=shm"),
        )
    })?;
    if n <= 0 {
        let vis = std::env::var("CUDA_VISIBLE_DEVICES").unwrap_or_else(|_| "unset".into());
        return Err(Error::backend(
            "nccl",
            format!("no GPU is visible (CUDA_VISIBLE_DEVICES={vis}); use DIST_BACKEND=shm"),
        ));
    }
    Ok(n as usize)
}

/// NCCL version from which the library has its own all-to-all, gather and scatter.
const NATIVE_NCCL: i32 = 22800;

/// Whether the loaded NCCL has `ncclAlltoAll`, `ncclGather` and `ncclScatter` (2.28 and
/// newer): the version, and each symbol, since cudarc's loader panics on a missing one.
/// Call only after [`probe`] succeeded.
pub(crate) fn native_collectives() -> bool {
    static NATIVE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *NATIVE.get_or_init(|| {
        result::get_nccl_version().is_ok_and(|v| v >= NATIVE_NCCL)
            && ["ncclAlltoAll", "ncclGather", "ncclScatter"].iter().all(|s| {
                // SAFETY: looks a symbol up in the library `probe` loaded; nothing is called.
                unsafe { cudarc::nccl::sys::culib().get::<*const std::ffi::c_void>(s.as_bytes()).is_ok() }
            })
    })
}

/// Where `libnccl.so.2` (NCCL's runtime name) loads from, if it does.
fn runtime_nccl_path() -> Option<String> {
    // SAFETY: dlopen/dlsym/dladdr with valid C strings; the path is copied out while the
    // library is loaded (it stays loaded).
    unsafe {
        let h = libc::dlopen(c"libnccl.so.2".as_ptr(), libc::RTLD_LAZY | libc::RTLD_LOCAL);
        if h.is_null() {
            return None;
        }
        let sym = libc::dlsym(h, c"ncclGetVersion".as_ptr());
        let mut info: libc::Dl_info = std::mem::zeroed();
        let path = if !sym.is_null() && libc::dladdr(sym, &mut info) != 0 && !info.dli_fname.is_null() {
            let p = std::ffi::CStr::from_ptr(info.dli_fname).to_string_lossy().into_owned();
            std::fs::canonicalize(&p).map(|c| c.to_string_lossy().into_owned()).unwrap_or(p)
        } else {
            "libnccl.so.2".to_string()
        };
        // Not closed: unloading a real NCCL (and the CUDA runtime inside it) from a
        // process that goes on is riskier than keeping it mapped on this error path.
        Some(path)
    }
}

/// NCCL's own variables that dist sets for a rank before NCCL (or MPI, which may load
/// it) first reads them, and before any thread that could read the environment
/// concurrently has started.
///
/// - `NCCL_RUNTIME_CONNECT=0`, unless set: NCCL 2.22+ connects a collective's peers
///   lazily, inside the first collective that needs them, and that connection blocks
///   the host call itself while a peer never arrives: a device wait could then not end
///   at `DIST_TIMEOUT` (measured on a GPU: docs/performance.md, "Figures behind code
///   choices"). The communicators are non-blocking now (`comm.rs`), which bounds a lazy
///   connection too (point-to-point connections stay lazy whatever the setting);
///   connecting collectives at creation stays the default that was measured.
///   `NCCL_RUNTIME_CONNECT=1` buys a faster init and less device memory for unused
///   algorithms.
/// - With `share` (`DIST_SHARE_GPU=1`, one host): ranks sharing a GPU each claim a host
///   of their own (`NCCL_HOSTID`, always set: one value exported to every rank would
///   make NCCL's duplicate-GPU check refuse them), and talk over NCCL's socket transport
///   on loopback (P2P and SHM off, unless set).
///
/// - With `deterministic` (`DIST_DETERMINISTIC=1`): reductions in an order fixed by the
///   job's shape and the machines' topology, so every run gives the same bits: the ring
///   algorithm (`NCCL_ALGO=Ring`: each element's sum is folded around the ring, in an
///   order set by the message's size, the ranks and the channel count NCCL derives from
///   the topology) and the simple protocol, unless set; NVLink SHARP and CollNet, which
///   reduce in the switch or the network, off (`env.rs` refuses a job that turns them on).
///   Not batch-invariant: the same values in a message of another size may be folded in
///   another order.
///
/// Values set here take precedence over `~/.nccl.conf` and `NCCL_CONF_FILE`, which NCCL
/// applies only to variables not already in the environment; a rank's child processes
/// inherit them.
pub(crate) fn env_defaults(share: bool, deterministic: bool) {
    let mut set = vec![("NCCL_RUNTIME_CONNECT", "0".to_string())];
    if deterministic {
        set.extend([
            ("NCCL_ALGO", "Ring".into()),
            ("NCCL_PROTO", "Simple".into()),
            ("NCCL_NVLS_ENABLE", "0".into()),
            ("NCCL_COLLNET_ENABLE", "0".into()),
        ]);
    }
    if share {
        std::env::set_var("NCCL_HOSTID", format!("dist-share-{}", std::process::id()));
        set.extend([
            ("NCCL_P2P_DISABLE", "1".into()),
            ("NCCL_SHM_DISABLE", "1".into()),
            ("NCCL_NET", "Socket".into()),
            ("NCCL_SOCKET_IFNAME", "lo".into()),
        ]);
    }
    for (k, v) in set {
        // (An empty variable is unset, as NCCL reads it.)
        if std::env::var_os(k).is_none_or(|v| v.is_empty()) {
            std::env::set_var(k, v);
        }
    }
}

#[cfg(test)]
mod tests {
    /// The defaults land where unset and leave the user's own values alone. (The only
    /// test in this binary that touches NCCL's variables.)
    #[test]
    fn nccl_env_defaults_fill_only_what_is_unset() {
        let keys = [
            "NCCL_SOCKET_IFNAME",
            "NCCL_RUNTIME_CONNECT",
            "NCCL_HOSTID",
            "NCCL_P2P_DISABLE",
            "NCCL_SHM_DISABLE",
            "NCCL_NET",
            "NCCL_ALGO",
            "NCCL_PROTO",
            "NCCL_NVLS_ENABLE",
            "NCCL_COLLNET_ENABLE",
        ];
        let saved: Vec<_> = keys.iter().map(|k| (k, std::env::var_os(k))).collect();
        for k in keys {
            std::env::remove_var(k);
        }
        std::env::set_var("NCCL_SOCKET_IFNAME", "eth9");
        std::env::set_var("NCCL_HOSTID", "exported-to-every-rank");
        std::env::set_var("NCCL_PROTO", "LL128");
        std::env::set_var("NCCL_ALGO", "");
        super::env_defaults(true, true);
        let get = |k: &str| std::env::var(k).unwrap_or_default();
        assert_eq!(get("NCCL_RUNTIME_CONNECT"), "0");
        assert_eq!(get("NCCL_HOSTID"), format!("dist-share-{}", std::process::id()), "one per rank, always");
        assert_eq!(get("NCCL_SOCKET_IFNAME"), "eth9", "the user's own value stays");
        assert_eq!((get("NCCL_P2P_DISABLE"), get("NCCL_SHM_DISABLE")), ("1".into(), "1".into()));
        assert_eq!(
            (get("NCCL_ALGO"), get("NCCL_NVLS_ENABLE"), get("NCCL_COLLNET_ENABLE")),
            ("Ring".into(), "0".into(), "0".into())
        );
        assert_eq!(get("NCCL_PROTO"), "LL128", "the user's own protocol stays (LL128 folds in the ring's order too)");
        for (k, v) in saved {
            match v {
                Some(v) => std::env::set_var(k, v),
                None => std::env::remove_var(k),
            }
        }
    }
}
