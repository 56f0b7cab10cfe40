//! Command-line configuration of the task tree and of the pool.

use crate::Res;
use crate::task::Task;

/// `roots` root tasks dealt out in contiguous blocks; children down to `max_depth`;
/// `work` mixing rounds per task; `chunk` tasks between two polls of the inbox; `sweeps`
/// rounds of steal requests an idle rank tries before it goes passive.
#[derive(Clone, Debug)]
pub struct Config { pub seed: u64, pub roots: usize, pub max_depth: u32, pub work: u32, pub chunk: usize, pub sweeps: usize }

impl Default for Config {
    fn default() -> Self {
        Config { seed: 2024, roots: 24, max_depth: 14, work: 400, chunk: 16, sweeps: 2 }
    }
}

impl Config {
    pub fn from_args<I: IntoIterator<Item = String>>(args: I) -> Res<Config> {
        let mut cfg = Config::default();
        let mut it = args.into_iter();
        while let Some(flag) = it.next() {
            let mut value = || it.next().ok_or(format!("{flag} needs a value"));
            match flag.as_str() {
                "--seed" => cfg.seed = parse(&flag, &value()?)?,
                "--roots" => cfg.roots = parse(&flag, &value()?)?,
                "--depth" => cfg.max_depth = parse(&flag, &value()?)?,
                "--work" => cfg.work = parse(&flag, &value()?)?,
                "--chunk" => cfg.chunk = parse::<usize>(&flag, &value()?)?.max(1),
                "--sweeps" => cfg.sweeps = parse::<usize>(&flag, &value()?)?.max(1),
                other => return Err(format!("unknown flag {other}").into()),
            }
        }
        Ok(cfg)
    }

    /// The root tasks of `rank`: a contiguous block, so the subtrees are unevenly spread.
    pub fn initial_share(&self, rank: usize, size: usize) -> Vec<Task> {
        let lo = self.roots * rank / size;
        let hi = self.roots * (rank + 1) / size;
        (lo..hi).map(|i| Task::root(self.seed, i as u64)).collect()
    }
}

fn parse<T: std::str::FromStr>(flag: &str, v: &str) -> Res<T> {
    Ok(v.parse().map_err(|_| format!("{flag}: cannot parse {v:?}"))?)
}
