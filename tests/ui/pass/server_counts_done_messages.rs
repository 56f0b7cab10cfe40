// Every rank is a client and a server: it sends its requests to their owners and then a
// Done to every rank, and serves requests from any source until every rank said Done.
// How many receives the loop makes depends on what the messages hold (their kind word),
// which the check does not know: it says so (a warning) instead of reporting a receive
// with no matching send for the kinds it picked (the check refused this program).
use dist_runtime::prelude::*;
use dist_runtime::wait_all;

const REQUEST: Tag<u64> = Tag::new(0);
const PUT: u64 = 1;
const DONE: u64 = 4;

fn serve(world: &Comm<World>) -> dist_runtime::Result<u64> {
    let mut buf = vec![0u64; 8];
    let (mut done, mut stored) = (0, 0);
    while done < world.size() {
        let st = world.recv_any(REQUEST, &mut buf)?;
        match buf[0] {
            PUT => stored += buf[1..st.count].iter().sum::<u64>(),
            DONE => done += 1,
            other => panic!("unexpected kind {other}"),
        }
    }
    Ok(stored)
}

#[spmd]
fn main(world: Comm<World>) -> dist_runtime::Result<()> {
    let (n, me) = (world.size(), world.rank());
    let mut out: Vec<(usize, Vec<u64>)> = (0..3).map(|k| ((me + k) % n, vec![PUT, (me * 10 + k) as u64])).collect();
    out.extend((0..n).map(|r| (r, vec![DONE])));
    let sends =
        out.iter().map(|(to, words)| world.isend(*to, REQUEST, words)).collect::<dist_runtime::Result<Vec<_>>>()?;
    let stored = serve(&world)?;
    wait_all(sends)?;
    let mut total = [stored];
    world.all_reduce(&mut total, ReduceOp::Sum)?;
    let want: u64 = (0..n).flat_map(|r| (0..3).map(move |k| (r * 10 + k) as u64)).sum();
    assert_eq!(total[0], want);
    Ok(())
}
