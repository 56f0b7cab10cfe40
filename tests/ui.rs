//! Compile-time behaviour: misuse of the macros is an error spanned on the culprit that
//! says what to write instead; typed communicators and tags turn mix-ups into type
//! errors; a buffer in flight can't be touched. Expected output lives beside each case
//! (`TRYBUILD=overwrite cargo test --test ui` regenerates it; review the diff).

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("ui/spmd/*.rs");
    t.compile_fail("ui/test/*.rs");
    t.compile_fail("ui/types/*.rs");
    t.compile_fail("ui/check/*.rs");
    t.pass("ui/pass/*.rs");
}
