//! Tokens, the softmax gate and top-1 routing; all deterministic so every rank can
//! rebuild any rank's input.

pub const D: usize = 4;

pub fn hash_f32(a: u64, b: u64) -> f32 {
    let mut h = a.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ b.wrapping_mul(0xC2B2_AE3D_27D4_EB4F);
    h ^= h >> 29;
    h = h.wrapping_mul(0xBF58_476D_1CE4_E5B9);
    h ^= h >> 32;
    (h % 2001) as f32 / 1000.0 - 1.0
}

/// Token count on `rank`: not the same on every rank.
pub fn tokens_on(rank: usize, base: usize) -> usize {
    base + (rank * 5) % 3
}

pub fn tokens(rank: usize, base: usize) -> Vec<f32> {
    (0..tokens_on(rank, base) * D).map(|i| hash_f32(rank as u64 + 1, i as u64)).collect()
}

/// Gate matrix (D × experts) of MoE layer `layer`.
pub fn gate_weights(layer: usize, experts: usize) -> Vec<f32> {
    (0..D * experts).map(|i| 2.0 * hash_f32(1000 + layer as u64, i as u64)).collect()
}

#[derive(Debug, Clone, Copy)]
pub struct Route {
    pub expert: usize,
    pub prob: f32,
}

/// Top-1 routing of every token: the argmax expert and its softmax probability; also
/// returns the full probabilities (for the load-balancing loss).
pub fn route(x: &[f32], gate: &[f32], experts: usize) -> (Vec<Route>, Vec<Vec<f32>>) {
    x.chunks(D)
        .map(|tok| {
            let logits: Vec<f32> = (0..experts).map(|e| (0..D).map(|k| tok[k] * gate[k * experts + e]).sum()).collect();
            let m = logits.iter().cloned().fold(f32::NEG_INFINITY, f32::max);
            let z: f32 = logits.iter().map(|l| (l - m).exp()).sum();
            let probs: Vec<f32> = logits.iter().map(|l| (l - m).exp() / z).collect();
            let expert = (0..experts).fold(0, |best, e| if logits[e] > logits[best] { e } else { best });
            (Route { expert, prob: probs[expert] }, probs)
        })
        .unzip()
}
