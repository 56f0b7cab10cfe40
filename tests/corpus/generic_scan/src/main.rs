//! A small library of distributed scans over any `Monoid` (sums, maxima, non-commuting
//! affine maps, and segmented versions of each), written by hand with point-to-point
//! messages (Hillis–Steele and Blelloch), checked against the runtime's `exscan` and a
//! serial scan of the whole array, on the world and on two halves of it.
//!
//! `cargo spmd run -n 4 -- [--len N] [--seed S] [--segment-every K]`

#[macro_use]
mod macros;
mod monoid;
mod scan;
mod segmented;

use std::fmt;
use std::ops::Range;

use dist_runtime::prelude::*;

use monoid::{Affine, Max, Monoid, Sum};
use scan::{Algo, exclusive_scan, inclusive_scan, scan_blocks, serial_scan};
use segmented::{segmented_scan, serial_segmented};

dist_runtime::group!(Half);

#[derive(Debug)]
enum ScanError {
    Comm(dist_runtime::Error),
    Usage(String),
    Mismatch { what: String, rank: usize, index: usize, got: String, want: String },
}

impl fmt::Display for ScanError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ScanError::Comm(e) => write!(f, "{e}"),
            ScanError::Usage(m) => write!(f, "usage: {m}"),
            ScanError::Mismatch { what, rank, index, got, want } => {
                write!(f, "{what}: rank {rank}, element {index}: got {got}, want {want}")
            }
        }
    }
}

impl From<dist_runtime::Error> for ScanError {
    fn from(e: dist_runtime::Error) -> Self { ScanError::Comm(e) }
}

struct Args { len: usize, seed: u64, segment_every: u64 }

impl Args {
    fn parse() -> Result<Args, ScanError> {
        let mut a = Args { len: 1000, seed: 7, segment_every: 9 };
        let argv: Vec<String> = std::env::args().skip(1).collect();
        for pair in argv.chunks(2) {
            let value = pair.get(1).ok_or_else(|| ScanError::Usage(format!("{} needs a value", pair[0])))?;
            let num = value.parse::<u64>().map_err(|_| ScanError::Usage(format!("bad number {value:?}")))?;
            match pair[0].as_str() {
                "--len" => a.len = num as usize,
                "--seed" => a.seed = num,
                "--segment-every" => a.segment_every = num.max(1),
                other => return Err(ScanError::Usage(format!("unknown flag {other}"))),
            }
        }
        Ok(a)
    }
}

fn mix(mut h: u64) -> u64 {
    h = (h ^ (h >> 33)).wrapping_mul(0xFF51_AFD7_ED55_8CCD);
    h = (h ^ (h >> 33)).wrapping_mul(0xC4CE_B9FE_1A85_EC53);
    h ^ (h >> 33)
}

/// Test values drawn from a hash.
trait Sample: Monoid {
    fn sample(h: u64) -> Self;
}
impl Sample for Sum {
    fn sample(h: u64) -> Self { Sum((h % 2_000_001) as i64 - 1_000_000) }
}
impl Sample for Max {
    fn sample(h: u64) -> Self { Max((h >> 11) as f64 / (1u64 << 53) as f64 * 200.0 - 100.0) }
}
impl Sample for Affine {
    fn sample(h: u64) -> Self { Affine { a: mix(h) | 1, b: h } }
}

/// The elements rank `r` of `n` holds: contiguous, sizes differing by at most one.
fn block(len: usize, n: usize, r: usize) -> Range<usize> {
    len * r / n..len * (r + 1) / n
}

fn expect_same<M: Monoid>(what: &str, rank: usize, offset: usize, got: &[M], want: &[M]) -> Result<(), ScanError> {
    let bad = |index: usize, got: String, want: String| ScanError::Mismatch { what: what.into(), rank, index, got, want };
    if got.len() != want.len() {
        return Err(bad(offset, format!("{} elements", got.len()), format!("{}", want.len())));
    }
    match got.iter().zip(want).position(|(g, w)| g != w) {
        Some(i) => Err(bad(offset + i, format!("{:?}", got[i]), format!("{:?}", want[i]))),
        None => Ok(()),
    }
}

/// Every scan of one monoid, on the world and on its half; returns the checks passed.
fn check_monoid<M: Sample>(world: &Comm<World>, half: &Comm<Half>, args: &Args, name: &str) -> Result<u64, ScanError> {
    let (r, n) = (world.rank(), world.size());
    let salt = mix(name.len() as u64 ^ args.seed);
    let all: Vec<M> = (0..args.len as u64).map(|i| M::sample(mix(salt.wrapping_add(i)))).collect();
    let starts: Vec<bool> = (0..args.len as u64).map(|i| i == 0 || mix(salt ^ i) % args.segment_every == 0).collect();
    let mine = block(args.len, n, r);
    let local = &all[mine.clone()];
    let full = serial_scan(&all);
    // The half's ranks hold one contiguous stretch of the array.
    let (h0, h1) = (half.world_rank_of(0)?, half.world_rank_of(half.size() - 1)?);
    let stretch = block(args.len, n, h0).start..block(args.len, n, h1).end;
    let in_half = serial_scan(&all[stretch.clone()]);
    let mut checks = 0;

    for algo in Algo::ALL {
        let tag = format!("{name}/{algo:?}");
        let got = timed!(world, format!("{tag} blocks"), scan_blocks(world, local, algo))?;
        expect_same(&format!("{tag} scan"), r, mine.start, &got, &full[mine.clone()])?;

        let total = local.iter().fold(M::identity(), |a, x| a.combine(x));
        let excl = exclusive_scan(world, &total, algo)?;
        let incl = inclusive_scan(world, &total, algo)?;
        if let Some(builtin) = M::builtin_exscan(world, &total)? {
            expect_same(&format!("{tag} exscan vs builtin"), r, mine.start, &[excl.clone()], &[builtin])?;
            checks += 1;
        }
        expect_same(&format!("{tag} inclusive"), r, mine.start, &[incl], &[excl.combine(&total)])?;

        let seg = timed!(world, format!("{tag} segmented"), segmented_scan(world, local, &starts[mine.clone()], algo))?;
        let want = serial_segmented(&all, &starts);
        expect_same(&format!("{tag} segmented"), r, mine.start, &seg, &want[mine.clone()])?;

        let on_half = scan_blocks(half, local, algo)?;
        let at = mine.start - stretch.start..mine.end - stretch.start;
        expect_same(&format!("{tag} on half"), r, mine.start, &on_half, &in_half[at])?;
        checks += 4;
    }
    Ok(checks)
}

#[spmd]
fn main(world: Comm<World>) -> Result<(), ScanError> {
    let args = Args::parse()?;
    let (r, n) = (world.rank(), world.size());
    let half: Comm<Half> = world.split((r >= n / 2) as u32, r as i64)?;

    let mut checks = 0;
    checks += check_monoid::<Sum>(&world, &half, &args, "sum_i64")?;
    checks += check_monoid::<Max>(&world, &half, &args, "max_f64")?;
    checks += check_monoid::<Affine>(&world, &half, &args, "affine_mod_2^64")?;

    let mut total = [checks];
    world.all_reduce(&mut total, ReduceOp::Sum)?;
    if r == 0 {
        println!("OK: {} checks on {n} ranks: every scan matches the serial scan of {} elements", total[0], args.len);
    }
    Ok(())
}
