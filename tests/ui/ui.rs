//! Compile-time behaviour: misuse of the macros is an error spanned on the culprit that
//! says what to write instead; typed communicators and tags turn mix-ups into type
//! errors; a buffer in flight can't be touched. Expected output lives beside each case
//! (`TRYBUILD=overwrite cargo test -p dist-ui` regenerates it; review the diff).
//!
//! The programs the check must accept (`pass/`) are this crate's binaries, not trybuild
//! cases: `cargo test` builds them (a rejected one fails the build, naming its line), and
//! `accepted_programs_run` runs each. So trybuild only type-checks (`cargo check`), and
//! the dependencies it compiles in its own target directory need no code generated.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("spmd/*.rs");
    t.compile_fail("test/*.rs");
    t.compile_fail("types/*.rs");
    t.compile_fail("check/*.rs");
}

/// The cases under `pass/`, by name.
fn pass_cases() -> Vec<String> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("pass");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.strip_suffix(".rs").map(str::to_owned))
        .collect();
    names.sort();
    names
}

/// The `[[bin]]` names Cargo.toml lists.
fn listed_bins() -> Vec<String> {
    let manifest = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml")).unwrap();
    let mut names: Vec<String> = manifest
        .split("[[bin]]")
        .skip(1)
        .filter_map(|b| b.lines().find_map(|l| l.strip_prefix("name = \"")?.strip_suffix('"').map(str::to_owned)))
        .collect();
    names.sort();
    names
}

/// The directory cargo put this crate's binaries in: this test's own executable is in
/// its `deps/` folder.
fn bin_dir() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    exe.parent().and_then(Path::parent).expect("the test binary sits in target/<profile>/deps").to_owned()
}

#[test]
fn every_accepted_program_is_a_binary() {
    assert_eq!(
        pass_cases(),
        listed_bins(),
        "each file under tests/ui/pass/ needs a [[bin]] entry in tests/ui/Cargo.toml (name = the file's stem), and each entry its file"
    );
}

#[test]
fn accepted_programs_run() {
    for name in pass_cases() {
        let exe = bin_dir().join(&name);
        assert!(exe.exists(), "{}: not built (is it listed as a [[bin]] in tests/ui/Cargo.toml?)", exe.display());
        let mut child = Command::new(&exe).spawn().unwrap_or_else(|e| panic!("{name}: {e}"));
        let until = Instant::now() + Duration::from_secs(60);
        let status = loop {
            if let Some(s) = child.try_wait().unwrap() {
                break s;
            }
            if Instant::now() > until {
                let _ = child.kill();
                panic!("pass/{name}.rs: still running after 60 s");
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        assert!(status.success(), "pass/{name}.rs: exited with {status}");
    }
}
