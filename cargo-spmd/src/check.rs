//! `cargo spmd check`: what the compile-time communication check proved, per entry.
//!
//! Builds the package's targets (`cargo build --all-targets`) with `DIST_CHECK_REPORT`
//! set, so that every `#[spmd]` entry the build expands appends one JSON line (its file,
//! the world sizes proven, those the program does not support by design, those left to
//! the run-time checks, each construct the check could not follow with its line and why,
//! and its first error). The package's sources are touched first, so that every entry
//! is expanded again. The build is `cargo spmd run`'s (the same profile overrides, so the
//! check runs in an optimised dist-macros), so after a run only the package itself is
//! compiled again; `cargo check` would build every dependency a second time, as metadata,
//! and the macro unoptimised.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

/// Arguments of `cargo spmd check`.
#[derive(clap::Args, Debug, Default)]
pub struct CheckArgs {
    /// Check this package of the workspace (default: the one in the current directory).
    #[arg(short = 'p', long)]
    pub package: Option<String>,
    /// Print the JSON lines as the macro wrote them, not the table.
    #[arg(long)]
    pub json: bool,
    /// Build exactly with the package's profile (as `cargo spmd run --exact-profile`),
    /// without the overrides that optimise dist-runtime and dist-macros.
    #[arg(long)]
    pub exact_profile: bool,
}

/// The `.rs` files under `dir` (not `target/`), to touch.
fn sources(dir: &Path, out: &mut Vec<PathBuf>, depth: usize) {
    let Ok(rd) = std::fs::read_dir(dir) else { return };
    for e in rd.flatten() {
        let p = e.path();
        let name = e.file_name();
        if p.is_dir() && depth < 8 && name != "target" && !name.to_string_lossy().starts_with('.') {
            sources(&p, out, depth + 1);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// A string field of a JSON line written by the macro (its own flat format).
fn field<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    let at = line.find(&format!("\"{key}\":"))? + key.len() + 3;
    let rest = &line[at..];
    let end = if let Some(inner) = rest.strip_prefix('"') {
        let mut esc = false;
        inner
            .char_indices()
            .find(|&(_, c)| {
                let stop = c == '"' && !esc;
                esc = c == '\\' && !esc;
                stop
            })?
            .0
            + 2
    } else if rest.starts_with('[') {
        let mut depth = 0;
        rest.char_indices()
            .find(|&(_, c)| {
                depth += (c == '[') as i32 - (c == ']') as i32;
                depth == 0
            })?
            .0
            + 1
    } else {
        rest.find([',', '}'])?
    };
    Some(&rest[..end])
}

fn unquote(s: &str) -> String {
    s.trim_matches('"').replace("\\\"", "\"").replace("\\n", "\n").replace("\\\\", "\\")
}

/// Runs the check and prints, per entry, the sizes proven and what was not followed.
pub fn check(a: CheckArgs) -> Result<ExitCode, String> {
    let dir = std::env::current_dir().map_err(|e| e.to_string())?;
    let report = std::env::temp_dir().join(format!("dist-check-{}.jsonl", std::process::id()));
    let _ = std::fs::remove_file(&report);
    let mut files = Vec::new();
    sources(&dir, &mut files, 0);
    let now = std::time::SystemTime::now();
    for f in &files {
        if let Ok(file) = std::fs::File::options().append(true).open(f) {
            let _ = file.set_modified(now);
        }
    }
    let mut cmd = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    cmd.args(["build", "--all-targets", "--message-format", "short"]);
    if !a.exact_profile {
        for o in crate::DEV_OVERRIDES {
            cmd.args(["--config", o]);
        }
    }
    if let Some(p) = &a.package {
        cmd.args(["-p", p]);
    }
    let status = cmd.env("DIST_CHECK_REPORT", &report).status().map_err(|e| format!("cargo build: {e}"))?;
    let text = std::fs::read_to_string(&report).unwrap_or_default();
    let _ = std::fs::remove_file(&report);
    if a.json {
        print!("{text}");
    } else {
        let mut lines: Vec<&str> = text.lines().collect();
        lines.sort();
        lines.dedup();
        if lines.is_empty() {
            println!("no #[spmd] entry was checked (none in this package, or all are #[spmd(unchecked)])");
        }
        for l in lines {
            let get = |k: &str| field(l, k).unwrap_or("");
            println!(
                "{}: `{}`{}\n  proven at world sizes {}; not supported by design: {}; left to run time: {}",
                unquote(get("file")),
                unquote(get("entry")),
                if get("strict") == "true" { " (strict)" } else { "" },
                get("proven"),
                get("unsupported"),
                get("open"),
            );
            let unf = get("unfollowed");
            for item in unf.split("{\"line\":").skip(1) {
                let line = item.split(',').next().unwrap_or("?");
                let what = field(&format!("{{\"line\":{item}"), "what").map(unquote).unwrap_or_default();
                println!("  not followed (line {line}): {what}");
            }
            if get("error") != "null" && !get("error").is_empty() {
                println!("  error: {}", unquote(get("error")));
            }
        }
        if !text.is_empty() {
            println!(
                "\"proven\": at each size listed, every rank's calls pair up, in every run the check makes: numbers \
                 read from the program's arguments, environment or files taken as 1, 2 and 3 and as the argument \
                 parser's defaults, each condition on data the same on every rank taken each way in turn. Lengths \
                 and counts computed from data, and what other input values do, are left to the run-time checks \
                 (docs/static-checks.md)."
            );
        }
    }
    Ok(if status.success() { ExitCode::SUCCESS } else { ExitCode::from(1) })
}
