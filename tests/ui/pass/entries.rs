use dist_runtime::prelude::*;

dist_runtime::group!(Tp);
const ACT: Tag<f32> = Tag::new(1);

#[spmd(ranks = 4)]
fn helper_entry(world: Comm<World>) -> dist_runtime::Result<u64> {
    Ok(world.size() as u64)
}

#[spmd(sizes = 1..=16, strict)]
fn main(world: Comm<World>) -> Result<(), String> {
    let tp: Option<Comm<Tp>> = world.subgroup(&[0]).map_err(|e| e.to_string())?;
    let mut x = vec![world.rank() as f32; 4];
    if world.size() > 1 {
        match world.rank() {
            0 => world.send(1, ACT, &x).map_err(|e| e.to_string())?,
            1 => world.recv(0, ACT, &mut x).map_err(|e| e.to_string())?,
            _ => {}
        }
    }
    drop(tp);
    let _ = helper_entry;
    Ok(())
}

#[dist_runtime::test(ranks = [1, 2], timeout = 5.5)]
fn a_test(world: Comm<World>) {
    world.barrier().unwrap();
}
