//! The same MoE stack evaluated serially with every expert at hand.

use crate::experts::apply;
use crate::gate::{self, D};

/// One MoE layer with a residual: `x + p · expert(x)` for the top-1 expert.
pub fn moe_layer(x: &[f32], gate_w: &[f32], experts: &[Vec<f32>]) -> Vec<f32> {
    let (routes, _) = gate::route(x, gate_w, experts.len());
    x.chunks(D)
        .zip(&routes)
        .flat_map(|(tok, r)| {
            let y = apply(&experts[r.expert], tok);
            tok.iter().zip(y).map(|(a, b)| a + r.prob * b).collect::<Vec<_>>()
        })
        .collect()
}

/// Every rank's tokens through every layer, and each layer's load-balancing loss.
pub fn run(ranks: usize, base: usize, all_experts: &[Vec<Vec<f32>>]) -> (Vec<Vec<f32>>, Vec<f64>) {
    let ne = all_experts[0].len();
    let mut xs: Vec<Vec<f32>> = (0..ranks).map(|r| gate::tokens(r, base)).collect();
    let mut aux = Vec::new();
    for (l, experts) in all_experts.iter().enumerate() {
        let g = gate::gate_weights(l, ne);
        let (mut f, mut p, mut total) = (vec![0.0f64; ne], vec![0.0f64; ne], 0.0f64);
        for x in &xs {
            let (routes, probs) = gate::route(x, &g, ne);
            for (r, pr) in routes.iter().zip(&probs) {
                f[r.expert] += 1.0;
                pr.iter().enumerate().for_each(|(e, &v)| p[e] += v as f64);
                total += 1.0;
            }
        }
        aux.push((0..ne).map(|e| f[e] / total * (p[e] / total)).sum::<f64>() * ne as f64);
        xs = xs.iter().map(|x| moe_layer(x, &g, experts)).collect();
    }
    (xs, aux)
}
