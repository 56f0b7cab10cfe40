//! How the check follows the program's inputs: numbers and flags read from the command
//! line or the environment (the same on every rank, each run a sample), and `strict`'s
//! rule that what must agree never depends on rank-local data.

use super::problems;

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
    // (A number reduced over every rank is the same everywhere too: as a root it is
    // accepted, its range left to the run-time check; but `v % n` of it is data, since
    // the check does not tell `n` from a rank there.)
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
    super::super::interp::set_strict(true);
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
    super::super::interp::set_strict(false);
    assert!(accepted.is_empty(), "strict accepted {} program(s); the first:\n{}", accepted.len(), accepted[0]);
    assert!(refused.is_empty(), "strict refused {} uniform program(s); the first:\n{}", refused.len(), refused[0]);
}

/// A mesh's dimension from an environment variable or a flag, clamped to the world and
/// lowered to a divisor of it (`cp.unwrap_or(2).clamp(1, n)`, then a search): followed
/// at every sample, so a collective on the mesh's rows that only some ranks reach is
/// found.
#[test]
fn a_mesh_dimension_clamped_from_an_environment_variable_is_followed() {
    let src = r#"fn f(world: Comm<World>) -> dist_runtime::Result<()> {
        let cp: Option<usize> = std::env::var("CP_DEGREE").ok().and_then(|v| v.parse().ok());
        let n = world.size();
        let want = cp.unwrap_or(if n % 2 == 0 { 2 } else { 1 }).clamp(1, n);
        let c = (1..=want).rev().find(|c| n % c == 0).unwrap_or(1);
        let (dp, cpc) = world.mesh2::<Dp, Cp>(n / c, c)?;
        let mut x = [1.0f64];
        EXTRA
        dp.all_reduce(&mut x, ReduceOp::Sum)?;
        let _ = cpc;
        Ok(())
    }"#;
    for n in 1..=4 {
        assert_eq!(problems(&src.replace("EXTRA", ""), "", n), Vec::<String>::new(), "size {n}");
    }
    let bug = src.replace("EXTRA", "if cpc.rank() == 0 { cpc.barrier()?; }");
    let e = problems(&bug, "", 4);
    assert!(e.iter().any(|e| e.contains("barrier") && !e.contains("undecidable")), "{e:?}");
}

/// A process grid from an optional `--px` flag (an input matched against `Some(px)` with
/// a guard: given in some runs, absent in others), else the most square factors
/// (`take_while`); a schedule of peers built with `extend` and `truncate`; a result's
/// `map`. All followed: the clean program is accepted at every size, and a receive
/// from the wrong neighbour is found.
#[test]
fn options_from_inputs_and_lists_changed_in_place_are_followed() {
    let src = r#"fn f(world: Comm<World>) -> dist_runtime::Result<()> {
        const T: Tag<f64> = Tag::new(1);
        let n = world.size();
        let px: Option<usize> = std::env::args().nth(1).and_then(|s| s.parse().ok());
        let (px, py) = match px {
            Some(px) if px > 0 && n % px == 0 => (px, n / px),
            _ => {
                let a = (1..=n).take_while(|d| d * d <= n).filter(|d| n % d == 0).last().unwrap_or(1);
                (a, n / a)
            }
        };
        let (cx, cy) = (world.rank() / py, world.rank() % py);
        let mut peers: Vec<usize> = Vec::new();
        peers.extend((0..px).map(|x| x * py + cy));
        peers.truncate(px);
        let left = peers[(cx + px - 1) % px];
        let right = peers[(cx + 1) % px];
        let done = world.barrier().map(|()| true)?;
        if done && px > 1 {
            let mut got = [0.0];
            world.sendrecv(right, T, &[1.0], FROM, &mut got)?;
        }
        Ok(())
    }"#;
    for n in 1..=6 {
        assert_eq!(problems(&src.replace("FROM", "left"), "", n), Vec::<String>::new(), "size {n}");
    }
    let e = problems(&src.replace("FROM", "right"), "", 3);
    assert!(!e.is_empty() && e[0].contains("sendrecv"), "{e:?}");
}

/// In the default mode, a root or reduce op the check cannot prove the same on every
/// rank is never silently taken: it is a construct not followed (a warning), while one
/// left alike by a collective of every rank, read from the inputs or computed exactly
/// is followed, and one computed from different data on two ranks is an error.
#[test]
fn a_root_or_op_from_data_is_never_silently_taken() {
    let consts = "const T: Tag<usize> = Tag::new(1);";
    let program = |root: &str| {
        format!(
            "fn p(world: Comm<World>) -> dist_runtime::Result<()> {{\n let (r, n) = (world.rank(), world.size());\n \
             let mut x = [1.0f32; 4];\n let root: usize = {root};\n world.broadcast(&mut x, root)?;\n Ok(())\n}}"
        )
    };
    super::super::interp::set_strict(false);
    let unproven = [
        // Values from code the check cannot read: the same recipe on every rank, not
        // exact (a received value's recipe names its peer: ranks differ, an error).
        "std::thread::available_parallelism().map(|p| p.get()).unwrap_or(1) % n",
        "std::process::id() as usize % n",
    ];
    for root in unproven {
        for n in 2..=4 {
            let e = problems(&program(root), consts, n);
            assert!(
                e.len() == 1 && e[0].starts_with("undecidable: the root `root` of `broadcast`"),
                "size {n}: {e:?}\n{}",
                program(root)
            );
        }
    }
    let alike = [
        "{ let mut m = [r as f64]; world.all_reduce(&mut m, ReduceOp::Max)?; m[0] as usize }",
        "std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(0) % n",
        "n - 1",
    ];
    for root in alike {
        for n in 1..=4 {
            assert_eq!(problems(&program(root), consts, n), Vec::<String>::new(), "size {n}\n{}", program(root));
        }
    }
    // Ops: a named op is followed; one chosen on data the check cannot tell apart is not.
    let op = "fn p(world: Comm<World>) -> dist_runtime::Result<()> {\n let n = world.size();\n \
              let op = if std::process::id() % 2 == 0 { ReduceOp::Sum } else { ReduceOp::Max };\n \
              let mut x = [1.0f32; 4];\n world.all_reduce(&mut x, op)?;\n let _ = n;\n Ok(())\n}";
    let e = problems(op, consts, 2);
    assert!(e.len() == 1 && e[0].starts_with("undecidable: the reduce op `op` of `all_reduce`"), "{e:?}");
}
