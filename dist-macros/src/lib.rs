//! Procedural macros of dist, re-exported by `dist-runtime`: use them as
//! `dist_runtime::spmd` and `dist_runtime::test`.
//!
//! Each macro is a thin shim: parse the arguments (`args`), check the function's shape
//! (`check`), then expand (`expand`). On an error the original item is emitted beside
//! the `compile_error!`, so the rest of the crate still type-checks.
#![deny(missing_docs)]

mod args;
mod check;
mod expand;

use proc_macro::TokenStream;

/// Makes a function an SPMD entry point, checked at compile time.
///
/// On `fn main(world: Comm<World>) [-> R]`, generates the process's `main`: join the job
/// from the environment, run the body as this rank, and turn an `Err` or a panic into a
/// non-zero exit with a `[rank k]` message. On any other `fn name(world: Comm<World>)`,
/// the function stays as written and is also registered as an entry, in any module or
/// file, that `cargo spmd run --entry name` (or `DIST_ENTRY=path::name`) starts, and
/// that `dist_runtime::launch(n, name)` runs on n ranks from code.
///
/// `R` is `()` or `Result<T, E>` with `T: Serialize + DeserializeOwned` (each rank's `T`
/// comes back from `dist_runtime::launch`) and `E: Display`.
///
/// ```ignore
/// use dist_runtime::prelude::*;
///
/// #[spmd]
/// fn main(world: Comm<World>) -> dist_runtime::Result<()> {
///     let mut x = [world.rank() as u64];
///     world.all_reduce(&mut x, ReduceOp::Sum)?;
///     Ok(())
/// }
/// ```
///
/// Equivalent code without the macro, for `main` (plus the registration of the body in
/// the binary's entry table, and the compile-time check):
///
/// ```ignore
/// fn main() {
///     let code = dist_runtime::__private::run_rank(|world| {
///         dist_runtime::__private::finish_entry(body(world))
///     });
///     std::process::exit(code)
/// }
/// ```
///
/// ## The compile-time communication check, and its options
///
/// The body is interpreted once per rank at world sizes 1 to 8; a send without its
/// recv, a deadlock under rendezvous semantics, a peer out of range, or a collective
/// that ranks reach differently is a compile error at the call (docs/static-checks.md).
/// What depends on data the check cannot see is left to the run-time checks.
///
/// - `#[spmd(ranks = 4)]`: check at world size 4 only (a program written for one size).
/// - `#[spmd(sizes = 2..=16)]`: check every world size from 2 to 16 (up to 64).
/// - `#[spmd(strict)]`: what the check cannot decide is an error, not left to run time:
///   the whole communication pattern is then proven at those sizes.
/// - `#[spmd(unchecked)]`: no compile-time check (for a program that is wrong on
///   purpose, to exercise the run-time checks; or to silence a verdict you know to be
///   wrong: please report it). Run-time checks still apply.
///
/// Options combine: `#[spmd(strict, sizes = 2..=8)]`.
#[proc_macro_attribute]
pub fn spmd(attr: TokenStream, item: TokenStream) -> TokenStream {
    expand::spmd(attr.into(), item.into()).into()
}

/// A distributed test, run under plain `cargo test` (or nextest) as real rank
/// processes. It may sit in any module or file: unit tests in `mod tests` blocks,
/// integration tests under `tests/`.
///
/// ```ignore
/// use dist_runtime::prelude::*;
///
/// #[dist_runtime::test(ranks = [1, 2, 4], timeout = 30)]
/// fn sums(world: Comm<World>) {
///     let mut x = [1u64];
///     world.all_reduce(&mut x, ReduceOp::Sum).unwrap();
///     assert_eq!(x[0], world.size() as u64);
/// }
/// ```
///
/// Expands to the function (renamed), its registration as an entry, and a `#[test]` that
/// calls `dist_runtime::__private::run_test(path, &[1, 2, 4], 30.0)`, which re-executes
/// the test binary as the ranks and fails with every failing rank's output.
/// Options: `ranks = N` or `ranks = [..]` (one run per world size; default 2),
/// `timeout = SECS` (default 60; the ranks get 80% of it as `DIST_TIMEOUT`, so a hang
/// reports what each rank waits for). Other attributes (`#[ignore]`,
/// `#[should_panic]`) pass through to the `#[test]`.
#[proc_macro_attribute]
pub fn test(attr: TokenStream, item: TokenStream) -> TokenStream {
    expand::test(attr.into(), item.into()).into()
}
