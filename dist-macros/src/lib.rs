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

/// Makes a function an SPMD entry point.
///
/// On `fn main(world: Comm<World>) [-> R]`, generates the process's `main`: join the job
/// from the environment, run the body as this rank, and turn an `Err` or a panic into a
/// non-zero exit with a `[rank k]` message. On any other `fn name(world: Comm<World>)`,
/// the function stays as written and is also registered as an entry that
/// `cargo xtask run --entry name` or `dist_runtime::launch(n, "name")` starts.
///
/// `R` is `()` or `Result<T, E>` with `T: Serialize + DeserializeOwned` (each rank's `T`
/// comes back from `dist_runtime::launch`) and `E: Display`.
///
/// Equivalent code without the macro, for `main`:
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
/// Options: `#[spmd(ranks = N)]`, `#[spmd(sizes = A..=B)]` and `#[spmd(strict)]` select
/// the world sizes and strictness of the compile-time communication check.
#[proc_macro_attribute]
pub fn spmd(attr: TokenStream, item: TokenStream) -> TokenStream {
    expand::spmd(attr.into(), item.into()).into()
}

/// A distributed test, run under plain `cargo test` as real rank processes.
///
/// ```ignore
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
/// Options: `ranks = N` or `ranks = [..]` (default 2), `timeout = SECS` (default 60).
#[proc_macro_attribute]
pub fn test(attr: TokenStream, item: TokenStream) -> TokenStream {
    expand::test(attr.into(), item.into()).into()
}
