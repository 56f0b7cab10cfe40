//! The 1F1B (PipeDream-flush) schedule as a list of actions per stage. Stage `s` of `P`
//! runs `P - s - 1` warm-up forwards, then alternates one forward and one backward, then
//! drains the remaining backwards. Where a stage sends one way and expects the other
//! way in the same slot, the two are one combined action (posted together), as
//! Megatron's `send_forward_recv_backward`.

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Receive micro-batch `mb`'s input activations from the previous stage.
    RecvAct(usize),
    /// Run this stage's layer on micro-batch `mb` (the last stage also takes the loss).
    Forward(usize),
    SendAct(usize),
    RecvGrad(usize),
    Backward(usize),
    SendGrad(usize),
    /// Send activations of `send` forward while receiving the gradient of `recv`.
    SendActRecvGrad { send: usize, recv: usize },
    /// Send the input gradient of `send` back while receiving activations of `recv`.
    SendGradRecvAct { send: usize, recv: usize },
}

pub fn warmup_len(stage: usize, stages: usize, microbatches: usize) -> usize {
    (stages - stage - 1).min(microbatches)
}

pub fn schedule(stage: usize, stages: usize, microbatches: usize) -> Vec<Action> {
    use Action::*;
    let (first, last) = (stage == 0, stage + 1 == stages);
    let warmup = warmup_len(stage, stages, microbatches);
    let steady = microbatches - warmup;
    let mut acts = Vec::with_capacity(6 * microbatches);

    for mb in 0..warmup {
        if !first {
            acts.push(RecvAct(mb));
        }
        acts.push(Forward(mb));
        if !last {
            acts.push(SendAct(mb));
        }
    }
    if steady > 0 && !first {
        acts.push(RecvAct(warmup));
    }
    for i in 0..steady {
        let fwd = warmup + i;
        acts.push(Forward(fwd));
        if !last {
            acts.push(SendActRecvGrad { send: fwd, recv: i });
        }
        acts.push(Backward(i));
        let more = i + 1 < steady;
        match (first, more) {
            (true, _) => {}
            (false, true) => acts.push(SendGradRecvAct { send: i, recv: fwd + 1 }),
            (false, false) => acts.push(SendGrad(i)),
        }
    }
    for mb in steady..microbatches {
        if !last {
            acts.push(RecvGrad(mb));
        }
        acts.push(Backward(mb));
        if !first {
            acts.push(SendGrad(mb));
        }
    }
    acts
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_microbatch_once_each_way() {
        for stages in 1..6 {
            for m in 1..7 {
                for s in 0..stages {
                    let a = schedule(s, stages, m);
                    let f = a.iter().filter(|x| matches!(x, Action::Forward(_))).count();
                    let b = a.iter().filter(|x| matches!(x, Action::Backward(_))).count();
                    assert_eq!((f, b), (m, m), "stage {s}/{stages}, {m} micro-batches");
                }
            }
        }
    }
}
