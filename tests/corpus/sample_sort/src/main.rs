//! Parallel sample sort of pseudo-random u64 keys, checked against a serial sort of
//! the same keys gathered on rank 0.
//!
//! cargo spmd run -n 4 -- --keys 1000 --span 5000 --oversample 8

mod keys;
mod merge;
mod sorter;
mod verify;

use dist_runtime::prelude::*;

use keys::Blocks;
use sorter::SampleSorter;

#[derive(Debug)]
struct Config {
    keys: usize,
    span: u64,
    oversample: usize,
    seed: u64,
}

impl Config {
    fn from_args() -> Result<Config, String> {
        let mut cfg = Config { keys: 1000, span: 1 << 20, oversample: 8, seed: 42 };
        let argv: Vec<String> = std::env::args().skip(1).collect();
        let mut it = argv.iter();
        while let Some(flag) = it.next() {
            let value = it.next().ok_or_else(|| format!("{flag} needs a value"))?;
            let v: u64 = value.parse().map_err(|_| format!("bad value {value:?} for {flag}"))?;
            match flag.as_str() {
                "--keys" => cfg.keys = v as usize,
                "--span" => cfg.span = v,
                "--oversample" => cfg.oversample = v as usize,
                "--seed" => cfg.seed = v,
                other => return Err(format!("unknown argument {other}")),
            }
        }
        if cfg.oversample == 0 || cfg.span == 0 {
            return Err("--oversample and --span must be positive".into());
        }
        Ok(cfg)
    }
}

#[spmd]
fn main(world: Comm<World>) -> dist_runtime::Result<()> {
    let cfg = Config::from_args().map_err(dist_runtime::Error::Env)?;
    let blocks = Blocks { n: cfg.keys, parts: world.size() };
    let input = keys::keys(cfg.seed, cfg.span, blocks.range(world.rank()));

    let mut sorter = SampleSorter::new(&world, input, cfg.oversample);
    sorter.sort()?;
    let max_load = sorter.max_load()?;
    let edge = verify::edge_ok(&world, &sorter.keys)?;
    let collected = verify::collect(&world, &sorter.keys, edge, 0)?;

    let mut bad = [0u64];
    if let Some(c) = &collected {
        let mut want = keys::keys(cfg.seed, cfg.span, 0..cfg.keys);
        want.sort_unstable();
        bad[0] = verify::differences(&c.keys, &want) as u64;
        bad[0] += u64::from(!c.edges_ok);
        bad[0] += u64::from(c.lens.iter().sum::<u64>() != cfg.keys as u64);
    }
    world.broadcast(&mut bad, 0)?;
    if bad[0] != 0 {
        return Err(dist_runtime::Error::Mismatch {
            comm: "World".into(),
            msg: format!("sample sort disagrees with the serial sort in {} places", bad[0]),
        });
    }
    if let Some(c) = collected {
        let ideal = cfg.keys.div_ceil(world.size());
        println!(
            "OK sample_sort: {} ranks, {} keys, loads {:?} (max {max_load}, ideal {ideal}), splitters {:?}, {} keys moved by rank 0",
            world.size(),
            cfg.keys,
            c.lens,
            sorter.splitters,
            sorter.moved
        );
    }
    Ok(())
}
