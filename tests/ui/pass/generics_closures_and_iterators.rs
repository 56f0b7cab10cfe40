// Ordinary code the check follows whole: a function generic over a trait, given its
// type by turbofish and by its argument, reading the type's constant through
// `<M as Packed>::WORDS`; a pairwise exchange over the package's own `Iterator` (a
// round-robin schedule with byes), run in a closure handed to a timing helper; a loop
// over a constant array of enum variants.
#![deny(deprecated)]
use dist_runtime::prelude::*;

const T: Tag<u64> = Tag::new(3);

trait Packed: Sized {
    const WORDS: usize;
    fn pack(&self) -> Vec<u64>;
    fn unpack(w: &[u64]) -> Self;
}

struct One(u64);
struct Pair(u64, u64);

impl Packed for One {
    const WORDS: usize = 1;
    fn pack(&self) -> Vec<u64> {
        vec![self.0]
    }
    fn unpack(w: &[u64]) -> Self {
        One(w[0])
    }
}

impl Packed for Pair {
    const WORDS: usize = 2;
    fn pack(&self) -> Vec<u64> {
        vec![self.0, self.1]
    }
    fn unpack(w: &[u64]) -> Self {
        Pair(w[0], w[1])
    }
}

fn shift<M: Packed>(c: &Comm<World>, x: &M) -> dist_runtime::Result<M> {
    let (r, n) = (c.rank(), c.size());
    let mut words = vec![0u64; <M as Packed>::WORDS];
    c.sendrecv((r + 1) % n, T, &x.pack(), (r + n - 1) % n, &mut words)?;
    Ok(M::unpack(&words))
}

/// Rounds of a round-robin tournament: each rank's partner, `None` for a bye.
struct Schedule {
    me: usize,
    players: usize,
    ranks: usize,
    round: usize,
}

impl Iterator for Schedule {
    type Item = Option<usize>;
    fn next(&mut self) -> Option<Option<usize>> {
        let m = self.players - 1;
        if self.round == m {
            return None;
        }
        let k = self.round;
        self.round += 1;
        let p = if self.me == m {
            k
        } else if self.me == k {
            m
        } else {
            (2 * k + m - self.me) % m
        };
        Some((p < self.ranks).then_some(p))
    }
}

fn pairwise(c: &Comm<World>) -> dist_runtime::Result<u64> {
    let (r, n) = (c.rank(), c.size());
    let players = n + n % 2;
    let mut sum = 0;
    for p in (Schedule { me: r, players, ranks: n, round: 0 }).flatten() {
        let mut got = [0u64];
        c.sendrecv(p, T, &[r as u64], p, &mut got)?;
        sum += got[0];
    }
    Ok(sum)
}

fn best_of<R>(reps: usize, mut f: impl FnMut() -> dist_runtime::Result<R>) -> dist_runtime::Result<R> {
    let mut last = f()?;
    for _ in 1..reps {
        last = f()?;
    }
    Ok(last)
}

#[derive(Clone, Copy, PartialEq)]
enum Mode {
    Shift,
    Pairs,
}

impl Mode {
    const ALL: [Mode; 2] = [Mode::Shift, Mode::Pairs];
}

#[spmd]
fn main(world: Comm<World>) -> dist_runtime::Result<()> {
    let n = world.size() as u64;
    for mode in Mode::ALL {
        if mode == Mode::Shift {
            let a = shift(&world, &One(world.rank() as u64))?;
            let b = shift::<Pair>(&world, &Pair(1, 2))?;
            assert_eq!((a.0 + 1) % n, world.rank() as u64 % n);
            assert_eq!(b.1, 2);
        } else {
            let others = best_of(2, || pairwise(&world))?;
            assert_eq!(others, n * (n - 1) / 2 - world.rank() as u64);
        }
    }
    Ok(())
}
