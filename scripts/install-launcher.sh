# Sourced by the user-facing checks: installs `cargo spmd` from this checkout, as the
# README tells users to (`cargo install --path cargo-spmd`), into the target directory,
# and puts it first on PATH. Expects `root` (the checkout) to be set.
spmd_target="${CARGO_TARGET_DIR:-$root/target}"
cargo install --quiet --locked --path "$root/cargo-spmd" --root "$spmd_target/spmd-install" \
  --target-dir "$spmd_target/spmd-install-build"
export PATH="$spmd_target/spmd-install/bin:$PATH"
