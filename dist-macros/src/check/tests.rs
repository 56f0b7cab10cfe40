//! The communication check's unit tests: programs in strings, checked at chosen world
//! sizes, their verdicts asserted.

use super::sizes;

/// The check's errors as one `Result`, as the macro reports them.
fn communication(f: &syn::ItemFn, sizes: &[usize], strict: bool) -> syn::Result<()> {
    match super::communication(f, sizes, strict).errors {
        Some(e) => Err(e),
        None => Ok(()),
    }
}
use std::fmt::Write;

/// A 200-line entry point with loops: pipeline stages over microbatches, a ring
/// exchange, a halo in a batch, collectives on a mesh when the size allows.
fn big_function() -> String {
    function_of_blocks(9)
}

/// An entry point of `blocks` blocks of 23 lines (a pipeline over 8 microbatches, a
/// ring of `sendrecv`, a halo `batch`, an `all_reduce`), each on its own tags.
fn function_of_blocks(blocks: usize) -> String {
    let mut s =
        String::from("fn main(world: Comm<World>) -> Result<()> {\n    let (r, n) = (world.rank(), world.size());\n");
    for k in 0..blocks {
        write!(
            s,
            r#"
for mb in 0..8 {{
    let mut act = [0.0f32; 4];
    if r > 0 {{
        world.recv(r - 1, Tag::<f32>::new({t}), &mut act)?;
    }}
    if r + 1 < n {{
        world.send(r + 1, Tag::<f32>::new({t}), &act)?;
    }}
    let _ = mb;
}}
for step in 0..n - 1 {{
    let mut got = [0u64; 2];
    world.sendrecv((r + 1) % n, Tag::<u64>::new({u}), &[step as u64; 2], (r + n - 1) % n, &mut got)?;
}}
let (mut a, mut b) = ([0.0f32], [0.0f32]);
world.batch(|x| {{
    x.send((r + 1) % n, Tag::<f32>::new({v}), &[1.0]);
    x.recv((r + n - 1) % n, Tag::<f32>::new({v}), &mut a);
    x.send((r + n - 1) % n, Tag::<f32>::new({w}), &[2.0]);
    x.recv((r + 1) % n, Tag::<f32>::new({w}), &mut b);
}})?;
world.all_reduce(&mut a, ReduceOp::Sum)?;
"#,
            t = 10 * k,
            u = 10 * k + 1,
            v = 10 * k + 2,
            w = 10 * k + 3
        )
        .unwrap();
    }
    s.push_str("    Ok(())\n}\n");
    s
}

#[test]
fn a_200_line_function_is_checked_quickly() {
    let src = big_function();
    assert!(src.lines().count() >= 200, "{} lines", src.lines().count());
    let f: syn::ItemFn = syn::parse_str(&src).unwrap();
    let t = std::time::Instant::now();
    communication(&f, &sizes(Some((1, 8))), true).unwrap();
    // A figure for docs/static-checks.md, not an assertion: timings go in benchmarks.
    eprintln!("checked {} lines at sizes 1..=8 in {:.1} ms", src.lines().count(), t.elapsed().as_secs_f64() * 1e3);
    let (_, steps8) = timed(&f, &sizes(Some((1, 8))));
    let (ms, steps) = timed(&f, &sizes(None));
    eprintln!(
        "checked {} lines at the default sizes in {ms:.1} ms ({steps} steps; {steps8} at 1..=8)",
        src.lines().count()
    );
}

/// Checks `f` at `sizes` (strict); its time in ms and the interpreter steps it took.
fn timed(f: &syn::ItemFn, sizes: &[usize]) -> (f64, u64) {
    let (t, s0) = (std::time::Instant::now(), super::interp::total_steps());
    communication(f, sizes, true).unwrap();
    (t.elapsed().as_secs_f64() * 1e3, super::interp::total_steps() - s0)
}

/// The cost table's 1 000-line row (docs/static-checks.md): 44 blocks, default sizes.
#[test]
fn a_1000_line_function_is_checked() {
    let src = function_of_blocks(44);
    assert!(src.lines().count() >= 1000, "{} lines", src.lines().count());
    let f: syn::ItemFn = syn::parse_str(&src).unwrap();
    let (ms, steps) = timed(&f, &sizes(None));
    // A figure for docs/static-checks.md, not an assertion: timings go in benchmarks.
    eprintln!("checked {} lines at the default sizes in {ms:.1} ms ({steps} steps)", src.lines().count());
}

#[test]
fn a_loop_over_every_rank_at_1024_ranks_is_checked() {
    // Rank 0 gathers from every other rank by p2p, then all reduce: at 1024 ranks
    // that is 1023 receives on rank 0 and a send on each other rank.
    let src = r#"fn main(world: Comm<World>) -> Result<()> {
        let (r, n) = (world.rank(), world.size());
        const T: Tag<u64> = Tag::new(1);
        if r == 0 {
            for q in 1..n {
                let mut v = [0u64];
                world.recv(q, T, &mut v)?;
            }
        } else {
            world.send(0, T, &[r as u64])?;
        }
        let mut s = [1u64];
        world.all_reduce(&mut s, ReduceOp::Sum)?;
        Ok(())
    }"#;
    let f: syn::ItemFn = syn::parse_str(src).unwrap();
    let all = sizes(Some((1, 1024)));
    assert!(all.contains(&1024) && all.contains(&513) && all.len() < 50, "{all:?}");
    let t = std::time::Instant::now();
    communication(&f, &all, true).unwrap();
    eprintln!("checked a gather loop at {} sizes up to 1024 in {:.1} ms", all.len(), t.elapsed().as_secs_f64() * 1e3);
    // The same loop, one receive short at the largest size: found there.
    let bad = src.replace("for q in 1..n {", "for q in 1..n.min(1023) {");
    let e = communication(&syn::parse_str(&bad).unwrap(), &[1024], true).unwrap_err().to_string();
    assert!(e.contains("world size 1024") && e.contains("no matching `recv`"), "{e}");
}

#[test]
fn device_ops_are_checked_in_stream_order() {
    let src = r#"fn main(world: Comm<World>) -> Result<()> {
        let stream = world.stream()?;
        let peer = 1 - world.rank();
        let x = stream.clone_htod(&[1.0f32; 4])?;
        let mut y = stream.alloc_zeros::<f32>(4)?;
        world.send(peer, Tag::<f32>::new(1), &x)?;
        world.recv(peer, Tag::<f32>::new(1), &mut y)?;
        Ok(())
    }"#;
    let f: syn::ItemFn = syn::parse_str(src).unwrap();
    let e = communication(&f, &sizes(Some((2, 2))), true).unwrap_err().to_string();
    assert!(e.starts_with("deadlock at world size 2"), "{e}");
    let fixed = src.replace(
        "world.send(peer, Tag::<f32>::new(1), &x)?;\n        world.recv(peer, Tag::<f32>::new(1), &mut y)?;",
        "world.batch(|b| { b.send(peer, Tag::<f32>::new(1), &x); b.recv(peer, Tag::<f32>::new(1), &mut y); })?;",
    );
    assert_ne!(fixed, src);
    communication(&syn::parse_str(&fixed).unwrap(), &sizes(Some((2, 2))), true).unwrap();
}

#[test]
fn a_deadlock_in_the_big_function_is_found() {
    // Turn the first sendrecv into a send followed by a recv: a ring that deadlocks.
    let src = big_function().replacen(
        "world.sendrecv((r + 1) % n, Tag::<u64>::new(1), &[step as u64; 2], (r + n - 1) % n, &mut got)?;",
        "world.send((r + 1) % n, Tag::<u64>::new(1), &[step as u64; 2])?; world.recv((r + n - 1) % n, Tag::<u64>::new(1), &mut got)?;",
        1,
    );
    let f: syn::ItemFn = syn::parse_str(&src).unwrap();
    let e = communication(&f, &sizes(Some((1, 8))), false).unwrap_err().to_string();
    assert!(e.starts_with("deadlock at world size 2"), "{e}");
}

/// rustc gives macros line numbers; rust-analyzer does not (every span reads as the
/// same place). The message must then not name a wrong line.
#[test]
fn lines_are_named_only_where_the_front_end_gives_them() {
    let src = "fn main(world: Comm<World>) -> Result<()> {\n    let peer = 1 - world.rank();\n    \
               world.send(peer, Tag::<f32>::new(1), &[1.0])?;\n    \
               world.recv(peer, Tag::<f32>::new(1), &mut [0.0])?;\n    Ok(())\n}";
    let with_lines: syn::ItemFn = syn::parse_str(src).unwrap();
    let e = communication(&with_lines, &sizes(Some((2, 2))), false).unwrap_err().to_string();
    assert!(e.contains("line 3"), "{e}");
    // Tokens built without positions, as an IDE's macro server hands them over.
    let tokens: proc_macro2::TokenStream = src.parse().unwrap();
    let flat: proc_macro2::TokenStream = tokens.into_iter().map(strip_spans).collect();
    let without: syn::ItemFn = syn::parse2(flat).unwrap();
    let e = communication(&without, &sizes(Some((2, 2))), false).unwrap_err().to_string();
    assert!(!e.contains("line "), "{e}");
    assert!(e.contains("the call marked here"), "{e}");
}

fn strip_spans(t: proc_macro2::TokenTree) -> proc_macro2::TokenTree {
    use proc_macro2::{Group, Span, TokenTree};
    let mut t = match t {
        TokenTree::Group(g) => {
            TokenTree::Group(Group::new(g.delimiter(), g.stream().into_iter().map(strip_spans).collect()))
        }
        other => other,
    };
    t.set_span(Span::call_site());
    t
}

/// Errors found at one world size, with the file's consts as `same_file_items` gives them.
fn problems(src: &str, consts: &str, n: usize) -> Vec<String> {
    // (As `communication` does: the caches are by syntax address, and the last
    // call's syntax is gone.)
    super::interp::reset_caches();
    let f: syn::ItemFn = syn::parse_str(src).unwrap();
    super::interp::set_written_fields(std::iter::once(("", &f)));
    let consts: Vec<syn::ItemConst> = syn::parse_str::<syn::File>(consts)
        .unwrap()
        .items
        .into_iter()
        .filter_map(|i| if let syn::Item::Const(c) = i { Some(c) } else { None })
        .collect();
    let macros = super::parse_macros(&f);
    let file = std::collections::HashMap::new();
    let no_splits = super::Splits::new();
    let consts = super::interp::eval_consts(&consts, &no_splits, &macros, &file);
    match super::check_size_for_inputs(&f, n, &macros, &file, &consts, &Default::default()) {
        super::SizeResult::Problems(e) => e.iter().map(|e| e.to_string()).collect(),
        super::SizeResult::Clean => vec![],
        super::SizeResult::Fails => vec!["fails".into()],
        super::SizeResult::Undecidable(_, what) => vec![format!("undecidable: {what}")],
    }
}

/// A condition on data that differs from rank to rank (what an all-to-all or a
/// receive from a neighbour delivered), whose code communicates or leaves early: the
/// ranks whose data was computed from different values take different branches, so a
/// collective some skip is an error naming the condition; a condition whose branches
/// communicate alike, or one on a reduced value, is accepted; a root computed from
/// such data is an error too. Data that every rank computes alike (nothing tells
/// the ranks apart) stays a construct not followed.
#[test]
fn conditions_on_rank_local_data_are_decided_per_rank() {
    let src = r#"fn moe(world: Comm<World>) -> dist_runtime::Result<()> {
        let (r, n) = (world.rank(), world.size());
        let send = vec![1u64; n];
        let mut got = vec![0u64; n];
        world.all_to_all(&send, &mut got)?;
        let total: u64 = got.iter().sum();
        let mut h = [0.0f64];
        world.sendrecv((r + 1) % n, T, &[r as f64], (r + n - 1) % n, &mut h)?;
        BODY
        Ok(())
    }"#;
    let c = "const T: Tag<f64> = Tag::new(1);";
    let with = |body: &str| src.replace("BODY", body);
    for n in 2..=4 {
        // Both branches communicate alike: whichever way each rank goes, it matches.
        let alike = with("if total == 0 { world.barrier()?; } else { world.barrier()?; }");
        assert_eq!(problems(&alike, c, n), Vec::<String>::new(), "size {n}");
        // Agreed first: every rank leaves together.
        let reduced = with(
            "let mut g = [total as f64]; world.all_reduce(&mut g, ReduceOp::Sum)?; \
             if g[0] == 0.0 { return Ok(()); } world.barrier()?;",
        );
        assert_eq!(problems(&reduced, c, n), Vec::<String>::new(), "size {n}");
    }
    // Skipping a collective when this rank received nothing.
    let e = problems(&with("if total == 0 { return Ok(()); } world.barrier()?;"), c, 3);
    assert!(
        e[0].contains("`barrier`") && e[0].contains("reached by") && e[0].contains("the condition `total == 0`"),
        "{e:?}"
    );
    // On what the left neighbour sent.
    let e = problems(&with("while h[0] > 0.5 { world.barrier()?; h[0] = 0.0; }"), c, 3);
    assert!(e[0].contains("`barrier`") && e[0].contains("`h[0] > 0.5`"), "{e:?}");
    // A root from local data.
    let e = problems(&with("let root = if h[0] > 0.5 { r } else { 0 }; world.broadcast(&mut h, root)?;"), c, 3);
    assert!(e[0].contains("may be called with different roots") && e[0].contains("`root`"), "{e:?}");
    // Data the check cannot tell apart across ranks: not followed, as before.
    let same = with("let v = unknown_fn(); if v > 0.5 { world.barrier()?; }");
    assert!(problems(&same, c, 3)[0].starts_with("undecidable"), "{:?}", problems(&same, c, 3));
}

/// Buffer lengths: a receive posted with another length than the message it takes,
/// a `_v` collective whose buffers disagree with its counts, counts that differ
/// across ranks (known, or data computed from different values), `all_to_all_v`
/// counts that do not pair up, a root passing `None`: each an error at the op; the
/// same programs with consistent lengths pass.
#[test]
fn buffer_lengths_are_checked() {
    let src = r#"fn f(world: Comm<World>) -> dist_runtime::Result<()> {
        let (r, n) = (world.rank(), world.size());
        BODY
        Ok(())
    }"#;
    let c = "const T: Tag<f64> = Tag::new(1);";
    let with = |body: &str| src.replace("BODY", body);
    let ring = "let mut got = vec![0.0; A]; \
                world.sendrecv((r + 1) % n, T, &vec![1.0; B], (r + n - 1) % n, &mut got)?;";
    let gather = "let counts: Vec<usize> = (0..n).map(|j| j + 1).collect(); \
                  let mine = vec![1.0f64; SEND]; \
                  if r == 0 { let mut all = vec![0.0; TOTAL]; world.gather_v(&mine, Some(&mut all[..]), &counts, 0)?; } \
                  else { world.gather_v(&mine, None, &counts, 0)?; }";
    let a2a = "let sc: Vec<usize> = (0..n).map(|j| r + j).collect(); \
               let rc: Vec<usize> = (0..n).map(|i| RECV).collect(); \
               let send = vec![0u32; sc.iter().sum()]; let mut recv = vec![0u32; rc.iter().sum()]; \
               world.all_to_all_v(&send, &sc, &mut recv, &rc)?;";
    for n in 2..=4 {
        for ok in [
            ring.replace("A", "3").replace("B", "3"),
            gather.replace("SEND", "r + 1").replace("TOTAL", "n * (n + 1) / 2"),
            a2a.replace("RECV", "i + r"),
            "let mut all = vec![0u8; 2 * n]; world.all_gather(&[1u8, 2], &mut all)?;".into(),
        ] {
            assert_eq!(problems(&with(&ok), c, n), Vec::<String>::new(), "size {n}: {ok}");
        }
        let e = problems(&with(&ring.replace("A", "4").replace("B", "3")), c, n);
        assert!(e[0].contains("takes 4 elements") && e[0].contains("has 3 elements"), "{e:?}");
        let e = problems(&with(&gather.replace("SEND", "2").replace("TOTAL", "n * (n + 1) / 2")), c, n);
        assert!(e[0].contains("`gather_v` on rank") && e[0].contains("must have 1 (`counts[0]`)"), "{e:?}");
        let e = problems(&with(&gather.replace("SEND", "r + 1").replace("TOTAL", "n * n")), c, n);
        assert!(e[0].contains("its receive buffer `Some(&mut all[..])`") && e[0].contains("the sum of"), "{e:?}");
        let e = problems(&with(&a2a.replace("RECV", "i")), c, n);
        assert!(e[0].contains("what each rank sends another must be what that rank expects"), "{e:?}");
        let e = problems(&with("let mut all = vec![0u8; n]; world.all_gather(&[1u8, 2], &mut all)?;"), c, n);
        assert!(e[0].contains("size() × send.len()"), "{e:?}");
        let e = problems(
            &with(
                "let k = vec![r; n]; let mut all = vec![0u8; k.iter().sum()]; \
                                world.all_gather_v(&vec![1u8; r], &mut all, &k)?;",
            ),
            c,
            n,
        );
        assert!(e[0].contains("different counts"), "{e:?}");
        // Counts from what each rank received: data that differs from rank to rank.
        let e = problems(
            &with(
                "let mut mine = [0u64]; let all: Vec<u64> = (0..n as u64).collect(); \
                   world.scatter(if r == 0 { Some(&all[..]) } else { None }, &mut mine, 0)?; \
                   let k = vec![mine[0] as usize; n]; let mut out = vec![0u8; 4 * n]; \
                   world.all_gather_v(&vec![1u8; 4], &mut out, &k)?;",
            ),
            c,
            n,
        );
        assert!(e[0].contains("may be called with different counts"), "{e:?}");
        let e = problems(&with("let mut all = vec![0u8; n]; world.gather(&[1u8], None, 0)?;"), c, n);
        assert!(e[0].contains("is the root and must pass `Some(..)`"), "{e:?}");
    }
}

/// k-means as written elsewhere: centroids start from a broadcast written in through
/// `iter_mut().zip(..)`, are recomputed each step by a helper that divides reduced
/// sums by reduced counts under `if counts[c] > 0` (a loop counter indexing a
/// reduced list), and the loop stops when the largest shift (a `fold` over them) is
/// small. All of that is the same on every rank, so the early `return` is followed
/// on every rank alike; a test of the rank's own count before the reduction is not.
#[test]
fn values_computed_alike_from_reduced_data_are_followed() {
    let src = r#"fn f(world: Comm<World>) -> dist_runtime::Result<()> {
        fn centroids_from(sums: &[i64], counts: &[i64], old: &[f64]) -> Vec<f64> {
            let mut next = old.to_vec();
            for c in 0..counts.len() {
                if counts[c] > 0 {
                    for d in 0..2 {
                        next[c * 2 + d] = sums[c * 2 + d] as f64 / counts[c] as f64;
                    }
                }
            }
            next
        }
        fn max_shift(a: &[f64], b: &[f64]) -> f64 {
            a.iter().zip(b).map(|(x, y)| (x - y).abs()).fold(0.0, f64::max)
        }
        let k: usize = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(4);
        let mut cent = vec![0.0; k * 2];
        let mut buf = [0i64; 2];
        world.broadcast(&mut buf, 0)?;
        for (dst, &x) in cent[0..2].iter_mut().zip(&buf) {
            *dst = x as f64;
        }
        let mut next_buf = vec![0.0; 4];
        std::mem::swap(&mut cent, &mut next_buf);
        std::mem::swap(&mut cent, &mut next_buf);
        for it in 0..5 {
            let mine = (world.rank() + it) as i64;
            let mut sums = vec![mine; k * 2];
            let mut counts = vec![1i64; k];
            BUG
            world.all_reduce(&mut sums, ReduceOp::Sum)?;
            world.all_reduce(&mut counts, ReduceOp::Sum)?;
            let next = centroids_from(&sums, &counts, &cent);
            let shift = max_shift(&cent, &next);
            cent = next;
            if shift <= 0.5 { return Ok(()); }
        }
        world.all_reduce(&mut cent, ReduceOp::Sum)?;
        Ok(())
    }"#;
    for n in 1..=4 {
        assert_eq!(problems(&src.replace("BUG", ""), "", n), Vec::<String>::new(), "size {n}");
    }
    // The rank's own block stopped moving: it leaves, the others reduce.
    let bad = src.replace("BUG", "if mine == 1 && it > 0 { return Ok(()); }");
    let e = problems(&bad, "", 3);
    assert!(e[0].contains("`all_reduce`") && e[0].contains("reached by"), "{e:?}");
}

/// A residual reduced along a 2-D grid's rows, then its columns, is the same on every
/// rank, as one reduced over the world: a loop on it that communicates is followed
/// (at grid sizes and where a dimension is 1 alike); reduced along the rows only, it
/// differs from row to row, and the world's collective in the loop is found.
#[test]
fn a_reduction_along_rows_then_columns_is_the_same_everywhere() {
    let src = r#"fn f(world: Comm<World>) -> dist_runtime::Result<()> {
        let n = world.size();
        let a = if n % 2 == 0 { 2 } else { 1 };
        let (col, row) = world.mesh2::<Cols, Rows>(a, n / a)?;
        let me = world.rank() as f64;
        let mut res = 1.0;
        let mut it = 0;
        while res > 0.1 && it < 50 {
            let mut s = [me * 0.5 / (it as f64 + 1.0)];
            row.all_reduce(&mut s, ReduceOp::Sum)?;
            COLUMN
            res = s[0].sqrt();
            it += 1;
            world.barrier()?;
        }
        Ok(())
    }"#;
    let both = src.replace("COLUMN", "col.all_reduce(&mut s, ReduceOp::Sum)?;");
    for n in 1..=8 {
        assert_eq!(problems(&both, "", n), Vec::<String>::new(), "size {n}");
    }
    // Reduced along the rows only, the residual differs from row to row: the rows
    // leave the loop at different trips, and the world's barrier in it is found.
    let rows_only = src.replace("COLUMN", "");
    let e = problems(&rows_only, "", 4);
    assert!(e.iter().any(|e| e.contains("`barrier` on the world") && e.contains("goes one way on rank 0")), "{e:?}");
    // Ranks that combine different row sums (one's `a`, another's `b`) hold different
    // values after the column's reduction: the branch on it differs, and the
    // collective in it is reached by some ranks only.
    let picked = r#"fn f(world: Comm<World>) -> dist_runtime::Result<()> {
        let (col, row) = world.mesh2::<Cols, Rows>(2, world.size() / 2)?;
        let me = world.rank() as f64;
        let mut a = [me];
        row.all_reduce(&mut a, ReduceOp::Sum)?;
        let mut b = [2.0 * me];
        row.all_reduce(&mut b, ReduceOp::Sum)?;
        let mut s = if world.rank() % 2 == 0 { a } else { b };
        col.all_reduce(&mut s, ReduceOp::Sum)?;
        if s[0] > 8.0 { world.barrier()?; }
        Ok(())
    }"#;
    let e = problems(picked, "", 4);
    assert!(e.iter().any(|e| e.contains("barrier") && !e.contains("undecidable")), "{e:?}");
    // A branch on what an all-gather over a row delivered differs from row to row.
    let gathered = r#"fn f(world: Comm<World>) -> dist_runtime::Result<()> {
        let (_col, row) = world.mesh2::<Cols, Rows>(2, world.size() / 2)?;
        let me = world.rank() as f64;
        let mut all = vec![0.0; row.size()];
        row.all_gather(&[me], &mut all)?;
        if all[0] > 1.0 { world.barrier()?; }
        Ok(())
    }"#;
    let e = problems(gathered, "", 4);
    assert!(!e.is_empty(), "a branch on a row's all-gather was taken as the same everywhere");
}

/// A struct a helper builds from the same values on every rank (a problem of the
/// inputs' size, too large to run within the quota, so summarised) is exact data of
/// them: its `n` bounds a loop that communicates (reversed here), which is followed,
/// and a collective that rank 0 alone makes in it is found.
#[test]
fn a_loop_bounded_by_a_helper_built_size_is_followed() {
    let src = r#"fn f(world: Comm<World>) -> dist_runtime::Result<()> {
        struct Sys { n: usize, a: Vec<u64> }
        fn random(n: usize, seed: u64) -> Sys {
            let mut s = seed;
            let a: Vec<u64> = (0..n * n).map(|i| { s = s.wrapping_mul(6364136223846793005) ^ i as u64; s >> 11 }).collect();
            Sys { n, a }
        }
        let sys = random(90, 7);
        let n = sys.n;
        for k in (0..n).rev() {
            let mut s = [sys.a.len() as f64];
            world.reduce(&mut s, ReduceOp::Sum, k % world.size())?;
            EXTRA
        }
        Ok(())
    }"#;
    let clean = src.replace("EXTRA", "");
    for n in 1..=4 {
        assert_eq!(problems(&clean, "", n), Vec::<String>::new(), "size {n}");
    }
    let bug = src.replace("EXTRA", "if world.rank() == 0 { world.barrier()?; }");
    let e = problems(&bug, "", 2);
    assert!(e.iter().any(|e| e.contains("barrier") && !e.contains("undecidable")), "{e:?}");
}

/// A training loop with an early stop on a reduced loss is also run as one that
/// does not stop soon: what rank 0 alone does every 25 steps is found.
#[test]
fn a_collective_every_25_steps_on_one_rank_is_found() {
    let src = r#"fn f(world: Comm<World>) -> dist_runtime::Result<()> {
        let mut loss = [1.0f64];
        for step in 1..=400 {
            world.all_reduce(&mut loss, ReduceOp::Sum)?;
            if world.rank() == 0 && step % 25 == 0 { LOG }
            if loss[0] < 1e-3 { break; }
        }
        Ok(())
    }"#;
    assert_eq!(problems(&src.replace("LOG", ""), "", 2), Vec::<String>::new());
    let e = problems(&src.replace("LOG", "world.all_reduce(&mut [0.5f64], ReduceOp::Max)?;"), "", 2);
    assert!(e.iter().any(|e| e.contains("all_reduce") && !e.contains("undecidable")), "{e:?}");
}

/// Code that cannot communicate, at any depth, is data processing whatever it is
/// given: a helper taking the communicator (for its rank) with a `continue` on data
/// in its loop is summarised, not left not followed; one that calls a helper that
/// communicates is still followed.
#[test]
fn a_helper_given_the_communicator_that_never_communicates_is_summarised() {
    let src = r#"fn f(world: Comm<World>) -> dist_runtime::Result<()> {
        const T: Tag<f64> = Tag::new(1);
        fn accumulate(c: &Comm<World>, xs: &[f64], acc: &mut f64) {
            let me = c.rank() as f64;
            for x in xs {
                if *x > me { continue; }
                *acc += x;
            }
        }
        let (r, n) = (world.rank(), world.size());
        let mut got = vec![0.0; 4];
        world.sendrecv((r + 1) % n, T, &[r as f64; 4], (r + n - 1) % n, &mut got)?;
        let mut acc = 0.0;
        accumulate(&world, &got, &mut acc);
        let mut total = [acc];
        world.all_reduce(&mut total, ReduceOp::Sum)?;
        Ok(())
    }"#;
    for n in 1..=4 {
        assert_eq!(problems(src, "", n), Vec::<String>::new(), "size {n}");
    }
}

/// Flags parsed by a helper that is given the program's arguments (a `HashMap` of
/// `--key value` pairs, read back and parsed) are the program's inputs: a `--tp`
/// read that way shapes the mesh, sampled like any input number.
#[test]
fn flags_parsed_through_a_map_by_a_helper_are_inputs() {
    let src = r#"fn f(world: Comm<World>) -> Result<(), String> {
        fn parse(args: impl IntoIterator<Item = String>) -> Result<HashMap<String, String>, String> {
            let mut flags = HashMap::new();
            let mut it = args.into_iter();
            while let Some(a) = it.next() {
                let Some(name) = a.strip_prefix("--") else { return Err(format!("not a flag: {a}")) };
                let v = it.next().ok_or_else(|| format!("--{name} needs a value"))?;
                flags.insert(name.to_string(), v);
            }
            Ok(flags)
        }
        let flags = parse(std::env::args().skip(1))?;
        let tp: usize = flags.get("tp").cloned().unwrap_or_else(|| "1".into()).parse().map_err(|_| "--tp".to_string())?;
        let n = world.size();
        if tp == 0 || n % tp != 0 {
            return Err(format!("--tp {tp} does not divide {n}"));
        }
        let (dp, tpc) = world.mesh2::<Dp, Tp>(n / tp, tp).map_err(|e| e.to_string())?;
        let mut x = [1.0];
        tpc.all_reduce(&mut x, ReduceOp::Sum).map_err(|e| e.to_string())?;
        dp.all_reduce(&mut x, ReduceOp::Sum).map_err(|e| e.to_string())?;
        Ok(())
    }"#;
    for n in 1..=4 {
        assert_eq!(problems(src, "", n), Vec::<String>::new(), "size {n}");
    }
}

/// A bucket plan built the way DDP builds one: `match plan.last_mut() { Some(b) if
/// .. => b.push(t), _ => plan.push(vec![t]) }` over sizes from `params.iter().map(
/// Vec::len)` of layers made by `windows(2).flat_map(..)`. What the arm does through
/// `b` goes back into the plan, so the plan's buckets are known and the per-bucket
/// collectives are followed (the plan as data would leave the loop not followed).
#[test]
fn writes_through_last_mut_are_followed() {
    let src = r#"fn f(world: Comm<World>) -> dist_runtime::Result<()> {
        fn plan_buckets(shapes: &[usize], cap: usize) -> Vec<Vec<usize>> {
            let mut plan: Vec<Vec<usize>> = Vec::new();
            let mut used = 0;
            for t in (0..shapes.len()).rev() {
                match plan.last_mut() {
                    Some(bucket) if used + shapes[t] <= cap => bucket.push(t),
                    _ => {
                        plan.push(vec![t]);
                        used = 0;
                    }
                }
                used += shapes[t];
            }
            plan
        }
        let h: usize = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(4);
        let dims = vec![3, h, h, 1];
        let params: Vec<Vec<f64>> = dims
            .windows(2)
            .flat_map(|w| {
                let weight: Vec<f64> = (0..w[0] * w[1]).map(|_| 0.5).collect();
                [weight, vec![0.0; w[1]]]
            })
            .collect();
        let shapes: Vec<usize> = params.iter().map(Vec::len).collect();
        let plan = plan_buckets(&shapes, 8);
        let mut next = 0;
        while next < plan.len() && plan[next].iter().all(|&t| t < shapes.len()) {
            let mut flat = vec![0.0f64; plan[next].iter().map(|&t| shapes[t]).sum()];
            world.all_reduce(&mut flat, ReduceOp::Sum)?;
            next += 1;
        }
        BUG
        Ok(())
    }"#;
    for n in 1..=3 {
        assert_eq!(problems(&src.replace("BUG", ""), "", n), Vec::<String>::new(), "size {n}");
    }
    let bad = src.replace("BUG", "if world.rank() == 0 && plan[0].len() > 0 { world.barrier()?; }");
    assert!(problems(&bad, "", 2)[0].contains("`barrier`"), "{:?}", problems(&bad, "", 2));
}

/// What a receive writes is data: an `assert_eq!` on it must not read the buffer's
/// initial value, decide that the rank panics, and so take the size for one the
/// program does not support (which hid the unmatched self-messages below).
#[test]
fn received_data_is_not_the_initial_value() {
    let src = r#"fn probe(world: Comm<World>) -> dist_runtime::Result<()> {
        if world.size() < 2 { return Ok(()); }
        let r = world.rank();
        let mut got = [0i64];
        if let Some(p) = world.subgroup::<Half>(&[1, 0])? {
            if r == 1 { p.send(1, T, &[10])?; } else { p.recv(0, T, &mut got)?; assert_eq!(got[0], 10); }
        }
        if let Some(p) = world.subgroup_ordered::<Tp>(&[1, 0])? {
            if r == 1 { p.send(1, T, &[11])?; } else { p.recv(0, T, &mut got)?; assert_eq!(got[0], 11); }
        }
        Ok(())
    }"#;
    let consts = "const T: Tag<i64> = Tag::new(1);";
    for n in 2..=4 {
        let e = problems(src, consts, n);
        assert_eq!(e.len(), 2, "{e:?}");
        assert!(
            e[0].starts_with(&format!(
                "this `recv` on rank 0 from rank 0 (tag `T` on `Half`) has no matching `send` at world size {n}"
            )),
            "{e:?}"
        );
        assert!(
            e[1].starts_with("this `send` from rank 1 to rank 1 (tag `T` on `Half`) has no matching `recv`"),
            "{e:?}"
        );
    }
    // The right numbering is accepted.
    let fixed = src.replacen("if r == 1", "if r == 0", 1);
    assert_ne!(fixed, src);
    for n in 1..=4 {
        assert_eq!(problems(&fixed, consts, n), Vec::<String>::new());
    }
}

/// Every way a buffer is written leaves its elements unknown and its length known;
/// a helper's writes through `&mut` come back; a known element store is exact.
#[test]
fn writes_through_mut_are_followed() {
    let src = r#"fn w(world: Comm<World>) -> dist_runtime::Result<()> {
        let mut a = [0i64; 2];
        let mut b = vec![0i64; 3];
        let mut c = [0i64];
        let mut k = 0usize;
        world.all_reduce(&mut a, ReduceOp::Sum)?;
        world.broadcast(b.as_mut_slice(), 0)?;
        bump(&mut k);
        c[0] = 7;
        if a.len() == 2 && b.len() == 3 && k == 1 && c[0] == 7 {
            world.barrier()?;
        }
        assert_eq!(a[0], 5);
        assert_eq!(b[1], 5);
        Ok(())
    }"#;
    let f: syn::ItemFn = syn::parse_str(src).unwrap();
    let helper: syn::ItemFn = syn::parse_str("fn bump(k: &mut usize) { *k += 1; }").unwrap();
    let file = std::collections::HashMap::from([("bump".to_string(), helper)]);
    let macros = super::parse_macros(&f);
    let no_splits = super::Splits::new();
    for n in 1..=3 {
        let mut it = super::Interp::new(0, n, &no_splits, &macros, &file, Default::default());
        assert!(matches!(it.run(&f), super::Outcome::Done), "at size {n}");
        let kinds: Vec<&str> = it.events.iter().map(|e| e.call()).collect();
        assert_eq!(kinds.iter().filter(|k| **k == "barrier").count(), 2, "{kinds:?}");
    }
}

/// A loop counted by a number from the command line (the same on every rank under
/// the launcher) is followed: a correct pipeline passes at every size; a bug that
/// shows only from the second iteration on is found, and says which input value.
#[test]
fn loops_counted_by_program_inputs_are_checked() {
    let src = r#"fn train(world: Comm<World>) -> dist_runtime::Result<()> {
        let steps: usize = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(10);
        let (r, n) = (world.rank(), world.size());
        let mut x = [0f32; 4];
        for step in 0..steps {
            if r > 0 { world.recv(r - 1, T, &mut x)?; }
            if r + 1 < n { world.send(r + 1, T, &x)?; }
            world.all_reduce(&mut x, ReduceOp::Sum)?;
            if BUG && step == 1 && r == 0 { world.barrier()?; }
        }
        Ok(())
    }"#;
    let good = src.replace("BUG", "false");
    for n in 1..=5 {
        assert_eq!(problems(&good, "const T: Tag<f32> = Tag::new(1);", n), Vec::<String>::new(), "size {n}");
    }
    let bad = src.replace("BUG", "true");
    let e = problems(&bad, "const T: Tag<f32> = Tag::new(1);", 2);
    assert!(e.iter().any(|m| m.contains("barrier") && m.contains("is 2")), "{e:?}");
    // From the environment too, through `map`.
    let env = good.replace(
        "std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(10)",
        r#"std::env::var("STEPS").map(|v| v.parse::<usize>().unwrap()).unwrap_or(3)"#,
    );
    assert_ne!(env, good);
    assert_eq!(problems(&env, "const T: Tag<f32> = Tag::new(1);", 3), Vec::<String>::new());
}

/// A convergence loop: its condition is a residual reduced over every rank, the same
/// on every rank, so the ranks leave it together. The loop is followed (its body
/// communicates), a bug inside it is found, and a bug that only a later pass shows
/// (an early `break` at the second test) names the pattern.
#[test]
fn loops_on_values_reduced_over_every_rank_are_followed() {
    let src = r#"fn cg(world: Comm<World>) -> dist_runtime::Result<()> {
        let (r, n) = (world.rank(), world.size());
        let tol = 1e-6;
        let mut res = [1.0f64];
        world.all_reduce(&mut res, ReduceOp::Sum)?;
        let mut it = 0;
        while it < 100 && res[0].sqrt() > tol * 2.0 {
            let right = (r + 1) % n;
            let left = (r + n - 1) % n;
            let mut halo = [0.0f64];
            world.sendrecv(right, T, &[1.0], left, &mut halo)?;
            let mut s = [halo[0] * 0.5];
            world.all_reduce(&mut s, ReduceOp::Sum)?;
            res = s;
            it += 1;
            if SECOND { if res[0] < tol { break; } }
            if BUG && it == 2 && r == 0 { world.barrier()?; }
        }
        Ok(())
    }"#;
    let c = "const T: Tag<f64> = Tag::new(1);";
    let good = src.replace("BUG", "false").replace("SECOND", "true");
    for n in 1..=4 {
        assert_eq!(problems(&good, c, n), Vec::<String>::new(), "size {n}");
    }
    let bad = src.replace("BUG", "true").replace("SECOND", "false");
    let e = problems(&bad, c, 3);
    assert!(e.iter().any(|m| m.contains("barrier") && m.contains("true the first two times")), "{e:?}");
    // Reduced over part of the ranks only: not the same everywhere, not followed.
    let part = good.replace(
        "world.all_reduce(&mut s, ReduceOp::Sum)?;",
        "if let Some(g) = world.subgroup::<Half>(&[0, 1])? { g.all_reduce(&mut s, ReduceOp::Sum)?; }",
    );
    assert!(problems(&part, c, 3)[0].starts_with("undecidable"), "{:?}", problems(&part, c, 3));
    // A rank's own value mixed in: not the same everywhere, and the ranks leaving the
    // loop at different tests is an error, saying which condition and ranks.
    let mixed = good.replace("res[0].sqrt() > tol * 2.0", "res[0].sqrt() > tol * r as f64");
    let e = problems(&mixed, c, 3);
    assert!(
        e[0].contains("reached by rank 0 but not")
            && e[0].contains("goes one way on rank 0 and the other way on rank 1"),
        "{e:?}"
    );
    // An item of a gather picked by rank is this rank's.
    let gathered = good.replace(
        "let mut it = 0;",
        "let mut all = [0.0f64; 8]; world.all_gather(&[1.0], &mut all[..n])?; let mut it = 0;",
    );
    assert_eq!(problems(&gathered, c, 3), Vec::<String>::new());
}

/// A flag from the command line choosing between two ways to communicate: both are
/// checked (each run takes one), and a bug in either is found.
#[test]
fn a_flag_from_the_inputs_choosing_the_communication_is_followed() {
    let src = r#"fn ring(world: Comm<World>) -> dist_runtime::Result<()> {
        let batched = std::env::args().any(|a| a == "--batched");
        let mode = std::env::var("MODE").unwrap_or_default();
        let (r, n) = (world.rank(), world.size());
        let (next, prev) = ((r + 1) % n, (r + n - 1) % n);
        let mut got = [0u32];
        if batched {
            world.batch(|b| { b.send(next, T, &[1])?; b.recv(prev, T, &mut got)?; Ok(()) })?;
        } else {
            world.sendrecv(next, T, &[1], prev, &mut got)?;
        }
        match mode.as_str() {
            "sum" => world.all_reduce(&mut got, ReduceOp::Sum)?,
            "first" => world.broadcast(&mut got, 0)?,
            _ => {}
        }
        Ok(())
    }"#;
    let c = "const T: Tag<u32> = Tag::new(1);";
    for n in 1..=4 {
        assert_eq!(problems(src, c, n), Vec::<String>::new(), "size {n}");
    }
    let bad = src.replace("b.recv(prev, T, &mut got)?;", "if r != 0 { b.recv(prev, T, &mut got)?; }");
    assert!(problems(&bad, c, 3).iter().any(|m| m.contains("no matching `recv`")), "{:?}", problems(&bad, c, 3));
    let bad = src.replace("world.broadcast(&mut got, 0)?", "world.broadcast(&mut got, r)?");
    assert!(!problems(&bad, c, 3).is_empty());
}

/// `strict`'s rule, over generated programs: a value that may differ across ranks
/// (a per-rank environment variable, the process id, a received value, a gathered
/// item picked by rank, a reduced value mixed with the rank), passed through any of
/// several ordinary transformations into any argument every rank must pass alike (a
/// root, a reduce op, a peer, a split color, a rank list, a mesh shape) or into the
/// condition or count of code that communicates, is never accepted under `strict`.
/// The same programs with the value taken from `size()`, a constant or the command
/// line are accepted (or refused for a real problem, never for "data").
#[test]
fn strict_never_accepts_an_agreeing_argument_that_depends_on_rank_local_data() {
    let local = [
        r#"std::env::var("LOCAL_RANK").map(|v| v.parse::<usize>().unwrap()).unwrap_or(0)"#,
        "std::process::id() as usize",
        "{ let mut b = [0usize]; world.sendrecv((r + 1) % n, T, &[r], (r + n - 1) % n, &mut b)?; b[0] }",
        "{ let mut all = [0usize; 16]; world.all_gather(&[r], &mut all[..n])?; all[r] }",
        "{ let mut s = [1.5f64]; world.all_reduce(&mut s, ReduceOp::Sum)?; (s[0] * r as f64) as usize }",
    ];
    // (A number reduced over every rank is the same everywhere too, but as a root it
    // is refused: the check cannot bound it, nor tell `n` in `v % n` from a rank.)
    let uniform = ["n", "3", "std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(2)"];
    let transforms = ["v", "v + 1", "v % n", "v.min(n - 1)", "if v > 3 { 0 } else { 1 }", "usize::from(v > 2)"];
    // Each uses `k`; the sizes that cannot hold its shape are guarded.
    let sinks = [
        "let mut x = [1.0f32; 4]; world.broadcast(&mut x, k % n)?;",
        "let mut x = [1.0f32; 4]; world.reduce(&mut x, ReduceOp::Sum, k % n)?;",
        "let op = if k > 1 { ReduceOp::Sum } else { ReduceOp::Max }; let mut x = [1.0f32]; world.all_reduce(&mut x, op)?;",
        "if k > 2 { world.barrier()?; }",
        "for _ in 0..(k % 4) { world.barrier()?; }",
        "let g = world.split::<G>((k % 2) as u32, r as i64)?; g.barrier()?;",
        "if let Some(g) = world.subgroup::<G>(&[k % n])? { g.barrier()?; }",
        "if n % 2 == 0 { let d = 1 + (k % 2); if n % d == 0 { let (a, _b) = world.mesh2::<G, H>(n / d, d)?; a.barrier()?; } }",
        "if r == 0 && n > 1 { world.send(1 + k % (n - 1), T, &[r])?; } else if r > 0 { let mut b = [0usize]; world.recv(0, T, &mut b)?; }",
    ];
    let consts = "const T: Tag<usize> = Tag::new(1);";
    let program = |src: &str, t: &str, sink: &str| {
        format!(
            "fn p(world: Comm<World>) -> dist_runtime::Result<()> {{\n let (r, n) = (world.rank(), world.size());\n \
             let v: usize = {src};\n let k: usize = {t};\n {sink}\n Ok(())\n}}"
        )
    };
    super::interp::set_strict(true);
    let mut accepted = Vec::new();
    for src in local {
        for t in transforms {
            for sink in sinks {
                let p = program(src, t, sink);
                // Accepted: no size refuses it.
                if (2..=4).all(|n| problems(&p, consts, n).is_empty()) {
                    accepted.push(p);
                }
            }
        }
    }
    let mut refused = Vec::new();
    for src in uniform {
        for sink in sinks {
            let p = program(src, "v", sink);
            for n in 2..=4 {
                let e = problems(&p, consts, n);
                if e.iter().any(|m| m.starts_with("undecidable")) {
                    refused.push(format!("size {n}: {e:?}\n{p}"));
                    break;
                }
            }
        }
    }
    super::interp::set_strict(false);
    assert!(accepted.is_empty(), "strict accepted {} program(s); the first:\n{}", accepted.len(), accepted[0]);
    assert!(refused.is_empty(), "strict refused {} uniform program(s); the first:\n{}", refused.len(), refused[0]);
}

/// A parameter vector built as `w.iter().copied().chain(std::iter::once(b)).collect()`
/// has `w.len() + 1` items: a gather buffer sized from `w.len()` is found.
#[test]
fn iterators_of_known_length_keep_their_length() {
    let src = r#"fn f(world: Comm<World>) -> dist_runtime::Result<()> {
        struct Model { w: Vec<f64>, b: f64 }
        fn flat(m: &Model) -> Vec<f64> {
            m.w.iter().copied().chain(std::iter::once(m.b)).collect()
        }
        let features: usize = std::env::args().nth(1).unwrap().parse().unwrap();
        let model = Model { w: vec![0.0; features], b: 0.0 };
        let flat = flat(&model);
        let width = flat.len();
        if world.rank() == 0 {
            let mut all = vec![0.0; LEN * world.size()];
            world.gather(&flat, Some(&mut all[..]), 0)?;
        } else {
            world.gather(&flat, None, 0)?;
        }
        Ok(())
    }"#;
    assert_eq!(problems(&src.replace("LEN", "width"), "", 2), Vec::<String>::new());
    let e = problems(&src.replace("LEN", "model.w.len()"), "", 2);
    assert!(e.iter().any(|e| e.contains("gather") && e.contains("must have")), "{e:?}");
}

/// A loop summarised past its quota computes from what it goes over: ranks that
/// generate their own rows (`for i in my_rows`) hold different data after it, so an
/// early stop on a loss computed from it is decided rank by rank, and a rank leaving
/// the training loop before the others is found.
#[test]
fn a_summarised_loop_computes_from_what_it_goes_over() {
    let src = r#"fn f(world: Comm<World>) -> dist_runtime::Result<()> {
        let (r, n) = (world.rank(), world.size());
        let rows = 5000 * r..5000 * (r + 1);
        let mut x = Vec::new();
        for i in rows {
            let v = ((i * 7919) % 1000) as f64 / 1000.0;
            x.push(v * v);
        }
        let mut w = [0.5f64];
        for step in 0..400 {
            world.all_reduce(&mut w, ReduceOp::Sum)?;
            let loss = x.iter().map(|v| (v - w[0]).abs()).sum::<f64>() / x.len() as f64;
            if COND < 0.01 { break; }
            let _ = (step, n);
        }
        world.barrier()?;
        Ok(())
    }"#;
    assert_eq!(problems(&src.replace("COND", "w[0]"), "", 2), Vec::<String>::new());
    let e = problems(&src.replace("COND", "loss"), "", 2);
    assert!(e.iter().any(|e| e.contains("barrier") || e.contains("all_reduce")), "{e:?}");
}

/// An early-stopping rule kept in a struct (`best` starting at `f64::INFINITY`, a count
/// of bad epochs) and fed an all-reduced validation loss decides the same on every rank:
/// the training loop's `break` on it is followed, and a rank validating alone is found.
#[test]
fn an_early_stopping_rule_on_a_reduced_loss_is_followed() {
    let src = r#"fn f(world: Comm<World>) -> dist_runtime::Result<()> {
        struct Stopper { patience: usize, best: f64, bad: usize }
        fn should_stop(s: &mut Stopper, val: f64) -> bool {
            if val < s.best * (1.0 - 1e-3) {
                s.best = val;
                s.bad = 0;
            } else {
                s.bad += 1;
            }
            s.bad >= s.patience
        }
        let mut stopper = Stopper { patience: 3, best: f64::INFINITY, bad: 0 };
        for epoch in 0..50 {
            let mut loss = [world.rank() as f64 / (epoch as f64 + 1.0)];
            VALIDATE
            if should_stop(&mut stopper, loss[0]) { break; }
        }
        world.barrier()?;
        Ok(())
    }"#;
    let clean = src.replace("VALIDATE", "world.all_reduce(&mut loss, ReduceOp::Sum)?;");
    for n in 1..=4 {
        assert_eq!(problems(&clean, "", n), Vec::<String>::new(), "size {n}");
    }
    let bug = src.replace("VALIDATE", "if world.rank() == 0 { world.all_reduce(&mut loss, ReduceOp::Sum)?; }");
    let e = problems(&bug, "", 2);
    assert!(e.iter().any(|e| e.contains("all_reduce") && !e.contains("undecidable")), "{e:?}");
}

/// Floats computed from known numbers are known: a grid from `(n as f64).sqrt()`, a
/// chunk from `(len as f64 / n as f64).ceil()`, are followed, and what depends on them
/// is checked (a split by the grid's rows, a gather sized by the chunk). A float
/// division is not an integer one: `rows as f64 / n as f64 > 0.5` is decided as Rust
/// computes it.
#[test]
fn floats_from_known_numbers_are_known() {
    let src = r#"fn f(world: Comm<World>) -> dist_runtime::Result<()> {
        let n = world.size();
        let mut pc = (n as f64).sqrt().floor() as usize;
        while pc > 1 && n % pc != 0 { pc -= 1; }
        let pr = n / pc.max(1);
        let row = world.split::<Row>((world.rank() / pc) as u32, 0)?;
        assert_eq!(row.size(), pc);
        let chunk = (100.0 / n as f64).ceil() as usize;
        let mine = vec![1.0f64; chunk];
        let mut all = vec![0.0f64; LEN];
        world.all_gather(&mine, &mut all)?;
        if 3 as f64 / n as f64 > 0.5 { world.barrier()?; }
        let _ = pr;
        Ok(())
    }"#;
    for n in 1..=8 {
        assert_eq!(problems(&src.replace("LEN", "chunk * n"), "", n), Vec::<String>::new(), "size {n}");
    }
    let e = problems(&src.replace("LEN", "100"), "", 3);
    assert!(e.iter().any(|e| e.contains("all_gather") && e.contains("must have")), "{e:?}");
}
