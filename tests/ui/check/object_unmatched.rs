// Stage 0 sends its note to stage 1 with one tag, stage 1 waits on another.
use dist_runtime::prelude::*;

const NOTE: Tag<String> = Tag::new(1);
const PLAN: Tag<String> = Tag::new(2);

#[spmd(ranks = 2)]
fn main(world: Comm<World>) -> dist_runtime::Result<()> {
    if world.rank() == 0 {
        world.send_object(1, NOTE, &"hello".to_string())?;
    } else {
        let _plan: String = world.recv_object(0, PLAN)?;
    }
    Ok(())
}
