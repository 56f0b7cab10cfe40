//! The supervision loop both launchers run: look at the ranks, inject a fault if asked,
//! stop the job at the timeout or when the ranks' side says so, make sure it ends. What a
//! launcher can see of its ranks (its own children, or mpirun's) is behind [`Supervised`].
//! The ranks' output is pumped by [`pump_lines`], which both launchers run too.

use crate::error::{Error, Result};
use std::time::{Duration, Instant};

/// How long after asking the ranks to stop the launcher makes sure they do.
const STOP_PATIENCE: Duration = Duration::from_secs(3);

/// What one look at the ranks found.
pub(crate) enum Seen {
    /// Every rank (or mpirun) has ended.
    Ended,
    /// Still running.
    Running,
    /// Still running, and the job should be stopped now (a failure's grace is over, or a
    /// teardown hangs).
    StopNow,
}

/// A launcher's view of its ranks.
pub(crate) trait Supervised {
    /// Looks at the ranks once (every 2 ms).
    fn look(&mut self) -> Result<Seen>;
    /// The process of job-wide rank `rank` while it runs, where this launcher can signal it.
    fn pid(&self, rank: usize) -> Option<u32>;
    /// Asks the ranks still running to end (called once).
    fn stop(&mut self);
    /// Ends the ranks still running ([`STOP_PATIENCE`] after [`stop`](Self::stop)).
    fn kill(&mut self);
}

/// Runs the loop until the job ends; whether the timeout ended it.
pub(crate) fn supervise(
    job: &mut dyn Supervised,
    start: Instant,
    timeout: Option<Duration>,
    faults: &mut [Injector],
) -> Result<bool> {
    let (mut stopped_at, mut timed_out): (Option<Instant>, bool) = (None, false);
    loop {
        for fault in faults.iter_mut() {
            fault.tick(start.elapsed(), |r| job.pid(r));
        }
        let seen = job.look()?;
        if let Seen::Ended = seen {
            return Ok(timed_out);
        }
        let expired = timeout.is_some_and(|t| start.elapsed() >= t);
        if stopped_at.is_none() && (expired || matches!(seen, Seen::StopNow)) {
            timed_out = expired;
            job.stop();
            stopped_at = Some(Instant::now());
        }
        if stopped_at.is_some_and(|t| t.elapsed() > STOP_PATIENCE) {
            job.kill();
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// A fault to inject ([`Launch::kill_after`], [`Launch::stop_after`]).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Fault {
    pub(super) rank: usize,
    pub(super) at: Duration,
    /// `None`: SIGKILL; else SIGSTOP, then SIGCONT this much later.
    pub(super) stop_for: Option<Duration>,
}

/// Delivers a [`Fault`] from a launcher's supervision loop.
pub(crate) struct Injector {
    fault: Option<Fault>,
    /// The pid stopped, to resume, and when it was stopped.
    stopped: Option<(u32, Duration)>,
}

impl Injector {
    pub(crate) fn new(fault: Option<Fault>) -> Injector {
        Injector { fault, stopped: None }
    }

    /// Called every turn of the loop with the time since the start; `pid(rank)` is the
    /// rank's process while it runs (and where this launcher can signal it).
    pub(crate) fn tick(&mut self, elapsed: Duration, pid: impl Fn(usize) -> Option<u32>) {
        let Some(f) = self.fault else { return };
        if elapsed < f.at {
            return;
        }
        let signal = |p: u32, sig: i32| {
            // SAFETY: kill has no memory preconditions; `p` is one of the job's ranks.
            unsafe { libc::kill(p as i32, sig) };
        };
        match (f.stop_for, self.stopped) {
            // (Under mpirun the rank's pid may not be known yet: tried again, up to 5 s.)
            (None, _) => match pid(f.rank) {
                Some(p) => {
                    signal(p, libc::SIGKILL);
                    self.fault = None;
                }
                None if elapsed >= f.at + Duration::from_secs(5) => {
                    eprintln!("launch: rank {}'s process was not found to kill; no fault injected", f.rank);
                    self.fault = None;
                }
                None => {}
            },
            (Some(_), None) => match pid(f.rank) {
                Some(p) => {
                    signal(p, libc::SIGSTOP);
                    self.stopped = Some((p, elapsed));
                }
                // Not there (yet, under mpirun; or gone): nothing to stop.
                None if elapsed >= f.at + Duration::from_secs(5) => {
                    eprintln!("launch: rank {}'s process was not found to stop; no fault injected", f.rank);
                    self.fault = None;
                }
                None => {}
            },
            (Some(d), Some((p, since))) => {
                if elapsed >= since + d {
                    signal(p, libc::SIGCONT);
                    self.fault = None;
                }
            }
        }
    }
}

/// A thread of the launcher, or an error saying why it cannot have one (a process out of
/// memory or threads, `ulimit -v`/`ulimit -u`), instead of a panic.
pub(crate) fn spawn_thread<F: FnOnce() + Send + 'static>(what: &str, f: F) -> Result<std::thread::JoinHandle<()>> {
    // Small stacks: a pump reads lines into a buffer (a 2 MiB default stack per thread,
    // two threads per rank, is what a `ulimit -v` runs out of).
    std::thread::Builder::new().stack_size(256 << 10).spawn(f).map_err(|e| Error::Backend {
        backend: "launch",
        msg: format!(
            "cannot start a thread for {what}: {e}; the launcher needs two threads per rank it starts (raise the \
             memory or thread limit, `ulimit -v` / `ulimit -u`, or start fewer ranks)"
        ),
        source: Some(Box::new(e)),
    })
}

/// Pumps `stream` (a rank's or mpirun's stdout or stderr) line by line on a thread of its
/// own: `each` records a line (with its newline, added where the stream ended without
/// one) and says what to show of it, if anything; unless the launcher captures the
/// output, that goes to this process's stderr (`is_err`) or stdout, a whole line a write.
pub(crate) fn pump_lines(
    what: &str,
    stream: impl std::io::Read + Send + 'static,
    is_err: bool,
    capture: bool,
    mut each: impl FnMut(&[u8]) -> Option<Vec<u8>> + Send + 'static,
) -> Result<std::thread::JoinHandle<()>> {
    use std::io::{BufRead, Write};
    spawn_thread(what, move || {
        let mut r = std::io::BufReader::new(stream);
        let mut line = Vec::new();
        while let Ok(n) = r.read_until(b'\n', &mut line) {
            if n == 0 {
                break;
            }
            if !line.ends_with(b"\n") {
                line.push(b'\n');
            }
            let shown = each(&line);
            if let (false, Some(shown)) = (capture, shown) {
                let mut out: Box<dyn Write> =
                    if is_err { Box::new(std::io::stderr().lock()) } else { Box::new(std::io::stdout().lock()) };
                let _ = out.write_all(&shown);
                let _ = out.flush();
            }
            line.clear();
        }
    })
}
