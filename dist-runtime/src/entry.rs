//! Entry points: `#[spmd]` functions registered by name, run as a rank when the process
//! is started with `DIST_ENTRY=<name>` (by `launch`, the test macro or `cargo xtask run`).

use crate::comm::Comm;
use crate::error::Error;
use crate::group::World;
use std::sync::{Mutex, Once};

/// How a rank's entry ended, short of success.
#[derive(Debug)]
pub struct Failure {
    /// What went wrong.
    pub msg: String,
    /// Process exit code to use.
    pub code: i32,
}

/// A registered entry point.
pub struct Entry {
    /// Full path (`module::function`).
    pub name: &'static str,
    /// Runs the entry on this rank's world communicator.
    pub run: fn(Comm<World>) -> Result<(), Failure>,
}

inventory::collect!(Entry);

/// What an entry function may return: `()` or `Result<(), E>` with a displayable `E`.
pub trait EntryReturn {
    /// Converts the return value into an outcome.
    fn into_outcome(self) -> Result<(), Failure>;
}

impl EntryReturn for () {
    fn into_outcome(self) -> Result<(), Failure> {
        Ok(())
    }
}

impl<E: std::fmt::Display + 'static> EntryReturn for Result<(), E> {
    fn into_outcome(self) -> Result<(), Failure> {
        self.map_err(|e| {
            let code = (&e as &dyn std::any::Any).downcast_ref::<Error>().map(Error::exit_code).unwrap_or(1);
            Failure { msg: e.to_string(), code }
        })
    }
}

/// All entries registered in this binary.
pub fn entries() -> Vec<&'static str> {
    let mut v: Vec<_> = inventory::iter::<Entry>.into_iter().map(|e| e.name).collect();
    v.sort();
    v
}

/// Finds an entry by full path, or by its last path segment when that is unique.
pub fn find(name: &str) -> Result<&'static Entry, String> {
    let all: Vec<&'static Entry> = inventory::iter::<Entry>.into_iter().collect();
    if let Some(e) = all.iter().find(|e| e.name == name) {
        return Ok(e);
    }
    let tail: Vec<_> = all.iter().filter(|e| e.name.rsplit("::").next() == Some(name)).collect();
    match tail.as_slice() {
        [one] => Ok(one),
        [] => Err(format!("no #[spmd] entry named {name:?} in this binary; it has: {}", entries().join(", "))),
        many => Err(format!("{name:?} is ambiguous: {}", many.iter().map(|e| e.name).collect::<Vec<_>>().join(", "))),
    }
}

static LAST_PANIC: Mutex<Option<String>> = Mutex::new(None);

/// The message of the last panic in this process (for failure reports).
pub(crate) fn last_panic() -> String {
    LAST_PANIC.lock().unwrap_or_else(|p| p.into_inner()).clone().unwrap_or_else(|| "panicked".into())
}

fn install_panic_hook() {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        let prev = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let payload = info
                .payload()
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| info.payload().downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "Box<dyn Any>".into());
            let at = info.location().map(|l| format!(" at {}:{}", l.file(), l.line())).unwrap_or_default();
            *LAST_PANIC.lock().unwrap_or_else(|p| p.into_inner()) = Some(format!("panicked{at}: {payload}"));
            prev(info)
        }));
    });
}

/// Runs `f` as this rank: joins the job from the environment, calls `f`, and turns an
/// error or a panic into a `[rank k]` message, a failure mark peers can see, and an exit
/// code (1 for an error, 3 when the error is that a peer failed, 101 for a panic).
pub fn run_rank(f: impl FnOnce(Comm<World>) -> Result<(), Failure>) -> i32 {
    install_panic_hook();
    let world = match crate::init() {
        Ok(w) => w,
        Err(e) => {
            let rank = std::env::var("RANK").unwrap_or_else(|_| "?".into());
            eprintln!("[rank {rank}] error: cannot join the job: {e}");
            return 1;
        }
    };
    let rank = world.rank();
    // Keep the world alive past `f` so a failure can still be marked in its segment.
    let keep = world.inner.clone();
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(world)));
    let code = match outcome {
        Ok(Ok(())) => 0,
        Ok(Err(fail)) => {
            crate::backend::shm::mark_failed(&format!("returned an error: {}", fail.msg));
            eprintln!("[rank {rank}] error: {}", fail.msg);
            fail.code
        }
        Err(_) => {
            let msg = last_panic();
            crate::backend::shm::mark_failed(&msg);
            eprintln!("[rank {rank}] {msg}");
            101
        }
    };
    drop(keep);
    use std::io::Write;
    let _ = std::io::stdout().flush();
    code
}

/// Called by the constructor every `#[spmd]` and test expansion emits: when this
/// process was started as a rank (`DIST_ENTRY` set), runs that entry and exits before
/// `main` or the test harness starts. Lists entries when `DIST_LIST_ENTRIES=1`.
pub fn dispatch() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        if std::env::var_os("DIST_LIST_ENTRIES").is_some() {
            for e in entries() {
                println!("{e}");
            }
            std::process::exit(0);
        }
        let Ok(name) = std::env::var("DIST_ENTRY") else { return };
        // Our own children (if any) must not inherit the role.
        std::env::remove_var("DIST_ENTRY");
        let code = match find(&name) {
            Ok(entry) => run_rank(entry.run),
            Err(msg) => {
                eprintln!("error: {msg}");
                2
            }
        };
        std::process::exit(code);
    });
}
