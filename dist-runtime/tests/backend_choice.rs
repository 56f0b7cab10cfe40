//! Which backend a job gets, and the errors when the one asked for cannot run. These
//! need no GPU: on a machine without one (CI), asking for NCCL must be a clear error
//! naming what is missing, never a panic from the dynamic loader, and `auto` must fall
//! back to shared memory.

use dist_runtime::{init_with, BackendChoice, Env};

fn env(backend: &str) -> Env {
    let backend = backend.to_string();
    Env::from_lookup(move |k| (k == "DIST_BACKEND").then(|| backend.clone())).unwrap()
}

#[test]
fn shm_is_the_default_and_has_no_device_side() {
    let world = init_with(Env::from_lookup(|_| None).unwrap()).unwrap();
    assert_eq!(world.backend(), "shm");
    assert_eq!(world.device_kind(), None);
    // Device buffers on a job without a device side: a clear error, not a crash.
    #[cfg(feature = "nccl")]
    {
        let Err(e) = world.stream() else { panic!("no NCCL on shm") };
        let e = e.to_string();
        assert!(e.contains("start the job with DIST_BACKEND=nccl"), "{e}");
    }
}

#[test]
fn nccl_without_the_feature_or_a_gpu_is_a_clear_error() {
    let e = env("nccl");
    assert_eq!(e.backend, BackendChoice::Nccl);
    #[cfg(not(feature = "nccl"))]
    {
        let err = init_with(e).expect_err("no nccl feature").to_string();
        assert!(err.contains("no `nccl` feature") && err.contains("--features dist-runtime/nccl"), "{err}");
    }
    #[cfg(feature = "nccl")]
    match dist_runtime::nccl::probe() {
        Err(why) => {
            let err = init_with(e).expect_err("no GPU here").to_string();
            assert_eq!(err, why.to_string());
            assert!(
                err.contains("libcuda.so.1") || err.contains("libnccl.so.2") || err.contains("no GPU is visible"),
                "{err}"
            );
            assert!(err.contains("DIST_BACKEND=shm"), "says what to do instead: {err}");
        }
        Ok(_) => {
            // A machine with a GPU: NCCL must come up.
            let world = init_with(e).unwrap();
            assert_eq!(world.device_kind(), Some("nccl"));
        }
    }
}

#[test]
fn auto_falls_back_to_shm_without_a_gpu() {
    let world = init_with(env("auto")).unwrap();
    assert_eq!(world.backend(), "shm");
    #[cfg(feature = "nccl")]
    assert_eq!(world.device_kind().is_some(), dist_runtime::nccl::probe().is_ok());
}

#[test]
fn placement_errors_come_before_any_device_work() {
    let bad = Env::from_lookup(|k| match k {
        "DIST_GPUS" => Some("0,0".into()),
        _ => None,
    })
    .unwrap();
    assert!(bad.placement().unwrap_err().to_string().contains("device 0 appears twice"));
    let both = Env::from_lookup(|k| match k {
        "DIST_GPUS" => Some("0".into()),
        "DIST_RANK_TABLE" => Some("/nonexistent".into()),
        _ => None,
    })
    .unwrap();
    assert!(both.placement().unwrap_err().to_string().contains("use one"));
    let missing = Env::from_lookup(|k| (k == "DIST_RANK_TABLE").then(|| "/nonexistent/table.json".into())).unwrap();
    assert!(missing.placement().unwrap_err().to_string().contains("cannot read /nonexistent/table.json"));
}

/// NCCL installed under its runtime name only (`libnccl.so.2`: Debian's libnccl2, the pip
/// wheels), which dist's bindings cannot open: the error names the file found and the fix.
/// Stand-ins for libcuda and libnccl are built here with `cc`, and the probe runs in a
/// child process whose `LD_LIBRARY_PATH` holds them.
#[cfg(feature = "nccl")]
#[test]
fn nccl_under_its_runtime_name_only_is_named_with_the_fix() {
    if let Ok(path) = std::env::var("DIST_PROBE_CHILD_LIBS") {
        // The child: stand-in libraries on LD_LIBRARY_PATH.
        let err = dist_runtime::nccl::probe().expect_err("only libnccl.so.2 is here").to_string();
        println!("PROBE-ERROR {err}");
        assert!(err.contains(&format!("{path}/libnccl.so.2")), "names the file found: {err}");
        assert!(err.contains("libnccl-dev") && err.contains("ln -sf"), "says how to fix it: {err}");
        return;
    }
    // Where a real NCCL loads under its development name, the probe never gets here.
    // SAFETY: dlopen of a library name; the handle is released at once.
    let real = unsafe { libc::dlopen(c"libnccl.so".as_ptr(), libc::RTLD_LAZY | libc::RTLD_LOCAL) };
    if !real.is_null() {
        println!("libnccl.so is installed here: skipped");
        return;
    }
    let dir = std::env::temp_dir().join(format!("dist-nccl-probe-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let src = dir.join("stub.c");
    std::fs::write(
        &src,
        "int ncclGetVersion(int *v) { *v = 22803; return 0; }\nint cuInit(unsigned f) { return 0; }\n",
    )
    .unwrap();
    for lib in ["libcuda.so", "libnccl.so.2"] {
        let st =
            std::process::Command::new("cc").args(["-shared", "-fPIC", "-o"]).arg(dir.join(lib)).arg(&src).status();
        match st {
            Ok(s) if s.success() => {}
            _ => {
                println!("no C compiler here: skipped");
                return;
            }
        }
    }
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "nccl_under_its_runtime_name_only_is_named_with_the_fix", "--nocapture"])
        .env("LD_LIBRARY_PATH", &dir)
        .env("DIST_PROBE_CHILD_LIBS", &dir)
        .output()
        .unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    let text = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success() && text.contains("PROBE-ERROR"), "child:\n{text}");
}

/// Without the `mpi` feature, asking for MPI (in any case) is one clear error that names
/// what was asked and the feature to build with, and claims no launcher.
#[cfg(not(feature = "mpi"))]
#[test]
fn mpi_without_the_feature_is_a_clear_error() {
    let e = env("MPI");
    assert_eq!(e.backend, BackendChoice::Mpi);
    let err = init_with(e).expect_err("no mpi feature").to_string();
    assert!(err.contains("needs the MPI backend") && err.contains("--features dist-runtime/mpi"), "{err}");
    assert!(!err.contains("started by"), "{err}");
}
