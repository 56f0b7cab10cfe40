// Ordinary model code the check follows whole: layers behind `Box<dyn Layer>` where one
// keeps the trait's provided `grad_mut` (its body runs: `None`), sizes from a module's
// and an impl's constants by path (`crate::shapes::LAYERS`, `Self::WIDTH`), and the
// leaders' list from `step_by` of a flag (the flag's sample, as in arithmetic).
#![deny(deprecated)]
use dist_runtime::prelude::*;
dist_runtime::group!(Heads);

mod shapes {
    pub const LAYERS: usize = 2;
}

trait Layer {
    fn forward(&mut self, x: &mut Vec<f32>, world: &Comm<World>) -> dist_runtime::Result<()>;
    fn grad_mut(&mut self) -> Option<&mut Vec<f32>> {
        None
    }
}

struct Linear {
    w: Vec<f32>,
    g: Vec<f32>,
}

struct Tanh;

impl Layer for Linear {
    fn forward(&mut self, x: &mut Vec<f32>, world: &Comm<World>) -> dist_runtime::Result<()> {
        for (a, b) in x.iter_mut().zip(&self.w) {
            *a *= b;
        }
        world.all_reduce(x, ReduceOp::Sum)
    }

    fn grad_mut(&mut self) -> Option<&mut Vec<f32>> {
        Some(&mut self.g)
    }
}

impl Layer for Tanh {
    fn forward(&mut self, x: &mut Vec<f32>, _world: &Comm<World>) -> dist_runtime::Result<()> {
        for a in x.iter_mut() {
            *a = a.tanh();
        }
        Ok(())
    }
}

struct Model {
    layers: Vec<Box<dyn Layer>>,
}

impl Model {
    const WIDTH: usize = 4;

    fn new() -> Model {
        let mut layers: Vec<Box<dyn Layer>> = Vec::new();
        for _ in 0..crate::shapes::LAYERS {
            layers.push(Box::new(Linear { w: vec![0.5; Self::WIDTH], g: vec![0.0; Self::WIDTH] }));
            layers.push(Box::new(Tanh));
        }
        Model { layers }
    }
}

fn node_size() -> usize {
    std::env::args().skip(1).find_map(|a| a.strip_prefix("--node-size=").map(|v| v.parse().unwrap())).unwrap_or(2)
}

#[spmd(sizes = 1..=8)]
fn main(world: Comm<World>) -> dist_runtime::Result<()> {
    let mut model = Model::new();
    let mut x = vec![1.0f32; Model::WIDTH];
    for layer in model.layers.iter_mut() {
        layer.forward(&mut x, &world)?;
    }
    for layer in model.layers.iter_mut() {
        if let Some(g) = layer.grad_mut() {
            world.all_reduce(g, ReduceOp::Avg)?;
        }
    }
    let heads: Vec<usize> = (0..world.size()).step_by(node_size()).collect();
    if let Some(leaders) = world.subgroup::<Heads>(&heads)? {
        let mut y = [1u32];
        leaders.all_reduce(&mut y, ReduceOp::Sum)?;
    }
    Ok(())
}
