//! Command line: `--schedule gpipe|1f1b`, `--micro M`, `--pp P`, `--steps S`.

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScheduleKind {
    GPipe,
    OneFOneB,
}

#[derive(Debug, Clone)]
pub struct Args {
    pub schedule: ScheduleKind,
    pub micro: usize,
    /// Pipeline stages; `None`: the world size.
    pub pp: Option<usize>,
    pub steps: usize,
}

pub fn parse() -> Result<Args, String> {
    let mut a = Args { schedule: ScheduleKind::OneFOneB, micro: 4, pp: None, steps: 3 };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut val = || it.next().ok_or_else(|| format!("{flag} needs a value"));
        match flag.as_str() {
            "--schedule" => {
                a.schedule = match val()?.as_str() {
                    "gpipe" => ScheduleKind::GPipe,
                    "1f1b" => ScheduleKind::OneFOneB,
                    other => return Err(format!("unknown schedule `{other}` (gpipe or 1f1b)")),
                }
            }
            "--micro" => a.micro = val()?.parse().map_err(|_| "bad --micro".to_string())?,
            "--pp" => a.pp = Some(val()?.parse().map_err(|_| "bad --pp".to_string())?),
            "--steps" => a.steps = val()?.parse().map_err(|_| "bad --steps".to_string())?,
            other => return Err(format!("unknown argument `{other}`")),
        }
    }
    if a.micro == 0 {
        return Err("--micro must be at least 1".into());
    }
    Ok(a)
}
