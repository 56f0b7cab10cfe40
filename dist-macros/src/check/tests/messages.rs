//! What messages carry and receives from any source (`interp/messages.rs`,
//! `sim::scheduled`): a master/worker queue followed at every size, its bugs found.

use super::problems;

/// A master hands out `TASKS` tasks to whichever worker asks, then tells each to stop;
/// a worker loops until told to stop. `SERVE` is the master's loop condition.
const QUEUE: &str = r#"fn f(world: Comm<World>) -> dist_runtime::Result<()> {
    if world.rank() == 0 {
        let (mut next, mut stopped) = (0u64, 0);
        while SERVE {
            let mut done = [0u64];
            let st = world.recv_any(Tag::<u64>::new(1), &mut done)?;
            let reply = if next < 7 {
                next += 1;
                next - 1
            } else {
                stopped += 1;
                u64::MAX
            };
            world.send(REPLY_TO, Tag::<u64>::new(2), &[reply])?;
        }
    } else {
        let mut last = [0u64];
        loop {
            world.send(0, Tag::<u64>::new(1), &last)?;
            world.recv(0, Tag::<u64>::new(2), &mut last)?;
            if last[0] == u64::MAX {
                break;
            }
        }
    }
    world.barrier()?;
    Ok(())
}"#;

fn queue(serve: &str, reply_to: &str) -> String {
    QUEUE.replace("SERVE", serve).replace("REPLY_TO", reply_to)
}

#[test]
fn a_master_serving_racing_workers_is_followed() {
    for n in [2, 3, 4, 6] {
        let e = problems(&queue("stopped < world.size() - 1", "st.source"), "", n);
        assert_eq!(e, Vec::<String>::new(), "world size {n}");
    }
}

#[test]
fn a_master_that_waits_for_one_request_too_many_is_found() {
    for n in [2, 4] {
        let e = problems(&queue("stopped < world.size()", "st.source"), "", n);
        assert!(e.iter().any(|e| e.contains("`recv_any`") && e.contains("no matching `send`")), "{n}: {e:?}");
    }
}

#[test]
fn a_reply_to_the_wrong_worker_is_found() {
    // The source taken for a 0-based worker index: the reply meant for rank 1 goes to
    // the master itself.
    let e = problems(&queue("stopped < world.size() - 1", "st.source - 1"), "", 3);
    assert!(e.iter().any(|e| e.contains("`send` from rank 0 to rank 0")), "{e:?}");
}

#[test]
fn what_a_reply_says_decides_the_workers_loop() {
    // The worker stops on a word of the reply: a master that never sends it (its stop
    // word differs) leaves the workers asking, and the master gone.
    let src = queue("stopped < world.size() - 1", "st.source").replacen("u64::MAX\n", "u64::MAX - 1\n", 1);
    let e = problems(&src, "", 3);
    assert!(e.iter().any(|e| e.contains("this `recv` on rank 1 from rank 0 (tag 2) has no matching `send`")), "{e:?}");
}
