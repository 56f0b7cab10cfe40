//! Pipeline schedules as lists of actions for one stage.

use crate::args::ScheduleKind;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Receive micro-batch `mb`'s activations from the previous stage.
    RecvAct(usize),
    Forward(usize),
    SendAct(usize),
    RecvGrad(usize),
    Backward(usize),
    SendGrad(usize),
    /// Send activations of `send` to the next stage while receiving the gradient of `recv` from it.
    SendActRecvGrad { send: usize, recv: usize },
    /// Send the gradient of `send` to the previous stage while receiving activations of `recv` from it.
    SendGradRecvAct { send: usize, recv: usize },
    /// Sum the tied embedding's gradient between the first and last stage.
    SyncTied,
    /// Sum gradients over the data-parallel replicas.
    SyncReplicas,
    Step,
}

use Action::*;

/// The actions of stage `s` of `stages` for `micro` micro-batches.
pub fn build(kind: ScheduleKind, s: usize, stages: usize, micro: usize) -> Vec<Action> {
    let mut out = match kind {
        ScheduleKind::GPipe => gpipe(s, stages, micro),
        ScheduleKind::OneFOneB => one_f_one_b(s, stages, micro),
    };
    out.extend([SyncTied, SyncReplicas, Step]);
    out
}

fn gpipe(s: usize, stages: usize, micro: usize) -> Vec<Action> {
    let (first, last) = (s == 0, s + 1 == stages);
    let mut out = Vec::new();
    for mb in 0..micro {
        if !first {
            out.push(RecvAct(mb));
        }
        out.push(Forward(mb));
        if !last {
            out.push(SendAct(mb));
        }
    }
    for mb in (0..micro).rev() {
        if !last {
            out.push(RecvGrad(mb));
        }
        out.push(Backward(mb));
        if !first {
            out.push(SendGrad(mb));
        }
    }
    out
}

/// Megatron's non-interleaved 1F1B: warm-up forwards, steady one forward / one
/// backward with the paired exchanges, cool-down backwards.
fn one_f_one_b(s: usize, stages: usize, micro: usize) -> Vec<Action> {
    let (first, last) = (s == 0, s + 1 == stages);
    let warmup = (stages - s - 1).min(micro);
    let steady = micro - warmup;
    let mut out = Vec::new();
    for mb in 0..warmup {
        if !first {
            out.push(RecvAct(mb));
        }
        out.push(Forward(mb));
        if !last {
            out.push(SendAct(mb));
        }
    }
    if steady > 0 && !first {
        out.push(RecvAct(warmup));
    }
    for i in 0..steady {
        let f = warmup + i;
        out.push(Forward(f));
        if !last {
            out.push(SendActRecvGrad { send: f, recv: i });
        }
        out.push(Backward(i));
        if !first {
            if i + 1 == steady {
                out.push(SendGrad(i));
            } else {
                out.push(SendGradRecvAct { send: i, recv: f + 1 });
            }
        }
    }
    for mb in steady..micro {
        if !last {
            out.push(RecvGrad(mb));
        }
        out.push(Backward(mb));
        if !first {
            out.push(SendGrad(mb));
        }
    }
    out
}
