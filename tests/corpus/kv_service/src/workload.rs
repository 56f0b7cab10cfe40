//! Options and the deterministic workload every rank generates from the seed.

#[derive(Debug, Clone)]
pub struct Options {
    pub puts: usize,
    pub gets: usize,
    pub keys: u64,
    pub seed: u64,
}

impl Options {
    pub fn from_args() -> Result<Options, String> {
        let mut o = Options { puts: 200, gets: 150, keys: 300, seed: 1 };
        let args: Vec<String> = std::env::args().skip(1).collect();
        let mut i = 0;
        while i < args.len() {
            let value = args.get(i + 1).ok_or_else(|| format!("{} needs a value", args[i]))?;
            let num = |v: &str| v.parse::<u64>().map_err(|e| format!("{}: {e}", args[i]));
            match args[i].as_str() {
                "--puts" => o.puts = num(value)? as usize,
                "--gets" => o.gets = num(value)? as usize,
                "--keys" => o.keys = num(value)?,
                "--seed" => o.seed = num(value)?,
                other => return Err(format!("unknown flag {other}")),
            }
            i += 2;
        }
        if o.keys == 0 {
            return Err("--keys must be positive".into());
        }
        Ok(o)
    }
}

pub fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The rank that stores `key`.
pub fn owner(key: u64, ranks: usize) -> usize {
    (mix(key ^ 0x5151) % ranks as u64) as usize
}

/// Rank `rank`'s puts: keys from a small space so ranks collide on them.
pub fn puts_of(rank: usize, o: &Options) -> Vec<(u64, u64)> {
    (0..o.puts as u64)
        .map(|i| {
            let h = mix(o.seed ^ (rank as u64) << 32 ^ i);
            (h % o.keys, h >> 40)
        })
        .collect()
}

/// Rank `rank`'s lookups (some of them of keys nobody put).
pub fn gets_of(rank: usize, o: &Options) -> Vec<u64> {
    (0..o.gets as u64).map(|i| mix(o.seed.wrapping_mul(31) ^ (rank as u64) << 40 ^ i) % (o.keys + o.keys / 4)).collect()
}

/// A checksum of key/value pairs that does not depend on their order.
pub fn checksum<'a>(pairs: impl IntoIterator<Item = (&'a u64, &'a u64)>) -> u64 {
    pairs.into_iter().fold(0u64, |acc, (k, v)| acc.wrapping_add(mix(k.wrapping_mul(0x100_0193) ^ v)))
}
