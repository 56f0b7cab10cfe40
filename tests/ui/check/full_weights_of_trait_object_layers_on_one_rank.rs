// The full weights of a `Vec<Box<dyn Layer>>` model gathered by rank 0 only, through a
// `for` over `&self.layers`: the all-gather inside the row-parallel layer is reached by
// one rank. (The check used to take such a loop for one that cannot communicate, its body
// naming no communicator, and summarise it where its step quota ran out: the corpus's
// modular_tp/mtp4, a training loop before this gather, holds that case.) The model in
// full is `ui/pass/layers_as_trait_objects.rs`.
use dist_runtime::prelude::*;
use dist_runtime::Result;

trait Layer {
    fn full(&self) -> Result<Option<Vec<f32>>> {
        Ok(None)
    }
}

struct RowParallel {
    tp: Comm<World>,
    w: Vec<f32>,
}

impl Layer for RowParallel {
    fn full(&self) -> Result<Option<Vec<f32>>> {
        let mut all = vec![0.0; self.w.len() * self.tp.size()];
        self.tp.all_gather(&self.w, &mut all)?;
        Ok(Some(all))
    }
}

struct Tanh;

impl Layer for Tanh {}

struct Model {
    layers: Vec<Box<dyn Layer>>,
}

impl Model {
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
    let model = Model { layers: vec![Box::new(Tanh), Box::new(RowParallel { tp: world.clone(), w: vec![0.5; 4] })] };
    // Only rank 0 gathers the full weights.
    let full = if world.rank() == 0 { model.full()? } else { Vec::new() };
    println!("{}", full.len());
    Ok(())
}
