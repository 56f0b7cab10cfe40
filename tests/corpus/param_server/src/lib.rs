//! A synchronous parameter server for linear regression: rank 0 holds the parameters,
//! the other ranks hold shards of the data. Each round every worker sends the
//! gradient of its shard; the server takes them in whatever order they arrive,
//! applies their sum, and answers each worker with the new parameters.

pub mod model;
pub mod protocol;
pub mod server;
pub mod worker;

/// What a run needs to know; every rank parses the same command line.
#[derive(Clone, Debug)]
pub struct RunConfig {
    pub rounds: usize,
    pub samples: usize,
    pub features: usize,
    pub lr: f64,
    pub seed: u64,
}

impl Default for RunConfig {
    fn default() -> Self {
        RunConfig { rounds: 20, samples: 120, features: 6, lr: 0.1, seed: 5 }
    }
}

impl RunConfig {
    pub fn parse<I: IntoIterator<Item = String>>(args: I) -> Result<RunConfig, String> {
        let mut cfg = RunConfig::default();
        let mut it = args.into_iter();
        while let Some(flag) = it.next() {
            let value = it.next().ok_or_else(|| format!("{flag} needs a value"))?;
            let bad = |_| format!("bad value {value:?} for {flag}");
            match flag.as_str() {
                "--rounds" => cfg.rounds = value.parse().map_err(bad)?,
                "--samples" => cfg.samples = value.parse().map_err(bad)?,
                "--features" => cfg.features = value.parse().map_err(bad)?,
                "--lr" => cfg.lr = value.parse().map_err(|_| format!("bad value {value:?} for --lr"))?,
                "--seed" => cfg.seed = value.parse().map_err(bad)?,
                _ => return Err(format!("unknown flag {flag}")),
            }
        }
        Ok(cfg)
    }

    /// Parameters: one weight per feature and a bias.
    pub fn n_params(&self) -> usize {
        self.features + 1
    }
}

/// One side of the protocol. Both sides run the same number of rounds and then
/// `finish`, which leaves every rank with the server's parameters.
pub trait Participant {
    fn round(&mut self, round: usize) -> dist_runtime::Result<()>;
    /// Final parameters, and the loss this rank's data has under them.
    fn finish(&mut self) -> dist_runtime::Result<(Vec<f64>, f64)>;
}

pub(crate) fn protocol_error(msg: String) -> dist_runtime::Error {
    dist_runtime::Error::Mismatch { comm: "World".into(), msg }
}
