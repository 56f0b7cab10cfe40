//! What a rank tells the launcher's store (when one takes reports: `Launch`, xtask, the
//! mpirun path): its result, exit code, flight recorder. Below the backends (beside the
//! store's client), so a backend
//! that must end the job from inside an op (MPI, when MPI keeps a buffer) reports as the
//! entry runner would.

/// Sets `key` in the launcher's store (at MASTER_ADDR:MASTER_PORT), when there is one.
pub(crate) fn to_launcher(key: &str, value: &[u8]) -> crate::error::Result<()> {
    to_launcher_within(key, value, None)
}

/// [`to_launcher`], giving up after `limit` (a best-effort report must not hold a rank
/// that cannot reach the launcher for its whole deadline).
pub(crate) fn to_launcher_within(
    key: &str,
    value: &[u8],
    limit: Option<std::time::Duration>,
) -> crate::error::Result<()> {
    let env = crate::env::Env::from_env()?;
    let Some(port) = env.master_port else { return Ok(()) };
    let patience = limit.map_or(env.timeout, |l| l.min(env.timeout));
    let store = super::Store::connect(&format!("{}:{port}", env.master_addr), &env.token, patience)?;
    store.set(key, value)
}

/// Under mpirun the launcher sees one exit status for the job: each rank says its own,
/// before the world goes (a failed MPI rank aborts the job there), and so does a rank
/// that ends the job from inside an op (the MPI backend, when MPI keeps a buffer).
pub(crate) fn report_exit(rank: usize, code: i32) {
    if std::env::var_os("DIST_EXIT_REPORT").is_some() {
        if let Err(e) = to_launcher(&format!("exit/{rank}"), code.to_string().as_bytes()) {
            crate::sys::say(format!("[rank {rank}] error: cannot report the exit code to the launcher: {e}"));
        }
    }
}

/// A failed rank's flight recorder: this thread's last ops, the tail on stderr, the
/// whole ring to the launcher, which lines the ranks up, and beside the trace.
pub(crate) fn report_flight(rank: usize) {
    let ring = crate::verify::recorder::dump();
    if !ring.is_empty() {
        let lines: Vec<&str> = ring.lines().collect();
        let tail: Vec<String> =
            lines[lines.len().saturating_sub(4)..].iter().map(|l| format!("    {}", l.replace('\t', " "))).collect();
        crate::sys::say(format!("[rank {rank}] flight recorder, last ops (oldest first):\n{}", tail.join("\n")));
        if launcher_store() {
            let _ = to_launcher(&format!("flight/{rank}"), ring.as_bytes());
        }
        // Beside the trace, for `cargo spmd trace DIR` to line the ranks up later.
        if let Some(dir) = std::env::var_os("DIST_TRACE").filter(|d| !d.is_empty()) {
            let path = std::path::Path::new(&dir).join(format!("flight-{rank}.tsv"));
            if let Err(e) = std::fs::write(&path, ring.as_bytes()) {
                crate::sys::say(format!("[rank {rank}] cannot write the flight recorder to {}: {e}", path.display()));
            }
        }
    }
}

/// Whether a launcher's store takes this rank's reports (`Launch` and xtask host one; so
/// does the mpirun path, which asks for exit reports).
pub(crate) fn launcher_store() -> bool {
    std::env::var("DIST_STORE_EXTERNAL").as_deref() == Ok("1") || std::env::var_os("DIST_EXIT_REPORT").is_some()
}
