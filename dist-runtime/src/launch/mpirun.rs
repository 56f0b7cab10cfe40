//! Starting a job under `mpirun`: the path of [`Launch`](crate::Launch) for the MPI
//! backend (`DIST_BACKEND=mpi`), used by `cargo spmd run --backend mpi`, the test
//! harness and `dist_runtime::launch`. MPI's launcher starts the ranks (on this host, or
//! on the hosts of `--hostfile`); this side keeps what the shared-memory launcher gives:
//! each rank's output (from mpirun's `--tag-output` lines) prefixed or captured, each
//! rank's exit code (reported by the rank through the launcher's store, which also
//! carries results), the first failing rank, and the timeout.

use crate::error::{Error, Result};
use crate::launch::{Launch, RankExit, Report};
use crate::store::StoreServer;
use std::ffi::OsString;
use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The mpirun program: `DIST_MPIRUN`, else `mpirun` on the PATH.
fn mpirun() -> OsString {
    std::env::var_os("DIST_MPIRUN").unwrap_or_else(|| "mpirun".into())
}

pub(crate) fn run(l: &Launch, token: &str) -> Result<Report> {
    // Ranks on other hosts reach the launcher's store (exit codes, results) at
    // DIST_LAUNCHER_ADDR, this host's address on the network they share.
    let addr = std::env::var("DIST_LAUNCHER_ADDR").unwrap_or_else(|_| "127.0.0.1".into());
    let store = StoreServer::bind(format!("{addr}:0").as_str(), token)?;
    let port = store.addr().port().to_string();
    let start = Instant::now();
    let mut cmd = Command::new(mpirun());
    // Variables for the ranks: set on mpirun and exported with -x.
    let mut vars: Vec<(OsString, OsString)> = vec![
        ("DIST_BACKEND".into(), "mpi".into()),
        ("MASTER_ADDR".into(), addr.clone().into()),
        ("MASTER_PORT".into(), port.into()),
        ("DIST_JOB_TOKEN".into(), token.into()),
        ("DIST_EXIT_REPORT".into(), "1".into()),
    ];
    let user_timeout = l.envs.iter().any(|(k, _)| k == "DIST_TIMEOUT") || std::env::var_os("DIST_TIMEOUT").is_some();
    if let (Some(t), false) = (l.timeout, user_timeout) {
        vars.push(("DIST_TIMEOUT".into(), format!("{:.3}", (t.as_secs_f64() * 0.8).max(0.5)).into()));
    }
    vars.extend(l.envs.iter().cloned());
    // Variables of this process the ranks read (DIST_*, RUST_*): exported as well.
    for (k, _) in std::env::vars_os() {
        let s = k.to_string_lossy();
        if (s.starts_with("DIST_") || s.starts_with("RUST_"))
            && !vars.iter().any(|(v, _)| *v == k)
            && !l.removed.contains(&k)
        {
            vars.push((k.clone(), std::env::var_os(&k).unwrap_or_default()));
        }
    }
    cmd.arg("-np").arg(l.n.to_string()).arg("--tag-output");
    if std::env::var_os("DIST_MPIRUN_ARGS").is_none() {
        cmd.arg("--oversubscribe");
        // More ranks than cores: Open MPI's progress loop must yield, or a waiting rank
        // takes the core its peer needs (a ping-pong gets ~100x slower).
        if l.n > std::thread::available_parallelism().map_or(1, |c| c.get()) {
            cmd.args(["--mca", "mpi_yield_when_idle", "1"]);
        }
    }
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        cmd.arg("--allow-run-as-root");
    }
    if let Some(extra) = std::env::var_os("DIST_MPIRUN_ARGS") {
        cmd.args(extra.to_string_lossy().split_whitespace());
    }
    cmd.args(&l.mpirun_args);
    for k in &l.removed {
        cmd.env_remove(k);
    }
    for (k, v) in &vars {
        cmd.env(k, v).arg("-x").arg(k);
    }
    cmd.arg(&l.program).args(&l.args).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = cmd.spawn().map_err(|e| Error::Backend {
        backend: "launch",
        msg: format!(
            "cannot start {} for the MPI backend: {e} (install an MPI, e.g. apt install openmpi-bin, or set \
             DIST_MPIRUN)",
            mpirun().to_string_lossy()
        ),
        source: Some(Box::new(e)),
    })?;
    let outputs: Arc<Vec<Mutex<Vec<u8>>>> = Arc::new((0..l.n).map(|_| Mutex::new(Vec::new())).collect());
    let launcher_out = Arc::new(Mutex::new(Vec::new()));
    let pumps = [
        pump(child.stdout.take().expect("piped"), false, l, outputs.clone(), launcher_out.clone()),
        pump(child.stderr.take().expect("piped"), true, l, outputs.clone(), launcher_out.clone()),
    ];
    let mut timed_out = false;
    let mut term_at: Option<Instant> = None;
    // When every rank has reported its exit and mpirun still runs long after, mpirun is
    // stuck in its own teardown (Open MPI 4.1's mpirun can deadlock when one rank aborts
    // while another finalizes, its ranks all gone): stop it rather than wait for the
    // timeout. The grace covers a rank's own end after its report (its linger and abort).
    const TEARDOWN_GRACE: Duration = Duration::from_secs(4);
    let mut all_reported: Option<Instant> = None;
    let mut looked = Instant::now();
    let mut stuck_teardown = false;
    let status = loop {
        if let Some(s) = child.try_wait().map_err(|e| Error::backend("launch", format!("waiting for mpirun: {e}")))? {
            break s;
        }
        if all_reported.is_none() && looked.elapsed() >= Duration::from_millis(50) {
            looked = Instant::now();
            if (0..l.n).all(|r| store.get_local(&format!("exit/{r}")).is_some()) {
                all_reported = Some(Instant::now());
            }
        }
        if all_reported.is_some_and(|t| t.elapsed() >= TEARDOWN_GRACE) && term_at.is_none() {
            stuck_teardown = true;
            // SAFETY: signalling our own child.
            unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
            term_at = Some(Instant::now());
        }
        if l.timeout.is_some_and(|t| start.elapsed() >= t) && term_at.is_none() {
            timed_out = true;
            // mpirun passes SIGTERM on to the ranks; SIGKILL if it does not end.
            // SAFETY: signalling our own child.
            unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
            term_at = Some(Instant::now());
        }
        if term_at.is_some_and(|t| t.elapsed() > Duration::from_secs(3)) {
            let _ = child.kill();
        }
        std::thread::sleep(Duration::from_millis(2));
    };
    for p in pumps {
        let _ = p.join();
    }
    let launcher_text = String::from_utf8_lossy(&launcher_out.lock().unwrap_or_else(|p| p.into_inner())).into_owned();
    let ranks: Vec<RankExit> = (0..l.n)
        .map(|r| {
            let code =
                store.get_local(&format!("exit/{r}")).and_then(|v| String::from_utf8_lossy(&v).parse::<i32>().ok());
            let mut output =
                String::from_utf8_lossy(&outputs[r].lock().unwrap_or_else(|p| p.into_inner())).into_owned();
            if code.is_none() && !launcher_text.is_empty() {
                output.push_str(&launcher_text);
            }
            RankExit {
                rank: r,
                pid: 0,
                code,
                signal: if code.is_none() { Some(libc::SIGKILL) } else { None },
                killed_by_launcher: code.is_none() && (timed_out || !status.success()),
                output,
            }
        })
        .collect();
    let mut ranks = ranks;
    if stuck_teardown {
        ranks[0].output.push_str(&format!(
            "mpirun did not exit {}s after every rank had reported its exit; stopped (Open MPI's teardown hung):\n{launcher_text}",
            TEARDOWN_GRACE.as_secs()
        ));
    } else if !status.success() && !timed_out && ranks.iter().all(RankExit::success) {
        // Every rank reported success, then something failed in teardown (MPI_Finalize,
        // an abort): the job did not succeed; rank 0 carries mpirun's account of it.
        ranks[0].code = Some(status.code().unwrap_or(1));
        ranks[0].output.push_str(&format!(
            "mpirun exited with {status} after every rank reported success (a failure in teardown):\n{launcher_text}"
        ));
    }
    let failing: Vec<usize> = (0..l.n).filter(|&r| ranks[r].code.is_some_and(|c| c != 0)).collect();
    let mut first_failure = failing.iter().copied().find(|&i| ranks[i].code != Some(3)).or(failing.first().copied());
    // Only victims reported: one of them may have named the cause (a rank that returned
    // early while it waited on it, or a deadlock's culprit), as on the other launchers.
    let named = |key: &str, exited_ok: bool| {
        (0..l.n).filter(|&i| !exited_ok || ranks[i].success()).find_map(|i| {
            let what = store.get_local(&format!("{key}/{i}"))?;
            Some((i, String::from_utf8_lossy(&what).into_owned()))
        })
    };
    let only_victims = |f: Option<usize>| f.is_some_and(|i| ranks[i].code == Some(3));
    let (mut left_early, mut cause) = (None, None);
    if only_victims(first_failure) {
        if let Some((i, what)) = named("left", true) {
            left_early = Some(what);
            first_failure = Some(i);
        } else if let Some((i, what)) = named("cause", false) {
            cause = Some(what);
            first_failure = Some(i);
        }
    }
    let first_failure =
        first_failure.or_else(|| (!status.success()).then(|| ranks.iter().position(|r| !r.success())).flatten());
    let results = (0..l.n).map(|r| store.get_local(&format!("result/{r}"))).collect();
    let dumps: Vec<(usize, String)> = (0..l.n)
        .filter(|&i| !ranks[i].success())
        .filter_map(|i| Some((i, String::from_utf8_lossy(&store.get_local(&format!("flight/{i}"))?).into_owned())))
        .collect();
    let flight = Some(crate::verify::recorder::line_up(&dumps)).filter(|s| !s.is_empty());
    Ok(Report {
        ranks,
        first_failure,
        remote_failure: None,
        left_early,
        cause,
        flight,
        timed_out,
        elapsed: start.elapsed(),
        results,
        joined: None,
    })
}

/// Routes mpirun's `--tag-output` lines (`[1,R]<stdout>:text`) to rank R: prefixed
/// with `[rank R]` on our output, or captured. Untagged lines are mpirun's own.
fn pump(
    stream: impl Read + Send + 'static,
    is_err: bool,
    l: &Launch,
    outputs: Arc<Vec<Mutex<Vec<u8>>>>,
    launcher: Arc<Mutex<Vec<u8>>>,
) -> std::thread::JoinHandle<()> {
    let (capture, prefixed) = (l.capture, l.prefix);
    std::thread::spawn(move || {
        let mut r = BufReader::new(stream);
        let mut line = Vec::new();
        while let Ok(n) = r.read_until(b'\n', &mut line) {
            if n == 0 {
                break;
            }
            if !line.ends_with(b"\n") {
                line.push(b'\n');
            }
            let text = String::from_utf8_lossy(&line).into_owned();
            let tagged = parse_tag(&text).filter(|(rank, _)| *rank < outputs.len());
            let shown = match &tagged {
                Some((rank, body)) => {
                    let mut s = outputs[*rank].lock().unwrap_or_else(|p| p.into_inner());
                    s.extend_from_slice(body.as_bytes());
                    let pre = format!("[rank {rank}] ");
                    if prefixed && !body.starts_with(&pre) {
                        format!("{pre}{body}")
                    } else {
                        body.to_string()
                    }
                }
                None => {
                    launcher.lock().unwrap_or_else(|p| p.into_inner()).extend_from_slice(line.as_slice());
                    text.clone()
                }
            };
            if !capture {
                let mut out: Box<dyn Write> =
                    if is_err { Box::new(std::io::stderr().lock()) } else { Box::new(std::io::stdout().lock()) };
                let _ = out.write_all(shown.as_bytes());
                let _ = out.flush();
            }
            line.clear();
        }
    })
}

/// `[1,3]<stdout>:text` → (3, "text"). mpirun tags each write, so a line written in
/// pieces carries the tag again inside; those are removed.
fn parse_tag(line: &str) -> Option<(usize, String)> {
    let rest = line.strip_prefix('[')?;
    let (ids, rest) = rest.split_once(']')?;
    let rank = ids.split(',').nth(1)?.parse().ok()?;
    let (stream, body) = ["<stdout>:", "<stderr>:"].into_iter().find_map(|t| rest.strip_prefix(t).map(|b| (t, b)))?;
    let tag = format!("[{ids}]{stream}");
    Some((rank, body.replace(&tag, "")))
}

#[cfg(test)]
mod tests {
    #[test]
    fn tags_are_parsed() {
        assert_eq!(super::parse_tag("[1,3]<stdout>:hello\n"), Some((3, "hello\n".into())));
        assert_eq!(super::parse_tag("[1,0]<stderr>:[rank 0] error\n"), Some((0, "[rank 0] error\n".into())));
        // One line written in pieces: tagged per piece.
        let pieces = "[1,1]<stderr>:[rank [1,1]<stderr>:1[1,1]<stderr>:] panicked\n";
        assert_eq!(super::parse_tag(pieces), Some((1, "[rank 1] panicked\n".into())));
        assert_eq!(super::parse_tag("mpirun noticed that\n"), None);
    }
}
