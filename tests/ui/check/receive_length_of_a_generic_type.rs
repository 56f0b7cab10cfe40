// A generic receive sized by the type's associated constant, one word too many:
// `<M as Packed>::WORDS` is the constant of the type the call gives `M`.
use dist_runtime::prelude::*;

const T: Tag<u64> = Tag::new(3);

trait Packed: Sized {
    const WORDS: usize;
    fn pack(&self) -> Vec<u64>;
}

struct Pair(u64, u64);

impl Packed for Pair {
    const WORDS: usize = 2;
    fn pack(&self) -> Vec<u64> {
        vec![self.0, self.1]
    }
}

fn pass_on<M: Packed>(c: &Comm<World>, x: &M) -> dist_runtime::Result<()> {
    if c.rank() == 0 {
        c.send(1, T, &x.pack())?;
    } else {
        let mut words = vec![0u64; <M as Packed>::WORDS + 1];
        c.recv(0, T, &mut words)?;
    }
    Ok(())
}

#[spmd(ranks = 2)]
fn main(world: Comm<World>) -> dist_runtime::Result<()> {
    pass_on::<Pair>(&world, &Pair(1, 2))
}
