//! Flags of the work-queue run.

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Rank 0 hands out chunks of tasks on request.
    Dynamic,
    /// Tasks split into equal blocks up front, results gathered at the end.
    Static,
}

#[derive(Debug, Clone)]
pub struct Config {
    pub tasks: u64,
    pub chunk: u64,
    pub seed: u64,
    pub mode: Mode,
    pub report: bool,
}

impl Config {
    pub fn parse(mut args: impl Iterator<Item = String>) -> Result<Config, String> {
        let mut c = Config { tasks: 200, chunk: 7, seed: 27, mode: Mode::Dynamic, report: false };
        while let Some(flag) = args.next() {
            let mut num = |name: &str| -> Result<u64, String> {
                args.next().ok_or(format!("{name} needs a value"))?.parse().map_err(|e| format!("{name}: {e}"))
            };
            match flag.as_str() {
                "--tasks" => c.tasks = num("--tasks")?,
                "--chunk" => c.chunk = num("--chunk")?.max(1),
                "--seed" => c.seed = num("--seed")?,
                "--static" => c.mode = Mode::Static,
                "--report" => c.report = true,
                other => return Err(format!("unknown flag {other}")),
            }
        }
        Ok(c)
    }
}
