// One more forward pass of a `Vec<Box<dyn Layer>>` model (a `try_fold` over
// `iter_mut()`) run by rank 0 only: the all-reduce inside the row-parallel layer is
// reached by one rank, an error at that all-reduce (the check used to pass over the
// closure of a `try_fold`, and with it the layers' collectives). The model in full, with
// backward, gradients and early stopping, is `ui/pass/layers_as_trait_objects.rs`.
use dist_runtime::prelude::*;
use dist_runtime::Result;

trait Layer {
    fn forward(&mut self, x: &[f32]) -> Result<Vec<f32>>;
}

struct RowParallel {
    tp: Comm<World>,
    w: f32,
}

impl Layer for RowParallel {
    fn forward(&mut self, x: &[f32]) -> Result<Vec<f32>> {
        let mut y: Vec<f32> = x.iter().map(|v| v * self.w).collect();
        self.tp.all_reduce(&mut y, ReduceOp::Sum)?;
        Ok(y)
    }
}

struct Tanh;

impl Layer for Tanh {
    fn forward(&mut self, x: &[f32]) -> Result<Vec<f32>> {
        Ok(x.iter().map(|v| v.tanh()).collect())
    }
}

struct Model {
    layers: Vec<Box<dyn Layer>>,
}

impl Model {
    fn forward(&mut self, x: &[f32]) -> Result<Vec<f32>> {
        self.layers.iter_mut().try_fold(x.to_vec(), |h, layer| layer.forward(&h))
    }
}

#[spmd]
fn main(world: Comm<World>) -> Result<()> {
    let mut model = Model { layers: vec![Box::new(Tanh), Box::new(RowParallel { tp: world.clone(), w: 0.5 })] };
    model.forward(&[0.1; 4])?;
    // Rank 0 alone runs one more forward pass to log its output.
    if world.rank() == 0 {
        println!("{:?}", model.forward(&[0.1; 4])?);
    }
    Ok(())
}
