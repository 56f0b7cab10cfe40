//! Weighted items, generated unevenly per rank, whose weights drift each round.

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Item {
    pub id: u64,
    pub weight: u64,
}

pub fn hash(a: u64, b: u64) -> u64 {
    let mut z = a.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ b.rotate_left(17);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// How many items rank `r` starts with: deliberately uneven, rank 1 gets none.
pub fn initial_count(r: usize, base: usize) -> usize {
    base * ((r * 7 + 3) % 5) / 2
}

pub fn generate(r: usize, base: usize, seed: u64) -> Vec<Item> {
    (0..initial_count(r, base) as u64)
        .map(|i| {
            let id = r as u64 * 1_000_000 + i;
            Item { id, weight: 1 + hash(seed, id) % 100 }
        })
        .collect()
}

/// The weights after round `round`'s drift.
pub fn drift(items: &mut [Item], round: usize, seed: u64) {
    for it in items.iter_mut() {
        let f = 1 + hash(seed ^ round as u64, it.id) % 4;
        it.weight = 1 + (it.weight * f + hash(it.id, round as u64) % 13) % 150;
    }
}

pub fn load(items: &[Item]) -> u64 {
    items.iter().map(|it| it.weight).sum()
}

/// Which point of an item decides its owner.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Policy {
    /// The rank whose share of the total contains the item's midpoint.
    Midpoint,
    /// The rank whose share contains the item's first unit of weight.
    Start,
}

impl std::str::FromStr for Policy {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "midpoint" | "mid" => Ok(Policy::Midpoint),
            "start" => Ok(Policy::Start),
            _ => Err(format!("unknown policy {s:?} (midpoint, start)")),
        }
    }
}

/// Owner of an item that starts at `start` in the global weight order.
pub fn owner(policy: Policy, start: u64, weight: u64, total: u64, n: usize) -> usize {
    if total == 0 {
        return 0;
    }
    let (point2, total2) = match policy {
        Policy::Midpoint => (2 * start + weight, 2 * total),
        Policy::Start => (start, total),
    };
    ((point2 as u128 * n as u128 / total2 as u128) as usize).min(n - 1)
}

/// [count, load, min id, max id] of a rank's items.
pub const SUMMARY: usize = 4;

pub fn summary(items: &[Item]) -> [u64; SUMMARY] {
    [
        items.len() as u64,
        load(items),
        items.iter().map(|i| i.id).min().unwrap_or(u64::MAX),
        items.iter().map(|i| i.id).max().unwrap_or(0),
    ]
}
