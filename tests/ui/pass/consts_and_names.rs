// Names the check resolves as Rust does: a module's constant computed from its sibling
// (`model::PARAMS` is the module's `LAYERS * 4`, whatever the crate's root calls
// `LAYERS`), `self::` inside the module, and an enum variant named like a unit struct
// (`Act::Relu` is the variant, `Relu` the struct). Followed whole, no length mismatch.
#![deny(deprecated)]
use dist_runtime::prelude::*;

const LAYERS: usize = 12;
const T: Tag<f32> = Tag::new(1);

mod model {
    pub const LAYERS: usize = 2;
    pub const PARAMS: usize = LAYERS * 4;

    pub fn params() -> usize {
        self::PARAMS
    }
}

struct Relu;

impl Relu {
    fn width(&self) -> usize {
        1
    }
}

enum Act {
    Relu,
    Gelu,
}

#[spmd(sizes = 1..=4)]
fn main(world: Comm<World>) -> dist_runtime::Result<()> {
    let (r, n) = (world.rank(), world.size());
    let sent = vec![0.0f32; model::PARAMS];
    let mut got = vec![0.0f32; model::params() * Relu.width()];
    if r + 1 < n {
        world.send(r + 1, T, &sent)?;
    }
    if r > 0 {
        world.recv(r - 1, T, &mut got)?;
    }
    let act = if LAYERS > model::LAYERS { Act::Relu } else { Act::Gelu };
    match act {
        Act::Relu => world.barrier()?,
        Act::Gelu => {}
    }
    Ok(())
}
