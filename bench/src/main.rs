//! `dist-bench`: nccl-tests style timing of every collective and a ping-pong, with every
//! result checked. The parent process parses the command line and re-executes itself as
//! N ranks (the `bench_rank` entry); rank 0 prints a row per (op, size) as it finishes.
//!
//! ```text
//! dist-bench -n 4 --ops all_reduce,all_gather --max-bytes 64M
//! dist-bench --nranks 4 --reps 3 --tsv      # the TSV of scripts/peers (impl "dist", "dist-mpi" on MPI)
//! ```
// The benchmark entry picks its dtype and ops from the command line (strings): what the
// compile-time check cannot follow there is expected (its warnings are `deprecated` uses).
#![allow(deprecated)]

mod plot;

use clap::Parser;
use dist_runtime::prelude::*;
use std::time::{Duration, Instant};

const OPS: [&str; 6] = ["all_reduce", "broadcast", "all_gather", "reduce_scatter", "all_to_all", "pingpong"];

#[derive(Parser, Debug, Clone)]
#[command(name = "dist-bench", about = "Time dist's collectives (nccl-tests style)")]
struct Args {
    /// Number of ranks.
    #[arg(short = 'n', long = "nranks", default_value_t = 2)]
    n: usize,
    /// Comma-separated ops: all_reduce, broadcast, all_gather, reduce_scatter, all_to_all, pingpong (or `all`).
    #[arg(long, default_value = "all")]
    ops: String,
    /// Smallest size (bytes; K, M, G suffixes).
    #[arg(long, default_value = "8")]
    min_bytes: String,
    /// Largest size.
    #[arg(long, default_value = "64M")]
    max_bytes: String,
    /// Exact sizes instead of the peers harness's between --min-bytes and --max-bytes
    /// (comma list, e.g. 2M,4M,8M): for finding where an algorithm's choice should flip.
    #[arg(long)]
    sizes: Option<String>,
    /// Element type: f32, f64, f16, bf16, i32, u8, ...
    #[arg(long, default_value = "f32")]
    dtype: String,
    /// Timed iterations per loop (default: as many as fit in --budget).
    #[arg(long)]
    iters: Option<usize>,
    /// Untimed iterations before each loop.
    #[arg(long, default_value_t = 3)]
    warmup: usize,
    /// Timed loops per (op, size).
    #[arg(long, default_value_t = 1)]
    reps: usize,
    /// Seconds per timed loop when --iters is not given.
    #[arg(long, default_value_t = 0.25)]
    budget: f64,
    /// Print the peers harness TSV instead of the table.
    #[arg(long)]
    tsv: bool,
    /// Backend: shm, or nccl (device buffers on GPUs; built with the `nccl` feature).
    #[arg(long, default_value = "shm")]
    backend: String,
    /// Buffers from `Comm::alloc` (the buffer peers read: all_reduce's and broadcast's,
    /// the send side of the others), which the shm backend's collectives read in place.
    #[arg(long)]
    shared: bool,
    /// Also draw busbw against size, one line per op, into this SVG file.
    #[arg(long)]
    plot: Option<std::path::PathBuf>,
    /// Before anything else, time each of the job's first K calls of the first op and
    /// size one by one (each rank's slowest of the K, and rank 0's list): what a job's
    /// first ops cost against its steady state.
    #[arg(long, default_value_t = 0)]
    first: usize,
    /// Buffers at different offsets within a cache line (the source 16 bytes past a page
    /// boundary, the destination 48), as two `Vec`s often are; by default every buffer
    /// starts a page, as the peers harness's C allocates its own.
    #[arg(long)]
    misaligned: bool,
}

fn parse_bytes(s: &str) -> Result<usize, String> {
    let s = s.trim();
    let (num, mul) = match s.chars().last() {
        Some('K' | 'k') => (&s[..s.len() - 1], 1 << 10),
        Some('M' | 'm') => (&s[..s.len() - 1], 1 << 20),
        Some('G' | 'g') => (&s[..s.len() - 1], 1 << 30),
        _ => (s, 1),
    };
    num.parse::<usize>().map(|v| v * mul).map_err(|_| format!("{s:?} is not a size (e.g. 8, 64K, 16M)"))
}

/// The sizes of the peers harness: 8 B, 1 KiB, 64 KiB, 1 MiB, 16 MiB, 64 MiB.
const SIZES: [usize; 6] = [8, 1 << 10, 64 << 10, 1 << 20, 16 << 20, 64 << 20];

fn main() -> std::process::ExitCode {
    let args = Args::parse();
    let run = || -> Result<bool, String> {
        let ops: Vec<String> = if args.ops == "all" {
            OPS.iter().map(|s| s.to_string()).collect()
        } else {
            args.ops.split(',').map(|s| s.trim().to_string()).collect()
        };
        for op in &ops {
            if !OPS.contains(&op.as_str()) {
                return Err(format!("unknown op {op:?}; expected one of {}", OPS.join(", ")));
            }
        }
        if ops.iter().any(|o| o == "pingpong") && args.n < 2 && ops.len() == 1 {
            return Err("pingpong needs at least 2 ranks".into());
        }
        let (lo, hi) = (parse_bytes(&args.min_bytes)?, parse_bytes(&args.max_bytes)?);
        let sizes = match &args.sizes {
            Some(l) => {
                l.split(',').map(|x| parse_bytes(x.trim()).map(|b| b.to_string())).collect::<Result<Vec<_>, _>>()?
            }
            None => Vec::new(),
        };
        let dtype = args.dtype.to_ascii_lowercase();
        if !["f32", "f64", "f16", "bf16", "i32", "u32", "i64", "u64", "u8", "i8"].contains(&dtype.as_str()) {
            return Err(format!("unknown dtype {dtype:?}"));
        }
        let spec = format!(
            "{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}",
            ops.join(","),
            lo,
            hi,
            dtype,
            args.iters.unwrap_or(0),
            args.warmup,
            args.reps,
            args.budget,
            args.tsv as u8,
            sizes.join(","),
            args.shared as u8,
            args.first,
            args.misaligned as u8
        );
        let report = dist_runtime::Launch::entry("bench_rank", args.n)
            .map_err(|e| e.to_string())?
            .env("DIST_BENCH", spec)
            .env("DIST_BACKEND", &args.backend)
            .env("DIST_BENCH_PLOT", args.plot.as_ref().map(|p| p.display().to_string()).unwrap_or_default())
            .capture(false)
            .prefix_output(!args.tsv)
            .run()
            .map_err(|e| e.to_string())?;
        if !report.success() {
            return Err(report.summary());
        }
        Ok(true)
    };
    match run() {
        Ok(_) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("dist-bench: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}

struct Spec {
    ops: Vec<String>,
    lo: usize,
    hi: usize,
    dtype: String,
    iters: usize,
    warmup: usize,
    reps: usize,
    budget: f64,
    tsv: bool,
    /// `--sizes`, when given (else the harness sizes between `lo` and `hi`).
    sizes: Vec<usize>,
    /// `--shared`: buffers from `Comm::alloc`.
    shared: bool,
    /// `--first`: calls of the first case timed one by one.
    first: usize,
    /// `--misaligned`: buffers at different offsets within a cache line.
    misaligned: bool,
}

fn spec() -> Spec {
    let s = std::env::var("DIST_BENCH").expect("DIST_BENCH is set by the parent");
    let f: Vec<&str> = s.split('|').collect();
    Spec {
        ops: f[0].split(',').map(String::from).collect(),
        lo: f[1].parse().unwrap(),
        hi: f[2].parse().unwrap(),
        dtype: f[3].into(),
        iters: f[4].parse().unwrap(),
        warmup: f[5].parse().unwrap(),
        reps: f[6].parse().unwrap(),
        budget: f[7].parse().unwrap(),
        tsv: f[8] == "1",
        sizes: f[9].split(',').filter(|x| !x.is_empty()).map(|x| x.parse().unwrap()).collect(),
        shared: f[10] == "1",
        first: f[11].parse().unwrap(),
        misaligned: f[12] == "1",
    }
}

/// The value rank `r` puts at index `i`: small integers, exact in every dtype and in sums.
fn val<T: Element + FromSmall>(r: usize, i: usize) -> T {
    T::from_small(((r * 7 + i * 3) % 5) as i8)
}

/// Conversion from small integers, for test data exact in every type.
trait FromSmall: Copy {
    fn from_small(v: i8) -> Self;
}
macro_rules! from_small {
    ($($t:ty),*) => {$( impl FromSmall for $t { fn from_small(v: i8) -> Self { v as $t } } )*};
}
from_small!(u8, i8, i32, u32, i64, u64, f32, f64);
impl FromSmall for dist_runtime::f16 {
    fn from_small(v: i8) -> Self {
        dist_runtime::f16::from_f32(v as f32)
    }
}
impl FromSmall for dist_runtime::bf16 {
    fn from_small(v: i8) -> Self {
        dist_runtime::bf16::from_f32(v as f32)
    }
}
/// Sum of small integers in the element type (exact for the values and sizes used:
/// wrapping for 8-bit types, which the reference below also does).
trait AddSmall: Copy {
    fn add(self, o: Self) -> Self;
}
macro_rules! add_int { ($($t:ty),*) => {$( impl AddSmall for $t { fn add(self, o: Self) -> Self { self.wrapping_add(o) } } )*}; }
add_int!(u8, i8, i32, u32, i64, u64);
macro_rules! add_float { ($($t:ty),*) => {$( impl AddSmall for $t { fn add(self, o: Self) -> Self { self + o } } )*}; }
add_float!(f32, f64, dist_runtime::f16, dist_runtime::bf16);

/// Element types NCCL can move (every dtype of dist; empty without the `nccl` feature).
#[cfg(feature = "nccl")]
trait DevElem: dist_runtime::nccl::DeviceRepr {}
#[cfg(feature = "nccl")]
impl<T: dist_runtime::nccl::DeviceRepr> DevElem for T {}
#[cfg(not(feature = "nccl"))]
trait DevElem {}
#[cfg(not(feature = "nccl"))]
impl<T> DevElem for T {}

trait BenchElem: Element + bytemuck::Pod + FromSmall + AddSmall + Default + DevElem {}
impl<T: Element + bytemuck::Pod + FromSmall + AddSmall + Default + DevElem> BenchElem for T {}

#[spmd]
fn bench_rank(world: Comm<World>) -> dist_runtime::Result<()> {
    let s = spec();
    match s.dtype.as_str() {
        "f32" => run_all::<f32>(&world, &s),
        "f64" => run_all::<f64>(&world, &s),
        "f16" => run_all::<dist_runtime::f16>(&world, &s),
        "bf16" => run_all::<dist_runtime::bf16>(&world, &s),
        "i32" => run_all::<i32>(&world, &s),
        "u32" => run_all::<u32>(&world, &s),
        "i64" => run_all::<i64>(&world, &s),
        "u64" => run_all::<u64>(&world, &s),
        "u8" => run_all::<u8>(&world, &s),
        _ => run_all::<i8>(&world, &s),
    }
}

fn harness_name(op: &str) -> &'static str {
    match op {
        "all_reduce" => "allreduce",
        "broadcast" => "bcast",
        "all_gather" => "allgather",
        "reduce_scatter" => "reduce_scatter",
        "all_to_all" => "alltoall",
        _ => "pingpong",
    }
}

fn run_all<T: BenchElem>(world: &Comm<World>, s: &Spec) -> dist_runtime::Result<()> {
    let (n, me) = (world.size(), world.rank());
    let es = std::mem::size_of::<T>();
    if me == 0 {
        if s.tsv {
            println!("impl\top\tranks\tbytes\trep\titers\tus\talgbw_GBps\tbusbw_GBps");
        } else {
            let dev = world.device_kind().map(|d| format!(" (device buffers on {d})")).unwrap_or_default();
            // The ranks run with the caller's DIST_DEBUG, else the library's default
            // (check): the figures are what a program gets with the checks it runs with.
            let debug = std::env::var("DIST_DEBUG").unwrap_or_else(|_| "check (the default)".into());
            let place = if s.misaligned { "16 and 48 bytes past pages (--misaligned)" } else { "page-aligned" };
            println!(
                "# dist-bench: {n} ranks, backend {}{dev}, dtype {}, DIST_DEBUG={debug}, buffers {place}",
                world.backend(),
                T::DTYPE
            );
            println!(
                "# {:>14} {:>12} {:>6} {:>6} {:>5} {:>11} {:>9} {:>9} {:>7}",
                "op", "size(B)", "count", "type", "root", "time(us)", "algbw", "busbw", "#wrong"
            );
        }
    }
    let mut points: Vec<(String, usize, f64)> = Vec::new();
    let mut first = s.first;
    for op in &s.ops {
        if op == "pingpong" && n < 2 {
            continue;
        }
        let sizes: Vec<usize> = if s.sizes.is_empty() {
            SIZES.iter().copied().filter(|&b| b >= s.lo && b <= s.hi).collect()
        } else {
            s.sizes.clone()
        };
        for bytes in sizes {
            // `bytes` follows nccl-tests / the peers harness; derive per-rank element counts.
            let count = (bytes / es).max(1);
            let per = (count / n).max(1); // block per rank for gather/scatter-like ops
            let mut case = Case::<T>::new(op, n, me, count, per, s.misaligned);
            if s.shared {
                case.share(world)?;
            }
            case.place_on_device(world)?;
            if first > 0 {
                let mut us = Vec::with_capacity(first);
                for _ in 0..std::mem::take(&mut first) {
                    let t = Instant::now();
                    case.run(world)?;
                    case.sync()?;
                    us.push(t.elapsed().as_secs_f64() * 1e6);
                }
                let mut worst = vec![0f64; n];
                world.all_gather(&[us.iter().copied().fold(0.0, f64::max)], &mut worst)?;
                if me == 0 {
                    let list: Vec<String> = us.iter().map(|u| format!("{u:.1}")).collect();
                    let worst: Vec<String> = worst.iter().map(|u| format!("{u:.1}")).collect();
                    println!(
                        "# first {} calls of {op} {bytes} B, one by one, µs, rank 0: {}",
                        us.len(),
                        list.join(" ")
                    );
                    println!("# the slowest of them on each rank, µs: {}", worst.join(" "));
                }
            }
            // Untimed warm-up, then a timed batch after it, from which rank 0 decides the
            // iteration count and shares it. (Timing the warm-up itself counted a job's
            // first calls, tens of µs where the steady state is under one: loops of a few
            // thousand iterations at 8 B, each a few ms, where the ranks idle in a
            // ping-pong falling asleep skewed the mean 1.5-3x. scripts/peers/mpi_coll.c
            // warms up with up to 50 calls.)
            for _ in 0..s.warmup.max(1) {
                case.run(world)?;
            }
            case.sync()?;
            let batch = if bytes <= 1 << 20 { 20 } else { 2 };
            let t = Instant::now();
            for _ in 0..batch {
                case.run(world)?;
            }
            case.sync()?;
            let one = t.elapsed().as_secs_f64() / batch as f64;
            let mut iters =
                [if s.iters > 0 { s.iters } else { ((s.budget / one.max(1e-7)) as usize).clamp(1, 100_000) } as u64];
            world.broadcast(&mut iters, 0)?;
            let iters = iters[0] as usize;
            for rep in 0..s.reps {
                world.barrier()?;
                let t = Instant::now();
                for _ in 0..iters {
                    case.run(world)?;
                }
                case.sync()?;
                let mut el = [t.elapsed().as_secs_f64()];
                world.all_reduce(&mut el, ReduceOp::Max)?;
                let mut us = el[0] * 1e6 / iters as f64;
                if op == "pingpong" {
                    us /= 2.0; // one way
                }
                let wrong = case.check(world)?;
                let mut w = [wrong as u64];
                world.all_reduce(&mut w, ReduceOp::Sum)?;
                let b = case.bytes as f64;
                let algbw = b / (us * 1e-6) / 1e9;
                let nf = n as f64;
                let busbw = algbw
                    * match op.as_str() {
                        "all_reduce" => 2.0 * (nf - 1.0) / nf,
                        "all_gather" | "reduce_scatter" | "all_to_all" => (nf - 1.0) / nf,
                        _ => 1.0,
                    };
                points.push((op.clone(), case.bytes, busbw));
                if me == 0 {
                    if s.tsv {
                        // The impl column names the backend past shm ("dist-mpi"), so one
                        // interleaved run can hold both in scripts/peers' summary.
                        let backend = world.backend().to_string();
                        // `DIST_BENCH_NAME` names it otherwise (two settings in one run).
                        let imp = match std::env::var("DIST_BENCH_NAME") {
                            Ok(name) if !name.trim().is_empty() => name.trim().to_string(),
                            _ if backend == "shm" => "dist".to_string(),
                            _ => format!("dist-{backend}"),
                        };
                        println!(
                            "{imp}\t{}\t{n}\t{}\t{rep}\t{iters}\t{us:.3}\t{algbw:.4}\t{busbw:.4}",
                            harness_name(op),
                            case.bytes
                        );
                    } else {
                        let redop = if op == "all_reduce" || op == "reduce_scatter" { "sum" } else { "" };
                        let root = if op == "broadcast" { "0" } else { "" };
                        println!(
                            "  {:>14} {:>12} {:>6} {:>6} {:>5} {:>11.2} {:>9.3} {:>9.3} {:>7}",
                            op,
                            case.bytes,
                            case.count,
                            format!(
                                "{}{}",
                                T::DTYPE,
                                if redop.is_empty() { String::new() } else { format!("/{redop}") }
                            ),
                            root,
                            us,
                            algbw,
                            busbw,
                            w[0]
                        );
                    }
                    use std::io::Write;
                    let _ = std::io::stdout().flush();
                }
                if w[0] > 0 && me == 0 && !s.tsv {
                    eprintln!("# {op} {bytes}: {} wrong elements", w[0]);
                }
            }
        }
    }
    let _ = Duration::ZERO;
    if me == 0 {
        if let Some(path) = std::env::var("DIST_BENCH_PLOT").ok().filter(|p| !p.is_empty()) {
            let title = format!(
                "dist {} busbw, {n} ranks{}",
                world.backend(),
                if s.shared { ", buffers from Comm::alloc" } else { "" }
            );
            match plot::busbw(&path, &title, &points) {
                Ok(()) => eprintln!("# wrote {path}"),
                Err(e) => eprintln!("# cannot write {path}: {e}"),
            }
        }
    }
    Ok(())
}

/// One (op, size): its buffers, how to run it, and how to check its result.
struct Case<T: Element> {
    op: String,
    n: usize,
    me: usize,
    /// Elements in the op's main buffer (for the table's `count`).
    count: usize,
    /// Bytes as the peers harness counts them.
    bytes: usize,
    a: Host<T>,
    b: Paged<T>,
    /// Device copies of `a` and `b` when the job runs NCCL: the ops run on them.
    #[cfg(feature = "nccl")]
    dev: Option<Device<T>>,
}

#[cfg(feature = "nccl")]
struct Device<T> {
    stream: std::sync::Arc<dist_runtime::nccl::CudaStream>,
    a: dist_runtime::nccl::CudaSlice<T>,
    b: dist_runtime::nccl::CudaSlice<T>,
}

impl<T: BenchElem> Case<T> {
    fn new(op: &str, n: usize, me: usize, count: usize, per: usize, misaligned: bool) -> Case<T> {
        let es = std::mem::size_of::<T>();
        let (a, b, count, bytes) = match op {
            // per-rank buffer of `count`
            "all_reduce" | "broadcast" => (count, 0, count, count * es),
            // Sent from `a`, received into `b`, as scripts/peers/mpi_coll.c times it (a
            // rank that received into the buffer it sends back would make the peer read
            // lines just written on another core: ~3x slower at 64 KiB on any transport).
            "pingpong" => (count, count, count, count * es),
            // total gathered size n*per
            "all_gather" => (per, n * per, n * per, n * per * es),
            "reduce_scatter" => (n * per, per, n * per, n * per * es),
            // total send size per rank
            _ => (n * per, n * per, n * per, n * per * es),
        };
        let (a, b) = match misaligned {
            false => (Paged::zeroed(a), Paged::zeroed(b)),
            true => (Paged::zeroed_at(a, 16), Paged::zeroed_at(b, 48)),
        };
        let mut c = Case {
            op: op.into(),
            n,
            me,
            count,
            bytes,
            a: Host::Paged(a),
            b,
            #[cfg(feature = "nccl")]
            dev: None,
        };
        c.fill();
        c
    }

    /// Moves `a` (the buffer peers read) into memory from `Comm::alloc` (`--shared`).
    fn share(&mut self, w: &Comm<World>) -> dist_runtime::Result<()> {
        let mut buf = w.alloc::<T>(self.a.len())?;
        buf.copy_from_slice(&self.a);
        self.a = Host::Shared(buf);
        Ok(())
    }

    /// With the NCCL backend, moves the buffers to this rank's GPU; the ops then run there.
    fn place_on_device(&mut self, _w: &Comm<World>) -> dist_runtime::Result<()> {
        #[cfg(feature = "nccl")]
        if let Ok(stream) = _w.stream() {
            let err = |e: dist_runtime::nccl::DriverError| dist_runtime::Error::Backend {
                backend: "nccl",
                msg: format!("bench buffers: {e:?}"),
                source: None,
            };
            let a = stream.clone_htod(&self.a[..]).map_err(err)?;
            let b = if self.b.is_empty() {
                stream.clone_htod(&self.a[..1]).map_err(err)?
            } else {
                stream.clone_htod(&self.b[..]).map_err(err)?
            };
            self.dev = Some(Device { stream, a, b });
        }
        Ok(())
    }

    /// Waits for the ops enqueued on the GPU (no-op on the host backends).
    fn sync(&self) -> dist_runtime::Result<()> {
        #[cfg(feature = "nccl")]
        if let Some(d) = &self.dev {
            d.stream.synchronize().map_err(|e| dist_runtime::Error::Backend {
                backend: "nccl",
                msg: format!("stream synchronize: {e:?}"),
                source: None,
            })?;
        }
        Ok(())
    }

    /// The device run of the op, through the same `Comm` methods as the host run: each
    /// returns once the op has completed on the GPU.
    #[cfg(feature = "nccl")]
    fn run_device(&mut self, w: &Comm<World>) -> dist_runtime::Result<()> {
        let d = self.dev.as_mut().expect("on the device");
        // Device p2p has no tags (NCCL): the typed tag only fixes the element type.
        let tag = Tag::<T>::new(77);
        match self.op.as_str() {
            "all_reduce" => w.all_reduce(&mut d.a, ReduceOp::Sum),
            "broadcast" => w.broadcast(&mut d.a, 0),
            "all_gather" => w.all_gather(&d.a, &mut d.b),
            "reduce_scatter" => w.reduce_scatter(&d.a, &mut d.b, ReduceOp::Sum),
            "all_to_all" => w.all_to_all(&d.a, &mut d.b),
            _ => match self.me {
                0 => {
                    w.send(1, tag, &d.a)?;
                    w.recv(1, tag, &mut d.b)
                }
                1 => {
                    w.recv(0, tag, &mut d.b)?;
                    w.send(0, tag, &d.a)
                }
                _ => Ok(()),
            },
        }
    }

    fn fill(&mut self) {
        let me = self.me;
        for (i, x) in self.a.iter_mut().enumerate() {
            *x = val(me, i);
        }
        // What an op writes starts blank, so a check never passes on an earlier loop's data.
        self.b.iter_mut().for_each(|x| *x = T::default());
    }

    fn run(&mut self, w: &Comm<World>) -> dist_runtime::Result<()> {
        #[cfg(feature = "nccl")]
        if self.dev.is_some() {
            return self.run_device(w);
        }
        const PING: Tag<u8> = Tag::new(77);
        match self.op.as_str() {
            "all_reduce" => w.all_reduce(&mut self.a[..], ReduceOp::Sum),
            "broadcast" => w.broadcast(&mut self.a[..], 0),
            "all_gather" => w.all_gather(&self.a[..], &mut self.b[..]),
            "reduce_scatter" => w.reduce_scatter(&self.a[..], &mut self.b[..], ReduceOp::Sum),
            "all_to_all" => w.all_to_all(&self.a[..], &mut self.b[..]),
            _ => {
                let (a, b) = (bytemuck::cast_slice::<T, u8>(&self.a), bytemuck_bytes(&mut self.b));
                match self.me {
                    0 => {
                        w.send(1, PING, a)?;
                        w.recv(1, PING, b)
                    }
                    1 => {
                        w.recv(0, PING, b)?;
                        w.send(0, PING, a)
                    }
                    _ => Ok(()),
                }
            }
        }
    }

    /// Runs the op once more on fresh data and counts wrong elements.
    fn check(&mut self, w: &Comm<World>) -> dist_runtime::Result<usize> {
        self.fill();
        #[cfg(feature = "nccl")]
        if let Some(d) = &mut self.dev {
            let err = |e: dist_runtime::nccl::DriverError| dist_runtime::Error::Backend {
                backend: "nccl",
                msg: format!("bench check: {e:?}"),
                source: None,
            };
            d.stream.memcpy_htod(&self.a[..], &mut d.a).map_err(err)?;
        }
        self.run(w)?;
        self.sync()?;
        #[cfg(feature = "nccl")]
        if let Some(d) = &self.dev {
            let err = |e: dist_runtime::nccl::DriverError| dist_runtime::Error::Backend {
                backend: "nccl",
                msg: format!("bench check: {e:?}"),
                source: None,
            };
            d.stream.memcpy_dtoh(&d.a, &mut self.a[..]).map_err(err)?;
            if !self.b.is_empty() {
                d.stream.memcpy_dtoh(&d.b, &mut self.b[..]).map_err(err)?;
            }
        }
        let (n, me) = (self.n, self.me);
        let eq = |x: &T, y: &T| x == y;
        let wrong = match self.op.as_str() {
            "all_reduce" => (0..self.a.len())
                .filter(|&i| {
                    let want = (0..n).map(|r| val::<T>(r, i)).reduce(|a, b| a.add(b)).unwrap();
                    !eq(&self.a[i], &want)
                })
                .count(),
            "broadcast" => (0..self.a.len()).filter(|&i| !eq(&self.a[i], &val(0, i))).count(),
            "all_gather" => {
                let per = self.a.len();
                (0..self.b.len()).filter(|&k| !eq(&self.b[k], &val(k / per, k % per))).count()
            }
            "reduce_scatter" => {
                let per = self.b.len();
                (0..per)
                    .filter(|&i| {
                        let want = (0..n).map(|r| val::<T>(r, me * per + i)).reduce(|a, b| a.add(b)).unwrap();
                        !eq(&self.b[i], &want)
                    })
                    .count()
            }
            "all_to_all" => {
                let per = self.a.len() / n;
                (0..self.b.len()).filter(|&k| !eq(&self.b[k], &val(k / per, me * per + k % per))).count()
            }
            // pingpong: ranks 0 and 1 each received the other's data; the others are idle
            _ if me < 2 => (0..self.b.len()).filter(|&i| !eq(&self.b[i], &val(1 - me, i))).count(),
            _ => 0,
        };
        self.fill();
        Ok(wrong)
    }
}

/// Host memory of a bench buffer: page-aligned heap memory ([`Paged`]), or memory from
/// `Comm::alloc` (`--shared`).
enum Host<T: Element> {
    Paged(Paged<T>),
    Shared(dist_runtime::SharedBuf<T>),
}

impl<T: Element> std::ops::Deref for Host<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        match self {
            Host::Paged(v) => v,
            Host::Shared(s) => s,
        }
    }
}

impl<T: Element> std::ops::DerefMut for Host<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        match self {
            Host::Paged(v) => v,
            Host::Shared(s) => s,
        }
    }
}

/// A zeroed buffer at a page boundary, as `scripts/peers/mpi_coll.c` allocates its own
/// (`aligned_alloc(4096, …)`), so both columns of a comparison copy between buffers that
/// sit alike. Where a copy's source and destination sit at different offsets within a
/// cache line, the kernel's single-copy read and memcpy run slower: with Open MPI alone,
/// 64 KiB ping-pong's `process_vm_readv` took 3.0 µs between buffers 16 bytes apart mod
/// 64 against 2.7 µs between page-aligned ones (one-way 4.0–4.2 vs 3.5–3.9 µs). Two
/// `Vec`s land at unrelated offsets (glibc puts a chunk's data 16 bytes past its header,
/// anywhere in the heap), so Vec buffers measured the allocator's placement, not the
/// transport. `--misaligned` places them as two `Vec`s often sit, to measure that case.
struct Paged<T> {
    ptr: std::ptr::NonNull<T>,
    len: usize,
    offset: usize,
}

impl<T: bytemuck::Pod> Paged<T> {
    fn zeroed(len: usize) -> Paged<T> {
        Paged::zeroed_at(len, 0)
    }

    /// `offset` bytes past a page boundary (a multiple of `T`'s alignment).
    fn zeroed_at(len: usize, offset: usize) -> Paged<T> {
        if len == 0 {
            return Paged { ptr: std::ptr::NonNull::dangling(), len: 0, offset: 0 };
        }
        let layout = Paged::<T>::layout(len, offset);
        // SAFETY: a non-zero size; all-zero bytes are a valid `T` (Pod).
        let base = unsafe { std::alloc::alloc_zeroed(layout) };
        let Some(base) = std::ptr::NonNull::new(base) else { std::alloc::handle_alloc_error(layout) };
        // SAFETY: `offset` is within the allocation, which holds `len` elements past it.
        let ptr = unsafe { base.add(offset) }.cast::<T>();
        Paged { ptr, len, offset }
    }
}

impl<T> Paged<T> {
    fn layout(len: usize, offset: usize) -> std::alloc::Layout {
        std::alloc::Layout::from_size_align(offset + len * std::mem::size_of::<T>(), 4096)
            .expect("a bench buffer's size")
    }
}

impl<T> Drop for Paged<T> {
    fn drop(&mut self) {
        if self.len > 0 {
            let layout = Paged::<T>::layout(self.len, self.offset);
            // SAFETY: allocated in `zeroed_at` with this layout, `offset` bytes before `ptr`.
            unsafe { std::alloc::dealloc(self.ptr.cast::<u8>().as_ptr().sub(self.offset), layout) };
        }
    }
}

impl<T> std::ops::Deref for Paged<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        // SAFETY: `len` initialized elements at `ptr` (or none, dangling), owned by `self`.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl<T> std::ops::DerefMut for Paged<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        // SAFETY: as above, borrowed mutably through `self`.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

// SAFETY: owns its elements, like a Vec.
unsafe impl<T: Send> Send for Paged<T> {}
// SAFETY: as above.
unsafe impl<T: Sync> Sync for Paged<T> {}

fn bytemuck_bytes<T: Element + bytemuck::Pod>(v: &mut [T]) -> &mut [u8] {
    bytemuck::cast_slice_mut(v)
}
