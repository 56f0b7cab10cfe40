//! The GPipe schedule of one stage: every micro-batch forward, then every
//! micro-batch backward in reverse order, with the transfers each needs.

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// Receive the input activation of micro-batch `mb` from the previous stage.
    RecvAct(usize),
    Forward(usize),
    /// Send the output activation of `mb` to the next stage.
    SendAct(usize),
    /// Last stage only: loss and output gradient of `mb`.
    Loss(usize),
    /// Receive the gradient of the output of `mb` from the next stage.
    RecvGrad(usize),
    Backward(usize),
    /// Send the gradient of the input of `mb` to the previous stage.
    SendGrad(usize),
}

#[derive(Clone, Debug)]
pub struct Schedule {
    pub stage: usize,
    pub stages: usize,
    pub ops: Vec<Op>,
}

impl Schedule {
    pub fn gpipe(stage: usize, stages: usize, micro: usize) -> Schedule {
        let (first, last) = (stage == 0, stage + 1 == stages);
        let mut ops = Vec::with_capacity(6 * micro);
        for mb in 0..micro {
            if !first {
                ops.push(Op::RecvAct(mb));
            }
            ops.push(Op::Forward(mb));
            if last {
                ops.push(Op::Loss(mb));
            } else {
                ops.push(Op::SendAct(mb));
            }
        }
        for mb in (0..micro).rev() {
            if !last {
                ops.push(Op::RecvGrad(mb));
            }
            ops.push(Op::Backward(mb));
            if !first {
                ops.push(Op::SendGrad(mb));
            }
        }
        Schedule { stage, stages, ops }
    }

    pub fn is_first(&self) -> bool {
        self.stage == 0
    }

    pub fn is_last(&self) -> bool {
        self.stage + 1 == self.stages
    }

    /// How many transfers this stage makes per step (for the log).
    pub fn transfers(&self) -> usize {
        self.ops.iter().filter(|op| !matches!(op, Op::Forward(_) | Op::Backward(_) | Op::Loss(_))).count()
    }
}
