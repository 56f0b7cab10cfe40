// Rank 0 logs the parameters' norm, which all-reduces: an extra collective on rank 0
// that meets the other ranks' next all-reduce (same op and length) and shifts every
// collective after it. The error names the extra one, not the later pair that no
// longer agrees.
use dist_runtime::prelude::*;

struct Trainer {
    world: Comm<World>,
    params: Vec<f64>,
}

impl Trainer {
    fn norm(&self, v: &[f64]) -> dist_runtime::Result<f64> {
        let mut sq = [v.iter().map(|x| x * x).sum::<f64>()];
        self.world.all_reduce(&mut sq, ReduceOp::Sum)?;
        Ok(sq[0].sqrt())
    }

    fn eval(&self) -> dist_runtime::Result<f64> {
        let mut l = [self.params[0]];
        self.world.all_reduce(&mut l, ReduceOp::Sum)?;
        Ok(l[0])
    }

    fn train(&mut self, steps: usize) -> dist_runtime::Result<()> {
        for step in 0..steps {
            let g = self.norm(&self.params)?;
            self.params[0] -= 0.1 * g;
            if self.world.rank() == 0 && step % 10 == 0 {
                println!("step {step} |w| {:.4}", self.norm(&self.params)?);
            }
        }
        Ok(())
    }
}

#[spmd(sizes = 2..=4)]
fn main(world: Comm<World>) -> dist_runtime::Result<()> {
    let mut t = Trainer { world: world.clone(), params: vec![1.0; 4] };
    t.train(3)?;
    let e = t.eval()?;
    let mut worst = [e];
    world.all_reduce(&mut worst, ReduceOp::Max)?;
    Ok(())
}
