//! How the check follows values: reduced and exact data, helpers' results,
//! writes through places, floats, structs of such values.

use super::problems;

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
    let macros = super::super::parse_macros(&f);
    let no_splits = super::super::Splits::new();
    for n in 1..=3 {
        let mut it = super::super::interp::Interp::new(0, n, &no_splits, &macros, &file, Default::default());
        assert!(matches!(it.run(&f), super::super::interp::Outcome::Done), "at size {n}");
        let kinds: Vec<&str> = it.events.iter().map(|e| e.call()).collect();
        assert_eq!(kinds.iter().filter(|k| **k == "barrier").count(), 2, "{kinds:?}");
    }
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
    // Reduced over part of the ranks only: the same on ranks 0 and 1, rank 2's own on
    // rank 2, so the ranks may leave the loop at different tests, and the `subgroup`
    // (collective on the world) of the next pass is then called by some ranks only: an
    // error naming the condition and the ranks it tells apart.
    let part = good.replace(
        "world.all_reduce(&mut s, ReduceOp::Sum)?;",
        "if let Some(g) = world.subgroup::<Half>(&[0, 1])? { g.all_reduce(&mut s, ReduceOp::Sum)?; }",
    );
    let e = problems(&part, c, 3);
    assert!(
        e[0].contains("`subgroup` on the world") && e[0].contains("goes one way on rank 0 and the other way on rank 2"),
        "{e:?}"
    );
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

/// A store through an index that is data (`partials[owner] = block` with `owner` read
/// from a received header) may replace any item: none keeps a length the check could
/// hold against the program (a correct ring pass was refused as "index 0 is out of
/// bounds for a list of 0"); a loop over a graph's adjacency built by a helper from the
/// inputs and its norm computed over `0..g.len()` stay exact data.
#[test]
fn a_store_through_an_index_that_is_data_may_replace_any_item() {
    let src = r#"fn f(world: Comm<World>) -> dist_runtime::Result<()> {
        let (r, c) = (world.rank(), world.size());
        let mut partials = vec![Vec::new(); c];
        let mut blk = vec![r as f64; 4];
        let out = blk.clone();
        world.sendrecv((r + 1) % c, Tag::<f64>::new(3), &out, (r + c - 1) % c, &mut blk)?;
        let owner = blk[0] as usize;
        partials[owner] = vec![1.0; 3];
        let x = partials[0][0];
        let mut y = [x];
        world.all_reduce(&mut y, ReduceOp::Sum)?;
        Ok(())
    }"#;
    for n in 1..=4 {
        assert_eq!(problems(src, "", n), Vec::<String>::new(), "size {n}");
    }
}

/// A graph built by a loop past its quota from a constant size (sets of neighbours in
/// `BTreeSet`s filled through a closure), and a norm over `0..g.len()`, are exact data:
/// the same on every rank, so a stop on an all-reduced residual against it is followed
/// alike on every rank, and a collective only rank 0 makes in the loop is found.
#[test]
fn data_a_deterministic_loop_computes_from_exact_values_is_exact() {
    let src = r#"fn f(world: Comm<World>) -> dist_runtime::Result<()> {
        fn hash(z: u64) -> u64 { (z ^ (z >> 31)).wrapping_mul(0x94D0_49BB_1331_11EB) }
        fn rhs(v: usize) -> f64 { 1.0 + (0.37 * v as f64).sin() }
        let nv = 4000;
        let mut sets: Vec<std::collections::BTreeSet<usize>> = vec![std::collections::BTreeSet::new(); nv];
        let mut link = |a: usize, b: usize| { if a != b { sets[a].insert(b); sets[b].insert(a); } };
        for v in 0..nv {
            link(v, (v + 1) % nv);
            link(v, (hash(v as u64) % nv as u64) as usize);
        }
        let adj: Vec<Vec<usize>> = sets.into_iter().map(|s| s.into_iter().collect()).collect();
        let norm_b = (0..adj.len()).map(|v| rhs(v).powi(2)).sum::<f64>().sqrt();
        for sweep in 1..=50 {
            let mut res = [world.rank() as f64 / sweep as f64];
            world.all_reduce(&mut res, ReduceOp::Sum)?;
            EXTRA
            if res[0].sqrt() <= 1e-8 * norm_b { break; }
        }
        world.barrier()?;
        Ok(())
    }"#;
    for n in 1..=3 {
        assert_eq!(problems(&src.replace("EXTRA", ""), "", n), Vec::<String>::new(), "size {n}");
    }
    let bug = src.replace("EXTRA", "if world.rank() == 0 { world.barrier()?; }");
    let e = problems(&bug, "", 2);
    assert!(e.iter().any(|e| e.contains("barrier") && !e.contains("undecidable")), "{e:?}");
}

/// A communication plan built the way graph codes build it: a generated graph (a
/// splitmix hash of `u64`s for its chords, `BTreeSet` adjacency), ghost vertices grouped
/// by their owner's rank through `entry(q).or_default()`, one message per neighbouring
/// rank. Followed exactly, so blocking sends to every neighbour first are a deadlock
/// found at compile time; the plan held as data (a key the check cannot know) is a
/// construct not followed, never a silently empty neighbour list.
#[test]
fn a_halo_plan_grouped_by_owner_in_maps_and_sets_is_followed() {
    let src = r#"fn f(world: Comm<World>) -> dist_runtime::Result<()> {
        fn hash(mut z: u64) -> u64 {
            z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        }
        let (me, p) = (world.rank(), world.size());
        let nv = 60;
        let mut sets: Vec<std::collections::BTreeSet<usize>> = vec![std::collections::BTreeSet::new(); nv];
        for v in 0..nv {
            let far = (hash(v as u64) % nv as u64) as usize;
            for w in [(v + 1) % nv, far] {
                if w != v { sets[v].insert(w); sets[w].insert(v); }
            }
        }
        let owner = |v: usize| v * p / nv;
        let mine = (nv * me / p)..(nv * (me + 1) / p);
        PRE
        let mut ghosts: std::collections::BTreeMap<usize, Vec<usize>> = std::collections::BTreeMap::new();
        for u in mine.clone() {
            for &v in sets[u].iter().filter(|v| !mine.contains(v)) {
                ghosts.entry(KEY).or_default().push(v);
            }
        }
        let t = Tag::<f64>::new(5);
        EXCHANGE
        Ok(())
    }"#;
    let good = "let mut reqs = Vec::new();
        let bufs: Vec<Vec<f64>> = ghosts.values().map(|g| vec![0.0; g.len()]).collect();
        for (q, g) in ghosts.iter() { reqs.push(world.isend(*q, t, &vec![1.0; g.len()])?); }
        for (q, b) in ghosts.keys().zip(bufs.iter()) { let mut b = b.clone(); world.recv(*q, t, &mut b)?; }
        dist_runtime::wait_all(reqs)?;";
    let bad = "for (q, g) in ghosts.iter() { world.send(*q, t, &vec![1.0; 4096 * (g.len() + 1)])?; }
        for (q, g) in ghosts.iter() { let mut b = vec![0.0; 4096 * (g.len() + 1)]; world.recv(*q, t, &mut b)?; }";
    let prog = |key: &str, ex: &str| src.replace("KEY", key).replace("EXCHANGE", ex).replace("PRE", "");
    for n in 1..=3 {
        assert_eq!(problems(&prog("owner(v)", good), "", n), Vec::<String>::new(), "size {n}");
    }
    let e = problems(&prog("owner(v)", bad), "", 2);
    assert!(e.iter().any(|e| e.contains("deadlock") && e.contains("send")), "{e:?}");
    // The owner from data the check cannot know: not followed, and said so.
    let data = prog("owner(v) + s[0]", bad)
        .replace("let mut ghosts", "let mut s = [0usize]; world.all_reduce(&mut s, ReduceOp::Sum)?; let mut ghosts");
    let e = problems(&data, "", 2);
    assert!(!e.is_empty(), "a plan held as data must not pass as an empty one: {e:?}");
}

/// Integers wrap as their declared type does: a `u64` hash's `wrapping_mul`, a cast to
/// a narrower type.
#[test]
fn integers_wrap_as_their_type_does() {
    let src = r#"fn f(world: Comm<World>) -> dist_runtime::Result<()> {
        fn mix(z: u64) -> u64 { (z ^ (z >> 33)).wrapping_mul(0xff51_afd7_ed55_8ccd) }
        let h = mix(12345);
        let peer = 1 + (h % (world.size() as u64 - 1)) as usize;
        let low = (h as u32) as usize % 7;
        if world.rank() == 0 { world.send(peer, Tag::<u8>::new(1), &[0u8; 1])?; }
        if world.rank() == EXPECT { let mut b = [0u8; 1]; world.recv(0, Tag::<u8>::new(1), &mut b)?; }
        let _ = low;
        Ok(())
    }"#;
    let z: u64 = 12345;
    let h = (z ^ (z >> 33)).wrapping_mul(0xff51_afd7_ed55_8ccd);
    for n in 3..=5u64 {
        let peer = 1 + h % (n - 1);
        let ok = src.replace("EXPECT", &peer.to_string());
        assert_eq!(problems(&ok, "", n as usize), Vec::<String>::new(), "size {n}");
        let wrong = src.replace("EXPECT", &(peer % (n - 1) + 1).to_string());
        assert!(!problems(&wrong, "", n as usize).is_empty(), "size {n}");
    }
}

/// A constructor summarised past its quota keeps the fields it copies from its
/// parameters (`System { n, a }`'s `n`), so a loop over `0..sys.n` and the lengths it
/// computes from it are followed: a broadcast whose length differs on its root is found.
#[test]
fn a_summarised_constructor_keeps_the_sizes_it_was_given() {
    let src = r#"fn f(world: Comm<World>) -> dist_runtime::Result<()> {
        struct System { n: usize, a: Vec<f64> }
        fn next(s: u64) -> u64 { s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407) }
        fn random(n: usize, seed: u64) -> System {
            let mut s = seed;
            let mut a = Vec::new();
            for _ in 0..n * n * 400 { s = next(s); a.push((s >> 11) as f64); }
            System { n, a }
        }
        let sys = random(12, 7);
        for k in 0..sys.n {
            let root = ROOT;
            let mut m = vec![0.0; LEN];
            world.broadcast(&mut m, root)?;
        }
        let _ = &sys.a;
        Ok(())
    }"#;
    let good = src.replace("LEN", "sys.n - k").replace("ROOT", "k % world.size()");
    for n in 1..=5 {
        assert_eq!(problems(&good, "", n), Vec::<String>::new(), "size {n}");
    }
    // The owner of column k by a block formula that overruns: k / (12 / 5) = 5 at k = 11.
    let bad = good.replace("k % world.size()", "k / (sys.n / world.size())");
    let e = problems(&bad, "", 5);
    assert!(e.iter().any(|e| e.contains("out of range") && !e.contains("undecidable")), "{e:?}");
}

/// A slice with known bounds of data the check does not hold (a column of a matrix
/// another crate loaded) has the range's length: a broadcast of the owner's
/// multipliers (`col[k + 1..]`, the column found with `binary_search`) against the others' `vec![0.0; n - k - 1]` is followed,
/// and a buffer one too long on the other ranks is found at the broadcast.
#[test]
fn a_slice_of_data_has_the_length_of_its_range() {
    let src = r#"fn f(world: Comm<World>) -> dist_runtime::Result<()> {
        let n = 6;
        let local: Vec<f64> = matrix_io::load_columns(n, world.rank());
        for k in 0..n {
            let owner = k % world.size();
            let cols: Vec<usize> = (world.rank()..n).step_by(world.size()).collect();
            let mut mult = match cols.binary_search(&k).ok() {
                Some(c) => {
                    let col = &local[c * n..(c + 1) * n];
                    col[k + 1..].to_vec()
                }
                None => vec![0.0; n - k - 1 BUG],
            };
            world.broadcast(&mut mult, owner)?;
        }
        Ok(())
    }"#;
    for n in 1..=4 {
        assert_eq!(problems(&src.replace(" BUG", ""), "", n), Vec::<String>::new(), "size {n}");
    }
    let e = problems(&src.replace(" BUG", " + 1"), "", 2);
    assert!(e.len() == 1 && e[0].contains("broadcast") && e[0].contains("length"), "{e:?}");
}

/// A buffer a helper writes through `&mut [f64]` (a matrix product accumulated into
/// `c.data`, row slice by row slice, too long for the check to follow item by item)
/// keeps its length: a receive sized from another block's shape is found against the
/// send.
#[test]
fn a_buffer_written_by_a_helper_keeps_its_length() {
    let src = r#"fn f(world: Comm<World>) -> dist_runtime::Result<()> {
        fn gemm_acc(c: &mut [f64], a: &[f64], b: &[f64], m: usize, k: usize, n: usize) {
            for i in 0..m {
                for p in 0..k {
                    let x = a[i * k + p];
                    c[i * n..(i + 1) * n].iter_mut().zip(&b[p * n..(p + 1) * n]).for_each(|(c, b)| *c += x * b);
                }
            }
        }
        struct Block { rows: usize, cols: usize, data: Vec<f64> }
        let cols = if world.rank() == 0 { 21 } else { 20 };
        let mut c = Block { rows: 12, cols, data: vec![0.0; 12 * cols] };
        for step in 0..2 {
            let mut a = vec![0.0; 48];
            if step == world.rank() {
                a = matrix_io::panel(12, 4);
            }
            world.broadcast(&mut a, step)?;
            let b: Vec<f64> = matrix_io::panel(4, cols);
            gemm_acc(&mut c.data, &a, &b, 12, 4, cols);
        }
        if world.rank() == 1 {
            world.send(0, Tag::<f64>::new(1), &c.data)?;
        } else if world.rank() == 0 {
            let mut part = vec![0.0; c.rows * LEN];
            world.recv(1, Tag::<f64>::new(1), &mut part)?;
        }
        Ok(())
    }"#;
    assert_eq!(problems(&src.replace("LEN", "20"), "", 2), Vec::<String>::new());
    let e = problems(&src.replace("LEN", "c.cols"), "", 2);
    assert!(e.len() == 1 && e[0].contains("recv") && e[0].contains("element"), "{e:?}");
}

/// `ReduceOp::PreMulSum(scale)`: the scale is part of the op, the same on every rank.
/// Scaled by the global row count it is; by each rank's own rows (10 rows over 3 ranks:
/// 4, 3, 3), it is not, and the collective is an error naming the op.
#[test]
fn a_pre_multiplied_sum_compares_its_scale() {
    let src = r#"fn f(world: Comm<World>) -> dist_runtime::Result<()> {
        let total = 10;
        let (n, r) = (world.size(), world.rank());
        let rows = total / n + usize::from(r < total % n);
        let grads = vec![1.0f64; 3 * n];
        let mut mine = vec![0.0f64; 3];
        let scale = 1.0 / ROWS as f64;
        world.reduce_scatter(&grads, &mut mine, ReduceOp::PreMulSum(scale))?;
        Ok(())
    }"#;
    for n in 1..=4 {
        assert_eq!(problems(&src.replace("ROWS", "total"), "", n), Vec::<String>::new(), "size {n}");
    }
    assert_eq!(problems(&src.replace("ROWS", "rows"), "", 2), Vec::<String>::new(), "5 and 5 rows");
    let e = problems(&src.replace("ROWS", "rows"), "", 3);
    assert!(e.len() == 1 && e[0].contains("reduce_scatter") && e[0].contains("`PreMulSum` scale 0.25"), "{e:?}");
}

/// A sparse matrix's block-row halo plan: each row's columns built from `checked_sub`,
/// sorted and deduplicated in place; each column's owner found by `partition_point` on
/// the partition's offsets; the neighbours are the owners met. All known, so the
/// exchange is followed: the plan as written is accepted, and a receive from a lower
/// neighbour on the tag it does not send (`TO_LOWER`) is an error.
#[test]
fn a_halo_plan_from_sorted_columns_and_partition_point_is_followed() {
    let src = r#"fn f(world: Comm<World>) -> dist_runtime::Result<()> {
        let (me, p) = (world.rank(), world.size());
        let (n, nx) = (24usize, 4usize);
        let offsets: Vec<usize> = (0..=p).map(|r| r * (n / p) + r.min(n % p)).collect();
        let owner = |j: usize| offsets.partition_point(|&o| o <= j) - 1;
        let mut peers: Vec<usize> = Vec::new();
        for i in offsets[me]..offsets[me + 1] {
            let mut cols: Vec<usize> = [i.checked_sub(nx), i.checked_sub(1), Some(i + 1), Some(i + nx)]
                .into_iter()
                .flatten()
                .filter(|&j| j < n)
                .collect();
            cols.sort_unstable();
            cols.dedup();
            for j in cols {
                let q = owner(j);
                if q != me {
                    peers.push(q);
                }
            }
        }
        peers.sort_unstable();
        peers.dedup();
        const TO_LOWER: Tag<f64> = Tag::new(1);
        const TO_HIGHER: Tag<f64> = Tag::new(2);
        let one = [1.0];
        let mut bufs = vec![[0.0f64]; peers.len()];
        let mut reqs = Vec::new();
        for (&q, b) in peers.iter().zip(bufs.iter_mut()) {
            let inn = if q < me { RECV_LOWER } else { TO_LOWER };
            reqs.push(world.irecv(q, inn, b)?);
        }
        for &q in &peers {
            let out = if q < me { TO_LOWER } else { TO_HIGHER };
            reqs.push(world.isend(q, out, &one)?);
        }
        dist_runtime::wait_all(reqs)?;
        Ok(())
    }"#;
    let good = src.replace("RECV_LOWER", "TO_HIGHER");
    for n in 1..=4 {
        assert_eq!(problems(&good, "", n), Vec::<String>::new(), "size {n}");
    }
    let bad = src.replace("RECV_LOWER", "TO_LOWER");
    let e = problems(&bad, "", 2);
    assert!(!e.is_empty() && !e[0].starts_with("undecidable"), "{e:?}");
}

/// A list in a struct's field grown in a loop over data (`out.idx.push(i)` for each
/// `i` of a filtered list) holds as many items as the data says: its length is data,
/// never the length it had before the loop.
#[test]
fn a_field_grown_in_a_loop_over_data_has_a_length_from_data() {
    let src = r#"fn f(world: Comm<World>) -> dist_runtime::Result<()> {
        #[derive(Default)]
        struct S { idx: Vec<u32> }
        let n = world.size();
        let order: Vec<usize> = (0..std::process::id() as usize % 7).collect();
        let mut out = S::default();
        for i in order {
            out.idx.push(i as u32);
        }
        world.all_gather_v(&[0u32; 0], &mut vec![0u32; 998], &vec![out.idx.len(); n])?;
        Ok(())
    }"#;
    for n in 1..=3 {
        let e = problems(src, "", n);
        assert!(e.iter().all(|e| !e.contains("must have 0")), "size {n}: {e:?}");
    }
}
