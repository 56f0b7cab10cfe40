//! Options: `--tp N --vocab V --dim D --batch B --steps S --lr X --seed K`.

use std::collections::HashMap;

#[derive(Debug, Clone)]
pub struct Options {
    /// Tensor-parallel width; 0 picks 2 on even world sizes and 1 otherwise.
    pub tp: usize,
    pub vocab: usize,
    pub dim: usize,
    pub batch: usize,
    pub steps: usize,
    pub lr: f64,
    pub seed: u64,
    pub quiet: bool,
}

impl Options {
    pub fn parse(args: impl IntoIterator<Item = String>) -> Result<Options, String> {
        let mut flags: HashMap<String, String> = HashMap::new();
        let mut quiet = false;
        let mut it = args.into_iter();
        while let Some(a) = it.next() {
            if a == "--quiet" || a == "-q" {
                quiet = true;
                continue;
            }
            let Some(name) = a.strip_prefix("--") else {
                return Err(format!("expected a flag, got {a:?}"));
            };
            let (key, value) = match name.split_once('=') {
                Some((k, v)) => (k.to_string(), v.to_string()),
                None => (name.to_string(), it.next().ok_or_else(|| format!("--{name} needs a value"))?),
            };
            flags.insert(key, value);
        }
        let get = |key: &str, default: &str| -> String { flags.get(key).cloned().unwrap_or_else(|| default.into()) };
        let num = |key: &str, default: &str| -> Result<usize, String> {
            get(key, default).parse().map_err(|e| format!("--{key}: {e}"))
        };
        let opts = Options {
            tp: num("tp", "0")?,
            vocab: num("vocab", "23")?,
            dim: num("dim", "6")?,
            batch: num("batch", "5")?,
            steps: num("steps", "3")?,
            lr: get("lr", "0.5").parse().map_err(|e| format!("--lr: {e}"))?,
            seed: get("seed", "7").parse().map_err(|e| format!("--seed: {e}"))?,
            quiet,
        };
        if let Some(unknown) =
            flags.keys().find(|k| !["tp", "vocab", "dim", "batch", "steps", "lr", "seed"].contains(&k.as_str()))
        {
            return Err(format!("unknown flag --{unknown}"));
        }
        if opts.vocab == 0 || opts.dim == 0 || opts.batch == 0 {
            return Err("--vocab, --dim and --batch must be positive".into());
        }
        Ok(opts)
    }

    /// The tensor-parallel width for `world` ranks, checked against the vocabulary.
    pub fn tp_for(&self, world: usize) -> Result<usize, String> {
        let tp = if self.tp == 0 { if world % 2 == 0 { 2 } else { 1 } } else { self.tp };
        if world % tp != 0 {
            return Err(format!("--tp {tp} does not divide the world size {world}"));
        }
        if tp > self.vocab {
            return Err(format!("--tp {tp} is wider than the vocabulary ({})", self.vocab));
        }
        Ok(tp)
    }
}
