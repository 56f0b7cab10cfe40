// Ordinary code the check follows whole: an extension trait on `dist_runtime::Result`
// that wraps errors with context (`world.split(..).during("..")`), a helper that
// matches on the `ReduceOp` it was given, and a trait object over communicators.
use dist_runtime::prelude::*;

#[derive(Debug)]
struct CommError {
    what: &'static str,
    source: dist_runtime::Error,
}

impl std::fmt::Display for CommError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.what, self.source)
    }
}

trait Context<T> {
    fn during(self, what: &'static str) -> Result<T, CommError>;
}

impl<T> Context<T> for dist_runtime::Result<T> {
    fn during(self, what: &'static str) -> Result<T, CommError> {
        self.map_err(|source| CommError { what, source })
    }
}

trait Reducer {
    fn reduce(&self, v: &mut [f64], op: ReduceOp) -> Result<(), CommError>;
}

struct OnComm<G: Group>(Comm<G>);

impl<G: Group> Reducer for OnComm<G> {
    fn reduce(&self, v: &mut [f64], op: ReduceOp) -> Result<(), CommError> {
        match op {
            ReduceOp::Max => self.0.all_reduce(v, ReduceOp::Max).during("max"),
            _ => self.0.all_reduce(v, ReduceOp::Sum).during("sum"),
        }
    }
}

dist_runtime::group!(Node);

#[spmd]
fn main(world: Comm<World>) -> Result<(), CommError> {
    let r = world.rank();
    let node = world.split::<Node>((r / 2) as u32, r as i64).during("split into nodes")?;
    let layers: Vec<Box<dyn Reducer>> = vec![Box::new(OnComm(world.clone())), Box::new(OnComm(node))];
    let mut v = vec![r as f64; 4];
    for l in &layers {
        l.reduce(&mut v, ReduceOp::Max)?;
        l.reduce(&mut v, ReduceOp::Sum)?;
    }
    Ok(())
}
