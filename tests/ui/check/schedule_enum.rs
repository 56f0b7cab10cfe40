// A pipeline schedule built as a list of actions by a helper, then run by a `match`:
// the check follows the enum values. The last stage sends its activations on, to a
// stage that does not exist.
use dist_runtime::prelude::*;

const ACT: Tag<f32> = Tag::new(1);

#[derive(Clone, Copy)]
enum Step {
    Recv(usize),
    Compute(usize),
    Send(usize),
}

fn schedule(stage: usize, _stages: usize, micro: usize) -> Vec<Step> {
    let mut out = Vec::new();
    for mb in 0..micro {
        if stage > 0 {
            out.push(Step::Recv(mb));
        }
        out.push(Step::Compute(mb));
        out.push(Step::Send(mb));
    }
    out
}

#[spmd(sizes = 2..=3)]
fn main(world: Comm<World>) -> dist_runtime::Result<()> {
    let (s, n) = (world.rank(), world.size());
    let mut act = [0.0f32; 8];
    for step in schedule(s, n, 2) {
        match step {
            Step::Recv(_) => world.recv(s - 1, ACT, &mut act)?,
            Step::Compute(mb) => act[0] += mb as f32,
            Step::Send(_) => world.send(s + 1, ACT, &act)?,
        }
    }
    Ok(())
}
