// A receive written as one of the package's macros, called once more than rank 0
// sends: the unmatched receive is named at the macro's call.
use dist_runtime::prelude::*;

const DATA: Tag<f64> = Tag::new(7);

macro_rules! recv_from {
    ($c:expr, $from:expr => $name:ident[$n:expr]) => {
        let mut $name = vec![0.0f64; $n];
        $c.recv($from, DATA, &mut $name)?;
    };
}

#[spmd(sizes = 2..=3)]
fn main(world: Comm<World>) -> dist_runtime::Result<()> {
    let x = vec![1.0; 4];
    if world.rank() == 0 {
        world.send(1, DATA, &x)?;
    }
    if world.rank() == 1 {
        recv_from!(world, 0 => a[4]);
        recv_from!(world, 0 => b[4]);
        assert_eq!(a, b);
    }
    Ok(())
}
