//! Training of the whole model in one process: the reference.

use crate::model::*;

/// (embedding, layer weights) after `steps` steps with `stages` layers and
/// `replicas × micro` micro-batches per step.
pub fn train(stages: usize, replicas: usize, micro: usize, steps: usize) -> (Vec<f64>, Vec<Vec<f64>>) {
    let mut e = init_embedding();
    let mut ws: Vec<Vec<f64>> = (0..stages).map(init_layer).collect();
    let per_step = replicas * micro;
    for step in 0..steps {
        let mut ge = vec![0.0; V * D];
        let mut gws = vec![vec![0.0; D * D]; stages];
        for k in 0..per_step {
            let (x, t) = tokens(step * per_step + k);
            let mut acts = vec![embed(&e, &x)];
            for w in &ws {
                let y = layer(acts.last().unwrap(), w);
                acts.push(y);
            }
            let (_, mut dy) = head(&acts[stages], &e, &t, per_step as f64, &mut ge);
            for s in (0..stages).rev() {
                let (dx, dw) = layer_back(&acts[s], &acts[s + 1], &ws[s], &dy);
                gws[s].iter_mut().zip(&dw).for_each(|(g, d)| *g += d);
                dy = dx;
            }
            embed_back(&mut ge, &x, &dy);
        }
        sgd(&mut e, &ge);
        for (w, g) in ws.iter_mut().zip(&gws) {
            sgd(w, g);
        }
    }
    (e, ws)
}
