//! What the operating system says about processes and CPUs: this host's identity, a
//! pid's state, and the CPU binding of a rank. Used by the launcher, the backends and
//! the verdicts alike; it imports nothing of dist.

/// Identifies this process's host (and PID namespace): a pid means something only
/// there. Ranks exchange it with their pids (MPI's board; the mpirun launcher's store), so
/// a peer or the launcher looks up only pids of its own host.
pub(crate) fn host_id() -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default().hash(&mut h);
    std::fs::read_link("/proc/self/ns/pid").ok().hash(&mut h);
    h.finish()
}

/// The state letter of process `pid` in `/proc/<pid>/stat` (R, S, D, T, t, Z, …).
pub(crate) fn pid_state(pid: u32) -> Option<char> {
    if pid == 0 {
        return None;
    }
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    s.rsplit_once(')')?.1.trim_start().chars().next()
}

/// Whether the process `pid` still exists (a zombie counts as gone).
pub(crate) fn pid_alive(pid: u32) -> bool {
    if pid == 0 {
        return true; // not attached yet: nothing to say
    }
    // SAFETY: kill with signal 0 only checks for existence and permission.
    let r = unsafe { libc::kill(pid as libc::pid_t, 0) };
    if r != 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH) {
        return false;
    }
    // A killed child not yet reaped by its parent is a zombie: treat it as dead.
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(s) => !s.rsplit_once(')').map(|(_, rest)| rest.trim_start().starts_with(['Z', 'X'])).unwrap_or(false),
        Err(_) => r == 0,
    }
}

/// Binds local rank r to one CPU this process may run on, round robin from an offset
/// that depends on the job (so two jobs with an odd number of ranks on one host do not
/// both crowd the same CPU), as `mpirun --bind-to core` does. By default only where a
/// host's ranks outnumber its cores (`DIST_PIN=1` always, `DIST_PIN=0` never): left to
/// the kernel, 8 ranks on 2 cores land 4/4, 5/3 or 6/2 from launch to launch, and every
/// small collective waits for the crowded core, where bound ranks take the same time in
/// every launch (measured: docs/performance.md, "Both ends copy, a barrier on each rank's
/// own word, bound ranks"). Threads a rank starts later inherit the binding.
pub(crate) fn pin_to_core(local_rank: usize, job: &str) {
    if let Some(i) = bind(local_rank, job) {
        PINNED.store(i, std::sync::atomic::Ordering::Relaxed);
    }
}

/// The CPU this process bound itself to (`usize::MAX`: none).
static PINNED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(usize::MAX);

/// The CPU this process is bound to (`pin_to_core`).
pub(crate) fn pinned_cpu() -> Option<usize> {
    Some(PINNED.load(std::sync::atomic::Ordering::Relaxed)).filter(|&i| i != usize::MAX)
}

/// The CPUs this thread may run on (none if the kernel will not say).
pub(crate) fn allowed_cpus() -> Vec<usize> {
    // SAFETY: a zeroed cpu_set_t is valid; sched_getaffinity only writes it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return Vec::new();
        }
        (0..libc::CPU_SETSIZE as usize).filter(|&c| libc::CPU_ISSET(c, &set)).collect()
    }
}

/// Binds this process's thread to the CPU for `local_rank`, which it returns.
fn bind(local_rank: usize, job: &str) -> Option<usize> {
    let cpus = allowed_cpus();
    if cpus.is_empty() {
        return None;
    }
    // SAFETY: a zeroed cpu_set_t is valid; the call only reads it and sets our affinity.
    unsafe {
        let offset = job.bytes().fold(0usize, |h, b| h.wrapping_mul(31).wrapping_add(b as usize));
        let cpu = cpus[local_rank.wrapping_add(offset) % cpus.len()];
        let mut one: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut one);
        (libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &one) == 0).then_some(cpu)
    }
}

/// Writes `text` and a newline to stderr in one `write`: a rank's message is one line
/// (or block) even where many ranks share the stream. Under mpirun they do, and
/// `eprintln!` writes its pieces one by one ("[rank ", "0", "] error: ", …), which
/// mpirun interleaves with other ranks' pieces and tags mid-line.
pub(crate) fn say(text: impl AsRef<str>) {
    use std::io::Write;
    let mut line = String::with_capacity(text.as_ref().len() + 1);
    line.push_str(text.as_ref());
    line.push('\n');
    let _ = std::io::stderr().lock().write_all(line.as_bytes());
}
