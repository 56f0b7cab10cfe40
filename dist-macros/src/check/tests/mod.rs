//! The communication check's unit tests: programs in strings, checked at chosen world
//! sizes, their verdicts asserted. Here: cost, lines, rank-local conditions, lengths;
//! in `values.rs`: how values are followed (reduced, exact, floats, structs); in
//! `inputs.rs`: the program's inputs and `strict`'s rule.

mod counts;
mod inputs;
mod messages;
mod values;

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
    super::reset_msg_budget();
    let f: syn::ItemFn = syn::parse_str(src).unwrap();
    super::interp::set_written_fields(std::iter::once(("", &f)));
    let consts: Vec<super::interp::PackageConst> = syn::parse_str::<syn::File>(consts)
        .unwrap()
        .items
        .into_iter()
        .filter_map(|i| if let syn::Item::Const(c) = i { Some((String::new(), false, c)) } else { None })
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
        // (Counts the check cannot see: known ones arrive as the numbers they are.)
        let send = vec![unknown_count(); n];
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
        assert!(
            e[0].contains("what each rank sends another must be what that rank expects")
                || e[0].contains("sends itself"),
            "{e:?}"
        );
        // What a rank sends itself must be what it receives from itself (at every size).
        let e = problems(&with(&a2a.replace("RECV", "if i == r { 2 * r + 1 } else { i + r }")), c, n);
        assert!(e[0].contains("`sc[0]` is 0 but `rc[0]` is 1") && e[0].contains("sends itself"), "{e:?}");
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
        assert!(e[0].contains("different count lists"), "{e:?}");
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
