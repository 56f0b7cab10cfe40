//! Records the optimisation level dist-runtime itself is compiled at, so a launcher can
//! say once that an unoptimised runtime (a user's plain dev profile) makes collectives
//! ~25x slower, and what to add to Cargo.toml.
fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let level = std::env::var("OPT_LEVEL").unwrap_or_else(|_| "unknown".into());
    println!("cargo:rustc-env=DIST_RUNTIME_OPT_LEVEL={level}");
}
