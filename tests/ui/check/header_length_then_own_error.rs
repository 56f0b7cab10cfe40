// A header the root serialises with a field the others' buffer has no room for (the
// length constant went stale), checked after the broadcast by the program's own decode:
// the root fails there, but every rank reached the broadcast first, with different
// lengths. Found at the broadcast, not lost because the run ends in the program's error.
use dist_runtime::prelude::*;

mod wire {
    pub const HEADER_LEN: usize = 3;

    pub struct Header {
        pub steps: u64,
        pub batch: u64,
        pub seed: u64,
        pub lr_milli: u64,
    }

    impl Header {
        pub fn to_vec(&self) -> Vec<u64> {
            vec![self.steps, self.batch, self.seed, self.lr_milli]
        }
        pub fn from_slice(w: &[u64]) -> Result<Header, String> {
            if w.len() != HEADER_LEN {
                return Err(format!("header of {} words, expected {HEADER_LEN}", w.len()));
            }
            Ok(Header { steps: w[0], batch: w[1], seed: w[2], lr_milli: 0 })
        }
    }
}

#[spmd(ranks = 2)]
fn main(world: Comm<World>) -> Result<(), Box<dyn std::error::Error>> {
    let mut words = if world.rank() == 0 {
        wire::Header { steps: 10, batch: 32, seed: 7, lr_milli: 5 }.to_vec()
    } else {
        vec![0; wire::HEADER_LEN]
    };
    world.broadcast(&mut words, 0)?;
    let h = wire::Header::from_slice(&words)?;
    let mut acc = vec![h.seed as f32; h.batch as usize];
    for _ in 0..h.steps {
        world.all_reduce(&mut acc, ReduceOp::Sum)?;
    }
    Ok(())
}
