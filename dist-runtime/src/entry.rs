//! Entry points: `#[spmd]` functions registered by name, run as a rank when the process
//! is started with `DIST_ENTRY=<name>` (by `launch`, the test macro or `cargo spmd run`).

use crate::comm::Comm;
use crate::error::Error;
use crate::group::World;
use std::sync::Once;

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
    /// Runs the entry on this rank's world communicator; the value is the rank's
    /// result, serialised (for [`launch`](crate::launch())).
    pub run: fn(Comm<World>) -> Result<Vec<u8>, Failure>,
    /// Address of the user's function, to find the entry from a function pointer.
    pub addr: fn() -> *const (),
}

/// Every entry of the binary, in a linker section (`linkme`), complete before any code
/// runs: the first constructor that dispatches sees the entries of every module, file and
/// crate. (A constructor-filled registry such as `inventory` is filled by constructors
/// too, in an order the linker picks, so dispatching from one saw only some entries.)
#[linkme::distributed_slice]
pub static ENTRIES: [Entry];

/// What an entry function may return: `()`, or `Result<T, E>` with a serialisable `T`
/// (each rank's value comes back from [`launch`](crate::launch())) and a displayable `E`.
pub trait EntryReturn {
    /// The value a successful rank produces.
    type Value: serde::Serialize + serde::de::DeserializeOwned;
    /// Converts the return value into an outcome.
    fn into_outcome(self) -> Result<Self::Value, Failure>;
}

impl EntryReturn for () {
    type Value = ();
    fn into_outcome(self) -> Result<(), Failure> {
        Ok(())
    }
}

impl<T: serde::Serialize + serde::de::DeserializeOwned, E: std::fmt::Display + 'static> EntryReturn for Result<T, E> {
    type Value = T;
    fn into_outcome(self) -> Result<T, Failure> {
        self.map_err(|e| {
            let code = (&e as &dyn std::any::Any).downcast_ref::<Error>().map(Error::exit_code).unwrap_or(1);
            Failure { msg: e.to_string(), code }
        })
    }
}

/// A distributed test's communicator of type `G` over every rank of the world, in the
/// world's order (`#[dist_runtime::test] fn t(tp: Comm<Tp>)`): the world itself when `G`
/// is `World`, else a subgroup of all its ranks (a communicator of its own, named `G`).
pub fn test_comm<G: crate::group::Group>(world: crate::Comm<crate::World>) -> crate::Result<crate::Comm<G>> {
    if std::any::TypeId::of::<G>() == std::any::TypeId::of::<crate::World>() {
        return Ok(crate::Comm { inner: world.inner, _g: std::marker::PhantomData });
    }
    let all: Vec<usize> = (0..world.size()).collect();
    Ok(world.subgroup::<G>(&all)?.expect("every rank is a member"))
}

/// Runs the outcome conversion and serialises the value (what the macros' entry
/// wrappers call).
pub fn finish_entry<R: EntryReturn>(r: R) -> Result<Vec<u8>, Failure> {
    let v = r.into_outcome()?;
    postcard::to_allocvec(&v).map_err(|e| Failure { msg: format!("cannot serialise the entry's result: {e}"), code: 1 })
}

/// Finds the entry registered for the function at `addr`.
pub(crate) fn find_by_addr(addr: *const ()) -> Option<&'static Entry> {
    ENTRIES.iter().find(|e| std::ptr::eq((e.addr)(), addr))
}

/// Publishes this rank's result to the launcher's store when it asked for results.
fn publish_result(rank: usize, value: &[u8]) -> crate::error::Result<()> {
    if std::env::var_os("DIST_RESULTS").is_none() {
        return Ok(());
    }
    crate::store::report::to_launcher(&format!("result/{rank}"), value)
}

/// All entries registered in this binary.
pub fn entries() -> Vec<&'static str> {
    let mut v: Vec<_> = ENTRIES.iter().map(|e| e.name).collect();
    v.sort();
    v
}

/// Finds an entry by full path, or by a path suffix (`share_loss`, `comms::share_loss`)
/// when exactly one entry ends with it.
pub fn find(name: &str) -> Result<&'static Entry, String> {
    let all: Vec<&'static Entry> = ENTRIES.iter().collect();
    if let Some(e) = all.iter().find(|e| e.name == name) {
        return Ok(e);
    }
    // A path suffix on segment boundaries: `share_loss`, `comms::share_loss`.
    let name = name.trim_start_matches("::");
    let tail: Vec<_> = all
        .iter()
        .filter(|e| e.name.strip_suffix(name).is_some_and(|head| head.is_empty() || head.ends_with("::")))
        .collect();
    match tail.as_slice() {
        [one] => Ok(one),
        [] => Err(format!(
            "no #[spmd] entry named {name:?} in this binary; it has: {} (a library's entries are in a \
             binary only when the binary uses that library)",
            entries().join(", ")
        )),
        many => Err(format!("{name:?} is ambiguous: {}", many.iter().map(|e| e.name).collect::<Vec<_>>().join(", "))),
    }
}

/// Runs `f` as this rank: joins the job from the environment, calls `f`, and turns an
/// error or a panic into a `[rank k]` message, a failure mark peers can see, and an exit
/// code (1 for an error, 3 when the error is that a peer failed, 101 for a panic).
pub fn run_rank(f: impl FnOnce(Comm<World>) -> Result<Vec<u8>, Failure>) -> i32 {
    crate::verify::failure::install_panic_hook();
    // Under mpirun the launcher sees only mpirun: each rank tells it its process, so it
    // can tell which rank ended without a word (killed, `exit()` mid-job, an abort) and
    // stop or kill one for fault injection.
    if std::env::var_os("DIST_EXIT_REPORT").is_some() {
        if let Ok(env) = crate::env::Env::from_env() {
            let me = format!("{} {:x}", std::process::id(), crate::sys::host_id());
            let _ = crate::store::report::to_launcher_within(
                &format!("pid/{}", env.rank),
                me.as_bytes(),
                Some(std::time::Duration::from_secs(2)),
            );
        }
    }
    let world = match crate::init::init() {
        Ok(w) => w,
        Err(e) => return cannot_join(&e),
    };
    let rank = world.rank();
    // Keep the world alive past `f` so a failure can still be marked in its segment.
    let keep = world.inner.clone();
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(world)));
    let code = exit_code(rank, judged(outcome, &keep));
    if code != 0 {
        crate::store::report::report_flight(rank);
    }
    // The cause may be a peer that returned from its entry while this rank waited on it
    // (it exits 0), or one a deadlock detector named (it may be stopped, or have stopped
    // as a victim itself): the launcher learns of it from here (when it hosts the store).
    if code == 3 && crate::store::report::launcher_store() {
        if let Some((key, w, text)) = crate::verify::failure::take_named() {
            let _ = crate::store::report::to_launcher(&format!("{key}/{w}"), text.as_bytes());
        }
    }
    crate::store::report::report_exit(rank, code);
    drop(keep);
    #[cfg(feature = "mpi")]
    crate::backend::mpi::at_exit();
    use std::io::Write;
    let _ = std::io::stdout().flush();
    code
}

/// The entry's outcome: a panic, or its result.
type Outcome = std::thread::Result<Result<Vec<u8>, Failure>>;

/// A rank that could not join the job: says so (and tells the launcher), exit code 1.
fn cannot_join(e: &crate::Error) -> i32 {
    // The rank as the launcher numbered it (torchrun's RANK, or mpirun's/srun's).
    let rank = crate::env::Env::from_env().map_or_else(
        |_| {
            ["RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "SLURM_PROCID"]
                .iter()
                .find_map(|v| std::env::var(v).ok().filter(|r| r.trim().parse::<usize>().is_ok()))
                .unwrap_or_else(|| "?".into())
        },
        |env| env.rank.to_string(),
    );
    // One write, so lines of ranks sharing a terminal do not interleave.
    use std::io::Write;
    let _ = std::io::stderr().write_all(format!("[rank {rank}] error: cannot join the job: {e}\n").as_bytes());
    crate::init::report_init_failure(&rank, &e.to_string());
    if std::env::var_os("DIST_EXIT_REPORT").is_some() {
        let _ = crate::store::report::to_launcher(&format!("exit/{rank}"), b"1");
    }
    1
}

/// The entry's outcome as the job sees it: an `Ok` turns into a failure where the job
/// was found mixed with another after this rank's last op, or where messages sent to
/// this rank were never received (on the world, or on groups it has dropped: an error
/// naming each sender's call site, as MPI calls finalizing with unreceived messages
/// erroneous, and as NCCL would hang on the sender).
fn judged(outcome: Outcome, keep: &crate::comm::Inner) -> Outcome {
    match outcome {
        // The job was found mixed with another after this rank's last op: its result is
        // not this job's.
        Ok(Ok(_)) if crate::verify::failure::poisoned().is_some() => {
            let msg = crate::verify::failure::poisoned().map(|e| e.to_string()).unwrap_or_default();
            Ok(Err(Failure { msg, code: 1 }))
        }
        Ok(Ok(value)) => {
            let mut lost = crate::verify::failure::take_unreceived();
            lost.extend(keep.backend.unreceived());
            if lost.is_empty() {
                Ok(Ok(value))
            } else {
                Ok(Err(Failure { msg: format!("messages were sent and never received: {}", lost.join("; ")), code: 1 }))
            }
        }
        other => other,
    }
}

/// The rank's exit code for its entry's `outcome` (0, the failure's code, 101 for a
/// panic, 3 where it follows a peer's failure), said on stderr; a result handed over.
fn exit_code(rank: usize, outcome: Outcome) -> i32 {
    match outcome {
        Ok(Ok(value)) => match publish_result(rank, &value) {
            Ok(()) => 0,
            Err(e) => {
                crate::sys::say(format!("[rank {rank}] error: cannot hand the result to the launcher: {e}"));
                1
            }
        },
        Ok(Err(fail)) => {
            crate::verify::failure::mark_failed(&format!("returned an error: {}", fail.msg));
            crate::sys::say(format!("[rank {rank}] error: {}", fail.msg));
            // An error after a peer's failure is that failure's consequence, even when the
            // entry turned it into a type that does not say so (`Result<(), String>`).
            if fail.code == 1 && crate::verify::failure::saw_peer_failure() {
                3
            } else {
                fail.code
            }
        }
        Err(_) => {
            let msg = crate::verify::failure::last_panic();
            crate::verify::failure::mark_failed(&msg);
            crate::sys::say(format!("[rank {rank}] {msg}"));
            // A panic on a peer's failure (an `unwrap` of it) is that failure's consequence.
            if crate::verify::failure::saw_peer_failure() {
                3
            } else {
                101
            }
        }
    }
}

/// The first line a binary prints when asked for its entries (`DIST_LIST_ENTRIES`,
/// `DIST_RESOLVE_ENTRY`).
pub const ENTRIES_MARKER: &str = "#dist-entries v1";

/// Called by the constructor every `#[spmd]` and test expansion emits: when this
/// process was started as a rank (`DIST_ENTRY` set), runs that entry and exits before
/// `main` or the test harness starts. Lists entries when `DIST_LIST_ENTRIES=1`; prints the full name of
/// an entry (or why none matches) when `DIST_RESOLVE_ENTRY=NAME`.
pub fn dispatch() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // Both answers start with ENTRIES_MARKER, so a launcher can tell them from the
        // output of a program that has no entries (and so no constructor to answer).
        if std::env::var_os("DIST_LIST_ENTRIES").is_some() {
            println!("{ENTRIES_MARKER}");
            for e in entries() {
                println!("{e}");
            }
            std::process::exit(0);
        }
        // The launcher resolves `--entry NAME` once, before starting any rank.
        if let Ok(name) = std::env::var("DIST_RESOLVE_ENTRY") {
            match find(&name) {
                Ok(e) => {
                    println!("{ENTRIES_MARKER}\n{}", e.name);
                    std::process::exit(0)
                }
                Err(msg) => {
                    println!("{ENTRIES_MARKER}");
                    eprintln!("{msg}");
                    std::process::exit(2)
                }
            }
        }
        let Ok(name) = std::env::var("DIST_ENTRY") else { return };
        // Our own children (if any) must not inherit the role.
        std::env::remove_var("DIST_ENTRY");
        let code = match find(&name) {
            Ok(entry) => run_rank(entry.run),
            Err(msg) => {
                eprintln!("error: {msg}");
                if std::env::var_os("DIST_EXIT_REPORT").is_some() {
                    if let Ok(env) = crate::env::Env::from_env() {
                        let _ = crate::store::report::to_launcher(&format!("exit/{}", env.rank), b"2");
                    }
                }
                2
            }
        };
        std::process::exit(code);
    });
}
