//! The same training in one process: the reference.

use crate::config::Config;
use crate::model::{batch, layers, mse_grad, Module, Rng};
use crate::optim::{clip_factor, Momentum};

pub fn initial_params(cfg: &Config) -> Vec<Vec<f64>> {
    let mut rng = Rng::new(cfg.seed);
    layers(&cfg.dims).iter().map(|l| l.init(&mut rng)).collect()
}

pub fn train(cfg: &Config) -> Vec<Vec<f64>> {
    let model = layers(&cfg.dims);
    let mut params = initial_params(cfg);
    let mut opts: Vec<Momentum> =
        params.iter().map(|p| Momentum::new(p.len(), cfg.lr, cfg.momentum)).collect();
    let (din, dout) = (cfg.dims[0], *cfg.dims.last().unwrap());
    let denom = (cfg.rows * cfg.accum) as f64;
    for step in 0..cfg.steps {
        let mut grads: Vec<Vec<f64>> = params.iter().map(|p| vec![0.0; p.len()]).collect();
        for mb in 0..cfg.accum {
            let (x, t) = batch(cfg.seed, step, mb, cfg.rows, din, dout);
            let mut acts = vec![x];
            for (l, p) in model.iter().zip(&params) {
                let y = l.forward(p, acts.last().unwrap(), cfg.rows);
                acts.push(y);
            }
            let mut dy = mse_grad(acts.last().unwrap(), &t, denom);
            for li in (0..model.len()).rev() {
                let (dx, dp) = model[li].backward(&params[li], &acts[li], &acts[li + 1], &dy, cfg.rows);
                grads[li].iter_mut().zip(&dp).for_each(|(g, d)| *g += d);
                dy = dx;
            }
        }
        if let Some(max_norm) = cfg.clip {
            let sq: f64 = grads.iter().flatten().map(|g| g * g).sum();
            let f = clip_factor(sq, max_norm);
            grads.iter_mut().flatten().for_each(|g| *g *= f);
        }
        for ((p, g), o) in params.iter_mut().zip(&grads).zip(opts.iter_mut()) {
            o.step(p, g);
        }
    }
    params
}
