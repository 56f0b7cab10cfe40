//! The job: its flags (`--tasks N --work N --seed N --no-local`), its tasks, what a
//! task computes, and the serial reference.

use std::fmt;

#[derive(Debug, Clone)]
pub struct Config {
    pub tasks: usize,
    /// Average hash rounds per task.
    pub work: u64,
    pub seed: u64,
    /// Whether the coordinator computes tasks itself while it waits.
    pub local: bool,
}

impl Default for Config {
    fn default() -> Self {
        Config { tasks: 240, work: 2000, seed: 1, local: true }
    }
}

#[derive(Debug)]
pub struct UsageError(String);

impl fmt::Display for UsageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "usage: {} (flags: --tasks N --work N --seed N --no-local)", self.0)
    }
}

impl std::error::Error for UsageError {}

impl Config {
    pub fn parse(args: impl IntoIterator<Item = String>) -> Result<Config, UsageError> {
        let mut cfg = Config::default();
        let mut args = args.into_iter();
        while let Some(flag) = args.next() {
            let mut number = |what: &str| -> Result<u64, UsageError> {
                let v = args.next().ok_or_else(|| UsageError(format!("{what} needs a value")))?;
                v.parse().map_err(|_| UsageError(format!("{what}: {v:?} is not a number")))
            };
            match flag.as_str() {
                "--tasks" | "--len" => cfg.tasks = number(&flag)? as usize,
                "--work" | "--iters" => cfg.work = number(&flag)?,
                "--seed" => cfg.seed = number(&flag)?,
                "--no-local" => cfg.local = false,
                _ => return Err(UsageError(format!("unknown flag {flag:?}"))),
            }
        }
        if cfg.work == 0 {
            return Err(UsageError("--work must be positive".into()));
        }
        Ok(cfg)
    }
}

/// One unit of work.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TaskSpec {
    pub id: u64,
    pub seed: u64,
    pub rounds: u64,
}

fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The job's tasks, with uneven costs (1/4 to 7/4 of `work` rounds).
pub fn tasks(cfg: &Config) -> Vec<TaskSpec> {
    (0..cfg.tasks as u64)
        .map(|id| {
            let seed = mix(cfg.seed ^ id.wrapping_mul(0x2545_F491_4F6C_DD1D));
            let rounds = cfg.work / 4 + seed % (cfg.work * 3 / 2).max(1);
            TaskSpec { id, seed, rounds }
        })
        .collect()
}

/// What a task computes.
pub fn compute(t: &TaskSpec) -> u64 {
    (0..t.rounds).fold(t.seed, |acc, i| mix(acc ^ i))
}

/// Folds a result into an order-independent checksum.
pub fn fold(acc: u64, id: u64, value: u64) -> u64 {
    acc.wrapping_add(mix(id ^ value.rotate_left(17)))
}

/// Every task's result, computed in one process.
pub fn serial(cfg: &Config) -> Vec<u64> {
    tasks(cfg).iter().map(compute).collect()
}
