// A mode chosen by a flag (`if flat { Mode::Flat } else { Mode::Hier { local: 2 } }`):
// every rank takes the same branch, so the check decides it (one branch per run) rather
// than merging two variants into data; the hierarchical mode's node split is followed
// and the barrier only node leaders reach is found.
use dist_runtime::prelude::*;

dist_runtime::group!(Node);

enum Mode {
    Flat,
    Hier { local: usize },
}

#[spmd(ranks = 4)]
fn main(world: Comm<World>) -> dist_runtime::Result<()> {
    let flat = std::env::args().any(|a| a == "--flat");
    let mode = if flat { Mode::Flat } else { Mode::Hier { local: 2 } };
    match mode {
        Mode::Flat => world.barrier()?,
        Mode::Hier { local } => {
            let node = world.split::<Node>((world.rank() / local) as u32, world.rank() as i64)?;
            if node.rank() == 0 {
                node.barrier()?;
            }
        }
    }
    Ok(())
}
