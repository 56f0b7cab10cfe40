//! Flags of the pipeline trainer.

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Schedule {
    GPipe,
    OneFOneB,
}

#[derive(Debug, Clone)]
pub struct Config {
    pub dp: usize,
    pub micro: usize,
    pub rows: usize,
    pub width: usize,
    pub layers: usize,
    pub steps: usize,
    pub lr: f64,
    pub schedule: Schedule,
    /// All-reduce each layer's gradient on its own instead of one flat buffer.
    pub per_layer_allreduce: bool,
}

impl Config {
    pub fn parse(args: &[String]) -> Result<Config, String> {
        let mut c = Config {
            dp: 1,
            micro: 4,
            rows: 3,
            width: 6,
            layers: 8,
            steps: 4,
            lr: 0.02,
            schedule: Schedule::GPipe,
            per_layer_allreduce: false,
        };
        let mut i = 0;
        while i < args.len() {
            let flag = args[i].as_str();
            let val = || args.get(i + 1).ok_or_else(|| format!("{flag} needs a value"));
            match flag {
                "--dp" => c.dp = val()?.parse().map_err(|e| format!("--dp: {e}"))?,
                "--micro" => c.micro = val()?.parse().map_err(|e| format!("--micro: {e}"))?,
                "--rows" => c.rows = val()?.parse().map_err(|e| format!("--rows: {e}"))?,
                "--layers" => c.layers = val()?.parse().map_err(|e| format!("--layers: {e}"))?,
                "--steps" => c.steps = val()?.parse().map_err(|e| format!("--steps: {e}"))?,
                "--schedule" => {
                    c.schedule = match val()?.as_str() {
                        "gpipe" => Schedule::GPipe,
                        "1f1b" => Schedule::OneFOneB,
                        s => return Err(format!("--schedule: unknown {s}")),
                    }
                }
                "--per-layer" => {
                    c.per_layer_allreduce = true;
                    i += 1;
                    continue;
                }
                _ => return Err(format!("unknown flag {flag}")),
            }
            i += 2;
        }
        Ok(c)
    }
}
