// A model as a `Vec<Box<dyn Layer>>` whose parallel layers own their communicator: the
// forward pass a `try_fold` over `iter_mut()`, the backward a loop over the layers,
// gradients summed over `dp` layer by layer, the full weights gathered through a `for`
// over `&self.layers` and early stopping on a loss reduced over every rank. Each
// layer's methods take and return plain numbers (`&[f32]`, `Result<Vec<f32>>`): what the
// check cannot follow of how they were computed is data, not a communicator.
#![allow(dead_code)]
use dist_runtime::prelude::*;
use dist_runtime::Result;

trait Layer {
    fn forward(&mut self, x: &[f32]) -> Result<Vec<f32>>;
    fn backward(&mut self, dy: &[f32]) -> Result<Vec<f32>>;
    fn grads(&mut self) -> Vec<&mut Vec<f32>> {
        Vec::new()
    }
    fn full(&self) -> Result<Option<Vec<f32>>> {
        Ok(None)
    }
}

struct RowParallel {
    tp: Comm<World>,
    w: Vec<f32>,
    gw: Vec<f32>,
    saved: Vec<f32>,
}

impl Layer for RowParallel {
    fn forward(&mut self, x: &[f32]) -> Result<Vec<f32>> {
        let rows = x.len() / self.w.len();
        let mut y: Vec<f32> = (0..rows)
            .map(|r| x[r * self.w.len()..(r + 1) * self.w.len()].iter().zip(&self.w).map(|(a, b)| a * b).sum())
            .collect();
        self.tp.all_reduce(&mut y, ReduceOp::Sum)?;
        self.saved = x.to_vec();
        Ok(y)
    }
    fn backward(&mut self, dy: &[f32]) -> Result<Vec<f32>> {
        let rows = dy.len();
        let mut dx = vec![0.0; rows * self.w.len()];
        for r in 0..rows {
            for k in 0..self.w.len() {
                self.gw[k] += dy[r] * self.saved[r * self.w.len() + k];
                dx[r * self.w.len() + k] = dy[r] * self.w[k];
            }
        }
        Ok(dx)
    }
    fn grads(&mut self) -> Vec<&mut Vec<f32>> {
        vec![&mut self.gw]
    }
    fn full(&self) -> Result<Option<Vec<f32>>> {
        let mut all = vec![0.0; self.w.len() * self.tp.size()];
        self.tp.all_gather(&self.w, &mut all)?;
        Ok(Some(all))
    }
}

#[derive(Default)]
struct Tanh {
    out: Vec<f32>,
}

impl Layer for Tanh {
    fn forward(&mut self, x: &[f32]) -> Result<Vec<f32>> {
        self.out = x.iter().map(|v| v.tanh()).collect();
        Ok(self.out.clone())
    }
    fn backward(&mut self, dy: &[f32]) -> Result<Vec<f32>> {
        Ok(dy.iter().zip(&self.out).map(|(g, y)| g * (1.0 - y * y)).collect())
    }
}

struct Model {
    layers: Vec<Box<dyn Layer>>,
    dp: Comm<World>,
}

impl Model {
    fn forward(&mut self, x: &[f32]) -> Result<Vec<f32>> {
        self.layers.iter_mut().try_fold(x.to_vec(), |h, layer| layer.forward(&h))
    }
    fn backward(&mut self, dy: &[f32]) -> Result<()> {
        let mut g = dy.to_vec();
        for layer in self.layers.iter_mut().rev() {
            g = layer.backward(&g)?;
        }
        Ok(())
    }
    fn sync(&mut self) -> Result<()> {
        for layer in &mut self.layers {
            for g in layer.grads() {
                self.dp.all_reduce(g, ReduceOp::Sum)?;
            }
        }
        Ok(())
    }
    fn full(&self) -> Result<Vec<Vec<f32>>> {
        let mut out = Vec::new();
        for layer in &self.layers {
            if let Some(w) = layer.full()? {
                out.push(w);
            }
        }
        Ok(out)
    }
}

#[spmd]
fn main(world: Comm<World>) -> Result<()> {
    let layers: Vec<Box<dyn Layer>> = vec![
        Box::new(Tanh::default()),
        Box::new(RowParallel { tp: world.clone(), w: vec![0.5; 4], gw: vec![0.0; 4], saved: Vec::new() }),
    ];
    let mut model = Model { layers, dp: world.clone() };
    let mut best = f32::MAX;
    for _step in 0..5 {
        let y = model.forward(&[0.1; 8])?;
        let dy: Vec<f32> = y.iter().map(|v| v - 1.0).collect();
        model.backward(&dy)?;
        model.sync()?;
        let mut loss = [dy.iter().map(|d| d * d).sum::<f32>()];
        world.all_reduce(&mut loss, ReduceOp::Sum)?;
        if loss[0] >= best {
            break;
        }
        best = loss[0];
    }
    let full = model.full()?;
    assert_eq!(full.len(), 1);
    Ok(())
}
