//! SGD with momentum; one state per parameter vector (a shard, or a full layer).

pub struct Momentum {
    pub lr: f64,
    pub beta: f64,
    velocity: Vec<f64>,
}

impl Momentum {
    pub fn new(len: usize, lr: f64, beta: f64) -> Momentum {
        Momentum { lr, beta, velocity: vec![0.0; len] }
    }

    pub fn step(&mut self, params: &mut [f64], grad: &[f64]) {
        for ((p, g), v) in params.iter_mut().zip(grad).zip(self.velocity.iter_mut()) {
            *v = self.beta * *v + g;
            *p -= self.lr * *v;
        }
    }
}

/// Factor to multiply gradients with so that their global norm is at most `max_norm`.
pub fn clip_factor(sq_norm: f64, max_norm: f64) -> f64 {
    let norm = sq_norm.sqrt();
    if norm > max_norm {
        max_norm / (norm + 1e-12)
    } else {
        1.0
    }
}
