//! `all_to_all_v` counts compared across ranks (`sim::pairs_at`, `sim::item_taken_at`)
//! and the inputs' numbers past the size (`check::past_the_size`).

use super::problems;

/// A frontier exchange whose receive counts mirror the send counts; `OWNER` holds the
/// only frontier, `RECV` are the receive counts.
const FRONTIER: &str = r#"fn f(world: Comm<World>) -> dist_runtime::Result<()> {
    let n = world.size();
    let data: Vec<u64> = load(world.rank());
    let frontier: Vec<u64> = if world.rank() == OWNER { vec![0] } else { Vec::new() };
    let mut outgoing: Vec<Vec<u64>> = vec![Vec::new(); n];
    frontier.iter().flat_map(|&v| data[v as usize..].iter()).for_each(|&u| outgoing[u as usize % n].push(u));
    let send_counts: Vec<usize> = outgoing.iter().map(|b| b.len()).collect();
    RECV
    let send: Vec<u64> = outgoing.concat();
    let mut recv = vec![0u64; recv_counts.iter().sum()];
    world.all_to_all_v(&send, &send_counts, &mut recv, &recv_counts)?;
    Ok(())
}"#;

fn frontier(owner: &str, recv: &str) -> String {
    FRONTIER.replace("OWNER", owner).replace("RECV", recv)
}

/// Mirrored receive counts are an error whichever rank holds the frontier: the ranks
/// without one send a known 0 where the owner expects its own data count, or expect 0
/// where the owner sends data. Counts exchanged first are accepted.
#[test]
fn mirrored_counts_beside_a_known_zero_are_errors() {
    let mirror = "let recv_counts = send_counts.clone();";
    for n in [2, 3] {
        let last = (n - 1).to_string();
        let e = problems(&frontier(&last, mirror), "", n);
        assert!(e.iter().any(|e| e.contains(" 0 elements (item") && e.contains("may differ")), "n={n}: {e:?}");
        let e = problems(&frontier("0", mirror), "", n);
        assert!(e.iter().any(|e| e.contains("is data computed on that rank")), "n={n}: {e:?}");
        let exchanged = "let mut got = vec![0u64; n]; world.all_to_all(&send_counts.iter().map(|&c| c as u64).collect::<Vec<u64>>(), &mut got)?; let recv_counts: Vec<usize> = got.iter().map(|&c| c as usize).collect();";
        assert_eq!(problems(&frontier("0", exchanged), "", n), Vec::<String>::new(), "n={n}");
    }
}

/// Known counts equal by chance prove no mirroring: ranks that pass `vec![b; n]` for
/// both beside a rank whose counts are data (a transpose) are not compared.
#[test]
fn known_counts_equal_by_chance_are_not_taken_for_a_mirror() {
    let src = r#"fn f(world: Comm<World>) -> dist_runtime::Result<()> {
        let n = world.size();
        let b = 4;
        let data: Vec<u64> = load(world.rank());
        let counts: Vec<usize> = if world.rank() == 0 { data.chunks(b).map(|c| c.len()).collect() } else { vec![b; n] };
        let mut recv = vec![0u64; b * n];
        world.all_to_all_v(&data, &counts, &mut recv, &vec![b; n])?;
        Ok(())
    }"#;
    for n in [2, 3] {
        let e = problems(src, "", n);
        assert!(!e.iter().any(|e| e.contains("may differ")), "n={n}: {e:?}");
    }
}

/// Two counts a destination exchanged side by side (records, words): a receive count
/// that takes the words' item where the sender sends by the records' is an error naming
/// the items' places in the sender's block; the right one is accepted.
#[test]
fn the_counts_other_exchanged_item_is_an_error() {
    let src = r#"fn f(world: Comm<World>) -> dist_runtime::Result<()> {
        let n = world.size();
        let recs: Vec<usize> = (0..n).map(|j| records_for(world.rank(), j)).collect();
        let words: Vec<usize> = recs.iter().map(|&r| 3 * r + 1).collect();
        let mut out = vec![0u64; 2 * n];
        for j in 0..n {
            out[2 * j] = recs[j] as u64;
            out[2 * j + 1] = words[j] as u64;
        }
        let mut got = vec![0u64; 2 * n];
        world.all_to_all(&out, &mut got)?;
        let in_recs: Vec<usize> = (0..n).map(|i| got[2 * i] as usize).collect();
        let in_words: Vec<usize> = (0..n).map(|i| got[2 * i + 1] as usize).collect();
        let lens: Vec<u32> = load_lens(world.rank());
        let mut back = vec![0u32; RECV.iter().sum()];
        world.all_to_all_v(&lens, &recs, &mut back, &RECV)?;
        Ok(())
    }"#;
    for n in [1, 2, 3] {
        let e = problems(&src.replace("RECV", "in_words"), "", n);
        assert!(e.iter().any(|e| e.contains("item 1 of the 2") && e.contains("is item 0 of those 2")), "n={n}: {e:?}");
        assert_eq!(problems(&src.replace("RECV", "in_recs"), "", n), Vec::<String>::new(), "n={n}");
    }
}

/// A program that refuses `--nx` below the ranks: at size 4 every usual sample (1, 2,
/// 3, no arguments) is refused, and a tag bug in the x-direction halo, which exists
/// only where the process grid has two columns, is found with `--nx 5`; the correct
/// program is accepted there (its size 4 run, not a size taken as unsupported).
#[test]
fn numbers_past_the_size_reach_what_the_small_ones_are_refused() {
    let src = r#"fn f(world: Comm<World>) -> dist_runtime::Result<()> {
        let args: Vec<String> = std::env::args().collect();
        let Some(nx) = args.iter().position(|a| a == "--nx").and_then(|i| args.get(i + 1)).and_then(|v| v.parse::<usize>().ok()) else {
            return Err(dist_runtime::Error::Env("usage: --nx N".into()));
        };
        if nx < world.size() {
            return Err(dist_runtime::Error::Env("too small".into()));
        }
        let (px, py) = if world.size() == 4 { (2, 2) } else { (1, world.size()) };
        let (cx, cy) = (world.rank() / py, world.rank() % py);
        let face = vec![1.0f64; nx / py];
        let mut ghost = vec![0.0f64; nx / py];
        if cx > 0 {
            world.sendrecv((cx - 1) * py + cy, Tag::<f64>::new(1), &face, (cx - 1) * py + cy, &mut ghost)?;
        }
        if cx + 1 < px {
            world.sendrecv((cx + 1) * py + cy, Tag::<f64>::new(TAG), &face, (cx + 1) * py + cy, &mut ghost)?;
        }
        Ok(())
    }"#;
    let e = problems(&src.replace("TAG", "2"), "", 4);
    assert!(e.iter().any(|e| e.contains("is 5")), "{e:?}");
    assert_eq!(problems(&src.replace("TAG", "1"), "", 4), Vec::<String>::new());
}
