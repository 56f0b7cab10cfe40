// Workers send a result framed by a 3-word header; the master sizes the buffer of its
// `recv_any` for the payload alone. A receive from any source may take a shorter
// message than its buffer, never a longer one: an error at the `recv_any`.
use dist_runtime::prelude::*;

const RESULT: Tag<u32> = Tag::new(1);
const HEADER: usize = 3;

fn collect(world: &Comm<World>, block: usize) -> dist_runtime::Result<u32> {
    let mut buf = vec![0u32; block];
    let mut sum = 0;
    for _ in 1..world.size() {
        let st = world.recv_any(RESULT, &mut buf)?;
        sum += buf[..st.count].iter().sum::<u32>();
    }
    Ok(sum)
}

#[spmd(sizes = 2..=4)]
fn main(world: Comm<World>) -> dist_runtime::Result<()> {
    let block = 8;
    if world.rank() == 0 {
        collect(&world, block)?;
    } else {
        let mut msg = vec![1u32; HEADER + block];
        msg[0] = world.rank() as u32;
        world.send(0, RESULT, &msg)?;
    }
    Ok(())
}
